"""The decision rule (docs/design.md) and latency statistics. Pure: no I/O, no Temporal.

A case passes iff every required string is present in the normalized reply, no forbidden
string is present, and at least one member of the any-of set is present (when one is given).
Missing recall and foreign-fact leakage are reported as separate reasons, and every leaked
string is listed on its own: a low average must never hide a single leak.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from unidecode import unidecode

_WHITESPACE = re.compile(r"\s+")
T = TypeVar("T")


_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")


def _transliterate(match: re.Match[str]) -> str:
    return unidecode(match.group())


def normalize(text: str) -> str:
    """Fold accents (unidecode), casefold, trim and collapse whitespace.

    unidecode maps each character on its own, so only the runs of non-ASCII characters are
    handed to it: its per-character loop over a whole mostly-ASCII record was a tenth of a
    worker's CPU (every store record a probe reads is normalized)."""
    folded = text if text.isascii() else _NOT_ASCII.sub(_transliterate, text)
    return _WHITESPACE.sub(" ", folded.casefold()).strip()


def contains(haystack_normalized: str, needle: str) -> bool:
    """Substring test on normalized text; an empty needle never matches."""
    normalized = normalize(needle)
    return bool(normalized) and normalized in haystack_normalized


class ValueIndex(Generic[T]):
    """Which of many values occur in a text: exactly `contains` for each value, without
    trying every value (a run's values number 12 per pair: 120,000 at 10,000 pairs).

    A value of three words or more is indexed by its first two words, then by the first
    characters of the rest: where it occurs in a text, the text from that position up to
    the second space after it is exactly those two words, and what follows begins with the
    rest. Each position of the text costs a few lookups among the values sharing both.
    Values drawn from word lists share their first three characters by the thousand (every
    "Panadería …"), and their first two words by the ten thousand at 10,000 pairs (every
    "Colegio San …"): keys any shorter were slow at scale. Shorter values are indexed by
    their first three characters.

    Flat, because a worker holds the run's index for the whole run: values and items in
    two lists, each key to a position in them (an array of positions where values share
    it), and per first two words the lengths their rests are keyed by, as bits. Nested
    dictionaries and a list per value took 620 bytes a value, this 340 (docs/scale.md,
    "Memory")."""

    _KEY = 3
    _REST_KEY = 8

    def __init__(self, entries: Iterable[tuple[str, T]]):
        self._values: list[str] = []  # normalized
        self._items: list[T] = []
        self._rest_lengths: dict[str, int] = {}  # first two words -> bit n: a rest of n
        self._by_words: dict[str, int | array[int]] = {}  # first two words, rest's key
        self._by_prefix: dict[str, int | array[int]] = {}
        self._short: list[int] = []
        self.size = 0
        for text, item in entries:
            normalized = normalize(text)
            if not normalized:
                continue  # an empty needle never matches
            position = self.size
            self.size += 1
            self._values.append(normalized)
            self._items.append(item)
            words = normalized.split(" ", 2)
            if len(words) == 3:
                head = len(words[0]) + 1 + len(words[1])
                rest = min(len(words[2]), self._REST_KEY)
                first_two = normalized[:head]
                self._rest_lengths[first_two] = self._rest_lengths.get(first_two, 0) | 1 << rest
                _add_position(self._by_words, normalized[: head + 1 + rest], position)
            elif len(normalized) < self._KEY:
                self._short.append(position)
            else:
                _add_position(self._by_prefix, normalized[: self._KEY], position)

    def found_in(self, haystack_normalized: str) -> list[T]:
        """Every indexed item whose value occurs in the (normalized) text, each once."""
        text = haystack_normalized
        values, items = self._values, self._items
        found: dict[int, T] = {}

        def take(held: int | array[int] | None, at: int) -> None:
            if held is None:
                return
            for position in (held,) if isinstance(held, int) else held:
                if text.startswith(values[position], at):
                    item = items[position]
                    found.setdefault(id(item), item)

        if self._by_words:
            rest_lengths, by_words = self._rest_lengths, self._by_words
            spaces = [index for index, char in enumerate(text) if char == " "]
            following = 0  # index in `spaces` of the first space at or after the position
            for position in range(len(text)):
                while following < len(spaces) and spaces[following] < position:
                    following += 1
                if following + 1 >= len(spaces):
                    break  # fewer than two spaces left: no three-word value starts here
                second_space = spaces[following + 1]
                lengths = rest_lengths.get(text[position:second_space])
                if lengths:
                    rest = second_space + 1
                    for length in _LENGTHS_OF[lengths]:
                        take(by_words.get(text[position : rest + length]), position)
        if self._by_prefix:
            by_prefix = self._by_prefix
            for position in range(len(text) - self._KEY + 1):
                take(by_prefix.get(text[position : position + self._KEY]), position)
        for position in self._short:
            if values[position] in text:
                item = items[position]
                found.setdefault(id(item), item)
        return list(found.values())


