"""The recorder: the trail every run leaves in a database (tables.py), written idempotently
(database.py), read back whole or streamed (queries.py), and folded into the artifact
(builder.py, artifact.py). What other parts of memlife use is importable from here."""

from memlife.recorder.database import (
    DEFAULT_DB_PATH,
    database_url,
    dumps,
    engine_for,
    merge_all,
    merge_values,
    session,
)
from memlife.recorder.queries import load_run, run_builder, run_digest, run_value_tuples
from memlife.recorder.tables import (
    AdjudicationRow,
    ErasureReceiptRow,
    ObservationMetricRow,
    ObservationRow,
    RunPairRow,
    RunRow,
    RunValueRow,
    StepRow,
    TenantRow,
    VerdictRow,
)

__all__ = [
    "DEFAULT_DB_PATH", "AdjudicationRow", "ErasureReceiptRow", "ObservationMetricRow",
    "ObservationRow", "RunPairRow", "RunRow", "RunValueRow", "StepRow", "TenantRow",
    "VerdictRow", "database_url", "dumps", "engine_for", "load_run", "merge_all",
    "merge_values", "run_builder", "run_digest", "run_value_tuples", "session",
]
