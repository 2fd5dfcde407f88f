"""BENCHMARKS.md is rendered from BENCHMARKS.json; a scale point measured on its own
replaces only its own row, and the report says which rows were measured separately."""

from __future__ import annotations

import copy
from typing import Any

from bench.__main__ import merge_scale
from bench.render import render

FULL = "./scripts/bench --scale 100,1000"


def _point(pairs: int, seconds: float, command: str = FULL, peak: float = 420.0) -> dict[str, Any]:
    return {
        "pairs": pairs,
        "cohort": 10,
        "seconds": seconds,
        "requests": pairs * 208,
        "rows": pairs * 900,
        "db_bytes": pairs * 280_000,
        "worker_peak_rss_mb": peak,
        "worker_lifecycle_rss_mb": peak - 20,
        "cases": pairs * 60,
        "cases_passed": pairs * 58,
        "failures": pairs * 2,
        "inconclusive": 0,
        "measured_at": "2026-11-30 09:00 UTC",
        "command": command,
    }


RESULTS: dict[str, Any] = {
    "measured_at": "2026-11-30 09:00 UTC",
    "minutes": 25.0,
    "machine": "2 CPU(s)",
    "version": "test",
    "command": FULL,
    "compress": 100000.0,
    "noop": {"rate": 80.0, "workflows": 20, "activities": 100},
    "throughput": {"pairs": 100, "requests": 20800, "seconds": 80.0, "concurrency": 4},
    "plain": {"requests": 20800, "seconds": 40.0, "errors": 0},
    "fidelity": {
        "rest_pairs": 4,
        "rest": {
            "count": 400,
            "median": 0.7,
            "p95": 2.0,
            "median_latency": 2.0,
            "median_server": 1.3,
        },
        "load": {
            "count": 30000,
            "median": 1.4,
            "p95": 9.0,
            "median_latency": 6.0,
            "median_server": 4.6,
        },
    },
    "scale": [_point(100, 80.0), _point(1000, 1300.0)],
}


def test_ratios_and_goals_come_from_the_figures() -> None:
    text = render(RESULTS)
    assert "memlife / plain = **0.50** | ≥ 0.9 ❌ missed" in text  # 260/s against 520/s
    assert "ceiling = **3.25** | ≥ 0.8 ✅ met" in text
    assert "**0.70 ms** | 2.00 ms | median ≤ 1 ms ✅ met" in text
    assert "**1.40 ms** | 9.00 ms | median ≤ 1 ms ❌ missed" in text
    assert "**Not measured: 10,000 pairs.**" in text
    assert FULL in text


def test_the_plain_runners_latency_rows_show_memlifes_own_share() -> None:
    assert "the plain aiohttp runner" not in render(RESULTS)  # from before it was measured
    fidelity = {
        **RESULTS["fidelity"],
        "plain_rest": {
            "count": 400,
            "median": 0.5,
            "p95": 1.0,
            "median_latency": 1.8,
            "median_server": 1.3,
        },
        "plain_load": {
            "count": 30000,
            "median": 1.1,
            "p95": 5.0,
            "median_latency": 5.0,
            "median_server": 3.9,
        },
    }
    text = render({**RESULTS, "fidelity": fidelity})
    assert (
        "| under full load: the plain aiohttp runner, the same requests | 30,000 | "
        "5.00 ms | 3.90 ms | **1.10 ms** | 5.00 ms | none: the client and target alone |"
    ) in text
    assert "**+0.20 ms** one request at a time, **+0.30 ms** under full load" in text
    assert "the bare client alone is above the goal" in text  # 1.10 ms > 1 ms
    fidelity["plain_load"] = {**fidelity["plain_load"], "median": 0.9}
    assert "above the goal" not in render({**RESULTS, "fidelity": fidelity})


def test_the_same_client_runner_gets_its_own_row_once_measured() -> None:
    assert "plain aiohttp" not in render(RESULTS)  # results from before it was measured
    text = render({**RESULTS, "plain_aiohttp": {"requests": 20800, "seconds": 20.0, "errors": 0}})
    assert "memlife / plain aiohttp = **0.25** | none: what orchestration costs |" in text
    assert "memlife / plain = **0.50** | ≥ 0.9 ❌ missed" in text  # the goal stays on httpx


