"""Recording activities: load what the rules need, let them judge (rules/judging.py), and
write the trail to the recorder.

Synchronous (SQLAlchemy is blocking), run on the worker's thread pool. Idempotent: rows
have deterministic keys and are merged, so a retry never duplicates a row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from itertools import islice
from typing import Any

from sqlmodel import select
from temporalio import activity
from temporalio.exceptions import ApplicationError

from memlife import contracts, recorder
from memlife.activities.invariance import record_twin_verdicts
from memlife.contracts import (
    CohortSetup,
    PreparedRun,
    RunInput,
    RunSummary,
    StepOutcome,
    StepRecord,
)
from memlife.log import get_logger
from memlife.recorder.values import foreign_values, forget_run_values
from memlife.rules.erasure import ErasureReceipt
from memlife.rules.evidence import Observation
from memlife.rules.judging import judge_step
from memlife.rules.pairs import TenantIdentity, generated_pairs, pair_values
from memlife.rules.scenario import Pair, Scenario
from memlife.rules.target import Target
from memlife.rules.tracing import trace_ids

log = get_logger("memlife.activities.record")


@activity.defn(name=contracts.RECORD_RUN_STARTED.name)
def record_run_started(run: RunInput) -> None:
    meta = run.meta.model_dump(mode="json")
    meta["latency_budget_ms"] = run.scenario.latency_budget.total_seconds() * 1000
    with recorder.session() as db:
        existing = db.get(recorder.RunRow, run.run_id)
        started_at = existing.started_at if existing else datetime.now(UTC)
        db.merge(
            recorder.RunRow(
                id=run.run_id,
                scenario=run.scenario.name,
                scenario_sha256=run.meta.scenario_sha256,
                target_name=run.target.name,
                target_base_url=run.target.base_url,
                clock=run.clock.describe(),
                meta_json=recorder.dumps(meta),
                status="running",
                started_at=started_at,
            )
        )
        db.merge(recorder.RunExperimentRow(run_id=run.run_id, experiment=run.meta.experiment or ""))
    _write_chunked(recorder.RunValueRow, _value_rows(run.run_id, run.scenario.pairs, 0), 2000)


@activity.defn(name=contracts.PREPARE_RUN.name)
def prepare_run(run: RunInput) -> PreparedRun:
    """Every run's first activity, however it was started (`memlife run`, a schedule, the
    bench, cohorts or not, a fresh or a shared target): the run's record, then its pairs
    drawn from its seed, with values no other run used against a shared target
    (recorder/claims.py). Cohorts read their pairs from the recorder; a run of pair
    workflows gets them back in its input. Idempotent: a retry writes the same rows and
    claims what it claimed before."""
    seed = run.seed or run.run_id
    if run.cohort_size:
        run = run.model_copy(update={"seed": seed})
        record_run_started(run)  # first: materializing reads whether the target is shared
        return PreparedRun(
            run=run, pairs=materialize_pairs(run.run_id, run.scenario, seed, run.target)
        )
    from memlife.recorder.claims import materialize_unclaimed

    scenario = materialize_unclaimed(run.scenario, seed, run.run_id, run.meta.shared_target())
    run = run.model_copy(update={"scenario": scenario, "seed": seed})
    record_run_started(run)
    return PreparedRun(run=run, pairs=len(scenario.pairs))


@activity.defn(name=contracts.MATERIALIZE_PAIRS.name)
def materialize_pairs(
    run_id: str, scenario: Scenario, seed: str, target: Target | None = None
) -> int:
    """Materialize the run's pairs from its seed into the recorder (pairs and values);
    idempotent, so a retry writes the same rows. Returns the number of pairs. Against a
    shared target, values no other run used there (recorder/claims.py). With `target`,
    the scenario and the target are kept for the run's cohorts to read (load_cohort)."""
    if target is not None:
        recorder.merge_values(
            {
                recorder.RunSetupRow: [
                    {
                        "run_id": run_id,
                        "scenario_json": scenario.model_dump_json(),
                        "target_json": target.model_dump_json(),
                    }
                ]
            }
        )
    from memlife.recorder.claims import materialize_unclaimed
    from memlife.recorder.values import run_shared_target

    shared = run_shared_target(run_id)
    pairs: Iterable[Pair]
    if shared is None and scenario.generate is not None:
        # Drawn and written a chunk at a time: ten thousand pairs held at once took a
        # worker's memory up by about 200 MB, its peak (docs/scale.md, "Memory").
        pairs = generated_pairs(scenario, seed)
    else:  # values claimed against a shared target are claimed all at once
        pairs = materialize_unclaimed(scenario, seed, run_id, shared).pairs
    iterator, written = iter(pairs), 0
    while chunk := list(islice(iterator, _PAIRS_PER_CHUNK)):
        _write_chunked(
            recorder.RunPairRow,
            (
                {
                    "id": f"{run_id}/{index}",
                    "run_id": run_id,
                    "pair_index": index,
                    "pair_json": pair.model_dump_json(),
                }
                for index, pair in enumerate(chunk, start=written)
            ),
        )
        _write_chunked(recorder.RunValueRow, _value_rows(run_id, chunk, written))
        written += len(chunk)
    log.info("pairs materialized", run=run_id, pairs=written)
    return written


