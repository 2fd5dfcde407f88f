"""Building the result artifact (artifact.py) from a run's rows: whole (every case and
observation, what `memlife run --out` writes), or as a digest folded one row at a time
(what a run prints, for a run of any size)."""

from __future__ import annotations

import json
from array import array
from typing import Any

from memlife.recorder.artifact import ANSWERED, ARTIFACT_VERSION, REFUSED, Artifact
from memlife.rules.scoring import (
    InvariantTally,
    LatencySummary,
    Tallies,
    latency_within_target,
    summarize_latency,
)
from memlife.rules.verdicts import INVARIANTS


def _tally() -> dict[str, int]:
    return {"checked": 0, "failed": 0, "inconclusive": 0}


class ArtifactBuilder:
    """Folds a run's rows into the artifact one row at a time, so that a run of any size
    can be summarized without holding it: verdicts in (pair, step, case) order, ok probe
    latencies, target errors and costs in any order. With `keep_entries=False` it keeps
    no per-case, per-observation or per-pair entries (the digest: summary, matrix,
    deletions, failures, latency). With `keep_findings=False` it only counts failures and
    inconclusive checks (the summary). With `keep_samples=False` it counts the probes and
    their cost and keeps the slowest latency, but not the latencies: whoever reads them
    sorted from the recorder sets `latency_summary` and `stage_summary`
    (recorder/queries.py)."""

    def __init__(
        self,
        run: Any,
        step_labels: dict[tuple[int, int], str],
        *,
        keep_entries: bool = True,
        keep_findings: bool = True,
        keep_samples: bool = True,
    ) -> None:
        self.run = run
        self.meta = json.loads(run.meta_json)
        self.budget_ms = float(self.meta.get("latency_budget_ms", 700.0))
        self.step_labels = step_labels
        self.keep_entries = keep_entries
        self.keep_findings = keep_findings
        self.keep_samples = keep_samples
        self.failure_count = self.inconclusive_count = 0
        # Every invariant appears, checked or not, so a reader sees what was not covered.
        self.tallies = Tallies({name: InvariantTally() for name in INVARIANTS})
        self.matrix: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
        self.stages: list[str] = []
        self.failures: list[dict[str, Any]] = []
        self.inconclusive: list[dict[str, Any]] = []
        self.deletions: list[dict[str, Any]] = []
        self.case_entries: list[dict[str, Any]] = []
        self.per_pair: dict[int, Tallies] = {}
        self.step_outcomes: dict[tuple[int, int], dict[str, int]] = {}
        self.cases = self.cases_passed = self.cases_failed = self.cases_inconclusive = 0
        self.probe_cases = self.target_errors = self.refusals = 0
        self.probe_count = 0
        self.probe_max: float | None = None
        # Compact arrays, not a dict per probe: a run of 10,000 pairs answers 600,000.
        self.probe_latencies: array[float] = array("d")
        self.stage_samples: dict[str, array[float]] = {}
        self.latency_summary: LatencySummary | None = None
        self.stage_summary: dict[str, dict[str, Any]] | None = None
        self.probe_costs = _Sum()
        self.probe_tokens = _Sum()
        self.cost_by_pair: dict[int, float] = {}

    def add_verdict(self, verdict: Any) -> None:
        stage = (
            verdict.stage
            or self.step_labels.get((verdict.pair_index, verdict.step_index))
            or f"step-{verdict.step_index}"
        )
        if stage not in self.stages:
            self.stages.append(stage)
        self.cases += 1
        self.cases_passed += bool(verdict.passed)
        self.cases_failed += verdict.outcome == "fail"
        self.cases_inconclusive += verdict.outcome == "inconclusive"
        self.probe_cases += verdict.store == "response"
        checks = json.loads(verdict.checks_json)
        pair_tallies = None
        if self.keep_entries:
            self.case_entries.append(case_entry(verdict, stage, checks))
        if self.keep_entries:
            outcome_counts = self.step_outcomes.setdefault(
                (verdict.pair_index, verdict.step_index), {"pass": 0, "fail": 0, "inconclusive": 0}
            )
            outcome_counts[verdict.outcome] = outcome_counts.get(verdict.outcome, 0) + 1
            pair_tallies = self.per_pair.setdefault(
                verdict.pair_index, Tallies({name: InvariantTally() for name in INVARIANTS})
            )
        for check in checks:
            self.tallies.add(check["invariant"], check["outcome"])
            if pair_tallies is not None:
                pair_tallies.add(check["invariant"], check["outcome"])
            cell = (
                self.matrix.setdefault(check["invariant"], {})
                .setdefault(check.get("store", "response"), {})
                .setdefault(stage, _tally())
            )
            cell["checked"] += 1
            if check["outcome"] in ("fail", "inconclusive"):
                cell["failed" if check["outcome"] == "fail" else "inconclusive"] += 1
        for finding in json.loads(verdict.findings_json):
            if finding["outcome"] == "fail":
                self.failure_count += 1
            else:
                self.inconclusive_count += 1
            if not self.keep_findings:
                continue
            entry = {
                "invariant": finding["invariant"],
                "reason": finding["reason"],
                "pair": verdict.pair_index,
                "tenant": verdict.tenant_alias,
                "step": verdict.step_index,
                "stage": stage,
                "case": verdict.case_id,
                "domain": verdict.domain or None,
                "store": finding.get("store", "response"),
                "evidence": {"value": finding.get("value"), "detail": finding.get("detail", "")},
            }
            if finding.get("form"):  # found reworded, not as stated (rules/variants.py)
                entry["evidence"]["form"] = finding["form"]
            if finding.get("trace_id"):  # the request behind it, in the user's tracing tool
                entry["trace_id"] = finding["trace_id"]
                entry["span_id"] = finding.get("span_id")
            (self.failures if finding["outcome"] == "fail" else self.inconclusive).append(entry)
        if verdict.store == "deletion-status":
            self.deletions.append(
                {
                    "pair": verdict.pair_index,
                    "tenant": verdict.tenant_alias,
                    "stage": stage,
                    "outcome": verdict.outcome,
                    "time_to_forget_s": None
                    if verdict.latency_ms is None
                    else round(verdict.latency_ms / 1000, 3),
                }
            )

    def add_probe(self, latency_ms: float, metrics: dict[str, float]) -> None:
        """A probe the target answered (status ok, with its latency)."""
        self.probe_count += 1
        if self.probe_max is None or latency_ms > self.probe_max:
            self.probe_max = latency_ms
        if self.keep_samples:
            self.probe_latencies.append(latency_ms)
            # The probes that reported no metrics add nothing to stages or cost.
            for name, value in metrics.items():
                if name.startswith("stage:"):
                    self.stage_samples.setdefault(name[6:], array("d")).append(value)
        if "cost" in metrics:
            self.probe_costs.add(metrics["cost"])
        if "tokens" in metrics:
            self.probe_tokens.add(metrics["tokens"])

    def add_target_error(self) -> None:
        self.target_errors += 1

    def add_cost(self, pair_index: int, cost: float) -> None:
        """The cost of any turn of a pair's lifecycle, not only probes."""
        self.cost_by_pair[pair_index] = self.cost_by_pair.get(pair_index, 0.0) + cost

    def latency(self) -> LatencySummary:
        if self.latency_summary is not None:
            return self.latency_summary
        if not self.keep_samples:  # a figure of no probes would pass for the run's
            raise RuntimeError("the probe latencies were not kept: set latency_summary")
        return summarize_latency(self.probe_latencies, self.budget_ms)

    def stages_latency(self) -> dict[str, dict[str, Any]]:
        if self.stage_summary is not None:
            return self.stage_summary
        if not self.keep_samples:
            raise RuntimeError("the stage latencies were not kept: set stage_summary")
        return _stage_summaries(self.stage_samples)

    def summary(self) -> dict[str, Any]:
        # Only the latency rule, not the summary of latencies: finish_run calls this in the
        # worker, where sorting every probe was the peak of a 10,000-pair run (docs/scale.md).
        within_target = latency_within_target(self.probe_max, self.budget_ms)
        passed = (
            self.run.status == "finished"
            and self.cases > 0
            and self.cases_passed == self.cases
            and not self.inconclusive_count
            and not self.target_errors
            and within_target
        )
        return {
            "passed": passed,
            "cases": self.cases,
            "cases_passed": self.cases_passed,
            "cases_failed": self.cases_failed,
            "cases_inconclusive": self.cases_inconclusive,
            "probe_cases": self.probe_cases,
            "store_checks": self.cases - self.probe_cases,
            "target_errors": self.target_errors,
            "refusals": self.refusals,
            "latency_within_target": within_target,
            "by_invariant": {
                name: {"checked": t.checked, "failed": t.failed, "inconclusive": t.inconclusive}
                for name, t in self.tallies.by_invariant.items()
            },
        }

    def digest(self, pairs: int) -> Artifact:
        return Artifact.model_validate(self.digest_fields(pairs))

    def digest_fields(self, pairs: int) -> dict[str, Any]:
        """What a person reads at the end of a run: everything but the per-case,
        per-observation and per-pair entries."""
        run = self.run
        return {
            "artifact_version": ARTIFACT_VERSION,
            "meta": {
                **self.meta,
                "run_id": run.id,
                "started_at": iso_utc(run.started_at),
                "finished_at": iso_utc(run.finished_at),
                "status": run.status,
                "pairs": pairs,
            },
            "summary": self.summary(),
            "stages": self.stages,
            "matrix": self.matrix,
            "latency_ms": {**self.latency().as_dict(), "stages": self.stages_latency()},
            "cost": _cost(self.probe_costs, self.probe_tokens, self.cost_by_pair),
            "deletions": self.deletions,
            "failures": self.failures,
            "inconclusive": self.inconclusive,
        }