def test_memlife_on_two_workers_is_held_to_the_same_goal_once_measured() -> None:
    assert "two worker processes" not in render(RESULTS)  # from before it was measured
    # One worker, two split, one worker again: each way is the mean of its two runs.
    runs = [
        {"split": split, "requests": 20800, "seconds": seconds}
        for split, seconds in ((False, 80.0), (True, 44.0), (True, 46.0), (False, 70.0))
    ]
    text = render({**RESULTS, "throughput_runs": runs})
    assert (
        "| 279 target requests/s (the mean of runs 1 and 4 of 20,800 requests each: 260, 297) |"
    ) in text
    assert "memlife / plain = **0.54** | ≥ 0.9 ❌ missed" in text  # 279/s against 520/s
    assert (
        "| 462 target requests/s (the mean of runs 2 and 3 of 20,800 requests each: 473, 452) |"
    ) in text
    assert "memlife split / plain = **0.89** | ≥ 0.9 ❌ missed" in text
    runs[2]["seconds"] = 44.0
    assert "memlife split / plain = **0.91** | ≥ 0.9 ✅ met" in render(
        {**RESULTS, "throughput_runs": runs}
    )


def test_each_layout_of_workers_gets_its_row_and_the_same_goal() -> None:
    # One worker; a target worker and three workers each twice, mirrored; one worker again.
    runs = [
        {
            "layout": layout,
            "requests": 20800,
            "seconds": seconds,
            "cpu_seconds": {"workers": 62.4, "target": 41.6, "temporal": 4.16},
        }
        for layout, seconds in (
            ("one", 80.0),
            ("target worker", 44.0),
            ("three", 40.0),
            ("three", 42.0),
            ("target worker", 46.0),
            ("one", 70.0),
        )
    ]
    text = render({**RESULTS, "throughput_runs": runs})
    assert "memlife / plain = **0.54** | ≥ 0.9 ❌ missed" in text  # runs 1 and 6: 279/s
    assert (
        "`memlife run` sends them by default from 20 pairs where a CPU is spare "
        "(`--target-worker` at any size; here `worker.py`, and `worker.py --serve "
        "activities --task-queue memlife-targets`) | 462 target requests/s (the mean of "
        "runs 2 and 5 of 20,800 requests each: 473, 452) | memlife + target worker / "
        "plain = **0.89** | ≥ 0.9 ❌ missed |"
    ) in text
    assert (
        "| 508 target requests/s (the mean of runs 3 and 4 of 20,800 requests each: "
        "520, 495) | memlife in three / plain = **0.98** | ≥ 0.9 ✅ met |"
    ) in text
    assert "two worker processes" not in text  # no split runs in these results
    plain = {
        "requests": 20800,
        "seconds": 40.0,
        "errors": 0,
        "cpu_seconds": {"runner": 10.4, "target": 36.4},
    }
    text = render({**RESULTS, "throughput_runs": runs, "plain": plain})
    assert "| memlife, one worker and a worker for the target requests | 462 |" in text
    assert "| memlife, workflows, activities and target requests in three workers | 507 |" in text


def test_the_worker_that_reads_the_answers_has_its_own_cpu_figure() -> None:
    runs = [
        {
            "layout": layout,
            "requests": 20800,
            "seconds": 40.0,
            "cpu_seconds": {"workers": 62.4, "target": 41.6, "temporal": 4.16}
            | ({"target_worker": reading} if reading is not None else {}),
        }
        for layout, reading in (("one", None), ("target worker", 14.56), ("three", 12.48))
    ]
    plain = {"requests": 20800, "seconds": 40.0, "errors": 0}
    results = {
        **RESULTS,
        "throughput_runs": runs,
        "plain": {**plain, "cpu_seconds": {"runner": 10.4, "target": 36.4}},
        "plain_aiohttp": {**plain, "cpu_seconds": {"runner": 6.24, "target": 36.4}},
    }
    text = render(results)
    assert (
        "so its CPU per request is what holds a target's slot: 0.70 ms (0.36) in the run "
        "with one worker and a worker for the target requests and 0.60 ms (0.31) in the run "
        "with workflows, activities and target requests in three workers; the plain aiohttp "
        "runner's whole process took 0.30 ms"
    ) in text
    for run in runs:  # recorded before it was measured
        run["cpu_seconds"].pop("target_worker", None)
    assert "reads every answer" not in render(results)


