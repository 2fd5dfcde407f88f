"""What memlife observed of a target: one observation per request and what came back, the
replies of a conversation, what the target said of a deletion, what a store read found.
Pure data; judging it is judging.py."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from memlife.rules.models import Frozen
from memlife.rules.scenario import Role

ObservationKind = Literal[
    "register",
    "write",
    "update",
    "probe",
    "delete",
    "deletion-status",
    "inspect",
    "maintain",
    "space",
]


class Observation(Frozen):
    """One raw result: a request and what came back, or why nothing usable did."""

    seq: int
    role: Role
    kind: ObservationKind
    domain: str | None = None
    case_id: str | None = None
    request: str = ""
    reply: str | None = None
    context: str | None = None
    status: Literal["ok", "target-error"] = "ok"
    http_status: int | None = None
    error: str | None = None
    latency_ms: float | None = None
    scenario_time: datetime
    wall_time: datetime
    stages: dict[str, float] = Field(default_factory=dict)
    cost: float | None = None
    tokens: int | None = None
    # The W3C traceparent the request was sent with (rules/tracing.py); None for what was
    # never sent, and in runs recorded before requests carried one.
    traceparent: str | None = None
    # The target refused (a status its operation lists as `refused`): an answer that holds
    # nothing, judged as such (judging.py), counted apart from errors.
    refused: bool = False
    # The answer is the records a search found, not sentences (the target's `answers`).
    retrieval: bool = False


class Reply(Frozen):
    index: int
    reply: str | None = None
    context: str | None = None
    status: Literal["ok", "target-error"] = "ok"
    http_status: int | None = None
    error: str | None = None
    latency_ms: float | None = None
    attempts: int = 1
    wall_time: datetime
    stages: dict[str, float] = Field(default_factory=dict)  # Server-Timing, ms
    cost: float | None = None  # what the target says the turn cost (its own unit)
    tokens: int | None = None
    traceparent: str | None = None  # of the attempt that answered (or failed last)
    refused: bool = False  # the status is one the operation lists as `refused`
    retrieval: bool = False  # the answer is the records a search found


class DeletionState(Frozen):
    """What the target said about a deletion: done, failed, or still in progress."""

    status: str | None = None
    deletion_id: str | None = None
    done: bool = False
    failed: bool = False
    http_status: int
    latency_ms: float
    wall_time: datetime
    traceparent: str | None = None


class MaintenanceResult(Frozen):
    """What the target answered to one maintenance request (a reindex, a rebuild)."""

    operation: str
    status: str | None = None
    http_status: int
    latency_ms: float
    wall_time: datetime
    traceparent: str | None = None


class SpaceResult(Frozen):
    """What the target answered to a space operation; `space_id` as it knows the space."""

    space_id: str
    status: str | None = None
    http_status: int
    latency_ms: float
    wall_time: datetime
    traceparent: str | None = None


class StoreRecordView(Frozen):
    id: str | None = None
    tenant_id: str | None = None
    deleted: bool | None = None
    matches: list[int] = Field(default_factory=list)
    # Of the matches, those found in another form only (rules/variants.py): that form.
    forms: dict[int, str] = Field(default_factory=dict)
    excerpt: str = ""


class StoreRead(Frozen):
    store: str
    mode: Literal["scope", "needle", "needles"]
    key: str  # the identity or the needle read (needles: the values, one per line)
    status: Literal["ok", "error"] = "ok"
    error: str | None = None
    total: int = 0
    records: list[StoreRecordView] = Field(default_factory=list)
    latency_ms: float | None = None
    traceparent: str | None = None  # an HTTP read's; other probes send no request of it
    # When the read was made (the worker's clock); None in reads from before it was kept.
    wall_time: datetime | None = None
