"""A run's long lists (tenants, per-pair tallies, the timeline, cases, observations) read
back in the artifact's order a few thousand rows at a time, and the whole artifact written
from them as JSON text piece by piece: `memlife run --out` and `memlife report` hold the
digest of a run (builder.py) and never all its rows, at any number of pairs."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Connection
from sqlmodel import select

from memlife.recorder.artifact import (
    AdjudicationEntry,
    Artifact,
    CaseEntry,
    ExperimentDocument,
    JsonText,
    ObservationEntry,
    PairTallies,
    TenantEntry,
    TimelineStep,
    as_written,
    json_chunks,
)
from memlife.recorder.builder import (
    adjudication_entry,
    case_entry,
    observation_entry,
    pair_entry,
    tenant_entry,
    timeline_entry,
)
from memlife.recorder.database import engine_for
from memlife.recorder.experiment import FAMILIES, experiment_document
from memlife.recorder.queries import (
    experiment_run_ids,
    recorded_probes,
    run_builder,
    stage_labels,
)
from memlife.recorder.tables import (
    AdjudicationRow,
    ObservationMetricRow,
    ObservationRow,
    ObservationTraceRow,
    StepRow,
    TenantRow,
    VerdictRow,
)
from memlife.rules.scoring import InvariantTally, Tallies
from memlife.rules.verdicts import INVARIANTS

CHUNK = 5000
# The lists of an artifact, in its order, each after every other field (artifact.py).
LISTS = ("tenants", "pairs", "timeline", "cases", "adjudications", "observations")


def _stream(connection: Connection, statement: Any) -> Any:
    return connection.execution_options(yield_per=CHUNK).execute(statement)


def tenant_entries(
    run_id: str, url: str | None = None, *, pairs: Collection[int] | None = None
) -> Iterator[dict[str, Any]]:
    """The run's tenants by pair and role (only those of `pairs`, when given)."""
    statement = select(TenantRow).where(TenantRow.run_id == run_id)
    if pairs is not None:
        statement = statement.where(TenantRow.pair_index.in_(list(pairs)))  # type: ignore[attr-defined]
    with engine_for(url).connect() as connection:
        for row in _stream(connection, statement.order_by(TenantRow.pair_index, TenantRow.role)):
            yield tenant_entry(row)


def timeline_entries(
    run_id: str, url: str | None = None, *, pairs: Collection[int] | None = None
) -> Iterator[dict[str, Any]]:
    """Each pair's steps (only those of `pairs`, when given) with their verdicts' outcomes
    counted by the database, by pair and step."""
    steps = select(StepRow).where(StepRow.run_id == run_id)
    outcomes = select(
        VerdictRow.pair_index, VerdictRow.step_index, VerdictRow.outcome, func.count()
    ).where(VerdictRow.run_id == run_id)
    if pairs is not None:
        steps = steps.where(StepRow.pair_index.in_(list(pairs)))  # type: ignore[attr-defined]
        outcomes = outcomes.where(VerdictRow.pair_index.in_(list(pairs)))  # type: ignore[attr-defined]
    engine = engine_for(url)
    with engine.connect() as connection, engine.connect() as counting:
        counted = iter(
            _stream(
                counting,
                outcomes.group_by(
                    VerdictRow.pair_index, VerdictRow.step_index, VerdictRow.outcome
                ).order_by(VerdictRow.pair_index, VerdictRow.step_index, VerdictRow.outcome),
            )
        )
        pending = next(counted, None)
        for step in _stream(connection, steps.order_by(StepRow.pair_index, StepRow.step_index)):
            key = (step.pair_index, step.step_index)
            found: dict[str, int] = {}
            while pending is not None and tuple(pending[:2]) <= key:
                if tuple(pending[:2]) == key:
                    found[pending[2]] = pending[3]
                pending = next(counted, None)
            if found:  # the builder's order: pass, fail, inconclusive, each counted
                found = {
                    "pass": found.get("pass", 0),
                    "fail": found.get("fail", 0),
                    "inconclusive": found.get("inconclusive", 0),
                    **{k: v for k, v in found.items() if k not in ("pass", "fail", "inconclusive")},
                }
            yield timeline_entry(step, found)


def _verdicts(connection: Connection, run_id: str) -> Any:
    return _stream(
        connection,
        select(
            VerdictRow.pair_index,
            VerdictRow.step_index,
            VerdictRow.case_id,
            VerdictRow.stage,
            VerdictRow.tenant_alias,
            VerdictRow.domain,
            VerdictRow.store,
            VerdictRow.outcome,
            VerdictRow.checks_json,
        )
        .where(VerdictRow.run_id == run_id)
        .order_by(VerdictRow.pair_index, VerdictRow.step_index, VerdictRow.case_id),
    )


