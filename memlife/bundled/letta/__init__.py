"""The Letta server as a bundled target: `memlife target serve letta` (serve.py), its agents'
model the scripted model's Letta rules (memlife/bundled/model/letta.py)."""
