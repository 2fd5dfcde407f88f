"""Talking to a target as its target file describes it: the HTTP client of its operations
(http.py), the store probes (stores.py, sql.py, files.py) and `memlife target check`
(check.py). The target file's model itself is pure and lives with the rules
(memlife/rules/target.py)."""
