"""Temporal workflow definitions only: deterministic, no I/O."""
