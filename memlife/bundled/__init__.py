"""The targets memlife can serve itself: the reference target (a SQLite model of the
reference runtime of docs/design.md, with faults to inject) and the realstack target (the
same surface on Mem0, LangGraph and FalkorDB)."""