def test_where_the_cpu_went_is_shown_per_request_and_against_the_machine() -> None:
    assert "Where the CPU went" not in render(RESULTS)  # from before it was measured
    runs = [
        {
            "split": split,
            "requests": 20800,
            "seconds": 80.0,
            "cpu_seconds": {"workers": workers, "target": 41.6, "temporal": 4.16},
        }
        for split, workers in ((False, 62.4), (True, 83.2), (True, 83.2), (False, 62.4))
    ]
    plain = {
        "requests": 20800,
        "seconds": 40.0,
        "errors": 0,
        "cpu_seconds": {"runner": 10.4, "target": 36.4},
    }
    text = render({**RESULTS, "throughput_runs": runs, "plain": plain})
    # One worker: 3 ms of the worker's CPU per request, 2 of the target's, 0.2 of Temporal's.
    assert (
        "| memlife, one worker | 260 | 3.00 ms (0.78) | 2.00 ms (0.52) | 0.20 ms (0.05) "
        "| **5.20 ms** (1.35) |"
    ) in text
    assert "| memlife, workflows and activities in two workers | 260 | 4.00 ms (1.04) |" in text
    assert (
        "| plain asyncio + httpx runner | 520 | 0.50 ms (0.26) | 1.75 ms (0.91) | "
        "0.00 ms (0.00) | **2.25 ms** (1.17) |"
    ) in text
    # 0.9 of 520/s is 468/s; at 5.2 ms each that is 2.43 cores.
    assert "(468 requests/s)" in text and "**2.43 cores** busy, of the machine's 2: more" in text
    # The measured machine's size, not the one rendering: 4 cores would hold it.
    roomier = render(
        {**RESULTS, "machine": "4 CPU(s) (x)", "throughput_runs": runs, "plain": plain}
    )
    assert "of the machine's 4: the machine could hold it" in roomier


def test_a_separate_scale_point_replaces_only_its_own_row() -> None:
    before = copy.deepcopy(RESULTS)
    alone = "./scripts/bench --scale-only --scale 10000,1000"
    merged = merge_scale(
        RESULTS, [_point(10_000, 9000.0, alone, peak=380.0), _point(1000, 1200.0, alone)]
    )
    assert before == RESULTS  # the earlier results are not modified in place
    assert [(p["pairs"], p["seconds"]) for p in merged["scale"]] == [
        (100, 80.0),
        (1000, 1200.0),
        (10_000, 9000.0),
    ]
    assert {k: v for k, v in merged.items() if k != "scale"} == {
        k: v for k, v in RESULTS.items() if k != "scale"
    }
    text = render(merged)
    # Measured together: one note for both rows.
    assert "| 10,000 [1] | `compress=100000` | 10 | 10,000 |" in text
    assert "| 1,000 [1] |" in text and "| 100 | `compress=100000` | 10 | 100 |" in text
    assert text.count(f"with `{alone}`") == 1 and "[2]" not in text
    assert "Not measured: 10,000 pairs" not in text
    assert "Worker peak RSS at 10,000 pairs: 380 MB (goal ≤ 400 MB at 10,000 pairs: ✅ met)" in (
        text
    )


def test_a_scale_point_alone_renders_before_any_full_run() -> None:
    alone = "./scripts/bench --scale-only --scale 10000"
    text = render(merge_scale({"scale": []}, [_point(10_000, 9000.0, alone, peak=620.0)]))
    assert "`./scripts/bench` measures the rest" in text
    assert "| 10,000 [1] |" in text
    assert "620 MB (goal ≤ 400 MB at 10,000 pairs: ❌ missed)" in text
    # 20 MB over the lifecycles' largest: said where the peak came.
    assert "the peak came after the lifecycles, 20 MB over their largest" in text


