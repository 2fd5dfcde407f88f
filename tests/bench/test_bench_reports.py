"""The reports bench: each format's cost beside the smallest run's of the same invocation,
and runs found in the SQLite recorders the scale bench leaves, one per run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from bench.report_tables import render_lines
from bench.reports import (
    RecordedRun,
    _run_facts,
    launch,
    measure,
    recorded_runs,
    write_keys,
)
from memlife.rules.scenario import Scenario
from memlife.rules.target import Target
from tests.workflows.helpers import run_input, run_suite


def row(
    fmt: str,
    pairs: int,
    seconds: float,
    rss: float,
    command: str = "./scripts/bench reports r100 r400",
    when: str = "2026-12-01 06:00 UTC",
) -> dict:
    return {
        "run_id": f"r{pairs}-{when[:10]}",
        "format": fmt,
        "pairs": pairs,
        "cases": pairs * 145,
        "not_passed": 0,
        "seconds": seconds,
        "peak_rss_mb": rss,
        "output_bytes": 10**6,
        "command": command,
        "measured_at": when,
    }


def test_each_format_is_shown_beside_its_smallest_run() -> None:
    lines = render_lines(
        [
            row("html", 400, 8.0, 99.0),
            row("json", 100, 2.0, 80.0),
            row("json", 400, 6.0, 88.0),
            row("html", 100, 2.0, 90.0),
        ]
    )
    table = [line for line in lines if line.startswith("| json") or line.startswith("| html")]
    assert table == [
        "| json | 100 | 14,500 (0) | 2.0 s | 80 MB | 1.0 MB | 1.00 | 1.00 |",
        "| json | 400 | 58,000 (0) | 6.0 s | 88 MB | 1.0 MB | 3.00 | 1.10 |",
        "| html | 100 | 14,500 (0) | 2.0 s | 90 MB | 1.0 MB | 1.00 | 1.00 |",
        "| html | 400 | 58,000 (0) | 8.0 s | 99 MB | 1.0 MB | 4.00 | 1.10 |",
    ]
    assert any("`./scripts/bench reports r100 r400`" in line for line in lines)
    assert render_lines([]) == []


def test_each_invocation_has_a_table_of_its_own_the_newest_first() -> None:
    newer, now = "./scripts/bench reports memlife-100.db memlife-10000.db", "2026-12-03 10:00 UTC"
    lines = render_lines(
        [
            row("json", 100, 2.0, 80.0),
            row("json", 400, 6.0, 88.0),
            row("json", 100, 1.0, 70.0, newer, now),
            row("json", 10_000, 50.0, 84.0, newer, now),
        ]
    )
    table = [line for line in lines if line.startswith("| json") or "Reproduce" in line]
    assert table[:3] == [
        "| json | 100 | 14,500 (0) | 1.0 s | 70 MB | 1.0 MB | 1.00 | 1.00 |",
        "| json | 10,000 | 1,450,000 (0) | 50.0 s | 84 MB | 1.0 MB | 50.00 | 1.20 |",
        f"Measured {now}. Reproduce: `{newer}` (each file an SQLite recorder: `memlife-N.db` "
        "one scale run's, in the working directory that `./scripts/bench --scale-only --scale "
        "N` names as it starts; `memlife-run-N.db` written by `memlife run scenarios/"
        "lifecycle-nightly.yaml --pairs N --clock skip` with MEMLIFE_DB_URL=sqlite:///"
        "memlife-run-N.db). Measured before the launcher (46d77ff): each peak RSS here counts "
        "the bench's own too, which Linux carries into a child's, so figures near the "
        "smallest are the bench's floor rather than the report's.",
    ]
    # A row that names its machine says so; older rows did not record one. Rows measured
    # before the launcher say that their peaks count the bench's own.
    named = render_lines(
        [{**row("json", 100, 1.0, 70.0), "machine": "2 CPU(s) (AMD EPYC)", "launched": True}]
    )
    note = next(line for line in named if line.startswith("Measured"))
    assert note.startswith("Measured 2026-12-01 06:00 UTC on 2 CPU(s) (AMD EPYC). Reproduce:")
    assert "floor" not in note and "the bench's floor" in table[2]
    noted = render_lines([{**row("json", 100, 1.0, 70.0), "note": "A run went on beside"}])
    assert next(line for line in noted if line.startswith("Measured")).endswith(
        "the report's. A run went on beside."
    )
    # The older invocation's ratios are to its own smallest run, not to today's.
    assert table[4] == "| json | 400 | 58,000 (0) | 6.0 s | 88 MB | 1.0 MB | 3.00 | 1.10 |"
    assert "MEMLIFE_DB_URL" in table[5]


async def test_a_run_is_reported_from_the_recorder_file_that_holds_it(
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    seed_scenario: Scenario,
    clean_target: Target,
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run = run_input(seed_scenario, clean_target)
    await run_suite(skip_env.client, skip_worker, run)
    # The default recorder is now another, empty one: only the file can hold the run.
    monkeypatch.setenv("MEMLIFE_DB_URL", f"sqlite:///{tmp_path / 'other.db'}")
    found = recorded_runs([db_url.removeprefix("sqlite:///"), "a-run-id"])
    assert found == [RecordedRun(run.run_id, db_url), RecordedRun("a-run-id")]
    assert _run_facts(found[0]) == {"pairs": 1, "cases": 6, "not_passed": 0}
    keys = write_keys(tmp_path / "keys")
    figures = measure(found[0], "json", tmp_path / "report.json", keys)
    assert figures["output_bytes"] > 1000 and figures["peak_rss_mb"] > 10
    assert not (tmp_path / "report.json").exists()
    # The signed artifact stays for what reads it (the report of the file, then `verify`,
    # which must find it whole, or the bench stops), and `verify` removes it.
    signed = tmp_path / "signed.json"
    written = measure(found[0], "signed artifact", tmp_path / "x", keys, signed)
    assert signed.exists() and '"signature": {' in signed.read_text()
    page = measure(found[0], "html of the file", tmp_path / "page.html", keys, signed)
    assert page["output_bytes"] > 1000 and not (tmp_path / "page.html").exists()
    assert (
        measure(found[0], "verify", tmp_path / "x", keys, signed)["output_bytes"]
        == (written["output_bytes"])
    )
    assert not signed.exists()
    with pytest.raises(SystemExit, match="memlife verify .*signed.json .* failed"):
        measure(found[0], "signed artifact", tmp_path / "x", keys, signed)
        signed.chmod(0o644)
        signed.write_text(signed.read_text().replace('"pass"', '"fail"', 1))
        measure(found[0], "verify", tmp_path / "x", keys, signed)
    with pytest.raises(SystemExit, match="no run 'a-run-id' in sqlite:///.*other.db"):
        _run_facts(found[1])


def test_a_recorder_file_without_runs_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(SystemExit, match=r"empty.db: no run in this recorder"):
        recorded_runs([str(empty)])


async def test_an_experiment_in_a_recorder_file_is_measured_as_one(
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    seed_scenario: Scenario,
    clean_target: Target,
    db_url: str,
    tmp_path: Path,
) -> None:
    alone = run_input(seed_scenario, clean_target)
    await run_suite(skip_env.client, skip_worker, alone)
    for repetition in (1, 2):
        run = run_input(seed_scenario, clean_target)
        await run_suite(
            skip_env.client,
            skip_worker,
            run.model_copy(
                update={
                    "meta": run.meta.model_copy(
                        update={"experiment": "exp-bench", "repetition": repetition}
                    )
                }
            ),
        )
    found = recorded_runs([db_url.removeprefix("sqlite:///")])
    assert found == [
        RecordedRun(alone.run_id, db_url),
        RecordedRun("exp-bench", db_url, experiment=True),
    ]
    assert _run_facts(found[1]) == {"pairs": 2, "cases": 12, "not_passed": 0}
    keys = write_keys(tmp_path / "keys")
    document = measure(found[1], "artifact", tmp_path / "experiment.json", keys)
    report = measure(found[1], "junit", tmp_path / "experiment.xml", keys)
    assert document["output_bytes"] > report["output_bytes"] > 0  # every run whole, in one
    lines = render_lines(
        [row("experiment json", 100, 2.0, 80.0), row("experiment json", 400, 4.0, 84.0)]
    )
    assert "| experiment json | 400 | 58,000 (0) | 4.0 s | 84 MB | 1.0 MB | 2.00 | 1.05 |" in (
        lines
    )
    assert any("--repeat 2" in line for line in lines)


def test_a_report_is_measured_apart_from_the_bench_that_starts_it() -> None:
    # Linux carries the parent's RSS into a forked child's peak: held here, 200 MB would
    # be every child's floor without the launcher.
    held = b"x" * (200 * 2**20)
    seconds, peak_kb = launch([sys.executable, "-c", "pass"], dict(os.environ))
    assert len(held) and seconds > 0 and peak_kb < 100 * 1024
    _, grown_kb = launch([sys.executable, "-c", "b = b'x' * (150 * 2**20)"], dict(os.environ))
    assert grown_kb > 150 * 1024  # and the child's own peak is all there
    with pytest.raises(SystemExit, match="(?s)failed:.*ZeroDivisionError"):
        launch([sys.executable, "-c", "1 / 0"], dict(os.environ))


def test_formats_that_read_the_signed_artifact_need_it(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.reports import main

    for formats, reason in (
        ("verify", "read the signed artifact: add 'signed artifact'"),
        ("json,pdf", "unknown 'pdf'"),
    ):
        with pytest.raises(SystemExit) as exited:
            main(["--formats", formats, "a-run-id"])
        assert exited.value.code == 2 and reason in capsys.readouterr().err