_PAIRS_PER_CHUNK = 500  # a few MB of pairs at a time; about 6,000 value rows


def _write_chunked(model: type[Any], rows: Iterable[dict[str, Any]], size: int = 5000) -> None:
    """Short transactions, and never every row in memory at once."""
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        recorder.merge_values({model: chunk})


@activity.defn(name=contracts.LOAD_PAIRS.name)
def load_pairs(run_id: str, first: int, count: int) -> list[Pair]:
    with recorder.session() as db:
        rows = db.exec(
            select(recorder.RunPairRow)
            .where(
                recorder.RunPairRow.run_id == run_id,
                recorder.RunPairRow.pair_index >= first,
                recorder.RunPairRow.pair_index < first + count,
            )
            .order_by(recorder.RunPairRow.pair_index)
        ).all()
        pairs = [Pair.model_validate_json(row.pair_json) for row in rows]
    if len(pairs) != count:
        raise ApplicationError(
            f"run {run_id} has {len(pairs)} of pairs {first}–{first + count - 1} recorded",
            type="MissingPairs",
        )
    return pairs


@activity.defn(name=contracts.LOAD_COHORT.name)
def load_cohort(run_id: str, first: int, count: int) -> CohortSetup:
    """A cohort's scenario, target and pairs, as the suite recorded them."""
    with recorder.session() as db:
        setup = db.get(recorder.RunSetupRow, run_id)
        if setup is None:
            raise ApplicationError(
                f"run {run_id} has no scenario and target recorded for its cohorts",
                type="MissingPairs",
            )
        scenario_json, target_json = setup.scenario_json, setup.target_json
    return CohortSetup(
        scenario=Scenario.model_validate_json(scenario_json),
        target=Target.model_validate_json(target_json),
        pairs=load_pairs(run_id, first, count),
    )


def _value_rows(run_id: str, pairs: list[Pair], first: int) -> Iterator[dict[str, Any]]:
    for v in pair_values(pairs, first):
        yield {
            "id": f"{run_id}/{v.pair}/{v.role}/{v.domain}/{v.position}",
            "run_id": run_id,
            "pair_index": v.pair,
            "role": v.role,
            "alias": v.alias,
            "domain": v.domain,
            "text": v.text,
        }


@activity.defn(name=contracts.RECORD_TENANTS.name)
def record_tenants(run_id: str, pair_index: int, tenants: list[TenantIdentity]) -> None:
    record_tenant_sets(run_id, [pair_index], [tenants])


def _judge(step: StepRecord) -> StepOutcome:
    """The rules decide (rules/judging.py); this only gives them the run's other values."""
    foreign = foreign_values(step.run_id, step.pair_index) if step.cases else None
    verdicts, summaries = judge_step(
        step.cases,
        step.observations,
        step.inspections,
        step.reads,
        step.stores,
        step.latency_budget_ms,
        foreign,
    )
    return StepOutcome(verdicts=verdicts + list(step.verdicts), inspections=summaries)


def _metrics(observation: Observation) -> dict[str, float]:
    metrics = {f"stage:{name}": value for name, value in observation.stages.items()}
    if observation.cost is not None:
        metrics["cost"] = observation.cost
    if observation.tokens is not None:
        metrics["tokens"] = float(observation.tokens)
    return metrics


def whole_steps(steps: list[StepRecord]) -> list[StepRecord]:
    """Each step whole: its cases with their forbidden values (StepRecord.case_forbidden),
    its inspections' reads with their records, loaded from where the inspection staged
    them (recorder/staging.py). Reads that are not there any more are errors, never empty:
    their stores are inconclusive, as if they could not be read."""
    steps = [step.with_forbidden_per_case() for step in steps]
    keys = [key for step in steps for key in step.staged_reads.values()]
    if not keys:
        return steps
    staged = recorder.staged_reads(keys)
    whole = []
    for step in steps:
        reads = dict(step.reads)
        for case_id, key in step.staged_reads.items():
            reads[case_id] = staged.get(key) or [
                read.model_copy(
                    update={
                        "status": "error",
                        "records": [],
                        "error": f"the records of this read, staged as {key!r}, are not in the "
                        "recorder",
                    }
                )
                for read in step.reads.get(case_id, [])
            ]
        whole.append(step.model_copy(update={"reads": reads}))
    return whole


