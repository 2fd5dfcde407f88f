"""The recorder: the trail every run leaves in a database (tables.py), written idempotently
(database.py), read back whole or streamed (queries.py), and folded into the artifact
(builder.py, artifact.py). What other parts of memlife use is importable from here; it is
loaded on first use, so reading an artifact does not load the database layer."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_PUBLIC = {
    "DEFAULT_DB_PATH": "database",
    "database_url": "database",
    "dumps": "database",
    "engine_for": "database",
    "merge_all": "database",
    "merge_values": "database",
    "session": "database",
    "load_run": "queries",
    "run_builder": "queries",
    "run_digest": "queries",
    "run_value_tuples": "queries",
    "experiment_run_ids": "queries",
    "report_artifact": "streams",
    "artifact_chunks": "streams",
    "artifact_parts": "streams",
    "RunLists": "streams",
    "report_experiment": "streams",
    "experiment_chunks": "streams",
    "AdjudicationRow": "tables",
    "ErasureReceiptRow": "tables",
    "ObservationMetricRow": "tables",
    "ObservationRow": "tables",
    "ObservationTraceRow": "tables",
    "RunPairRow": "tables",
    "RunExperimentRow": "tables",
    "RunRow": "tables",
    "RunValueRow": "tables",
    "StepRow": "tables",
    "TenantRow": "tables",
    "TargetClaimRow": "tables",
    "VerdictRow": "tables",
    "StagedReadsRow": "tables",
    "RunSetupRow": "tables",
    "RetiredClaimRow": "tables",
    "ClaimReviewRow": "tables",
    "RegistrationAttemptRow": "tables",
    "REFUSED": "artifact",
    "stage_reads": "staging",
    "stage_many_reads": "staging",
    "staged_reads": "staging",
    "drop_staged_reads": "staging",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'memlife.recorder' has no attribute {name!r}")
    return getattr(import_module(f"memlife.recorder.{_PUBLIC[name]}"), name)
