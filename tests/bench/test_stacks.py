"""The real stacks' rows (bench/stacks.py): a new measure replaces only its own stack and
scenario, and what the bench read in a stack's own store is said under the table."""

from __future__ import annotations

from typing import Any

from bench.render import render
from bench.stacks import merge_stacks


def _row(
    stack: str, scenario: str, seconds: float, measured_at: str, **extra: Any
) -> dict[str, Any]:
    return {
        "stack": stack,
        "library": f"{stack} 1.0",
        "scenario": scenario,
        "pairs": 20,
        "seconds": seconds,
        "cases": 100,
        "cases_passed": 90,
        "failures": 10,
        "inconclusive": 0,
        "findings": {"I4 · archival": 10},
        "command": f"./scripts/bench stacks --stacks {stack}",
        "measured_at": measured_at,
        **extra,
    }


def test_a_new_measure_replaces_only_its_own_stack_and_scenario_in_place() -> None:
    rows = [
        _row("mem0", "races", 8.0, "2026-12-05 12:41 UTC"),
        _row("letta", "races", 93.0, "2026-12-05 23:53 UTC"),
        _row("letta", "lifecycle-nightly", 1548.0, "2026-12-05 18:09 UTC"),
    ]
    again = _row("letta", "races", 66.0, "2026-12-06 00:29 UTC")
    merged = merge_stacks(rows, again)
    assert [(r["stack"], r["scenario"], r["seconds"]) for r in merged] == [
        ("mem0", "races", 8.0),
        ("letta", "races", 66.0),
        ("letta", "lifecycle-nightly", 1548.0),
    ]
    assert rows[1]["seconds"] == 93.0  # not modified in place
    new = _row("letta", "shared-spaces", 54.0, "2026-12-06 00:31 UTC")
    assert merge_stacks(merged, new)[-1] is new


def test_a_direct_read_is_listed_under_the_table_and_the_latest_date_is_given() -> None:
    rows = [
        _row(
            "letta",
            "races",
            66.0,
            "2026-12-06 00:29 UTC",
            confirmed="12 passages in 6 archives no agent links",
        ),
        _row("mem0", "races", 8.0, "2026-12-05 12:41 UTC"),
    ]
    text = render({"scale": [], "stacks": rows})
    assert "| letta 1.0 | `races` | 20 | 66 s | 3.3 s | 90/100 | 0 | I4 · archival: 10 |" in text
    assert "- letta 1.0 `races`: 12 passages in 6 archives no agent links" in text
    assert "(last measured 2026-12-06 00:29 UTC)" in text
