"""Reports of runs with more pairs than a page draws (reports/lists.py): the HTML page
draws every pair with a finding, the first others, and one lane summing all pairs, and
says so; the JSON report still lists every step and tenant. Pure: an artifact widened
from a recorded one."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from memlife import reports
from memlife.recorder.artifact import Artifact, FindingEntry
from memlife.reports.lists import MAX_DRAWN_PAIRS, drawn_pairs, every_pair_lane
from memlife.reports.scorecard import Redactor

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PAIRS = MAX_DRAWN_PAIRS + 50
LATE = PAIRS - 10  # a pair past those drawn in order, with a finding of its own


@pytest.fixture(scope="module")
def wide() -> Artifact:
    """The two-pair nightly, its tenants and steps copied to PAIRS pairs (each with its
    own phone and tenant id), and a finding of pair 0 repeated on pair LATE."""
    path = FIXTURES / "artifact-nightly-2pairs-resurrection-stale.json.gz"
    small = Artifact.model_validate_json(gzip.decompress(path.read_bytes()))
    tenants, timeline = [], []
    for pair in range(PAIRS):
        source = pair % 2
        for t in small.tenants:
            if t.pair == source:
                tenants.append(
                    t.model_copy(
                        update={
                            "pair": pair,
                            "phone": f"+1999{pair:06d}{t.role}",
                            "user_id": f"wide-{pair}-{t.role}",
                        }
                    )
                )
        timeline += [
            s.model_copy(update={"pair": pair}) for s in small.timeline if s.pair == source
        ]
    late: FindingEntry = small.failures[0].model_copy(update={"pair": LATE})
    return small.model_copy(
        update={
            "meta": small.meta.model_copy(update={"pairs": PAIRS}),
            "tenants": tenants,
            "timeline": timeline,
            "failures": [*small.failures, late],
        }
    )


def test_the_page_draws_the_pairs_with_findings_the_first_others_and_a_lane_for_all(
    wide: Artifact,
) -> None:
    page = reports.render(wide, "html")
    assert f"all {PAIRS} pairs" in page
    flagged = {f.pair for f in (*wide.failures, *wide.inconclusive)}
    drawn = drawn_pairs(range(PAIRS), flagged)
    assert len(drawn) == MAX_DRAWN_PAIRS and LATE in drawn
    lanes = [int(n) for n in re.findall(r'class="label">pair (\d+):', page)]
    assert lanes == drawn  # and no pair beyond them: pair MAX_DRAWN_PAIRS is not drawn
    assert f"{PAIRS} pairs: the first lane sums them all" in page
    assert (
        f"Synthetic tenants of this run ({2 * PAIRS}; the {2 * MAX_DRAWN_PAIRS} of the "
        "pairs drawn above" in page
    )


def test_the_lane_for_all_pairs_sums_their_outcomes_step_by_step(wide: Artifact) -> None:
    lane = every_pair_lane(s.model_dump(mode="json") for s in wide.timeline)
    steps = sorted({s.step for s in wide.timeline})
    assert [s["step"] for s in lane] == steps and {s["pair"] for s in lane} == {-1}
    for summed in lane:
        mine = [s for s in wide.timeline if s.step == summed["step"]]
        for outcome in ("pass", "fail", "inconclusive"):
            assert summed["outcomes"].get(outcome, 0) == sum(
                s.outcomes.get(outcome, 0) for s in mine
            )


def test_the_lane_places_each_step_by_its_offset_from_its_pairs_start() -> None:
    def step(pair: int, index: int, start: str, finish: str) -> dict:
        return {
            "pair": pair,
            "step": index,
            "kind": "write",
            "stage": f"s{index}",
            "scenario_started": start,
            "scenario_finished": finish,
            "outcomes": {"pass": 1},
        }

    # Pair 1 runs the same lifecycle a day later (a later wave); one of its steps is slower.
    timeline = [
        step(0, 0, "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"),
        step(0, 1, "2026-01-01T06:00:00Z", "2026-01-01T06:01:00Z"),
        step(1, 0, "2026-01-02T00:00:00Z", "2026-01-02T00:01:00Z"),
        step(1, 1, "2026-01-02T06:00:00Z", "2026-01-02T06:05:00Z"),
    ]
    lane = every_pair_lane(timeline)
    assert [(s["scenario_started"], s["scenario_finished"], s["outcomes"]) for s in lane] == [
        ("2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", {"pass": 2}),
        ("2026-01-01T06:00:00Z", "2026-01-01T06:05:00Z", {"pass": 2}),
    ]


def test_the_earliest_start_is_compared_as_a_time_not_as_text() -> None:
    steps = [
        {
            "pair": 0,
            "step": 1,
            "kind": "write",
            "stage": "w",
            "outcomes": {},
            "scenario_started": "2026-01-01T00:00:00.500000Z",
            "scenario_finished": None,
        },
        {
            "pair": 1,
            "step": 1,
            "kind": "write",
            "stage": "w",
            "outcomes": {},
            "scenario_started": "2026-01-01T00:00:00Z",
            "scenario_finished": None,
        },
    ]
    # As text "…00.500000Z" sorts first ("." before "Z"); as a time it is half a second late.
    assert every_pair_lane(steps)[0]["scenario_started"] == "2026-01-01T00:00:00Z"


def test_the_json_report_still_lists_every_step_and_tenant(wide: Artifact) -> None:
    document = json.loads(reports.render(wide, "json"))
    assert len(document["timeline"]) == len(wide.timeline)
    assert len(document["tenants"]) == 2 * PAIRS
    assert not {"every_pair", "tenant_count", "samples", "cases"} & set(document)
    written = set(re.findall(r"\+1999\d+[ab]", json.dumps(document)))
    assert {t.phone for t in wide.tenants} and not written  # redacted


def test_drawn_pairs_puts_flagged_pairs_first_within_the_limit() -> None:
    assert drawn_pairs(range(10), {8, 9}, limit=4) == [0, 1, 8, 9]
    assert drawn_pairs(range(10), set(range(10)), limit=3) == [0, 1, 2]
    assert drawn_pairs([3, 1, 2], set(), limit=5) == [1, 2, 3]


def test_redaction_replaces_the_longest_secret_at_each_place() -> None:
    redactor = Redactor(
        [
            {"pair": 1, "role": "a", "phone": "+1555", "user_id": "u_12"},
            {"pair": 2, "role": "b", "phone": "+15551", "user_id": "u_1"},
        ]
    )
    assert redactor.text("call +15551 or +1555, ask u_12 and u_1.") == (
        "call phone[p2b] or phone[p1a], ask tenant[p1a] and tenant[p2b]."
    )
    assert redactor.text("nothing here") == "nothing here"
    assert redactor.scrub({"a": ["u_1", 3, None]}) == {"a": ["tenant[p2b]", 3, None]}
