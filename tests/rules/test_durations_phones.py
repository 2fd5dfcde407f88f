from __future__ import annotations

from datetime import timedelta

import pytest

from memlife.rules.durations import format_duration, parse_duration
from memlife.rules.phones import CAPACITY, is_fictional, synthetic_phone


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("150ms", timedelta(milliseconds=150)),
        ("6h", timedelta(hours=6)),
        ("3d", timedelta(days=3)),
        ("1h30m", timedelta(minutes=90)),
        ("2.5s", timedelta(seconds=2.5)),
        (" 1w ", timedelta(weeks=1)),
    ],
)
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "0s", "0ms", "-5m", "5", "h", "5 parsecs", "6h garbage", "3651d", "99999999999999999999d"],
)
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("text", ["150ms", "6h", "3d", "1h30m", "2s500ms", "1d2h3m4s5ms"])
def test_format_round_trips(text: str) -> None:
    assert parse_duration(format_duration(parse_duration(text))) == parse_duration(text)
    assert format_duration(parse_duration(text)) == text


def test_phones_are_fictional_unique_within_a_run_and_differ_between_runs() -> None:
    run = [synthetic_phone("run-1", index) for index in range(2000)]
    assert len(set(run)) == len(run)
    assert all(is_fictional(phone) for phone in run)
    assert all(phone[5:10] == "55501" for phone in run)  # NANP 555-01XX, reserved for fiction
    assert synthetic_phone("run-1", 0) == run[0]  # deterministic (replay-safe)
    assert synthetic_phone("run-2", 0) != run[0]
    with pytest.raises(ValueError):
        synthetic_phone("run-1", CAPACITY)
