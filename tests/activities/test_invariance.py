"""Twins judged when a run ends (activities/invariance.py), from what the recorder holds:
case by case while the target answers a question asked again alike, by rates once it is
seen to vary."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlmodel import select

from memlife import recorder
from memlife.activities.invariance import record_twin_verdicts

NOW = datetime(2026, 12, 6, tzinfo=UTC)


def _record(outcomes: dict[tuple[int, int], str]) -> None:
    """Pairs 0 and 1 share tenant a's values (1 is 0's twin); (pair, step) -> recall."""
    rows: dict = {recorder.RunValueRow: [], recorder.ObservationRow: [], recorder.VerdictRow: []}
    for pair in (0, 1):
        rows[recorder.RunValueRow].append(
            {
                "id": f"r/{pair}/a",
                "run_id": "r",
                "pair_index": pair,
                "role": "a",
                "alias": f"t00{pair}a",
                "domain": "address",
                "text": "1 Oak Lane",
            }
        )
    for (pair, step), outcome in outcomes.items():
        case = f"s{step}-a-address-q0"
        rows[recorder.ObservationRow].append(
            {
                "id": f"r/{pair}/{step}/1",
                "run_id": "r",
                "pair_index": pair,
                "step_index": step,
                "seq": 1,
                "role": "a",
                "tenant_alias": f"t00{pair}a",
                "kind": "probe",
                "domain": "address",
                "case_id": case,
                "request": "Where do I live?",
                "reply": "1 Oak Lane" if outcome == "pass" else "I don't know.",
                "status": "ok",
                "scenario_time": NOW,
                "wall_time": NOW,
            }
        )
        rows[recorder.VerdictRow].append(
            {
                "id": f"r/{pair}/{step}/{case}",
                "run_id": "r",
                "pair_index": pair,
                "step_index": step,
                "stage": f"stage{step}",
                "case_id": case,
                "role": "a",
                "tenant_alias": f"t00{pair}a",
                "domain": "address",
                "store": "response",
                "outcome": outcome,
                "passed": outcome == "pass",
                "checks_json": json.dumps([{"invariant": "recall", "outcome": outcome}]),
                "findings_json": "[]",
            }
        )
    recorder.merge_values(rows)


def _n1() -> list[tuple[str, str, str]]:
    with recorder.session() as db:
        return sorted(
            (row.case_id, row.stage, row.outcome)
            for row in db.exec(
                select(recorder.VerdictRow).where(
                    recorder.VerdictRow.case_id.endswith(  # type: ignore[attr-defined]
                        "-twin"
                    )
                    | (recorder.VerdictRow.case_id == "n1-rates")
                )
            )
        )


def test_a_target_that_answers_alike_is_judged_case_by_case(db_url: str) -> None:
    # The original is crowded out each time it is asked, its twin never: no variation of
    # its own, so each difference is a failure.
    _record(
        {
            (0, 3): "fail",
            (1, 3): "pass",
            (0, 5): "fail",
            (1, 5): "pass",
            (0, 7): "fail",
            (1, 7): "pass",
        }
    )
    assert record_twin_verdicts("r") == 3
    assert _n1() == [
        ("s3-a-address-q0-twin", "stage3", "fail"),
        ("s5-a-address-q0-twin", "stage5", "fail"),
        ("s7-a-address-q0-twin", "stage7", "fail"),
    ]


def test_a_target_seen_to_vary_is_judged_by_rates(db_url: str) -> None:
    # The twin's answer to one question changed while nothing of it did: the target varies,
    # and one difference in three is within that variation.
    _record(
        {
            (0, 3): "pass",
            (1, 3): "fail",
            (0, 5): "pass",
            (1, 5): "pass",
            (0, 7): "pass",
            (1, 7): "pass",
        }
    )
    assert record_twin_verdicts("r") == 1
    assert _n1() == [("n1-rates", "run", "pass")]
