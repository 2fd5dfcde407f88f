"""Reading a run back: every row of it (the whole artifact), or its rows streamed a few
thousand at a time into an ArtifactBuilder (the summary and digest of a run of any size in
bounded memory), or its values."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Connection
from sqlmodel import Session, select

from memlife.recorder.artifact import ANSWERED, REFUSED, Artifact
from memlife.recorder.builder import ArtifactBuilder, stage_fields
from memlife.recorder.database import engine_for, session
from memlife.recorder.experiment import ProbeFigures, spread
from memlife.recorder.tables import (
    AdjudicationRow,
    ObservationMetricRow,
    ObservationRow,
    ObservationTraceRow,
    RunExperimentRow,
    RunRow,
    RunValueRow,
    StepRow,
    TenantRow,
    VerdictRow,
)
from memlife.rules.scoring import summarize_ordered_latency


def load_run(run_id: str, url: str | None = None) -> dict[str, list[Any]] | None:
    """Every row of one run, for the artifact builder."""
    with session(url) as db:
        run = db.get(RunRow, run_id)
        if run is None:
            return None
        by_run = {
            "tenants": TenantRow,
            "steps": StepRow,
            "observations": ObservationRow,
            "verdicts": VerdictRow,
            "values": RunValueRow,
            "metrics": ObservationMetricRow,
            "adjudications": AdjudicationRow,
            "traces": ObservationTraceRow,
        }
        found: dict[str, list[Any]] = {"run": [run]}
        for name, model in by_run.items():
            rows = db.exec(select(model).where(model.run_id == run_id)).all()
            found[name] = list(rows)
        for rows in found.values():
            for row in rows:
                db.expunge(row)
        return found


def run_builder(
    run_id: str,
    url: str | None = None,
    *,
    summary_only: bool = False,
) -> tuple[Any, int] | None:
    """An `ArtifactBuilder` fed with a run's rows streamed from the database, a few
    thousand at a time, and the run's number of pairs: the summary (and the digest) of a
    run of any size in bounded memory. `summary_only` skips what the summary does not
    need: latency figures but the slowest, Server-Timing stages, costs, and the findings
    themselves (they are counted). The run's lists are read by recorder/streams.py."""
    chunk = 5000
    engine = engine_for(url)
    with Session(engine) as db:
        run = db.get(RunRow, run_id)
        if run is None:
            return None
        db.expunge(run)
    with engine.connect() as connection:
        labels = stage_labels(connection, run_id)
        pair_indexes = list(
            connection.execute(
                select(TenantRow.pair_index).where(TenantRow.run_id == run_id).distinct()
            ).scalars()
        )
        builder = ArtifactBuilder(
            run, labels, keep_entries=False, keep_findings=not summary_only, keep_samples=False
        )
        verdicts = connection.execution_options(yield_per=chunk).execute(
            select(
                VerdictRow.pair_index,
                VerdictRow.step_index,
                VerdictRow.case_id,
                VerdictRow.stage,
                VerdictRow.tenant_alias,
                VerdictRow.domain,
                VerdictRow.store,
                VerdictRow.outcome,
                VerdictRow.passed,
                VerdictRow.latency_ms,
                VerdictRow.checks_json,
                VerdictRow.findings_json,
            )
            .where(VerdictRow.run_id == run_id)
            .order_by(VerdictRow.pair_index, VerdictRow.step_index, VerdictRow.case_id)
        )
        for verdict in verdicts:
            builder.add_verdict(verdict)
        builder.target_errors = connection.execute(
            select(func.count())
            .select_from(ObservationRow)
            .where(ObservationRow.run_id == run_id, ObservationRow.status.not_in(ANSWERED))
        ).scalar_one()
        builder.refusals = connection.execute(
            select(func.count())
            .select_from(ObservationRow)
            .where(ObservationRow.run_id == run_id, ObservationRow.status == REFUSED)
        ).scalar_one()
        answered = _answered_probes(run_id)
        if summary_only:  # the latency rule needs the slowest probe only
            builder.probe_count, builder.probe_max = connection.execute(
                select(func.count(), func.max(ObservationRow.latency_ms)).where(*answered)
            ).one()
            return builder, len(pair_indexes)
        probes = connection.execution_options(yield_per=chunk).execute(
            select(
                ObservationRow.pair_index,
                ObservationRow.step_index,
                ObservationRow.seq,
                ObservationRow.latency_ms,
            )
            .where(*answered)
            .order_by(ObservationRow.pair_index, ObservationRow.step_index, ObservationRow.seq)
        )
        # Metrics in the same (integer) order as the probes, merged as both streams go by.
        metrics = iter(
            connection.execution_options(yield_per=chunk).execute(
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
                )
            )
        )
        builder.cost_by_pair = dict.fromkeys(pair_indexes, 0.0)
        pending = next(metrics, None)
        for pair, step, seq, latency in probes:
            found: dict[str, float] = {}
            while pending is not None and tuple(pending[:3]) <= (pair, step, seq):
                if tuple(pending[:3]) == (pair, step, seq):
                    found[pending.name] = pending.value
                if pending.name == "cost":
                    builder.add_cost(pending.pair_index, pending.value)
                pending = next(metrics, None)
            builder.add_probe(latency, found)
        while pending is not None:
            if pending.name == "cost":
                builder.add_cost(pending.pair_index, pending.value)
            pending = next(metrics, None)
        _summarize_latencies(connection, builder, run_id, chunk)
    return builder, len(pair_indexes)


