"""bench/profile.py's reading of py-spy's raw output, and its section of BENCHMARKS.md.
The sampling itself is py-spy's; `./scripts/bench profile` runs it on a real run."""

from __future__ import annotations

from bench.__main__ import kept_sections
from bench.profile import summarize
from bench.profile_table import render_lines

MAIN = (
    "thread (1): MainThread;_run_module_as_main (<frozen runpy>:198);"
    "<module> (memlife/__main__.py:3);entry (memlife/cli/__init__.py:118);"
    "cmd_run (memlife/cli/run.py:201)"
)
RAW = [
    # Recording: memlife's frame over SQLAlchemy's, twice in one stack (counted once).
    f"{MAIN};merge_values (memlife/recorder/database.py:160);merge_values "
    f"(memlife/recorder/database.py:161);do_execute (sqlalchemy/engine/default.py:951) 6",
    # The event loop waiting: not busy.
    # (py-spy names a module by its path below the sys.path entry it was found in.)
    f"{MAIN};EpollSelector.select (selectors.py:469) 50",
    # An idle pool thread: not busy.
    "thread (2): ThreadPoolExecutor-0_0;_worker (concurrent/futures/thread.py:81) 40",
    # A thread outside Python.
    "thread (3) 2",
    # The SDK's sandbox running workflow code.
    f"{MAIN};_Instance._run_code (temporalio/worker/workflow_sandbox/_runner.py:1) 2",
    "not a sample line",
]


def test_busy_samples_are_shared_out_by_package_frame_and_own_frame() -> None:
    summary = summarize(RAW)
    assert summary["busy_samples"] == 10  # 6 + 2 + 2: the waits are left out
    assert summary["packages"] == [
        ["sqlalchemy", 0.6],
        ["(no Python frame)", 0.2],
        ["temporalio", 0.2],
    ]
    assert summary["frames"][0] == ["do_execute (sqlalchemy/engine/default.py)", 0.6]
    # memlife's frames, inclusive, once per stack; the command's own frames hold every
    # sample and are left out.
    assert summary["own"] == [["merge_values (memlife/recorder/database.py)", 0.6]]


def test_nothing_sampled_is_no_shares_and_no_section_before_a_run() -> None:
    assert summarize([]) == {"busy_samples": 0, "packages": [], "frames": [], "own": []}
    assert render_lines(None) == []


def test_the_section_names_the_command_and_the_shares() -> None:
    result = {
        **summarize(RAW),
        "scenario": "lifecycle-nightly.yaml",
        "rate": 100,
        "outcome": "PASS: 290/290 cases passed",
        "command": "./scripts/bench profile",
        "machine": "2 CPUs",
        "measured_at": "2026-12-06 23:00 UTC",
    }
    text = "\n".join(render_lines(result))
    assert "| `sqlalchemy` | 60.0% |" in text
    assert "| `merge_values (memlife/recorder/database.py)` | 60.0% |" in text
    assert "Reproduce: `./scripts/bench profile`" in text and "10 busy samples" in text


def test_a_full_bench_keeps_the_profile_it_did_not_measure() -> None:
    profile = {**summarize(RAW), "scenario": "lifecycle-nightly.yaml"}
    assert kept_sections({"throughput": {}, "profile": profile})["profile"] == profile
