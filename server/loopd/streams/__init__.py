"""Reading and writing protocol streams: bounded line reading (`lines`) and the
protocol servers' stdin and stdout (`stdio`). Standard library only."""
