"""The bundled targets memlife can serve itself: the reference target (a SQLite model of
the seed runtime, with faults to inject) and the realstack target (the same surface on
Mem0, LangGraph and FalkorDB)."""
