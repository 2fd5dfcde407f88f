"""Experiments: Server-Timing parsing, stage and cost summaries, matrix files, and the
side-by-side comparison built from recorded artifacts."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from memlife.bundled.reference.faults import FAULTS, RETRIEVAL_MODES
from memlife.errors import InputError
from memlife.recorder.artifact import Artifact
from memlife.recorder.builder import cost_summary, stage_latency
from memlife.recorder.experiment import experiment_document
from memlife.reports import experiment
from memlife.reports.scorecard import redact, scorecard
from memlife.reports.text import junit_document
from memlife.rules.matrix import load_matrix
from memlife.targets.http import parse_server_timing

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_server_timing_follows_the_w3c_syntax() -> None:
    assert parse_server_timing(None) == {}
    assert parse_server_timing('retrieval;dur=1.25, assembly;desc="compose";dur=0.5') == {
        "retrieval": 1.25,
        "assembly": 0.5,
    }
    # No duration: no timing. A repeated name adds up. Garbage is left out, not fatal.
    assert parse_server_timing("cache-hit, db;dur=2, db;dur=3, x;dur=abc") == {"db": 5.0}


def test_stage_latency_and_cost_are_summarized_over_probes() -> None:
    probes = [
        {"stage:retrieval": 1.0, "stage:queue": 0.1, "cost": 0.002, "tokens": 20},
        {"stage:retrieval": 3.0, "cost": 0.004, "tokens": 30},
        {},
    ]
    stages = stage_latency(probes)
    assert stages["retrieval"]["count"] == 2 and stages["retrieval"]["mean"] == 2.0
    assert stages["queue"]["count"] == 1
    cost = cost_summary(probes, {0: 0.01, 1: 0.03})
    assert cost is not None
    assert cost["per_probe_mean"] == pytest.approx(0.003)
    assert cost["per_lifecycle_mean"] == pytest.approx(0.02)
    assert cost["tokens_per_probe_mean"] == 25
    assert cost_summary([{}], {0: 0.0}) is None  # a target that reports no cost


def test_a_matrix_file_is_validated_with_every_problem_named(tmp_path: Path) -> None:
    bad = tmp_path / "matrix.yaml"
    bad.write_text(
        "configurations:\n"
        "  - {name: a, retrieval: oracle}\n"
        "  - {name: b, faults: [gremlins]}\n"
        "  - {name: c, target: missing.yaml}\n"
    )
    with pytest.raises(InputError) as raised:
        load_matrix(bad, FAULTS, RETRIEVAL_MODES)
    fields = {problem.path for problem in raised.value.problems}
    assert fields == {
        "configurations.0.retrieval",
        "configurations.1.faults.0",
        "configurations.2.target",
    }
    twice = tmp_path / "twice.yaml"
    twice.write_text("configurations: [{name: a}, {name: a}]\n")
    with pytest.raises(InputError, match="unique"):
        load_matrix(twice, FAULTS, RETRIEVAL_MODES)
    shipped = (
        Path(__file__).resolve().parents[2]
        / "scenarios"
        / "experiments"
        / ("retrieval-ablation.yaml")
    )
    assert [c.name for c in load_matrix(shipped, FAULTS, RETRIEVAL_MODES).configurations][:4] == [
        "thread",
        "vector",
        "graph",
        "combined",
    ]


def _as_run(artifact: dict[str, Any], label: str, repetition: int) -> Artifact:
    run = copy.deepcopy(artifact)
    run["meta"] = {
        **run["meta"],
        "configuration": label,
        "repetition": repetition,
        "run_id": f"{label}-{repetition}",
    }
    return Artifact.model_validate(run)


def test_the_comparison_keeps_configurations_apart_and_pools_repetitions() -> None:
    clean = json.loads(
        gzip.decompress(
            (FIXTURES / ("artifact-nightly-2pairs-resurrection-stale.json.gz")).read_bytes()
        )
    )
    leaky = json.loads((FIXTURES / "artifact-seed-leak.json").read_text())
    runs = [_as_run(clean, "stale", 1), _as_run(clean, "stale", 2), _as_run(leaky, "leaky", 1)]
    document = experiment_document("exp-1", runs)
    assert document.experiment.configurations == ["stale", "leaky"]
    assert document.experiment.repetitions == 2
    stale, leak = document.comparison["stale"], document.comparison["leaky"]
    # Pairs of both repetitions are resampling units: 2 runs × 2 pairs.
    assert stale.families["stale (U1)"].pairs == 4
    u1 = clean["summary"]["by_invariant"]["U1"]
    assert stale.families["stale (U1)"].trials == 2 * (u1["checked"] - u1["inconclusive"])
    assert stale.leaks == 0 and leak.leaks == 6
    assert leak.families["leakage-free (I3)"].rate == 0.0
    labels, rows = experiment.comparison_rows(document)
    verdicts = next(row for row in rows if row[0] == "verdict")
    assert verdicts == ["verdict", "FAIL", "FAIL"]
    text = experiment.comparison_markdown(document)
    assert "| | stale | leaky |" in text
    page = experiment.comparison_html(document)
    table = page.split('<table class="matrix comparison">')[1].split("</table>")[0]
    assert table.count("<td") == len(rows) * 2
    # Every leak and residue on its own: 6 leaks of the leaky run, 2 × the stale run's.
    found = experiment.findings_by_configuration(document)
    assert len(found["leaky"]) == 6
    residues = sum(1 for f in clean["failures"] if f["reason"] in ("residue", "resurrected"))
    assert len(found["stale"]) == 2 * residues
    assert text.count("- #") == len(found["leaky"]) + len(found["stale"])
    # JUnit is written a run at a time, each run's cases spooled: the same file as the
    # whole tree of every run's suites.
    assert experiment.render_experiment(document, "junit") == junit_document(
        "memlife experiment exp-1",
        [
            (f"{run.meta.configuration}#{run.meta.repetition}", scorecard(redact(run)))
            for run in document.runs
        ],
    )
