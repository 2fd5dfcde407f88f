"""Reports from recorded artifacts (tests/fixtures, written by real `memlife run`s)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from memlife import reports
from memlife.recorder.artifact import Artifact
from memlife.reports.charts import histogram_svg
from memlife.reports.scorecard import pair_link

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(scope="module")
def leak_artifact() -> Artifact:
    """seed-six-case against the reference target with cross-tenant-leak: 6 leaks."""
    return Artifact.model_validate_json((FIXTURES / "artifact-seed-leak.json").read_text())


@pytest.fixture(scope="module")
def nightly_artifact() -> Artifact:
    """Two nightly pairs with nightly-resurrection and stale-after-update (an artifact
    written before cost, stage latency and adjudications were added: it still reads)."""
    path = FIXTURES / "artifact-nightly-2pairs-resurrection-stale.json.gz"
    return Artifact.model_validate_json(gzip.decompress(path.read_bytes()))


def sensitive(artifact: Artifact) -> list[str]:
    return [value for t in artifact.tenants for value in (t.phone, t.user_id) if value]


@pytest.mark.parametrize("fmt", reports.FORMATS)
def test_every_format_redacts_phones_and_tenant_ids_by_default(
    fmt: str, leak_artifact: Artifact
) -> None:
    secrets = sensitive(leak_artifact)
    assert secrets and any(s in leak_artifact.model_dump_json() for s in secrets)
    text = reports.render(leak_artifact, fmt)
    assert not [s for s in secrets if s in text]
    kept = reports.render(leak_artifact, fmt, redacted=False)
    if fmt in ("json", "html"):  # these list the run's tenants: --no-redact shows them
        assert all(s in kept for s in secrets)


def test_redaction_labels_are_stable_and_name_pair_and_role(leak_artifact: Artifact) -> None:
    redacted = reports.redact(leak_artifact)
    register = next(o for o in redacted.observations if o.kind == "register")
    assert re.fullmatch(r"phone\[p0[ab]\]", register.request)
    assert re.fullmatch(r"tenant\[p0[ab]\]", register.reply or "")
    assert redacted.meta.redacted and not leak_artifact.meta.redacted
    assert leak_artifact.observations[0].request.startswith("+")  # input untouched


def test_markdown_lists_every_leak_on_its_own_line(leak_artifact: Artifact) -> None:
    text = reports.render(leak_artifact, "md")
    leaks = [f for f in leak_artifact.failures if f.reason == "leaked"]
    assert len(leaks) == 6
    lines = [line for line in text.splitlines() if line.startswith("- I3 leaked")]
    assert len(lines) == 6
    for leak in leaks:
        assert any(f"`{leak.evidence.value}`" in line for line in lines)
    assert "**FAIL**" in text


def test_junit_has_a_test_case_per_check_and_the_summary_counts(nightly_artifact: Artifact) -> None:
    root = ElementTree.fromstring(reports.render(nightly_artifact, "junit"))
    by_invariant = nightly_artifact.summary.by_invariant
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    for name, tally in by_invariant.items():
        if not tally.checked:
            assert name not in suites
            continue
        suite = suites[name]
        cases = suite.findall("testcase")
        assert len(cases) == tally.checked == int(suite.get("tests") or 0)
        failures = [c for c in cases if c.find("failure") is not None]
        assert len(failures) == tally.failed == int(suite.get("failures") or 0)
    resurrected = [
        c.find("failure") for c in suites["I4"].findall("testcase") if c.find("failure") is not None
    ]
    assert all(f.get("message") == "resurrected" for f in resurrected)
    assert all("memory" in (f.text or "") for f in resurrected)


def test_scorecard_rates_come_with_intervals_over_pairs(nightly_artifact: Artifact) -> None:
    card = reports.scorecard(nightly_artifact)
    update = card.rates["update"]
    tally = nightly_artifact.summary.by_invariant["U1"]
    assert update.trials == tally.checked - tally.inconclusive
    assert update.successes == update.trials - tally.failed
    assert update.pairs == 2
    assert update.ci95_low is not None and update.rate is not None
    assert update.ci95_high is not None and update.ci95_low <= update.rate <= update.ci95_high
    assert len(card.residues) == sum(
        1 for f in nightly_artifact.failures if f.reason in ("residue", "resurrected")
    )
    document = json.loads(reports.render(nightly_artifact, "json"))
    assert document["rates"]["deletion"]["invariant"] == "I4"
    assert "observations" not in document and "cases" not in document


def test_the_html_timeline_draws_every_step_and_marks_the_failing_ones(
    nightly_artifact: Artifact,
) -> None:
    page = reports.render(nightly_artifact, "html")
    assert page.startswith("<!doctype html>") and "<script" not in page
    assert "http://" not in page.split("</style>")[0]  # self-contained: nothing to fetch
    checked_steps = [s for s in nightly_artifact.timeline if s.kind != "wait"]
    assert page.count('class="step ') == len(checked_steps)
    failing = [s for s in checked_steps if s.outcomes.get("fail")]
    assert failing and page.count('class="step fail"') == len(failing)
    assert '<table class="matrix">' in page


def test_the_latency_histogram_counts_every_probe_against_the_budget(
    nightly_artifact: Artifact,
) -> None:
    card = reports.scorecard(nightly_artifact)
    samples = card.samples
    svg = histogram_svg(card)
    counted = [int(n) for n in re.findall(r": (\d+) probe\(s\)</title>", svg)]
    assert sum(counted) == len(samples) > 0  # every probe in exactly one bar
    # The axis reaches the budget even though every probe took a few ms: the budget is
    # drawn and labelled, and no bar is past it (no probe was slow).
    assert max(samples) < 100 and "budget 700 ms" in svg and 'class="budget"' in svg
    assert "1000 ms</text>" in svg and 'class="bar over"' not in svg
    slow = card.model_copy(update={"samples": [*samples, 950.0]})
    assert svg.count('class="bar over"') == 0
    assert histogram_svg(slow).count('class="bar over"') == 1


def test_an_unknown_format_is_refused(leak_artifact: Artifact) -> None:
    with pytest.raises(ValueError, match="unknown format"):
        reports.render(leak_artifact, "pdf")


def test_findings_link_to_their_pairs_workflow_in_the_web_ui(leak_artifact: Artifact) -> None:
    # A skip-mode run: its history ended with the time-skipping server, so no link unless
    # a Web UI is named.
    assert leak_artifact.meta.clock == "skip" and leak_artifact.meta.web_ui is None
    assert "/workflows/" not in reports.render(leak_artifact, "md")
    ui = "http://ui.example:8080"
    run = leak_artifact.meta.run_id
    link = f"{ui}/namespaces/default/workflows/memlife%2Fseed-six-case%2F{run}%2Fpair-0"
    markdown = reports.render(leak_artifact, "md", web_ui=ui + "/")
    leaks = [line for line in markdown.splitlines() if line.startswith("- I3 leaked")]
    assert len(leaks) == 6 and all(line.endswith(f" · [workflow]({link})") for line in leaks)
    page = reports.render(leak_artifact, "html", web_ui=ui)
    assert page.count(f'<a href="{link}"') == 6
    # A run in cohorts: a pair's lifecycle is its cohort's workflow.
    in_cohorts = leak_artifact.meta.model_copy(
        update={"cohort_size": 4, "web_ui": ui, "namespace": "night", "clock": "real"}
    )
    assert pair_link(in_cohorts, 5) == (
        f"{ui}/namespaces/night/workflows/memlife%2Fseed-six-case%2F{run}%2Fcohort-4"
    )
    # Nothing named and not skipped: `memlife dev`'s Web UI.
    local = in_cohorts.model_copy(update={"web_ui": None})
    assert (pair_link(local, 0) or "").startswith("http://127.0.0.1:8233/")