@activity.defn(name=contracts.RECORD_STEP.name)
def record_step(step: StepRecord) -> StepOutcome:
    """Judge the step's probe cases and store reads, then write everything."""
    [step] = whole_steps([step])
    rows, outcome = _step_rows(step)
    recorder.merge_values(rows)
    _log_step(step, outcome)
    return outcome


@activity.defn(name=contracts.RECORD_STEPS.name)
def record_steps(steps: list[StepRecord]) -> list[StepOutcome]:
    """A cohort's step, every pair's share judged and written in one transaction."""
    rows: dict[type[Any], list[dict[str, Any]]] = {}
    outcomes = []
    steps = whole_steps(steps)
    for step in steps:
        step_rows, outcome = _step_rows(step)
        for model, values in step_rows.items():
            rows.setdefault(model, []).extend(values)
        outcomes.append(outcome)
    recorder.merge_values(rows)
    for step, outcome in zip(steps, outcomes, strict=True):
        _log_step(step, outcome)
    return outcomes


@activity.defn(name=contracts.RECORD_TENANT_SETS.name)
def record_tenant_sets(
    run_id: str, pair_indexes: list[int], tenant_sets: list[list[TenantIdentity]]
) -> None:
    """record_tenants for many pairs at once."""
    recorder.merge_all(
        [
            recorder.TenantRow(
                id=f"{run_id}/{pair_index}/{t.role}",
                run_id=run_id,
                pair_index=pair_index,
                role=t.role,
                alias=t.alias,
                phone=t.phone,
                language=t.language,
                user_id=t.user_id,
            )
            for pair_index, tenants in zip(pair_indexes, tenant_sets, strict=True)
            for t in tenants
        ]
    )


def _log_step(step: StepRecord, outcome: StepOutcome) -> None:
    failed = sum(1 for v in outcome.verdicts if v.outcome == "fail")
    log.info(
        "step recorded",
        pair=step.pair_index,
        step=step.step_index,
        kind=step.kind,
        stage=step.stage,
        observations=len(step.observations),
        verdicts=len(outcome.verdicts),
        failed=failed,
    )


def _step_rows(step: StepRecord) -> tuple[dict[type[Any], list[dict[str, Any]]], StepOutcome]:
    """The step's rows as plain dicts per table (model instances cost a busy worker a tenth
    of its CPU, to be taken apart again at once), and its judged outcome."""
    prefix = f"{step.run_id}/{step.pair_index}/{step.step_index}"
    aliases = {t.role: t.alias for t in step.tenants}
    outcome = _judge(step)
    common = {"run_id": step.run_id, "pair_index": step.pair_index, "step_index": step.step_index}
    rows: dict[type[Any], list[dict[str, Any]]] = {
        recorder.StepRow: [
            {
                "id": prefix,
                **common,
                "kind": step.kind,
                "label": step.label,
                "scenario_started": step.scenario_started,
                "scenario_finished": step.scenario_finished,
                "wall_started": step.wall_started,
                "wall_finished": step.wall_finished,
            }
        ],
        recorder.ObservationRow: [
            {
                "id": f"{prefix}/{o.seq}",
                **common,
                "seq": o.seq,
                "role": o.role,
                "tenant_alias": aliases.get(o.role, o.role),
                "kind": o.kind,
                "domain": o.domain,
                "case_id": o.case_id,
                "request": o.request,
                "reply": o.reply,
                "context": o.context,
                "http_status": o.http_status,
                "status": recorder.REFUSED if o.refused else o.status,
                "error": o.error,
                "latency_ms": o.latency_ms,
                "scenario_time": o.scenario_time,
                "wall_time": o.wall_time,
            }
            for o in step.observations
        ],
        recorder.ObservationMetricRow: [
            {
                "id": f"{prefix}/{o.seq}/{name}",
                **common,
                "observation_id": f"{prefix}/{o.seq}",
                "seq": o.seq,
                "name": name,
                "value": value,
            }
            for o in step.observations
            for name, value in _metrics(o).items()
        ],
        recorder.ObservationTraceRow: [
            {
                "id": f"{prefix}/{o.seq}",
                **common,
                "seq": o.seq,
                "trace_id": ids[0],
                "span_id": ids[1],
            }
            for o in step.observations
            if (ids := trace_ids(o.traceparent))
        ],
        recorder.VerdictRow: [
            {
                "id": f"{prefix}/{v.case_id}",
                **common,
                "stage": step.stage,
                "case_id": v.case_id,
                "role": v.role,
                "tenant_alias": v.tenant_alias,
                "domain": v.domain,
                "store": v.store,
                "outcome": v.outcome,
                "passed": v.passed,
                "latency_ms": v.latency_ms,
                "checks_json": recorder.dumps([c.model_dump() for c in v.checks]),
                "findings_json": recorder.dumps([f.model_dump() for f in v.findings]),
            }
            for v in outcome.verdicts
        ],
    }
    return rows, outcome


