"""The scorecard every report format is drawn from: the artifact's summary, matrix and
findings, the rates with bootstrap 95% intervals over pairs, findings grouped (leaks,
residues, the rest), and redaction of phone numbers and tenant ids. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from memlife.contracts import DEV_WEB_UI, pair_home_workflow_id, web_ui_link
from memlife.recorder.artifact import (
    AdjudicationEntry,
    Artifact,
    CaseEntry,
    Deletion,
    FindingEntry,
    Latency,
    Meta,
    PairTallies,
    Rate,
    Summary,
    Tally,
    TenantEntry,
    TimelineStep,
)
from memlife.reports.lists import (
    MAX_DRAWN_PAIRS,
    ArtifactLists,
    Lists,
    drawn_pairs,
    every_pair_lane,
)
from memlife.rules.statistics import bootstrap_rate
from memlife.rules.verdicts import INVARIANTS, LEAK_REASONS, RESIDUE_REASONS

RATES = {"recall": "recall", "update": "U1", "deletion": "I4", "response isolation": "I3"}
REPORT_VERSION = 1


class Scorecard(BaseModel):
    """What every format shows: verdict, rates with 95% intervals over pairs, the matrix,
    every leak and every residue on its own, latency and the timeline. `memlife report
    --format json` is this, without the cases and the latency samples."""

    model_config = ConfigDict(extra="forbid")

    report_version: int = REPORT_VERSION
    meta: Meta
    summary: Summary
    rates: dict[str, Rate]
    adjudicated_rates: dict[str, Rate] = Field(default_factory=dict)
    adjudications: list[AdjudicationEntry] = Field(default_factory=list)
    stages: list[str]
    matrix: dict[str, dict[str, dict[str, Tally]]]
    latency_ms: Latency
    # ok probes' latencies, ms: as given (a compact array from the recorder), unvalidated
    samples: SkipValidation[Sequence[float]] = Field(default_factory=list)
    deletions: list[Deletion]
    leaks: list[FindingEntry]
    residues: list[FindingEntry]
    other_failures: list[FindingEntry]
    inconclusive: list[FindingEntry]
    timeline: list[TimelineStep]
    tenants: list[TenantEntry]
    cases: list[CaseEntry]
    # Past MAX_DRAWN_PAIRS pairs (lists.py), `timeline` and `tenants` hold the pairs a page
    # draws, and this lane sums every pair; `memlife report --format json` still lists all.
    every_pair: list[TimelineStep] = Field(default_factory=list)
    tenant_count: int = 0


# -- redaction -----------------------------------------------------------------------------


class Redactor:
    """Replaces every run tenant's phone number and tenant id with a label naming its pair
    and role, wherever it appears in a string. It looks each string up position by position
    (the longest secret first), so its cost grows with the text, not with the number of
    tenants: a run of 10,000 pairs has 40,000 secrets."""

    def __init__(self, tenants: Iterable[TenantEntry | dict[str, Any]]) -> None:
        self.labels: dict[str, str] = {}
        for tenant in tenants:
            entry = tenant if isinstance(tenant, dict) else tenant.model_dump()
            label = f"p{entry['pair']}{entry['role']}"
            if entry["phone"]:
                self.labels[entry["phone"]] = f"phone[{label}]"
            if entry.get("user_id"):
                self.labels[entry["user_id"]] = f"tenant[{label}]"
        self.lengths = sorted({len(secret) for secret in self.labels}, reverse=True)
        self.firsts = frozenset(secret[0] for secret in self.labels)

    def text(self, value: str) -> str:
        if not self.firsts.intersection(value):
            return value
        parts, start, position, end = [], 0, 0, len(value)
        while position < end:
            if value[position] in self.firsts:
                for length in self.lengths:
                    label = self.labels.get(value[position : position + length])
                    if label is not None:
                        parts += [value[start:position], label]
                        position = start = position + length
                        break
                else:
                    position += 1
            else:
                position += 1
        return "".join(parts) + value[start:] if parts else value

    def scrub(self, value: Any) -> Any:
        """Every string in a JSON value, redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.scrub(item) for item in value]
        if isinstance(value, dict):
            return {key: self.scrub(item) for key, item in value.items()}
        return value


