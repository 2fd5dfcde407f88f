"""The real-server bench (bench/real_server.py): the plain runner builds each request from
the run's target file as memlife does, both sides count the same requests, memlife's own
time per request is its difference less the plain runner's, and the row is rendered and
merged without touching other sections."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from bench.__main__ import kept_sections
from bench.plain_runner import fact_values, one_request, outgoing
from bench.real_server import (
    http_stores,
    is_target_request,
    merge_row,
    own_share,
    rate_ratios,
)
from bench.render import render
from memlife.rules.target import load_target

REPO = Path(__file__).resolve().parents[2]
MEM0 = load_target(REPO / "scenarios" / "targets" / "mem0.yaml")


def test_a_forgotten_fact_is_sent_with_every_value_it_had_the_latest_first() -> None:
    rows = [
        ("run/1/a/employer/0", "Acme"),
        ("run/1/a/employer/2", "Initech"),
        ("run/1/a/employer/1", "Globex"),
        ("run/1/b/pet/0", "Rex"),
    ]
    values = fact_values(rows)
    assert values == {(1, "a", "employer"): ["Initech", "Acme", "Globex"], (1, "b", "pet"): ["Rex"]}
    built = outgoing(
        MEM0,
        one_request(MEM0, "forget"),
        {
            "phone": "+34",
            "user_id": "u/1",
            "value": "Initech",
            "values": values[(1, "a", "employer")],
        },
    )
    assert (built.method, built.path) == ("POST", "/v1/users/u%2F1/forget")
    # A lone placeholder keeps its value's type: the list goes as a list, as memlife sends it.
    assert built.body == {"value": "Initech", "values": ["Initech", "Acme", "Globex"]}


def test_a_probe_of_many_needles_repeats_its_query_parameter() -> None:
    probe = next(store.probe for store in MEM0.stores if store.name == "memory")
    built = outgoing(MEM0, probe.needles, {"needles": ["Acme", "Rex"]})
    assert (built.method, built.path) == ("GET", "/admin/memory/search")
    assert built.params == [("q", "Acme"), ("q", "Rex")]
    assert built.body is None


def test_only_the_stores_read_through_the_target_are_its_requests() -> None:
    stores = http_stores(MEM0)
    assert stores == {"memory"}
    assert is_target_request("inspect", "memory scope u1", stores)
    assert not is_target_request("inspect", "history needle Acme", stores)
    assert not is_target_request("inspect", "disk needles Acme\nRex", stores)
    assert is_target_request("write", "Trabajo en Acme.", stores)


def _fidelity(median: float, p95: float) -> dict[str, float]:
    return {"count": 10, "median": median, "p95": p95, "median_latency": 20, "median_server": 18}


def _row(**extra: Any) -> dict[str, Any]:
    memlife = [
        {
            "run_id": f"bench-mem0-{n}",
            "pairs": 20,
            "seconds": seconds,
            "requests": 2560,
            "observations": 3920,
            "cpu_seconds": {"workers": 10.0, "temporal": 2.0, "target": 30.0},
            "cases": 2420,
            "cases_passed": 1820,
            "inconclusive": 0,
            "findings": {"U1 · response": 360, "I4 · history": 280},
            "statuses": {},
            "fidelity": _fidelity(median, 20.0),
        }
        for n, seconds, median in ((1, 40.0, 2.0), (2, 44.0, 3.0))
    ]
    plain = [
        {
            "requests": 2560,
            "seconds": seconds,
            "errors": 0,
            "cpu_seconds": {"runner": 1.0, "target": 28.0},
            "statuses": {},
            "fidelity": _fidelity(median, 6.0),
        }
        for seconds, median in ((32.0, 0.5), (36.0, 1.0))
    ]
    return {
        "stack": "mem0",
        "library": "mem0ai 2.2.1",
        "scenario": "lifecycle-nightly",
        "pairs": 20,
        "concurrency": 4,
        "cpus": {"target": [0, 1], "drivers": [0]},
        "order": ["memlife 1", "plain 1", "plain 2", "memlife 2"],
        "memlife": memlife,
        "plain": plain,
        **rate_ratios(memlife, plain),
        "own_share": own_share(memlife, plain),
        "stacks_findings": {"U1 · response": 360, "I4 · history": 280},
        "machine": "2 CPU(s) (Intel(R) Xeon(R) Processor), 24 GiB",
        "command": "./scripts/bench real-server",
        "measured_at": "2026-12-06 17:00 UTC",
        **extra,
    }


def test_memlifes_own_time_is_its_difference_less_the_plain_runners() -> None:
    row = _row()
    # The means of the medians: (2 + 3) / 2 less (0.5 + 1) / 2; of the p95s: 20 less 6.
    assert row["own_share"] == {"median": 1.75, "p95": 14.0}
    # 2560 requests in 40 and 44 s against 32 and 36 s; round by round, run n by replay n.
    assert round(row["ratio"], 3) == round((2560 / 40 + 2560 / 44) / (2560 / 32 + 2560 / 36), 3)
    assert row["by_round"] == [2560 / 40 / (2560 / 32), 2560 / 44 / (2560 / 36)]


def test_the_row_is_rendered_with_its_ratio_share_and_findings() -> None:
    text = render({"scale": [], "real_server": [_row()]})
    assert "## memlife against a plain runner on a real server" in text
    assert "memlife / plain aiohttp = **0.81** (round by round: 0.80, 0.82)" in text
    assert "**+1.75 ms** at the median and **+14.0 ms** at the 95th percentile" in text
    assert "the same as the real stacks' row for `lifecycle-nightly`" in text
    assert "the 1,360 store reads of each run that memlife makes itself" in text
    assert "(the machine has 2)" in text
    assert "Reproduce: `./scripts/bench real-server`" in text
    other = render({"scale": [], "real_server": [_row(stacks_findings={"I4 · disk": 1})]})
    assert "not those of the real stacks' row for `lifecycle-nightly` (I4 · disk: 1)" in other


def test_a_new_row_replaces_only_its_own_and_a_full_bench_keeps_the_section() -> None:
    results = {"scaleout": [{"workers": 1}], "real_server": [_row(), _row(scenario="races")]}
    before = copy.deepcopy(results)
    again = _row(measured_at="2026-12-07 09:00 UTC")
    merged = merge_row(results, again)
    assert [r["scenario"] for r in merged["real_server"]] == ["races", "lifecycle-nightly"]
    assert merged["real_server"][-1] is again
    assert merged["scaleout"] == [{"workers": 1}]
    assert results == before  # not modified in place
    kept = kept_sections({**merged, "throughput": {}, "stacks": [1], "claims": {"runs": 1}})
    assert kept == {
        "reports": [],
        "scaleout": [{"workers": 1}],
        "real_server": merged["real_server"],
        "stacks": [1],
        "claims": {"runs": 1},
    }


def test_latency_findings_on_a_busy_machine_are_told_apart_from_the_others() -> None:
    row = _row()
    row["memlife"][1]["findings"] = {**row["memlife"][1]["findings"], "L · response": 2}
    text = render({"scale": [], "real_server": [row]})
    assert (
        "the same as the real stacks' row for `lifecycle-nightly` above (real findings of "
        "Mem0, docs/bug-classes.md), but for latency (L: 0, 2 answer(s)"
    ) in text


def test_the_stacks_busy_share_is_set_beside_the_ratio() -> None:
    text = render({"scale": [], "real_server": [_row()]})
    # 28 s of CPU over 32 and 36 s of replays; 30 s over 40 and 44 s of memlife's runs.
    assert "The stack kept 0.82 cores busy in the plain runner's replays and 0.71" in text
    assert "Mem0 on the scripted model is CPU-bound on this machine" in text
    assert "Its busy share, 0.87 of the replays', is about memlife's ratio." in text
