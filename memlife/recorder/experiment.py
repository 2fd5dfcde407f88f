"""Experiment documents: several configurations of one system — e.g. the reference target
answering from the thread, vector memory or the graph alone, or all three in the answer
precedence — run with the same tenants, values and questions, over repetitions with fresh
ones (docs/experiments.md). Pure: builds the comparison from the runs' digests and what
their answered probes measured, pooled by configuration.

Missing recall and leakage stay separate (recall vs I3); rates are pooled over checks and
bootstrapped over pairs, where the pairs of different repetitions are different units.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from memlife.recorder.artifact import Artifact, ExperimentDocument
from memlife.rules.scoring import summarize_ordered_latency
from memlife.rules.statistics import bootstrap_rate
from memlife.rules.verdicts import LEAK_REASONS, RESIDUE_REASONS

EXPERIMENT_VERSION = 1
# Probe families and the checks that measure them: missing recall and leakage apart.
FAMILIES = {
    "recall": "recall",
    "stale (U1)": "U1",
    "abstain": "abstain",
    "leakage-free (I3)": "I3",
    "deletion (I4)": "I4",
    "scoped deletion (D2)": "D2",
}
# What a configuration's answered probes measured, pooled over its runs: `latency_ms`,
# `stages_ms` (each a spread) and `cost_per_probe`. From the runs' observations
# (`observed_probes`), or from the recorder, which sorts and sums them at any size
# (recorder/queries.py, `recorded_probes`).
ProbeFigures = Callable[[list[Artifact]], dict[str, Any]]


def experiment_document(
    experiment: str, artifacts: list[Artifact], probes: ProbeFigures | None = None
) -> ExperimentDocument:
    """The runs side by side. `artifacts` may be digests (no cases, no observations; each
    pair's tallies of FAMILIES' checks are enough) when `probes` measures their probes."""
    configurations: list[str] = []
    for artifact in artifacts:
        label = configuration_label(artifact)
        if label not in configurations:
            configurations.append(label)
    return ExperimentDocument.model_validate(
        {
            "experiment_version": EXPERIMENT_VERSION,
            "experiment": {
                "id": experiment,
                "configurations": configurations,
                "repetitions": max((a.meta.repetition or 1) for a in artifacts),
                "scenario": artifacts[0].meta.scenario_name,
                "clock": artifacts[0].meta.clock,
            },
            "comparison": compare(artifacts, configurations, probes or observed_probes),
            "runs": artifacts,
        }
    )


def configuration_label(artifact: Artifact) -> str:
    return artifact.meta.configuration or artifact.meta.target_name


def _units(artifacts: list[Artifact], invariant: str) -> list[tuple[int, int]]:
    units = []
    for artifact in artifacts:
        for pair in artifact.pairs:
            tally = pair.by_invariant.get(invariant)
            if tally:
                decided = tally.checked - tally.inconclusive
                units.append((decided - tally.failed, decided))
    return units


def spread(ordered: Iterable[float], count: int) -> dict[str, float | int | None]:
    """Count, mean, median, p95 (upper rank) and max of `count` values given in ascending
    order, each read once."""
    summary = summarize_ordered_latency(ordered, count)
    return {
        "count": summary.count,
        "mean": summary.mean,
        "median": summary.median,
        "p95": summary.p95,
        "max": summary.max,
    }


def observed_probes(runs: list[Artifact]) -> dict[str, Any]:
    """ProbeFigures from whole artifacts: their answered probes' latencies, Server-Timing
    stages and costs."""
    probes = [
        o
        for a in runs
        for o in a.observations
        if o.kind == "probe" and o.status == "ok" and o.latency_ms is not None
    ]
    stages: dict[str, list[float]] = {}
    for observation in probes:
        for stage, value in observation.stages.items():
            stages.setdefault(stage, []).append(value)
    latencies = sorted(o.latency_ms for o in probes if o.latency_ms is not None)
    costs = [o.cost for o in probes if o.cost is not None]
    return {
        "latency_ms": spread(latencies, len(latencies)),
        "stages_ms": {
            stage: spread(sorted(values), len(values)) for stage, values in sorted(stages.items())
        },
        "cost_per_probe": round(sum(costs) / len(costs), 9) if costs else None,
    }


def compare(
    artifacts: list[Artifact], configurations: list[str], probes: ProbeFigures
) -> dict[str, Any]:
    """Per configuration: rates with intervals, per invariant tallies, leaks and residues,
    end-to-end and per-stage latency, cost."""
    result: dict[str, Any] = {}
    for label in configurations:
        runs = [a for a in artifacts if configuration_label(a) == label]
        invariants: dict[str, dict[str, int]] = {}
        for artifact in runs:
            for name, tally in artifact.summary.by_invariant.items():
                into = invariants.setdefault(name, {"checked": 0, "failed": 0, "inconclusive": 0})
                into["checked"] += tally.checked
                into["failed"] += tally.failed
                into["inconclusive"] += tally.inconclusive
        failures = [f for a in runs for f in a.failures]
        result[label] = {
            "runs": [a.meta.run_id for a in runs],
            "passed": all(a.summary.passed for a in runs),
            "pairs": sum(len(a.pairs) for a in runs),
            "families": {
                name: bootstrap_rate(_units(runs, invariant)).as_dict()
                for name, invariant in FAMILIES.items()
            },
            "by_invariant": invariants,
            "leaks": sum(1 for f in failures if f.reason in LEAK_REASONS),
            "missing": sum(1 for f in failures if f.reason == "missing"),
            "residues": sum(1 for f in failures if f.reason in RESIDUE_REASONS),
            "inconclusive": sum(len(a.inconclusive) for a in runs),
            **probes(runs),
        }
    return result