def build_artifact(rows: dict[str, list[Any]]) -> Artifact:
    """The whole artifact, from every row of a run (`recorder.load_run`)."""
    return Artifact.model_validate(_whole(rows))


def _whole(rows: dict[str, list[Any]]) -> dict[str, Any]:
    run = rows["run"][0]
    aliases = {(t.pair_index, t.role): t.alias for t in rows["tenants"]}
    builder = ArtifactBuilder(run, {(s.pair_index, s.step_index): s.label for s in rows["steps"]})
    for verdict in sorted(rows["verdicts"], key=lambda v: (v.pair_index, v.step_index, v.case_id)):
        builder.add_verdict(verdict)
    observations = sorted(rows["observations"], key=lambda o: (o.pair_index, o.step_index, o.seq))
    metrics: dict[tuple[int, int, int], dict[str, float]] = {}
    for metric in rows.get("metrics", []):
        metrics.setdefault((metric.pair_index, metric.step_index, metric.seq), {})[metric.name] = (
            metric.value
        )
    # Every pair appears in the cost, even one whose target reported none.
    builder.cost_by_pair = dict.fromkeys({t.pair_index for t in rows["tenants"]}, 0.0)
    for (pair, _, _), values in metrics.items():
        if "cost" in values:
            builder.add_cost(pair, values["cost"])
    traces = {(t.pair_index, t.step_index, t.seq): t for t in rows.get("traces", [])}
    for o in observations:
        if o.status == REFUSED:
            builder.refusals += 1
        elif o.status != "ok":
            builder.add_target_error()
        if o.status in ANSWERED and o.kind == "probe" and o.latency_ms is not None:
            builder.add_probe(o.latency_ms, metrics.get((o.pair_index, o.step_index, o.seq), {}))
    return {
        **entries(
            builder,
            len({t.pair_index for t in rows["tenants"]}),
            rows["tenants"],
            rows["steps"],
            rows.get("adjudications", []),
        ),
        "cases": builder.case_entries,
        "observations": [
            observation_entry(
                o,
                aliases.get((o.pair_index, o.role), o.role),
                metrics.get((o.pair_index, o.step_index, o.seq), {}),
                traces.get((o.pair_index, o.step_index, o.seq)),
            )
            for o in observations
        ],
    }


