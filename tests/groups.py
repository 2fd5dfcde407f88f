"""xdist groups that several test modules share (`--dist loadgroup`, scripts/test)."""

from __future__ import annotations

import pytest

# Every test that loads MiniLM in the test process (memlife/embeddings.py: the scripted
# model's embeddings, paraphrase candidates, and the realstack, Mem0 and Graphiti stacks'
# embedders). Importing sentence-transformers with torch and loading the model costs
# about 5 CPU-s in each process that does it: in one worker it is paid once, not once in
# each of scripts/test's five. The Letta server's tests load it too (its scripted model's
# embeddings) but keep a group of their own: on a new machine their setup first installs
# Letta, for minutes that would hold up every test of this group. The tests that import
# mem0 (its prompts, its exceptions: 1.6 CPU-s a process, with qdrant_client and openai)
# join them, since the Mem0 stack's tests import it here anyway.
MINILM = pytest.mark.xdist_group("minilm")