def _answered_probes(*run_ids: str) -> tuple[Any, ...]:
    """The probes the target answered, whose latencies the runs are judged by."""
    return (
        ObservationRow.run_id.in_(run_ids),
        ObservationRow.kind == "probe",
        ObservationRow.status.in_(ANSWERED),
        ObservationRow.latency_ms.is_not(None),
    )


def _sorted_latencies(connection: Connection, chunk: int, *run_ids: str) -> Iterator[float]:
    """The answered probes' latencies, in ascending order as the database sorts them."""
    return (
        connection.execution_options(yield_per=chunk)
        .execute(
            select(ObservationRow.latency_ms)
            .where(*_answered_probes(*run_ids))
            .order_by(ObservationRow.latency_ms)
        )
        .scalars()
    )


def _sorted_stages(
    connection: Connection,
    chunk: int,
    *run_ids: str,
) -> Iterator[tuple[str, int, Iterator[float]]]:
    """Each Server-Timing stage of the answered probes, by name: how many values it has,
    and the values in ascending order as the database sorts them. A stage counts where
    its probe was answered, as in the builder (builder.py)."""
    of_answered = (
        ObservationMetricRow.run_id.in_(run_ids),
        ObservationMetricRow.name.startswith("stage:"),
        *_answered_probes(*run_ids),
    )
    joined = (ObservationRow, ObservationRow.id == ObservationMetricRow.observation_id)
    counts = connection.execute(
        select(ObservationMetricRow.name, func.count())
        .join(*joined)
        .where(*of_answered)
        .group_by(ObservationMetricRow.name)
    ).all()
    for name, count in sorted(counts):
        values = (
            connection.execution_options(yield_per=chunk)
            .execute(
                select(ObservationMetricRow.value)
                .join(*joined)
                .where(*of_answered, ObservationMetricRow.name == name)
                .order_by(ObservationMetricRow.value)
            )
            .scalars()
        )
        yield name[len("stage:") :], count, values


def _summarize_latencies(
    connection: Connection, builder: ArtifactBuilder, run_id: str, chunk: int
) -> None:
    """The probes' latency figures, and each Server-Timing stage's, from values the
    database sorts: sorted here as Python floats, the 600,000 probes of 10,000 pairs took
    about 20 MB at once, and each stage as much again (docs/scale.md). The probes'
    latencies are kept as the builder's compact samples (the report's histogram)."""
    samples = builder.probe_latencies

    def kept(values: Iterator[float]) -> Iterator[float]:
        for value in values:
            samples.append(value)
            yield value

    builder.latency_summary = summarize_ordered_latency(
        kept(_sorted_latencies(connection, chunk, run_id)), builder.probe_count, builder.budget_ms
    )
    builder.stage_summary = {
        stage: stage_fields(summarize_ordered_latency(values, count))
        for stage, count, values in _sorted_stages(connection, chunk, run_id)
    }


