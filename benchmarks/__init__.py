"""Reproducible measurements, each printed as a ratio to a baseline measured in the
same run (machines are noisy; absolute numbers are not comparable across runs)."""
