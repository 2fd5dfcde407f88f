"""The recorder's tables: runs, tenants, steps, observations (and the numbers a target
reports about them), verdicts, adjudications, erasure receipts, and a run's materialized
pairs and values. Every row has a deterministic primary key derived from (run, pair, step,
...), so a retried write rewrites the same row."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel


class RunRow(SQLModel, table=True):
    __tablename__ = "runs"
    id: str = Field(primary_key=True)
    scenario: str = Field(index=True)
    scenario_sha256: str
    target_name: str
    target_base_url: str
    clock: str
    meta_json: str
    status: str = "running"
    started_at: datetime
    finished_at: datetime | None = None
    summary_json: str | None = None


class RunExperimentRow(SQLModel, table=True):
    """Which experiment a run belongs to ('' for none): how an experiment's runs are found
    by an index rather than by reading every run's meta (a table of its own, so older
    recorders still open; their runs are indexed on first use, queries.py)."""

    __tablename__ = "run_experiments"
    run_id: str = Field(primary_key=True)
    experiment: str = Field(index=True)


class TenantRow(SQLModel, table=True):
    __tablename__ = "tenants"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    pair_index: int
    role: str
    alias: str
    phone: str
    language: str
    user_id: str | None = None


class StepRow(SQLModel, table=True):
    __tablename__ = "steps"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    pair_index: int
    step_index: int
    kind: str
    label: str = ""
    scenario_started: datetime
    scenario_finished: datetime
    wall_started: datetime
    wall_finished: datetime


class ObservationRow(SQLModel, table=True):
    __tablename__ = "observations"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    pair_index: int
    step_index: int
    seq: int
    role: str
    tenant_alias: str
    kind: str
    domain: str | None = None
    case_id: str | None = None
    request: str
    reply: str | None = None
    context: str | None = None
    status: str
    http_status: int | None = None
    error: str | None = None
    latency_ms: float | None = None
    scenario_time: datetime
    wall_time: datetime


class ObservationMetricRow(SQLModel, table=True):
    """Numbers a target reports about one turn: a Server-Timing stage (`stage:retrieval`,
    ms), its cost (`cost`) or token count (`tokens`). A table of its own, so recorder
    databases written before it existed gain it without a migration."""

    __tablename__ = "observation_metrics"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    observation_id: str
    pair_index: int
    step_index: int
    seq: int
    name: str
    value: float


class ObservationTraceRow(SQLModel, table=True):
    """The W3C trace context an observation's request carried (rules/tracing.py): what a
    user searches their tracing tool for. A table of its own, as observation_metrics is."""

    __tablename__ = "observation_traces"
    id: str = Field(primary_key=True)  # the observation's id
    run_id: str = Field(index=True)
    pair_index: int
    step_index: int
    seq: int
    trace_id: str
    span_id: str


class AdjudicationRow(SQLModel, table=True):
    """A reviewer's decision on a reply exact matching failed, and what it means for each
    check (exact outcome beside adjudicated outcome)."""

    __tablename__ = "adjudications"
    id: str = Field(primary_key=True)  # the item's ticket
    run_id: str = Field(index=True)
    pair_index: int
    step_index: int
    stage: str
    case_id: str
    tenant_alias: str
    kind: str
    reviewer: str
    decided_at: datetime
    asserted_json: str  # the candidate values the reviewer says the reply states
    abstains: bool
    note: str = ""
    exact_json: str
    checks_json: str


class ErasureReceiptRow(SQLModel, table=True):
    """The erasure receipt of a deletion check, kept beyond Temporal's retention period:
    what an operator attaches to a right-to-erasure request. Values only as labels."""

    __tablename__ = "erasure_receipts"
    id: str = Field(primary_key=True)  # the check id
    tenant: str = Field(index=True)
    target_name: str
    verdict: str
    started_at: datetime
    finished_at: datetime | None = None
    receipt_json: str


class VerdictRow(SQLModel, table=True):
    __tablename__ = "verdicts"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    pair_index: int
    step_index: int
    stage: str = ""
    case_id: str
    role: str
    tenant_alias: str
    domain: str
    store: str = "response"
    outcome: str
    passed: bool
    latency_ms: float | None = None
    checks_json: str
    findings_json: str


class RunPairRow(SQLModel, table=True):
    """A run's materialized pairs, for cohorts to load (their values are in run_values)."""

    __tablename__ = "run_pairs"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    pair_index: int
    pair_json: str