def stage_labels(connection: Connection, run_id: str) -> dict[tuple[int, int], str]:
    """Step labels, for verdicts recorded without their stage (none since stages were
    recorded with every verdict): a run of any size holds them only where needed."""
    missing = connection.execute(
        select(func.count())
        .select_from(VerdictRow)
        .where(VerdictRow.run_id == run_id, VerdictRow.stage == "")
    ).scalar_one()
    if not missing:
        return {}
    return {
        (pair, step): label
        for pair, step, label in connection.execute(
            select(StepRow.pair_index, StepRow.step_index, StepRow.label).where(
                StepRow.run_id == run_id
            )
        )
    }


def run_digest(run_id: str, url: str | None = None) -> Artifact | None:
    """The run's digest (`ArtifactBuilder.digest`), computed streaming."""
    built = run_builder(run_id, url)
    if built is None:
        return None
    builder, pairs = built
    return builder.digest(pairs)


def run_value_tuples(run_id: str, url: str | None = None) -> Iterator[tuple[int, str, str, str]]:
    """(pair, domain, alias, text) of every value of a run, streamed."""
    engine = engine_for(url)
    with engine.connect() as connection:
        rows = connection.execution_options(yield_per=5000).execute(
            select(
                RunValueRow.pair_index, RunValueRow.domain, RunValueRow.alias, RunValueRow.text
            ).where(RunValueRow.run_id == run_id)
        )
        yield from (tuple(row) for row in rows)


def experiment_run_ids(experiment: str, url: str | None = None) -> list[str]:
    """The runs of one experiment, by the run_experiments index. Runs recorded before
    that index existed are indexed here first, once (their meta is read that one time)."""
    import json

    with session(url) as db:
        runs = db.exec(select(func.count()).select_from(RunRow)).one()
        indexed = db.exec(select(func.count()).select_from(RunExperimentRow)).one()
        if indexed < runs:
            known = set(db.exec(select(RunExperimentRow.run_id)).all())
            for run_id, meta_json in db.exec(select(RunRow.id, RunRow.meta_json)).all():
                if run_id not in known:
                    db.merge(
                        RunExperimentRow(
                            run_id=run_id, experiment=json.loads(meta_json).get("experiment") or ""
                        )
                    )
            db.flush()
        return list(
            db.exec(
                select(RunExperimentRow.run_id)
                .where(RunExperimentRow.experiment == experiment)
                .order_by(RunExperimentRow.run_id)
            ).all()
        )


def recorded_probes(url: str | None = None) -> ProbeFigures:
    """An experiment's ProbeFigures (recorder/experiment.py) from the recorder: the
    answered probes of a configuration's runs, their latencies and each Server-Timing
    stage sorted by the database and read once, their costs summed as they are read. The
    same figures as from the runs' whole artifacts, in bounded memory at any size."""

    def figures(runs: list[Artifact]) -> dict[str, Any]:
        run_ids = [run.meta.run_id for run in runs]
        with engine_for(url).connect() as connection:
            count = connection.execute(
                select(func.count()).select_from(ObservationRow).where(*_answered_probes(*run_ids))
            ).scalar_one()
            latency = spread(_sorted_latencies(connection, 5000, *run_ids), count)
            stages_ms = {
                stage: spread(values, stage_count)
                for stage, stage_count, values in _sorted_stages(connection, 5000, *run_ids)
            }
            # Summed run by run in the artifact's order, as the whole artifacts sum them.
            total, costs = 0.0, 0
            for run_id in run_ids:
                for value in (
                    connection.execution_options(yield_per=5000)
                    .execute(
                        select(ObservationMetricRow.value)
                        .join(
                            ObservationRow, ObservationRow.id == ObservationMetricRow.observation_id
                        )
                        .where(*_answered_probes(run_id), ObservationMetricRow.name == "cost")
                        .order_by(
                            ObservationRow.pair_index, ObservationRow.step_index, ObservationRow.seq
                        )
                    )
                    .scalars()
                ):
                    total, costs = total + value, costs + 1
        return {
            "latency_ms": latency,
            "stages_ms": stages_ms,
            "cost_per_probe": round(total / costs, 9) if costs else None,
        }

    return figures