def test_a_peak_within_the_lifecycles_is_not_put_on_the_summary() -> None:
    point = {**_point(10_000, 9000.0, peak=390.0), "worker_lifecycle_rss_mb": 385.0}
    text = render(merge_scale({"scale": []}, [point]))
    assert "390 MB (goal ≤ 400 MB at 10,000 pairs: ✅ met)" in text
    assert "after the lifecycles" not in text


def test_a_skip_run_shows_its_clock_its_histories_and_its_workflow_tasks() -> None:
    point = {
        **_point(1000, 900.0, FULL),
        "clock": "skip",
        "failures": 0,
        "histories": {
            "workflows": 101,
            "suite_bytes": 350_000,
            "suite_events": 900,
            "largest_bytes": 4_600_000,
            "largest_bytes_workflow": "c-40",
            "most_events": 317,
            "longest_task_ms": 0.0,
            "longest_task_workflow": "suite",
            "slow_tasks": 0,
            "failed_tasks": 0,
        },
        "workflow_tasks": {
            "tasks": 5600,
            "over_1s": 0,
            "longest_at_most_ms": 750.0,
            "by_workflow_type": {},
        },
    }
    text = render({**RESULTS, "scale": [_point(100, 80.0), point]})
    assert "| 1,000 | `skip` | 10 | 1,000 |" in text
    assert (
        "| 1,000 | `skip` | 101 | 0.3 MB, 900 events | 4.4 MB, 317 events | 5,600 | "
        "**0** | ≤ 750 ms | 0 |"
    ) in text
    assert "| 100 | `compress=100000` | 101" not in text  # no histories were read then
    continued = {
        **point,
        "pairs": 10_000,
        "histories": {**point["histories"], "suite_events": 2_050, "suite_runs": 5},
    }
    text = render({**RESULTS, "scale": [continued]})
    assert "| 10,000 | `skip` | 101 | 0.3 MB, 2,050 events (largest of 5 runs) |" in text


def test_a_row_measured_on_its_own_day_shows_that_days_ceiling_and_machine() -> None:
    alone = "./scripts/bench --scale-only --scale 5000"
    older = "./scripts/bench --scale-only --scale 10000"
    elsewhere = "./scripts/bench --scale-only --scale 1000"
    text = render(
        merge_scale(
            RESULTS,
            [
                {**_point(5000, 3600.0, alone), "noop_rate": 61.4, "machine": RESULTS["machine"]},
                {**_point(10_000, 9000.0, older), "measured_at": "2026-11-29 09:00 UTC"},
                {**_point(1000, 900.0, elsewhere), "machine": "2 CPU(s) (AMD EPYC)"},
            ],
        )
    )
    assert (
        f"with `{alone}` (the same machine; the dev server's no-op ceiling then 61 "
        "activities/s; merged into BENCHMARKS.json)"
    ) in text
    # A row from before the bench kept its ceiling or machine says nothing it does not know.
    assert f"with `{older}` (a machine not recorded; merged into BENCHMARKS.json)" in text
    assert f"with `{elsewhere}` (2 CPU(s) (AMD EPYC); merged into BENCHMARKS.json)" in text


def test_a_baseline_replayed_twice_is_the_mean_of_its_replays() -> None:
    # Replays after memlife's first run and after its last: 520/s and 416/s.
    again = {"requests": 20800, "seconds": 50.0, "errors": 1}
    text = render({**RESULTS, "plain_again": again})
    assert (
        "| 468 requests/s (the mean of a replay after memlife's first run and one after "
        "its last: 520, 416; 1 error(s)) | memlife / plain = **0.56** | ≥ 0.9 ❌ missed |"
    ) in text
    assert "each plain runner replays twice" in text
    assert "each plain runner replays twice" not in render(RESULTS)
    text = render(
        {
            **RESULTS,
            "plain_again": again,
            "plain_aiohttp": {"requests": 20800, "seconds": 20.0, "errors": 0},
            "plain_aiohttp_again": {"requests": 20800, "seconds": 26.0, "errors": 0},
        }
    )
    # 1040/s and 800/s: 920/s; memlife's 260/s is 0.28 of it.
    assert "| 920 requests/s (the mean of a replay" in text
    assert "memlife / plain aiohttp = **0.28** |" in text