@activity.defn(name=contracts.FINISH_RUN.name)
def finish_run(
    run_id: str, failed_pairs: list[int], cancelled_pairs: list[int] | None = None
) -> RunSummary:
    """Close the run and compute its summary from what was recorded. A run with a failed
    or cancelled pair lifecycle is not `finished`, and never passes."""
    recorder.drop_staged_reads(run_id)  # every step is recorded: nothing loads them again
    twins = record_twin_verdicts(run_id)  # neighbour invariance (N1), before the summary
    # Nor looks a value up: the index (48 MB at 10,000 pairs) goes before the summary, so
    # the summary reuses its memory instead of adding to the worker's peak (BENCHMARKS.md).
    forget_run_values(run_id)
    with recorder.session() as db:
        run = db.get(recorder.RunRow, run_id)
        if run is None:
            raise RuntimeError(f"run {run_id} was never recorded")
        if run.finished_at is None:
            run.finished_at = datetime.now(UTC)
        if failed_pairs:
            run.status = (
                "incomplete: pair lifecycle(s) " + ", ".join(map(str, failed_pairs)) + " failed"
            )
        elif cancelled_pairs:
            run.status = (
                "cancelled: pair lifecycle(s) "
                + ", ".join(map(str, cancelled_pairs))
                + " cancelled by an operator"
            )
        else:
            run.status = "finished"
        db.add(run)
    # Streamed from the recorder: a run of any size is summarized in bounded memory.
    built = recorder.run_builder(run_id, summary_only=True)
    assert built is not None
    builder, _ = built
    summary = builder.summary()
    with recorder.session() as db:
        run = db.get(recorder.RunRow, run_id)
        assert run is not None
        run.summary_json = json.dumps(summary)
        db.add(run)
    failures = builder.failure_count
    log.info(
        "run finished",
        run_id=run_id,
        cases=summary["cases"],
        failures=failures,
        twin_verdicts=twins,
    )
    return RunSummary(
        run_id=run_id,
        passed=summary["passed"],
        cases=summary["cases"],
        cases_passed=summary["cases_passed"],
        failures=failures,
        inconclusive=builder.inconclusive_count,
        latency_within_target=summary["latency_within_target"],
    )


@activity.defn(name=contracts.PREPARE_SCHEDULED_RUN.name)
def prepare_scheduled_run(run: RunInput, run_id: str) -> RunInput:
    """A scheduled run gets its own id, canary seed and fresh tenants each time it starts:
    values no other run used against its target (recorder/claims.py)."""
    from memlife.recorder.claims import materialize_unclaimed

    meta = run.meta.model_copy(
        update={"canary_seed": run_id if run.scenario.generate is not None else None}
    )
    if run.cohort_size:  # the suite materializes the pairs into the recorder itself
        return run.model_copy(update={"run_id": run_id, "seed": run_id, "meta": meta})
    scenario = materialize_unclaimed(run.scenario, run_id, run_id, meta.shared_target())
    return run.model_copy(update={"run_id": run_id, "scenario": scenario, "meta": meta})


@activity.defn(name=contracts.RECORD_RECEIPT.name)
def record_receipt(receipt: ErasureReceipt) -> None:
    """Keep the receipt in the recorder (idempotent: one row per check)."""
    recorder.merge_all(
        [
            recorder.ErasureReceiptRow(
                id=receipt.check_id,
                tenant=receipt.tenant,
                target_name=receipt.target_name,
                verdict=receipt.verdict,
                started_at=receipt.started_at,
                finished_at=receipt.finished_at,
                receipt_json=receipt.model_dump_json(),
            )
        ]
    )
    log.info("erasure receipt recorded", check=receipt.check_id, verdict=receipt.verdict)