def redact(artifact: Artifact, redactor: Redactor | None = None) -> Artifact:
    """A copy with every run tenant's phone number and tenant id replaced by a label (the
    artifact's tenants', or those `redactor` was made with)."""
    redactor = redactor or Redactor(artifact.tenants)
    redacted = Artifact.model_validate(redactor.scrub(artifact.model_dump(mode="json")))
    redacted.meta.redacted = True
    return redacted


class RedactedLists:
    """Lists whose every entry is redacted as it is read."""

    def __init__(self, lists: Lists, redactor: Redactor) -> None:
        self.lists, self.redactor = lists, redactor

    def tenants(self) -> Iterator[dict[str, Any]]:
        return (self.redactor.scrub(entry) for entry in self.lists.tenants())

    def timeline(self, pairs: Any = None) -> Iterator[dict[str, Any]]:
        return (self.redactor.scrub(entry) for entry in self.lists.timeline(pairs))

    def cases(self) -> Iterator[dict[str, Any]]:
        return (self.redactor.scrub(entry) for entry in self.lists.cases())


# -- the scorecard -------------------------------------------------------------------------


def _rate_inputs(
    pairs: list[PairTallies], invariant: str, shift: dict[int, int] | None = None
) -> list[tuple[int, int]]:
    """(passed, decided) per pair; `shift` moves passes per pair (adjudication)."""
    inputs = []
    for pair in pairs:
        tally = pair.by_invariant.get(invariant)
        if tally:
            decided = tally.checked - tally.inconclusive
            inputs.append((decided - tally.failed + (shift or {}).get(pair.pair, 0), decided))
    return inputs


def _adjudication_shift(adjudications: list[AdjudicationEntry], invariant: str) -> dict[int, int]:
    """Per pair, how many of its reviewed checks the reviewer turned: a pass overturned
    counts as a failure, and the reverse."""
    shift: dict[int, int] = {}
    for entry in adjudications:
        exact, decided = entry.exact.get(invariant), entry.adjudicated.get(invariant)
        if exact is None or decided is None or exact == decided:
            continue
        shift[entry.pair] = shift.get(entry.pair, 0) + (1 if decided == "pass" else -1)
    return shift


def _rate(inputs: list[tuple[int, int]], invariant: str) -> Rate:
    return Rate(invariant=invariant, **bootstrap_rate(inputs).as_dict())  # type: ignore[arg-type]


def scorecard(
    artifact: Artifact,
    samples: Sequence[float] | None = None,
    *,
    lists: Lists | None = None,
    drawn: bool = True,
) -> Scorecard:
    """`samples`: the answered probes' latencies, when the artifact comes without its
    observations; `lists`: its tenants, timeline and cases, when it comes without them
    (recorder.report_artifact). `drawn`: with the timeline and tenants of the pairs a page
    draws (lists.py); a report that writes its lists out in full reads them itself."""
    failures = artifact.failures
    adjudications = artifact.adjudications
    lists = lists or ArtifactLists(artifact)
    tenant_count, pairs = 0, set()
    timeline: list[dict[str, Any]] = []
    tenants_drawn: list[dict[str, Any]] = []
    every_pair: list[dict[str, Any]] = []
    if drawn:
        for tenant in lists.tenants():  # counted first, held only for the pairs drawn
            tenant_count += 1
            pairs.add(tenant["pair"])
        chosen: set[int] | None = None
        if len(pairs) > MAX_DRAWN_PAIRS:
            chosen = set(drawn_pairs(pairs, {f.pair for f in (*failures, *artifact.inconclusive)}))
            every_pair = every_pair_lane(lists.timeline())
        tenants_drawn = [t for t in lists.tenants() if chosen is None or t["pair"] in chosen]
        timeline = list(lists.timeline(chosen))
    return Scorecard(
        meta=artifact.meta,
        summary=artifact.summary,
        rates={
            name: _rate(_rate_inputs(artifact.pairs, invariant), invariant)
            for name, invariant in RATES.items()
        },
        adjudicated_rates={
            name: _rate(
                _rate_inputs(
                    artifact.pairs, invariant, _adjudication_shift(adjudications, invariant)
                ),
                invariant,
            )
            for name, invariant in RATES.items()
        }
        if adjudications
        else {},
        adjudications=adjudications,
        stages=artifact.stages,
        matrix=artifact.matrix,
        latency_ms=artifact.latency_ms,
        samples=samples
        if samples is not None
        else [
            o.latency_ms
            for o in artifact.observations
            if o.kind == "probe" and o.status == "ok" and o.latency_ms is not None
        ],
        deletions=artifact.deletions,
        leaks=[f for f in failures if f.reason in LEAK_REASONS],
        residues=[f for f in failures if f.reason in RESIDUE_REASONS],
        other_failures=[f for f in failures if f.reason not in LEAK_REASONS + RESIDUE_REASONS],
        inconclusive=artifact.inconclusive,
        timeline=timeline,
        tenants=tenants_drawn,
        cases=artifact.cases,
        every_pair=every_pair,
        tenant_count=tenant_count,
    )