def case_entries(run_id: str, url: str | None = None) -> Iterator[dict[str, Any]]:
    """Every case with its checks, by pair, step and case."""
    with engine_for(url).connect() as connection:
        labels = stage_labels(connection, run_id)
        for verdict in _verdicts(connection, run_id):
            stage = (
                verdict.stage
                or labels.get((verdict.pair_index, verdict.step_index))
                or f"step-{verdict.step_index}"
            )
            yield case_entry(verdict, stage, json.loads(verdict.checks_json))


def pair_entries(run_id: str, url: str | None = None) -> Iterator[dict[str, Any]]:
    """Each pair's tallies by invariant, one pair at a time."""
    current: int | None = None
    tallies = Tallies()
    with engine_for(url).connect() as connection:
        for pair, checks_json in _stream(
            connection,
            select(VerdictRow.pair_index, VerdictRow.checks_json)
            .where(VerdictRow.run_id == run_id)
            .order_by(VerdictRow.pair_index),
        ):
            if pair != current:
                if current is not None:
                    yield pair_entry(current, tallies)
                current = pair
                tallies = Tallies({name: InvariantTally() for name in INVARIANTS})
            for check in json.loads(checks_json):
                tallies.add(check["invariant"], check["outcome"])
    if current is not None:
        yield pair_entry(current, tallies)


def adjudication_entries(run_id: str, url: str | None = None) -> list[dict[str, Any]]:
    """A reviewer's decisions: one per reviewed reply, few beside the cases."""
    with engine_for(url).connect() as connection:
        return [
            adjudication_entry(row)
            for row in connection.execute(
                select(AdjudicationRow)
                .where(AdjudicationRow.run_id == run_id)
                .order_by(
                    AdjudicationRow.pair_index, AdjudicationRow.step_index, AdjudicationRow.case_id
                )
            )
        ]


def observation_entries(run_id: str, url: str | None = None) -> Iterator[dict[str, Any]]:
    """Every request and what came back, by pair, step and sequence, with the numbers the
    target reported about it and its trace context: three streams merged in order."""
    engine = engine_for(url)
    with (
        engine.connect() as connection,
        engine.connect() as metric_db,
        engine.connect() as trace_db,
    ):
        aliases = {
            (pair, role): alias
            for pair, role, alias in connection.execute(
                select(TenantRow.pair_index, TenantRow.role, TenantRow.alias).where(
                    TenantRow.run_id == run_id
                )
            )
        }
        metrics = iter(
            _stream(
                metric_db,
                select(
                    ObservationMetricRow.pair_index,
                    ObservationMetricRow.step_index,
                    ObservationMetricRow.seq,
                    ObservationMetricRow.name,
                    ObservationMetricRow.value,
                )
                .where(ObservationMetricRow.run_id == run_id)
                .order_by(
                    ObservationMetricRow.pair_index,
                    ObservationMetricRow.step_index,
                    ObservationMetricRow.seq,
                ),
            )
        )
        traces = iter(
            _stream(
                trace_db,
                select(ObservationTraceRow)
                .where(ObservationTraceRow.run_id == run_id)
                .order_by(
                    ObservationTraceRow.pair_index,
                    ObservationTraceRow.step_index,
                    ObservationTraceRow.seq,
                ),
            )
        )
        metric, trace = next(metrics, None), next(traces, None)
        for o in _stream(
            connection,
            select(ObservationRow)
            .where(ObservationRow.run_id == run_id)
            .order_by(ObservationRow.pair_index, ObservationRow.step_index, ObservationRow.seq),
        ):
            key = (o.pair_index, o.step_index, o.seq)
            found: dict[str, float] = {}
            while metric is not None and tuple(metric[:3]) <= key:
                if tuple(metric[:3]) == key:
                    found[metric.name] = metric.value
                metric = next(metrics, None)
            carried = None
            while trace is not None and (trace.pair_index, trace.step_index, trace.seq) <= key:
                if (trace.pair_index, trace.step_index, trace.seq) == key:
                    carried = trace
                trace = next(traces, None)
            yield observation_entry(o, aliases.get((o.pair_index, o.role), o.role), found, carried)


