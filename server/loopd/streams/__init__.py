"""Reading and writing protocol streams: bounded line reading (`lines`), the
protocol servers' stdin and stdout (`stdio`) and what was read of stdin ahead of
them (`read_ahead`). Standard library only."""