def entries(
    builder: ArtifactBuilder,
    pairs: int,
    tenants: list[Any],
    steps: list[Any],
    adjudications: list[Any],
) -> dict[str, Any]:
    """The digest and every entry but the cases and the observations: tenants, per-pair
    tallies, the timeline, adjudications (what a report shows)."""
    per_pair = builder.per_pair
    step_outcomes = builder.step_outcomes
    return {
        **builder.digest_fields(pairs),
        "tenants": [tenant_entry(t) for t in sorted(tenants, key=lambda t: (t.pair_index, t.role))],
        "pairs": [pair_entry(index, tallies_of) for index, tallies_of in sorted(per_pair.items())],
        "timeline": [
            timeline_entry(s, step_outcomes.get((s.pair_index, s.step_index), {}))
            for s in sorted(steps, key=lambda s: (s.pair_index, s.step_index))
        ],
        "adjudications": [
            adjudication_entry(a)
            for a in sorted(adjudications, key=lambda a: (a.pair_index, a.step_index, a.case_id))
        ],
    }


# One function per kind of entry, shared by the whole artifact (above) and the streamed one
# (streams.py), so that both write the same entries.


def case_entry(verdict: Any, stage: str, checks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "pair": verdict.pair_index,
        "tenant": verdict.tenant_alias,
        "step": verdict.step_index,
        "stage": stage,
        "case": verdict.case_id,
        "domain": verdict.domain or None,
        "store": verdict.store,
        "outcome": verdict.outcome,
        "checks": checks,
    }


def tenant_entry(t: Any) -> dict[str, Any]:
    return {
        "pair": t.pair_index,
        "role": t.role,
        "alias": t.alias,
        "phone": t.phone,
        "user_id": t.user_id,
    }


def pair_entry(index: int, tallies: Tallies) -> dict[str, Any]:
    """A pair's tallies, of the invariants it checked."""
    return {
        "pair": index,
        "by_invariant": {
            name: {"checked": t.checked, "failed": t.failed, "inconclusive": t.inconclusive}
            for name, t in tallies.by_invariant.items()
            if t.checked
        },
    }


