"""The local stack and the way to Temporal: the embedded dev server and reference target
(embedded.py), `memlife dev` (devstack.py), connecting to a cluster (connection.py),
workers (worker.py), schedules, progress queries, and extras installed on first use."""

from pathlib import Path

# Where memlife keeps its state in the current directory: the recorder's database, the
# embedded servers' files, the reference targets' databases, logs.
STATE_DIR = Path(".memlife")

# Where the local stack listens unless told otherwise (light: the CLI's help reads these).
DEFAULT_ADDRESS = "127.0.0.1:7233"
DEFAULT_UI_PORT = 8233
DEFAULT_CODEC_PORT = 8081  # where Temporal's samples serve their codec endpoint