class RunLists:
    """A run's tenants, timeline and cases, each read afresh from the recorder at every
    call (what a report needs of reports/lists.py's `Lists`)."""

    def __init__(self, run_id: str, url: str | None = None) -> None:
        self.run_id, self.url = run_id, url

    def tenants(self) -> Iterator[dict[str, Any]]:
        return tenant_entries(self.run_id, self.url)

    def timeline(self, pairs: Collection[int] | None = None) -> Iterator[dict[str, Any]]:
        return timeline_entries(self.run_id, self.url, pairs=pairs)

    def cases(self) -> Iterator[dict[str, Any]]:
        return case_entries(self.run_id, self.url)


def report_artifact(
    run_id: str,
    url: str | None = None,
    *,
    invariants: Collection[str] | None = None,
) -> tuple[Artifact, Sequence[float], RunLists] | None:
    """What a report reads of a run: its digest with each pair's tallies (of `invariants`
    only, when given: a report's rates need four) and the adjudications (the artifact
    without its lists), the answered probes' latencies (the report's samples, a compact
    array), and its lists to read as the report is written. Its memory grows with the
    findings, not with the steps, cases or requests of the run."""
    built = run_builder(run_id, url)
    if built is None:
        return None
    builder, pairs = built
    tallies = [
        entry
        if invariants is None
        else {
            "pair": entry["pair"],
            "by_invariant": {
                name: tally for name, tally in entry["by_invariant"].items() if name in invariants
            },
        }
        for entry in pair_entries(run_id, url)
    ]
    document = {
        **builder.digest_fields(pairs),
        "pairs": tallies,
        "adjudications": adjudication_entries(run_id, url),
    }
    return Artifact.model_validate(document), builder.probe_latencies, RunLists(run_id, url)


def artifact_parts(
    run_id: str, url: str | None = None
) -> tuple[dict[str, Any], list[tuple[str, Iterable[dict[str, Any]]]]] | None:
    """The run's whole artifact as its fields but the lists, and each list as entries read
    from the recorder as they are taken: its digest is held, never its lists. None for a
    run the recorder does not hold."""
    built = run_builder(run_id, url)
    if built is None:
        return None
    builder, pairs = built
    head = Artifact.model_validate(builder.digest_fields(pairs)).model_dump(mode="json")
    for name in LISTS:
        head.pop(name)
    return head, [
        ("tenants", as_written(TenantEntry, tenant_entries(run_id, url))),
        ("pairs", as_written(PairTallies, pair_entries(run_id, url))),
        ("timeline", as_written(TimelineStep, timeline_entries(run_id, url))),
        ("cases", as_written(CaseEntry, case_entries(run_id, url))),
        ("adjudications", as_written(AdjudicationEntry, adjudication_entries(run_id, url))),
        ("observations", as_written(ObservationEntry, observation_entries(run_id, url))),
    ]


def artifact_chunks(run_id: str, url: str | None = None) -> Iterator[str] | None:
    """The run's whole artifact (what `memlife run --out` writes) as pieces of JSON text,
    written from `artifact_parts`. None for a run the recorder does not hold."""
    parts = artifact_parts(run_id, url)
    return None if parts is None else json_chunks(*parts)


def report_experiment(
    experiment: str,
    url: str | None = None,
) -> tuple[ExperimentDocument, dict[str, RunLists]] | None:
    """An experiment's comparison from the recorder, and each run's lists by run id. The
    document's runs are digests with each pair's tallies of the checks the comparison
    rates (report_artifact); the probes' figures are the database's, pooled by
    configuration (recorded_probes). Its memory grows with the runs' findings, not with
    their cases or requests. None for an experiment the recorder has no run of."""
    digests, lists = [], {}
    for run_id in experiment_run_ids(experiment, url):
        reported = report_artifact(run_id, url, invariants=set(FAMILIES.values()))
        if reported is None:  # indexed, then deleted from the runs table by hand
            continue
        digests.append(reported[0])
        lists[run_id] = reported[2]
    if not digests:
        return None
    digests.sort(key=lambda a: (a.meta.repetition or 0, a.meta.started_at or ""))
    return experiment_document(experiment, digests, recorded_probes(url)), lists


def experiment_chunks(document: ExperimentDocument, url: str | None = None) -> Iterator[str]:
    """The whole experiment document (what `memlife run --experiment --out` writes: the
    comparison, then every run's whole artifact) as pieces of JSON text, each run's
    artifact streamed from the recorder as `artifact_chunks` writes it."""

    def whole_runs() -> Iterator[JsonText]:
        for run in document.runs:
            chunks = artifact_chunks(run.meta.run_id, url)
            if chunks is None:
                raise LookupError(f"run {run.meta.run_id} is not in the recorder")
            yield JsonText(chunks)

    return json_chunks(document.model_dump(mode="json", exclude={"runs"}), [("runs", whole_runs())])