def timeline_entry(s: Any, outcomes: dict[str, int]) -> dict[str, Any]:
    return {
        "pair": s.pair_index,
        "step": s.step_index,
        "kind": s.kind,
        "stage": s.label or s.kind,
        "scenario_started": iso_utc(s.scenario_started),
        "scenario_finished": iso_utc(s.scenario_finished),
        "outcomes": outcomes,
    }


def adjudication_entry(a: Any) -> dict[str, Any]:
    return {
        "pair": a.pair_index,
        "tenant": a.tenant_alias,
        "step": a.step_index,
        "stage": a.stage,
        "case": a.case_id,
        "kind": a.kind,
        "reviewer": a.reviewer,
        "decided_at": iso_utc(a.decided_at),
        "stated": json.loads(a.asserted_json),
        "abstains": a.abstains,
        "note": a.note,
        "exact": json.loads(a.exact_json),
        "adjudicated": json.loads(a.checks_json),
    }


def observation_entry(o: Any, alias: str, metrics: dict[str, float], trace: Any) -> dict[str, Any]:
    return {
        "pair": o.pair_index,
        "tenant": alias,
        "role": o.role,
        "step": o.step_index,
        "seq": o.seq,
        "kind": o.kind,
        "domain": o.domain,
        "case": o.case_id,
        "request": o.request,
        "reply": o.reply,
        "context": o.context,
        "status": o.status,
        "http_status": o.http_status,
        "error": o.error,
        "latency_ms": o.latency_ms,
        **_observation_metrics(metrics),
        **_observation_trace(trace),
        "scenario_time": iso_utc(o.scenario_time),
        "wall_time": iso_utc(o.wall_time),
    }


def _observation_trace(trace: Any) -> dict[str, Any]:
    """The request's trace context, when it carried one (runs recorded before did not)."""
    return {} if trace is None else {"trace_id": trace.trace_id, "span_id": trace.span_id}


def _observation_metrics(metrics: dict[str, float]) -> dict[str, Any]:
    if not metrics:
        return {}
    found: dict[str, Any] = {}
    stages = {name[6:]: value for name, value in metrics.items() if name.startswith("stage:")}
    if stages:
        found["stages"] = stages
    if "cost" in metrics:
        found["cost"] = metrics["cost"]
    if "tokens" in metrics:
        found["tokens"] = int(metrics["tokens"])
    return found


def stage_latency(probe_metrics: list[dict[str, float]]) -> dict[str, dict[str, Any]]:
    """Per Server-Timing stage: mean, median, p95 and max over the probes that reported it."""
    by_stage: dict[str, list[float]] = {}
    for metrics in probe_metrics:
        for name, value in metrics.items():
            if name.startswith("stage:"):
                by_stage.setdefault(name[6:], []).append(value)
    return _stage_summaries(by_stage)


def _stage_summaries(by_stage: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        stage: stage_fields(summarize_latency(values)) for stage, values in sorted(by_stage.items())
    }


def stage_fields(summary: LatencySummary) -> dict[str, Any]:
    """What the artifact shows of one Server-Timing stage: no budget applies to a stage."""
    return {
        key: value
        for key, value in summary.as_dict().items()
        if key not in ("share_within_target", "target_ms")
    }


def cost_summary(
    probe_metrics: list[dict[str, float]], cost_by_pair: dict[int, float]
) -> dict[str, Any] | None:
    """Cost per probe, and per lifecycle (every turn of a pair: writes, updates, probes),
    when the target reports it (in its own unit, e.g. USD)."""
    costs, tokens = _Sum(), _Sum()
    for metrics in probe_metrics:
        if "cost" in metrics:
            costs.add(metrics["cost"])
        if "tokens" in metrics:
            tokens.add(metrics["tokens"])
    return _cost(costs, tokens, cost_by_pair)


class _Sum:
    """A count and a running total: a mean without the values."""

    def __init__(self) -> None:
        self.count, self.total = 0, 0.0

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value

    def mean(self, digits: int) -> float | None:
        return round(self.total / self.count, digits) if self.count else None


def _cost(costs: _Sum, tokens: _Sum, cost_by_pair: dict[int, float]) -> dict[str, Any] | None:
    if not costs.count and not tokens.count:
        return None
    lifecycles = list(cost_by_pair.values())
    return {
        "probes_reporting": costs.count,
        "per_probe_mean": costs.mean(9),
        "per_lifecycle_mean": round(sum(lifecycles) / len(lifecycles), 9)
        if costs.count and lifecycles
        else None,
        "total": round(sum(lifecycles), 9) if costs.count else None,
        "tokens_per_probe_mean": tokens.mean(2),
    }


def iso_utc(value: Any) -> str | None:
    if value is None:
        return None
    text = value.isoformat()
    if value.tzinfo is None:  # SQLite drops tzinfo; every stored time is UTC
        text += "Z"
    return text.replace("+00:00", "Z")
