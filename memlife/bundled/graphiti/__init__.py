"""The graphiti target: Graphiti (graphiti-core) on FalkorDB, its LLM paths run against
memlife's scripted model (`memlife target serve graphiti`)."""
