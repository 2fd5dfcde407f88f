"""The artifact builder's figures of probes, kept or only counted (recorder/builder.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from memlife.recorder.builder import ArtifactBuilder
from memlife.rules.scoring import summarize_latency


def builder(keep_samples: bool) -> ArtifactBuilder:
    run = SimpleNamespace(
        id="20260101T000000Z-b",
        status="finished",
        started_at=None,
        finished_at=None,
        meta_json=json.dumps({"latency_budget_ms": 700.0}),
    )
    made = ArtifactBuilder(
        run, {}, keep_entries=False, keep_findings=False, keep_samples=keep_samples
    )
    made.cases = made.cases_passed = 1
    for latency, metrics in (
        (12.0, {"stage:retrieval": 3.0, "cost": 0.25}),
        (700.0004, {"tokens": 10.0}),
        (9.5, {}),
    ):
        made.add_probe(latency, metrics)
    return made


def test_a_builder_that_keeps_the_samples_summarizes_them() -> None:
    kept = builder(keep_samples=True)
    assert kept.latency() == summarize_latency([12.0, 700.0004, 9.5], 700.0)
    assert kept.stages_latency()["retrieval"]["median"] == 3.0
    assert kept.summary()["latency_within_target"]  # 700.0004 is 700.0 as the run shows it


def test_a_builder_that_only_counts_still_judges_latency_and_sums_cost() -> None:
    counted = builder(keep_samples=False)
    assert len(counted.probe_latencies) == 0 and counted.stage_samples == {}
    assert (counted.probe_count, counted.probe_max) == (3, 700.0004)
    assert counted.summary()["latency_within_target"]
    counted.add_probe(700.001, {})
    assert not counted.summary()["latency_within_target"]
    # The digest needs the figures the recorder sorted (recorder/queries.py), never none.
    with pytest.raises(RuntimeError, match="latency_summary"):
        counted.latency()
    with pytest.raises(RuntimeError, match="stage_summary"):
        counted.stages_latency()
    counted.latency_summary = summarize_latency([1.0])
    counted.stage_summary = {}
    assert counted.digest_fields(1)["cost"]["per_probe_mean"] == 0.25
    assert counted.digest_fields(1)["cost"]["tokens_per_probe_mean"] == 10.0
