"""An experiment through the real CLI: configurations side by side, repetitions with fresh
tenants, stage latency and cost from the reference target, and its comparison report."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_memlife_run import SEED, memlife


def test_configurations_side_by_side_with_a_fault_visible_in_its_column(tmp_path: Path) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        "configurations:\n"
        "  - {name: thread, retrieval: thread}\n"
        "  - {name: graph, retrieval: graph}\n"
        "  - {name: leaky, retrieval: combined, faults: [cross-tenant-leak]}\n"
    )
    result = memlife(
        "run",
        str(SEED),
        "--matrix",
        str(matrix),
        "--repeat",
        "2",
        "--clock",
        "skip",
        "--out",
        "experiment.json",
        "--enforce",
        cwd=tmp_path,
        timeout=400,
    )
    assert result.returncode == 1, result.stdout + result.stderr  # the leaky column fails
    assert "Traceback" not in result.stderr
    header = next(
        line
        for line in result.stdout.splitlines()
        if "thread" in line and "graph" in line and "leaky" in line
    )
    assert header.index("thread") < header.index("graph") < header.index("leaky")
    document = json.loads((tmp_path / "experiment.json").read_text())
    runs = document["runs"]
    assert len(runs) == 6
    assert {(r["meta"]["configuration"], r["meta"]["repetition"]) for r in runs} == {
        (c, n) for c in ("thread", "graph", "leaky") for n in (1, 2)
    }
    # Each repetition has its own tenants (run-derived phones), shared across configurations
    # only in aliases and values.
    phones = {t["phone"] for r in runs for t in r["tenants"]}
    assert len(phones) == 12
    comparison = document["comparison"]
    assert comparison["thread"]["passed"] and comparison["graph"]["passed"]
    assert not comparison["leaky"]["passed"] and comparison["leaky"]["leaks"] == 12
    assert comparison["graph"]["families"]["leakage-free (I3)"]["rate"] == 1.0
    for label in ("thread", "graph", "leaky"):
        assert set(comparison[label]["stages_ms"]) == {
            "queue",
            "retrieval",
            "assembly",
            "think",
            "total",
        }
        assert comparison[label]["cost_per_probe"] > 0
    artifact = runs[0]
    assert artifact["cost"]["per_lifecycle_mean"] > artifact["cost"]["per_probe_mean"]
    probe = next(o for o in artifact["observations"] if o["kind"] == "probe")
    assert set(probe["stages"]) == {"queue", "retrieval", "assembly", "think", "total"}

    report = memlife("report", "experiment.json", "--format", "md", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "| | thread | graph | leaky |" in report.stdout
    # The same comparison straight from the recorder, by experiment id.
    by_id = memlife(
        "report",
        document["experiment"]["id"],
        "--format",
        "html",
        "--out",
        "experiment.html",
        cwd=tmp_path,
    )
    assert by_id.returncode == 0, by_id.stderr
    page = (tmp_path / "experiment.html").read_text()
    assert page.count('<td class="fail">FAIL</td>') == 1
    junit = memlife("report", "experiment.json", "--format", "junit", cwd=tmp_path)
    assert junit.stdout.count("<testsuite ") >= 6 and 'name="leaky#1 I3"' in junit.stdout
    # From the recorder the runs come as digests, their cases read as they are written:
    # the same file.
    junit_by_id = memlife("report", document["experiment"]["id"], "--format", "junit", cwd=tmp_path)
    assert junit_by_id.returncode == 0, junit_by_id.stderr
    assert junit_by_id.stdout == junit.stdout