class RunValueRow(SQLModel, table=True):
    """Every fact value of a run and who owns it: a reply holding a value of a tenant
    outside the probed pair is a leak too."""

    __tablename__ = "run_values"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    pair_index: int
    role: str
    alias: str
    domain: str
    text: str


class TargetClaimRow(SQLModel, table=True):
    """A phone or fact value that one run used against one long-lived target: no other run
    against that target uses it again (recorder/claims.py). `owner` names the tenant, so a
    value seen in another run's answer is attributed to the run and tenant it belongs to."""

    __tablename__ = "target_claims"
    id: str = Field(primary_key=True)  # sha256 of (target, kind, normalized text)
    target: str = Field(index=True)
    kind: str  # "phone" | "value"
    text: str
    run_id: str = Field(index=True)
    owner: str  # "<alias> (pair <n>)"; a phone: the alias
    domain: str = ""


class RetiredClaimRow(SQLModel, table=True):
    """A claim retired from target_claims (recorder/claims.py: retire_claims), kept for
    the record: which run used what against the target, and why it was let go. Never read
    when a run is prepared, so it may grow with the target's history."""

    __tablename__ = "retired_target_claims"
    # A value may be claimed again once retired (the same seed draws it again): one row
    # per claim per run.
    id: str = Field(primary_key=True)  # sha256 of (the claim's id, run)
    claim_id: str
    target: str = Field(index=True)
    kind: str
    text: str
    run_id: str = Field(index=True)
    owner: str
    domain: str = ""
    retired_at: datetime
    reason: str


class ClaimReviewRow(SQLModel, table=True):
    """A finished run whose claims against a target were reviewed once (its verdicts are
    final): what retired, and what stays claimed because it may still be on the target."""

    __tablename__ = "target_claim_reviews"
    id: str = Field(primary_key=True)  # sha256 of (target, run)
    target: str = Field(index=True)
    run_id: str
    reviewed_at: datetime
    retired: int
    kept: int


class ClaimGenerationRow(SQLModel, table=True):
    """Bumped whenever a target's value claims change (claimed or retired): how a worker
    knows its index of other runs' values is stale, in one read by key."""

    __tablename__ = "target_claim_generations"
    target: str = Field(primary_key=True)
    generation: int = 0


class RegistrationAttemptRow(SQLModel, table=True):
    """One phone a registration tried, written before its requests are sent and again
    after each answer (activities/target.py: register): a retried registration finds the
    user its earlier attempt created instead of creating another (recorder/registrations.py).
    Kept until the run's claims are reviewed."""

    __tablename__ = "registration_attempts"
    id: str = Field(primary_key=True)  # sha256 of (registration key, phone)
    key: str = Field(index=True)
    run_id: str = Field(index=True)
    tenant_alias: str
    phone: str
    outcome: str  # "sent" | "refused" | "registered"
    steps_done: int = 0
    answer_json: str = "{}"  # what the answered steps extracted, their status and latency


class StagedReadsRow(SQLModel, table=True):
    """An inspection's store reads, whole, from the activity that made them until the step
    that judges them is recorded (recorder/staging.py): their records are the bulk of a
    cohort's results, and workflow history carries only the key."""

    __tablename__ = "staged_reads"
    id: str = Field(primary_key=True)  # <run>/<pair>/<step>/<case>
    run_id: str = Field(index=True)
    reads_json: str


class RunSetupRow(SQLModel, table=True):
    """A cohort run's scenario (as written) and target, written once by the suite for its
    cohorts to read (contracts.CohortInput): not carried in every cohort's input."""

    __tablename__ = "run_setups"
    run_id: str = Field(primary_key=True)
    scenario_json: str
    target_json: str
