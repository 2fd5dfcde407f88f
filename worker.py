"""A standalone memlife worker for a Temporal cluster, from a checkout:

    TEMPORAL_ADDRESS=host:7233 [MEMLIFE_DB_URL=postgresql+psycopg://...] python worker.py

The same as `memlife worker` where memlife is installed (memlife/stack/worker.py).
"""

from memlife.cli import end_process
from memlife.stack.worker import main

if __name__ == "__main__":
    end_process(main())
