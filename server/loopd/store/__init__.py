"""Persistence: the SQLite session store shared by every loopd process of a user, and
the pure reconciliation that makes a crashed session load consistent."""
