"""The result artifact, memlife's main output, and the experiment document, as models. A run's
artifact is built from its recorded rows (builder.py) and written once, read-only, by
`memlife run --out`; reports read it (memlife/reports). Its JSON Schema is published in
docs/artifact.schema.json (`python -m memlife.recorder.artifact` writes it).

Missing recall and foreign-fact leakage are separate failures, and every leak and every
residue is its own entry. Artifacts written by earlier versions read too: fields added
since have defaults.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memlife.contracts import RunMeta

ARTIFACT_VERSION = 1
Outcome = Literal["pass", "fail", "inconclusive"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Tally(_Part):
    checked: int = 0
    failed: int = 0
    inconclusive: int = 0

    @property
    def passed(self) -> int:
        return self.checked - self.failed - self.inconclusive


class Meta(RunMeta):
    """What a valid run pins (RunMeta), and what became of it."""

    # An artifact is read back, edited and redacted: not frozen like the workflow's input.
    model_config = ConfigDict(extra="forbid", frozen=False)

    git_revision: str | None = None  # a run outside a git checkout has none
    latency_budget_ms: float = 700.0
    run_id: str
    started_at: str | None = None
    finished_at: str | None = None
    status: str
    pairs: int
    redacted: bool = False  # set by reports, never by the recorder
    # Answers queued for review as paraphrase candidates (`memlife run --paraphrases`).
    paraphrase_candidates: int | None = None


# An observation's status as recorded: `ok`, `target-error`, or `refused` (an answer that
# holds nothing, with a status the target file lists as `refused`). Both answered.
REFUSED = "refused"
ANSWERED = ("ok", REFUSED)


class Summary(_Part):
    passed: bool
    cases: int
    cases_passed: int
    cases_failed: int
    cases_inconclusive: int
    probe_cases: int
    store_checks: int
    target_errors: int
    # Requests the target refused with a status its target file lists as `refused`: answers
    # that hold nothing (a non-member's 403), counted apart from errors.
    refusals: int = 0
    latency_within_target: bool
    by_invariant: dict[str, Tally]


class StageLatency(_Part):
    count: int
    mean: float | None = None
    median: float | None = None
    p95: float | None = None
    max: float | None = None


class Latency(_Part):
    """Probe latencies in ms; `stages` per Server-Timing stage the target reported."""

    count: int
    mean: float | None = None
    median: float | None = None
    p95: float | None = None
    max: float | None = None
    share_within_target: float | None = None
    target_ms: float
    stages: dict[str, StageLatency] = Field(default_factory=dict)


class Cost(_Part):
    """What the target says the turns cost, in its own unit."""

    probes_reporting: int
    per_probe_mean: float | None = None
    per_lifecycle_mean: float | None = None
    total: float | None = None
    tokens_per_probe_mean: float | None = None


class Deletion(_Part):
    pair: int
    tenant: str
    stage: str
    outcome: Outcome
    time_to_forget_s: float | None = None


class Evidence(_Part):
    value: str | None = None
    # The value was found in another form (rules/variants.py): that form, canonical.
    form: str | None = None
    detail: str = ""


class FindingEntry(_Part):
    """One failed or inconclusive check: which, why, where, and what was seen."""

    invariant: str
    reason: str
    pair: int
    tenant: str
    step: int
    stage: str
    case: str
    domain: str | None = None
    store: str
    evidence: Evidence
    # The W3C trace and span ids of the request whose answer is the evidence: search a
    # tracing tool for them (docs/tracing.md). Absent where no request carried the evidence.
    trace_id: str | None = None
    span_id: str | None = None


class TenantEntry(_Part):
    pair: int
    role: str
    alias: str
    phone: str
    user_id: str | None = None


class PairTallies(_Part):
    pair: int
    by_invariant: dict[str, Tally]


class TimelineStep(_Part):
    pair: int
    step: int
    kind: str
    stage: str
    scenario_started: str | None
    scenario_finished: str | None
    outcomes: dict[str, int] = Field(default_factory=dict)


class CheckEntry(_Part):
    invariant: str
    outcome: Outcome
    store: str = "response"


class CaseEntry(_Part):
    pair: int
    tenant: str
    step: int
    stage: str
    case: str
    domain: str | None = None
    store: str
    outcome: Outcome
    checks: list[CheckEntry]


class AdjudicationEntry(_Part):
    """A reviewer's decision beside what exact matching decided, check by check."""

    pair: int
    tenant: str
    step: int
    stage: str
    case: str
    kind: str
    reviewer: str
    decided_at: str | None
    stated: list[str]
    abstains: bool
    note: str = ""
    exact: dict[str, Outcome]
    adjudicated: dict[str, Outcome]


class ObservationEntry(_Part):
    """One request and what came back (scenario time: what the target was told it is)."""

    pair: int
    tenant: str
    role: str
    step: int
    seq: int
    kind: str
    domain: str | None = None
    case: str | None = None
    request: str
    reply: str | None = None
    context: str | None = None
    status: str
    http_status: int | None = None
    error: str | None = None
    latency_ms: float | None = None
    stages: dict[str, float] = Field(default_factory=dict)
    cost: float | None = None
    tokens: int | None = None
    trace_id: str | None = None  # the traceparent the request carried (docs/tracing.md)
    span_id: str | None = None
    scenario_time: str | None
    wall_time: str | None


