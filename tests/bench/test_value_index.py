"""The value-index bench measures an index that finds every value a reply names."""

from __future__ import annotations

from bench.value_index import measure


def test_the_value_index_bench_counts_every_value_and_finds_the_named_ones() -> None:
    figures = measure(pairs=5, replies=20)  # exits if a named value goes unfound
    assert figures["values"] == 5 * 12  # the nightly's pairs record 12 values each
    assert 100 < figures["bytes_per_value"] < 2000
    assert figures["us_per_reply"] > 0
