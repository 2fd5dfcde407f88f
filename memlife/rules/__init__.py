"""The pure rules of memlife: the scenario and target file models, the pair's state, the
timeline, judging, scoring, canaries and statistics. Nothing here imports Temporal, a
network or a database library (import-linter holds it to that: pyproject.toml), so all of
it is unit tested in milliseconds."""