class Artifact(_Part):
    """A run's result. The digest (what `memlife run` prints) has the same shape with the
    per-tenant, per-pair, per-step, per-case and per-observation lists left empty."""

    artifact_version: int = ARTIFACT_VERSION
    meta: Meta
    summary: Summary
    stages: list[str]
    matrix: dict[str, dict[str, dict[str, Tally]]]
    latency_ms: Latency
    cost: Cost | None = None
    deletions: list[Deletion]
    failures: list[FindingEntry]
    inconclusive: list[FindingEntry]
    tenants: list[TenantEntry] = Field(default_factory=list)
    pairs: list[PairTallies] = Field(default_factory=list)
    timeline: list[TimelineStep] = Field(default_factory=list)
    cases: list[CaseEntry] = Field(default_factory=list)
    adjudications: list[AdjudicationEntry] = Field(default_factory=list)
    observations: list[ObservationEntry] = Field(default_factory=list)


class Rate(_Part):
    """A pass rate with its bootstrap 95% interval over pairs (rules/statistics.py)."""

    rate: float | None
    ci95_low: float | None
    ci95_high: float | None
    successes: int
    trials: int
    pairs: int
    invariant: str | None = None


class ExperimentHeader(_Part):
    id: str
    scenario: str
    clock: str
    configurations: list[str]
    repetitions: int


class Spread(_Part):
    """Latencies (ms) pooled over a configuration's probes."""

    count: int
    mean: float | None = None
    median: float | None = None
    p95: float | None = None
    max: float | None = None


class ConfigurationResult(_Part):
    runs: list[str]
    passed: bool
    pairs: int
    families: dict[str, Rate]
    by_invariant: dict[str, Tally]
    leaks: int
    missing: int
    residues: int
    inconclusive: int
    latency_ms: Spread
    stages_ms: dict[str, Spread] = Field(default_factory=dict)
    cost_per_probe: float | None = None


class ExperimentDocument(_Part):
    """Several configurations of one system run with the same tenants and values, side by
    side (docs/experiments.md), with every run's artifact."""

    experiment_version: int = 1
    experiment: ExperimentHeader
    comparison: dict[str, ConfigurationResult]
    runs: list[Artifact]


def as_written(
    model: type[BaseModel], entries: Iterable[dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    """Each entry as its model writes it, defaults included: what a list of the whole
    artifact (or report) holds, for entries read one at a time."""
    for entry in entries:
        yield model.model_validate(entry).model_dump(mode="json")


@dataclass(frozen=True)
class JsonText:
    """A list entry already written as JSON text, in pieces, as `json.dumps(value,
    indent=2, ensure_ascii=False)` writes it at the top level: a whole run's artifact in
    an experiment's `runs` (recorder/streams.py, `experiment_chunks`)."""

    chunks: Iterable[str]


def json_chunks(
    head: dict[str, Any],
    lists: Iterable[tuple[str, Iterable[Any]]],
    tail: Callable[[], dict[str, Any]] | None = None,
) -> Iterator[str]:
    """`json.dumps({**head, **lists, **tail()}, indent=2, ensure_ascii=False)`, byte for
    byte, each list written an entry at a time as it is read (a JsonText entry a piece at
    a time), and `tail` asked for its fields once every list is written (a signature
    block: reports/signing.py)."""

    def dumped(value: Any, depth: int) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)

    def fields(values: dict[str, Any]) -> Iterator[str]:
        nonlocal first
        for key, value in values.items():
            yield ("" if first else ",") + f"\n  {json.dumps(key)}: {dumped(value, 1)}"
            first = False

    yield "{"
    first = True
    yield from fields(head)
    for key, entries in lists:
        yield ("" if first else ",") + f"\n  {json.dumps(key)}: ["
        first, empty = False, True
        for entry in entries:
            yield ("\n" if empty else ",\n") + "    "
            if isinstance(entry, JsonText):
                # JSON escapes a newline inside a string: every one here is indentation.
                yield from (chunk.replace("\n", "\n    ") for chunk in entry.chunks)
            else:
                yield dumped(entry, 2)
            empty = False
        yield "]" if empty else "\n  ]"
    if tail is not None:
        yield from fields(tail())
    yield "\n}" if not first else "}"


def schema() -> dict[str, Any]:
    """The JSON Schema of an artifact file (either kind: a run or an experiment)."""
    document = {
        "title": "memlife result artifact",
        "description": "What `memlife run --out` writes: one run's Artifact, or an "
        "ExperimentDocument when several configurations or repetitions ran.",
        "anyOf": [{"$ref": "#/$defs/Artifact"}, {"$ref": "#/$defs/ExperimentDocument"}],
    }
    experiment = ExperimentDocument.model_json_schema(ref_template="#/$defs/{model}")
    definitions = experiment.pop("$defs")
    definitions["ExperimentDocument"] = experiment
    # `memlife run --out --sign` adds its signature block as the artifact's last field; its
    # fields are docs/signing.md's, checked by `memlife verify`, not by this schema.
    definitions["Artifact"]["properties"]["signature"] = {
        "type": "object",
        "title": "Signature",
        "description": "The signature block `--sign` adds (docs/signing.md).",
    }
    document["$defs"] = dict(sorted(definitions.items()))
    document["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return document


if __name__ == "__main__":  # python -m memlife.recorder.artifact > docs/artifact.schema.json
    json.dump(schema(), sys.stdout, indent=2)
    sys.stdout.write("\n")
