"""The result artifact (seed §7): an immutable JSON scorecard built from a run's rows. Pure.

Top-level keys: meta, summary, matrix (invariant × store × stage), latency_ms, deletions,
failures, inconclusive, observations. Missing recall and foreign-fact leakage are separate
failures, and every leak and every residue is its own entry.
"""

from __future__ import annotations

import json
from typing import Any

from memlife.lifecycle import INVARIANTS
from memlife.scoring import InvariantTally, Tallies, summarize_latency

ARTIFACT_VERSION = 1


def _tally() -> dict[str, int]:
    return {"checked": 0, "failed": 0, "inconclusive": 0}


def build_artifact(rows: dict[str, list[Any]]) -> dict[str, Any]:
    run = rows["run"][0]
    meta = json.loads(run.meta_json)
    aliases = {(t.pair_index, t.role): t.alias for t in rows["tenants"]}
    budget_ms = float(meta.get("latency_budget_ms", 700.0))
    step_labels = {(s.pair_index, s.step_index): s.label for s in rows["steps"]}

    # Every invariant appears, checked or not, so a reader sees what was not covered.
    tallies = Tallies({name: InvariantTally() for name in INVARIANTS})
    matrix: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    stages: list[str] = []
    failures: list[dict[str, Any]] = []
    inconclusive: list[dict[str, Any]] = []
    deletions: list[dict[str, Any]] = []
    case_entries: list[dict[str, Any]] = []
    per_pair: dict[int, Tallies] = {}
    step_outcomes: dict[tuple[int, int], dict[str, int]] = {}
    verdicts = sorted(rows["verdicts"], key=lambda v: (v.pair_index, v.step_index, v.case_id))
    for verdict in verdicts:
        stage = verdict.stage or step_labels.get((verdict.pair_index, verdict.step_index)) or (
            f"step-{verdict.step_index}")
        if stage not in stages:
            stages.append(stage)
        checks = json.loads(verdict.checks_json)
        case_entries.append({"pair": verdict.pair_index, "tenant": verdict.tenant_alias,
                      "step": verdict.step_index, "stage": stage, "case": verdict.case_id,
                      "domain": verdict.domain or None, "store": verdict.store,
                      "outcome": verdict.outcome, "checks": checks})
        outcome_counts = step_outcomes.setdefault((verdict.pair_index, verdict.step_index),
                                                  {"pass": 0, "fail": 0, "inconclusive": 0})
        outcome_counts[verdict.outcome] = outcome_counts.get(verdict.outcome, 0) + 1
        pair_tallies = per_pair.setdefault(verdict.pair_index, Tallies(
            {name: InvariantTally() for name in INVARIANTS}))
        for check in checks:
            tallies.add(check["invariant"], check["outcome"])
            pair_tallies.add(check["invariant"], check["outcome"])
            cell = matrix.setdefault(check["invariant"], {}).setdefault(
                check.get("store", "response"), {}).setdefault(stage, _tally())
            cell["checked"] += 1
            if check["outcome"] in ("fail", "inconclusive"):
                cell["failed" if check["outcome"] == "fail" else "inconclusive"] += 1
        for finding in json.loads(verdict.findings_json):
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
            (failures if finding["outcome"] == "fail" else inconclusive).append(entry)
        if verdict.store == "deletion-status":
            deletions.append({
                "pair": verdict.pair_index, "tenant": verdict.tenant_alias, "stage": stage,
                "outcome": verdict.outcome,
                "time_to_forget_s": None if verdict.latency_ms is None else round(
                    verdict.latency_ms / 1000, 3),
            })

    observations = sorted(rows["observations"],
                          key=lambda o: (o.pair_index, o.step_index, o.seq))
    metrics: dict[tuple[int, int, int], dict[str, float]] = {}
    for metric in rows.get("metrics", []):
        metrics.setdefault((metric.pair_index, metric.step_index, metric.seq), {})[
            metric.name] = metric.value
    probes = [o for o in observations
              if o.kind == "probe" and o.status == "ok" and o.latency_ms is not None]
    latency = summarize_latency([o.latency_ms for o in probes], budget_ms)
    probe_metrics = [metrics.get((o.pair_index, o.step_index, o.seq), {}) for o in probes]
    # Every turn of a lifecycle counts towards its cost, not only the probes (one pass).
    cost_by_pair = dict.fromkeys({t.pair_index for t in rows["tenants"]}, 0.0)
    for (pair, _, _), values in metrics.items():
        if "cost" in values:
            cost_by_pair[pair] = cost_by_pair.get(pair, 0.0) + values["cost"]
    cases = len(verdicts)
    cases_passed = sum(1 for v in verdicts if v.passed)
    target_errors = [o for o in observations if o.status != "ok"]
    by_invariant = {
        name: {"checked": t.checked, "failed": t.failed, "inconclusive": t.inconclusive}
        for name, t in tallies.by_invariant.items()
    }
    passed = (
        run.status == "finished"
        and cases > 0
        and cases_passed == cases
        and not inconclusive
        and not target_errors
        and latency.within_target
    )
    return {
        "artifact_version": ARTIFACT_VERSION,
        "meta": {
            **meta,
            "run_id": run.id,
            "started_at": _iso(run.started_at),
            "finished_at": _iso(run.finished_at),
            "status": run.status,
            "pairs": len({t.pair_index for t in rows["tenants"]}),
        },
        "summary": {
            "passed": passed,
            "cases": cases,
            "cases_passed": cases_passed,
            "cases_failed": sum(1 for v in verdicts if v.outcome == "fail"),
            "cases_inconclusive": sum(1 for v in verdicts if v.outcome == "inconclusive"),
            "probe_cases": sum(1 for v in verdicts if v.store == "response"),
            "store_checks": sum(1 for v in verdicts if v.store != "response"),
            "target_errors": len(target_errors),
            "latency_within_target": latency.within_target,
            "by_invariant": by_invariant,
        },
        "stages": stages,
        "matrix": matrix,
        "tenants": [{"pair": t.pair_index, "role": t.role, "alias": t.alias, "phone": t.phone,
                     "user_id": t.user_id}
                    for t in sorted(rows["tenants"], key=lambda t: (t.pair_index, t.role))],
        "pairs": [{"pair": index, "by_invariant": {
            name: {"checked": t.checked, "failed": t.failed, "inconclusive": t.inconclusive}
            for name, t in tallies_of.by_invariant.items() if t.checked}}
            for index, tallies_of in sorted(per_pair.items())],
        "timeline": [{"pair": s.pair_index, "step": s.step_index, "kind": s.kind,
                      "stage": s.label or s.kind,
                      "scenario_started": _iso(s.scenario_started),
                      "scenario_finished": _iso(s.scenario_finished),
                      "outcomes": step_outcomes.get((s.pair_index, s.step_index), {})}
                     for s in sorted(rows["steps"], key=lambda s: (s.pair_index,
                                                                    s.step_index))],
        "cases": case_entries,
        "adjudications": [
            {"pair": a.pair_index, "tenant": a.tenant_alias, "step": a.step_index,
             "stage": a.stage, "case": a.case_id, "kind": a.kind, "reviewer": a.reviewer,
             "decided_at": _iso(a.decided_at), "stated": json.loads(a.asserted_json),
             "abstains": a.abstains, "note": a.note, "exact": json.loads(a.exact_json),
             "adjudicated": json.loads(a.checks_json)}
            for a in sorted(rows.get("adjudications", []),
                            key=lambda a: (a.pair_index, a.step_index, a.case_id))],
        "latency_ms": {**latency.as_dict(), "stages": stage_latency(probe_metrics)},
        "cost": cost_summary(probe_metrics, cost_by_pair),
        "deletions": deletions,
        "failures": failures,
        "inconclusive": inconclusive,
        "observations": [
            {
                "pair": o.pair_index,
                "tenant": aliases.get((o.pair_index, o.role), o.role),
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
                **_observation_metrics(metrics.get((o.pair_index, o.step_index, o.seq), {})),
                "scenario_time": _iso(o.scenario_time),
                "wall_time": _iso(o.wall_time),
            }
            for o in observations
        ],
    }


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
    return {stage: {key: value for key, value in summarize_latency(values).as_dict().items()
                    if key not in ("share_within_target", "target_ms")}
            for stage, values in sorted(by_stage.items())}


def cost_summary(probe_metrics: list[dict[str, float]],
                 cost_by_pair: dict[int, float]) -> dict[str, Any] | None:
    """Cost per probe, and per lifecycle (every turn of a pair: writes, updates, probes),
    when the target reports it (in its own unit, e.g. USD)."""
    costs = [m["cost"] for m in probe_metrics if "cost" in m]
    tokens = [m["tokens"] for m in probe_metrics if "tokens" in m]
    if not costs and not tokens:
        return None
    lifecycles = list(cost_by_pair.values())
    return {
        "probes_reporting": len(costs),
        "per_probe_mean": round(sum(costs) / len(costs), 9) if costs else None,
        "per_lifecycle_mean": round(sum(lifecycles) / len(lifecycles), 9)
        if costs and lifecycles else None,
        "total": round(sum(lifecycles), 9) if costs else None,
        "tokens_per_probe_mean": round(sum(tokens) / len(tokens), 2) if tokens else None,
    }


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    text = value.isoformat()
    if value.tzinfo is None:  # SQLite drops tzinfo; every stored time is UTC
        text += "Z"
    return text.replace("+00:00", "Z")
