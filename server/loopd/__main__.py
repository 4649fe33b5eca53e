from loopd.cli import main

raise SystemExit(main())
