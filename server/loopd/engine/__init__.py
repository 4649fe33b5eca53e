"""The native turn cycle, pure: it talks only to the ports in `engine.ports` (no I/O,
no clock, no processes), so tests drive it with scripted streams and a fake clock."""