def test_where_the_cpu_went_sums_both_replays_of_a_baseline() -> None:
    runs = [
        {
            "split": False,
            "requests": 20800,
            "seconds": 80.0,
            "cpu_seconds": {"workers": 62.4, "target": 41.6, "temporal": 4.16},
        }
    ]
    plain = {
        "requests": 20800,
        "seconds": 40.0,
        "errors": 0,
        "cpu_seconds": {"runner": 10.4, "target": 36.4},
    }
    again = {**plain, "seconds": 60.0, "cpu_seconds": {"runner": 20.8, "target": 41.7}}
    text = render({**RESULTS, "throughput_runs": runs, "plain": plain, "plain_again": again})
    # 41,600 requests in 100 s; 31.2 s of the runner's CPU, 78.1 of the target's.
    assert (
        "| plain asyncio + httpx runner | 416 | 0.75 ms (0.31) | 1.88 ms (0.78) | "
        "0.00 ms (0.00) | **2.63 ms** (1.09) |"
    ) in text
    # 0.9 of the mean rate (520/s and 347/s: 433/s) at memlife's 5.2 ms per request.
    assert "(390 requests/s)" in text and "**2.03 cores**" in text


def test_a_target_on_a_cpu_of_its_own_is_said_and_set_beside_shared_cpus() -> None:
    runs = [
        {
            "layout": layout,
            "requests": 20800,
            "seconds": seconds,
            "cpu_seconds": {"workers": 31.2, "target": 41.6, "temporal": 4.16},
        }
        for layout, seconds in (
            ("one", 40.0),
            ("target worker", 42.0),
            ("target worker", 44.0),
            ("one", 42.0),
        )
    ]
    plain = {
        "requests": 20800,
        "seconds": 40.0,
        "errors": 0,
        "cpu_seconds": {"runner": 10.4, "target": 36.4},
    }
    shared = {
        "memlife": {
            "layout": "target worker",
            "requests": 20800,
            "seconds": 52.0,
            "cpu_seconds": {"workers": 31.2, "target": 41.6, "temporal": 4.16},
        },
        "plain": {"requests": 20800, "seconds": 41.6, "errors": 0},
    }
    placed = {
        **RESULTS,
        "throughput": {**RESULTS["throughput"], "cpus": {"target": [0, 1], "drivers": [0]}},
        "throughput_runs": runs,
        "plain": plain,
        "shared": shared,
    }
    text = render(placed)
    assert (
        "In the side-by-side runs CPU 1 is the target's alone, and everything that "
        "drives it runs on CPU 0 (where the target may run too), for memlife's processes "
        "and the plain runners alike"
    ) in text
    # 20,800 requests in 52 s and in 41.6 s: 400/s and 500/s.
    assert (
        "| 400 and 500 requests/s | memlife + target worker / plain, shared CPUs = "
        "**0.80** | none: how the side-by-side was measured until 2026-12-04 |"
    ) in text
    # Runs 2 and 3 (495/s and 473/s) against 520/s: 0.93.
    assert "**0.80** on shared CPUs and **0.93** with the target on a CPU of its own" in text
    assert "plain = **0.93** | ≥ 0.9 ✅ met |" in text
    # memlife's own side: 1.5 ms of workers and 0.2 of Temporal per request at 468/s.
    assert (
        "memlife's own CPU per request (its workers and Temporal server), as measured "
        "here with one worker, would keep **0.80 cores** busy, of the 1 CPU(s) its side "
        "has."
    ) in text
    unplaced = render({**placed, "throughput": RESULTS["throughput"]})
    assert "target's alone" not in unplaced and "shared CPUs =" in unplaced
    assert "Where the target runs" not in unplaced