# The lengths a bit mask of ValueIndex._rest_lengths holds, for every mask.
_LENGTHS_OF = [
    tuple(n for n in range(ValueIndex._REST_KEY + 1) if mask >> n & 1)
    for mask in range(1 << (ValueIndex._REST_KEY + 1))
]


def _add_position(keys: dict[str, int | array[int]], key: str, position: int) -> None:
    held = keys.get(key)
    if held is None:
        keys[key] = position
    elif isinstance(held, int):
        keys[key] = array("i", (held, position))
    else:
        held.append(position)


@dataclass(frozen=True)
class Expectation:
    """What one reply must and must not contain."""

    required: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()


@dataclass(frozen=True)
class CaseScore:
    passed: bool
    missing: tuple[str, ...] = ()
    leaked: tuple[str, ...] = ()
    any_of_missing: bool = False

    @property
    def reasons(self) -> tuple[str, ...]:
        reasons: list[str] = []
        if self.missing or self.any_of_missing:
            reasons.append("missing")
        if self.leaked:
            reasons.append("leaked")
        return tuple(reasons)


def score_reply(reply: str, expectation: Expectation) -> CaseScore:
    text = normalize(reply)
    missing = tuple(s for s in expectation.required if not contains(text, s))
    leaked = tuple(s for s in expectation.forbidden if contains(text, s))
    any_of_missing = bool(expectation.any_of) and not any(
        contains(text, s) for s in expectation.any_of
    )
    return CaseScore(
        passed=not missing and not leaked and not any_of_missing,
        missing=missing,
        leaked=leaked,
        any_of_missing=any_of_missing,
    )


def percentile_upper_rank(values: Sequence[float], fraction: float) -> float:
    """Percentile by upper rank: the smallest value with at least `fraction` of values <= it.

    With six observations p95 is the maximum.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0 < fraction <= 1:
        raise ValueError("fraction must be in (0, 1]")
    ordered = sorted(values)
    return ordered[max(math.ceil(fraction * len(ordered)), 1) - 1]


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


@dataclass(frozen=True)
class LatencySummary:
    count: int
    mean: float | None
    median: float | None
    p95: float | None
    max: float | None
    share_within_target: float | None
    target_ms: float

    @property
    def within_target(self) -> bool:
        """The latency rule (`latency_within_target`) on the summarized probes."""
        return latency_within_target(self.max if self.count else None, self.target_ms)

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "count": self.count,
            "mean": self.mean,
            "median": self.median,
            "p95": self.p95,
            "max": self.max,
            "share_within_target": self.share_within_target,
            "target_ms": self.target_ms,
        }


def summarize_latency(latencies_ms: Iterable[float], target_ms: float = 700.0) -> LatencySummary:
    ordered = sorted(latencies_ms)
    return summarize_ordered_latency(ordered, len(ordered), target_ms)


def summarize_ordered_latency(
    ordered_ms: Iterable[float], count: int, target_ms: float = 700.0
) -> LatencySummary:
    """`summarize_latency` of `count` values given in ascending order, each read once: a
    database sorts a large run's probes (600,000 at 10,000 pairs, about 20 MB sorted as
    Python floats) and nothing here holds them. Summed in that order, so both give the
    same figures for the same values."""
    if not count:
        return LatencySummary(0, None, None, None, None, None, target_ms)
    lower_middle, upper_middle = (count - 1) // 2, count // 2
    p95_at = max(math.ceil(0.95 * count), 1) - 1
    total, within, seen = 0.0, 0, 0
    low = high = p95 = last = 0.0
    for position, value in enumerate(ordered_ms):
        value = float(value)
        total += value
        within += value <= target_ms
        if position == lower_middle:
            low = value
        if position == upper_middle:
            high = value
        if position == p95_at:
            p95 = value
        last, seen = value, position + 1
    if seen != count:
        raise ValueError(f"{seen} latencies given where {count} were counted")
    return LatencySummary(
        count=count,
        mean=round(total / count, 3),
        median=round((low + high) / 2 if count % 2 == 0 else low, 3),
        p95=round(p95, 3),
        max=round(last, 3),
        share_within_target=round(within / count, 6),
        target_ms=target_ms,
    )


def latency_within_target(slowest_ms: float | None, target_ms: float = 700.0) -> bool:
    """The latency rule: every probe within the target, so the slowest (None: no probes),
    rounded as the summary shows it. The run's summary needs only this; summarizing
    600,000 probes to learn it took about 25 MB."""
    return slowest_ms is None or round(float(slowest_ms), 3) <= target_ms


@dataclass
class InvariantTally:
    checked: int = 0
    failed: int = 0
    inconclusive: int = 0


@dataclass
class Tallies:
    by_invariant: dict[str, InvariantTally] = field(default_factory=dict)

    def add(self, invariant: str, outcome: str) -> None:
        tally = self.by_invariant.setdefault(invariant, InvariantTally())
        tally.checked += 1
        if outcome == "fail":
            tally.failed += 1
        elif outcome == "inconclusive":
            tally.inconclusive += 1
