"""Temporal activities: all of memlife's I/O (target calls, recording, reports)."""