# -- shared bits ---------------------------------------------------------------------------


def pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def interval(rate: Rate) -> str:
    if rate.rate is None:
        return "not checked"
    text = f"{pct(rate.rate)} [{pct(rate.ci95_low)}, {pct(rate.ci95_high)}]"
    return f"{text} ({rate.successes}/{rate.trials} over {rate.pairs} pair(s))"


def latency_line(latency: Latency) -> str:
    """mean · median · p95 · max, and the share within the budget (ms)."""
    return (
        f"mean {latency.mean or 0:.1f} · median {latency.median or 0:.1f} · p95 "
        f"{latency.p95 or 0:.1f} · max {latency.max or 0:.1f} · "
        f"{(latency.share_within_target or 0) * 100:.0f}% within {latency.target_ms:g} ms"
    )


def verdict_word(card: Scorecard) -> str:
    return "PASS" if card.summary.passed else "FAIL"


def invariant_order(names: Any) -> list[str]:
    order = {name: index for index, name in enumerate(INVARIANTS)}
    return sorted(names, key=lambda name: order.get(name, 99))


def cell_state(cell: Tally) -> str:
    return "fail" if cell.failed else "inconclusive" if cell.inconclusive else "pass"


def matrix_rows(
    card: Scorecard, stages: list[str]
) -> Iterator[tuple[str, str, list[Tally | None]]]:
    """(invariant, store, the cell of each stage or None), invariants in their order."""
    for invariant in invariant_order(card.matrix):
        for store, cells in sorted(card.matrix[invariant].items()):
            yield invariant, store, [cells.get(stage) for stage in stages]


def ratio(cell: Tally) -> str:
    """passed/checked"""
    return f"{cell.passed}/{cell.checked}"


def used_stages(card: Scorecard) -> list[str]:
    return [
        stage
        for stage in card.stages
        if any(stage in cells for stores in card.matrix.values() for cells in stores.values())
    ]


def pair_link(meta: Meta, pair: int) -> str | None:
    """The pair's workflow (its own, or its cohort's) in the Temporal Web UI: the run's UI,
    else `memlife dev`'s. None for a run on the time-skipping server, whose history ended
    with it, unless a UI is named (`memlife report --web-ui`)."""
    web_ui = meta.web_ui or (None if meta.clock == "skip" else DEV_WEB_UI)
    if web_ui is None:
        return None
    return web_ui_link(
        web_ui,
        meta.namespace,
        pair_home_workflow_id(meta.scenario_name, meta.run_id, pair, meta.cohort_size),
    )


def finding_line(f: FindingEntry, link: str | None = None, *, markdown: bool = False) -> str:
    value = f.evidence.value
    return (
        f"{f.invariant} {f.reason} · stage {f.stage} · {f.tenant} (pair {f.pair}) · "
        f"{f.store}"
        + (f" · value `{value}`" if value else "")
        + (f" — {f.evidence.detail}" if f.evidence.detail else "")
        + (f" · trace `{f.trace_id}`" if f.trace_id else "")
        + ((f" · [workflow]({link})" if markdown else f" · workflow {link}") if link else "")
    )


def changes(entry: AdjudicationEntry) -> str:
    return ", ".join(
        f"{check}: {entry.exact.get(check)} → {outcome}"
        for check, outcome in entry.adjudicated.items()
    )
