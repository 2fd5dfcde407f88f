from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from unidecode import unidecode

from memlife.rules.scoring import (
    Expectation,
    ValueIndex,
    contains,
    latency_within_target,
    median,
    normalize,
    percentile_upper_rank,
    score_reply,
    summarize_latency,
)


def test_normalize_folds_accents_case_and_whitespace() -> None:
    assert normalize("  Panadería   QUISPE\n\t") == "panaderia quispe"
    assert normalize("ÁRBOL ñandú Straße") == "arbol nandu strasse"


@given(st.text())
def test_normalize_is_unidecode_of_the_whole_text(text: str) -> None:
    # Only non-ASCII runs go through unidecode; that must change nothing.
    assert normalize(text) == " ".join(unidecode(text).casefold().split())


def test_required_matches_across_accents_and_case() -> None:
    expectation = Expectation(required=("Panadería Quispe",))
    score = score_reply("Trabajas en PANADERIA quispe.", expectation)
    assert score.passed and score.reasons == ()


def test_required_is_a_substring_test_after_whitespace_collapse() -> None:
    reply = "Trabajas en Panadería\n   Quispe"
    assert score_reply(reply, Expectation(required=("panaderia quispe",))).passed


def test_missing_and_leaked_are_separate_reasons_and_each_leak_listed() -> None:
    score = score_reply(
        "Tu color es verde; también rojo.",
        Expectation(required=("azul",), forbidden=("verde", "rojo", "negro")),
    )
    assert not score.passed
    assert score.missing == ("azul",)
    assert score.leaked == ("verde", "rojo")
    assert score.reasons == ("missing", "leaked")


def test_any_of_needs_at_least_one_member() -> None:
    expectation = Expectation(any_of=("Quispe", "la panadería"))
    assert score_reply("Trabajas en la Panadería.", expectation).passed
    failed = score_reply("No lo sé.", expectation)
    assert not failed.passed and failed.any_of_missing and failed.reasons == ("missing",)


def test_forbidden_alone_passes_when_absent() -> None:
    assert score_reply("No tengo esa información.", Expectation(forbidden=("azul",))).passed


def test_empty_needles_never_match() -> None:
    score = score_reply("anything", Expectation(required=("  ",)))
    assert not score.passed and score.missing == ("  ",)


def test_percentile_by_upper_rank() -> None:
    six = [10.0, 20.0, 30.0, 40.0, 50.0, 600.0]
    # With six observations p95 is the maximum (the seed's remark).
    assert percentile_upper_rank(six, 0.95) == 600.0
    twenty = [float(v) for v in range(1, 21)]
    assert percentile_upper_rank(twenty, 0.95) == 19.0
    assert percentile_upper_rank(twenty, 0.5) == 10.0
    assert percentile_upper_rank([7.0], 0.95) == 7.0
    with pytest.raises(ValueError):
        percentile_upper_rank([], 0.95)


def test_median_even_and_odd() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 2.0, 3.0]) == 2.5


def test_latency_summary_and_target_rule() -> None:
    summary = summarize_latency([100.0, 200.0, 300.0, 800.0], target_ms=700)
    assert summary.count == 4
    assert summary.mean == 350.0
    assert summary.median == 250.0
    assert summary.p95 == 800.0
    assert summary.max == 800.0
    assert summary.share_within_target == 0.75
    assert not summary.within_target
    assert summarize_latency([700.0], target_ms=700).within_target
    empty = summarize_latency([], target_ms=700)
    assert empty.count == 0 and empty.mean is None and empty.within_target


@given(
    st.lists(st.floats(min_value=0, max_value=2000, allow_nan=False)),
    st.floats(min_value=0, max_value=2000, allow_nan=False),
)
def test_the_summary_latency_rule_is_the_latency_summarys(
    values: list[float], target: float
) -> None:
    # finish_run judges latency with the one-pass rule; reports show summarize_latency's.
    assert latency_within_target(max(values, default=None), target) == (
        summarize_latency(values, target).within_target
    )


@given(st.lists(st.floats(min_value=0, max_value=2000, allow_nan=False), min_size=1))
def test_latency_summary_agrees_with_median_and_percentile(values: list[float]) -> None:
    summary = summarize_latency(values, target_ms=700)
    assert summary.median == round(median(values), 3)
    assert summary.p95 == round(percentile_upper_rank(values, 0.95), 3)
    assert summary.max == round(max(values), 3)
    assert summary.share_within_target == round(sum(v <= 700 for v in values) / len(values), 6)


def test_value_index_finds_exactly_what_contains_finds() -> None:
    values = ["Panadería Quispe", "Calle Olmo 12", "Rex", "ab", "Quispe", "  "]
    index = ValueIndex((v, v) for v in values)
    reply = normalize("Trabajas en PANADERIA quispe, cerca de la calle olmo 12; tu perro Rex")
    assert sorted(index.found_in(reply)) == sorted(v for v in values if contains(reply, v))
    assert index.size == 5  # the blank value is never indexed: it never matches
    assert index.found_in(normalize("nada que ver")) == []


@given(
    values=st.lists(st.text(alphabet="abcñé ", min_size=1, max_size=6), max_size=12),
    text=st.text(alphabet="abcñé ", max_size=40),
)
def test_value_index_agrees_with_contains(values: list[str], text: str) -> None:
    haystack = normalize(text)
    found = ValueIndex((v, i) for i, v in enumerate(values)).found_in(haystack)
    assert sorted(found) == [i for i, v in enumerate(values) if contains(haystack, v)]


@given(
    values=st.lists(
        st.lists(st.sampled_from(["ab", "b", "ba", "c", "ñé"]), min_size=1, max_size=4).map(
            " ".join
        ),
        max_size=12,
    ),
    words=st.lists(st.sampled_from(["ab", "b", "ba", "c", "ñé", "xab", "bax"]), max_size=12),
)
def test_value_index_agrees_with_contains_on_word_values(
    values: list[str], words: list[str]
) -> None:
    """Multi-word values, as canaries are, met mid-word and across word boundaries."""
    haystack = normalize(" ".join(words))
    found = ValueIndex((v, i) for i, v in enumerate(values)).found_in(haystack)
    assert sorted(found) == [i for i, v in enumerate(values) if contains(haystack, v)]


@given(
    values=st.lists(
        st.lists(
            st.sampled_from(["san", "telmo", "abcdefgh", "abcdefghij", "ab", "c"]),
            min_size=3,
            max_size=5,
        ).map(" ".join),
        max_size=12,
    ),
    words=st.lists(
        st.sampled_from(
            ["san", "telmo", "abcdefgh", "abcdefghij", "ab", "c", "xsan", "telmox", "abcdefghijk"]
        ),
        max_size=12,
    ),
)
def test_value_index_agrees_with_contains_past_its_rest_key(
    values: list[str], words: list[str]
) -> None:
    """Values sharing their first two words and more than the rest's key (8 characters),
    as 'colegio san telmo …' values do by the thousand."""
    haystack = normalize(" ".join(words))
    found = ValueIndex((v, i) for i, v in enumerate(values)).found_in(haystack)
    assert sorted(found) == [i for i, v in enumerate(values) if contains(haystack, v)]
