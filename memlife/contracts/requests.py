"""What each activity is asked and answers."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from memlife.rules.evidence import Observation, StoreRead
from memlife.rules.models import Frozen
from memlife.rules.pairs import TenantIdentity
from memlife.rules.scenario import SpaceAction
from memlife.rules.target import Store, Target
from memlife.rules.verdicts import (
    CaseVerdict,
    ForbiddenValue,
    InspectCase,
    InspectSummary,
    ProbeCase,
)

# -- activity requests and results ------------------------------------------------------


class RegisterRequest(Frozen):
    target: Target
    phone: str
    tenant_alias: str
    scenario_now: str
    run_id: str = ""  # sent as X-Memlife-Run (targets/http.py)


class RegisterResult(Frozen):
    user_id: str
    latency_ms: float
    status: int
    wall_time: datetime
    # The phone the tenant registered with, when the one asked for was taken (claimed by
    # another run against the target, or answered "already exists"); None: as asked.
    phone: str | None = None
    traceparent: str | None = None  # of the last registration request (rules/tracing.py)


class ConverseRequest(Frozen):
    """Messages of one tenant in one step, sent in order within one activity."""

    target: Target
    phone: str
    user_id: str
    messages: list[str]
    scenario_now: str
    run_id: str = ""  # sent as X-Memlife-Run (targets/http.py)
    # Which messages are questions (probes): they go to the target's `ask` when it has one.
    questions: list[int] = Field(default_factory=list)
    # Said inside a shared space: every message goes to the target's `space_say`.
    space_id: str | None = None
    space_name: str = ""


class DeleteRequest(Frozen):
    target: Target
    phone: str
    user_id: str
    deletion_id: str | None = None
    scenario_now: str
    run_id: str = ""  # sent as X-Memlife-Run (targets/http.py)


class ForgetRequest(Frozen):
    target: Target
    phone: str
    user_id: str
    domain: str
    value: str
    scenario_now: str
    run_id: str = ""  # sent as X-Memlife-Run (targets/http.py)
    # Every value the fact had, current and superseded ({values} in the target file).
    values: list[str] = Field(default_factory=list)


class MaintainRequest(Frozen):
    """One of the target's `maintain` operations, by name, for one tenant (whose phone and
    user id fill the operation's placeholders, when it has any)."""

    target: Target
    operation: str
    phone: str
    user_id: str
    scenario_now: str
    run_id: str = ""  # sent as X-Memlife-Run (targets/http.py)


class SpaceRequest(Frozen):
    """Create, join, leave or delete a shared space, as one tenant."""

    target: Target
    action: SpaceAction
    phone: str
    user_id: str
    space_name: str
    space_id: str = ""
    scenario_now: str
    run_id: str = ""  # sent as X-Memlife-Run (targets/http.py)


class InspectRequest(Frozen):
    target: Target
    identities: list[str]
    needles: list[str]
    # Texts whose presence in each record is reported (by index): own values, partner's.
    watch: list[str]
    scenario_now: str
    run_id: str = ""  # sent as X-Memlife-Run (targets/http.py)
    max_records: int = 200
    # False for a live tenant: a record of its own that holds no watched value decides
    # nothing, and is counted in `total` but not returned. A deleted tenant's every record
    # is evidence of residue: all are returned.
    keep_unmatched: bool = True
    # The needles that must be gone (deleted or forgotten values): the only ones a files
    # probe scans for. None: every needle.
    erased: list[str] | None = None
    # Stage the whole reads in the recorder under this key and return them without their
    # records, which only the step's recording reads (recorder/staging.py): records are
    # the bulk of an inspection, and results are workflow history. None: return them whole.
    stage_key: str | None = None


# The kinds of target call a batch carries (activities/batch.py).
BatchKind = Literal[
    "register", "converse", "delete", "deletion-status", "forget", "inspect", "maintain", "space"
]


class TargetBatch(Frozen):
    """Many target calls of one kind in one activity (the cohort workflow's step fan-out).
    The target travels once; each item is its request without the target."""

    kind: BatchKind
    target: Target
    items: list[dict[str, Any]]


class BatchOutcome(Frozen):
    """One item's result (`value`, its result model as JSON) or its error ("Type: message")."""

    ok: bool = True
    value: Any = None
    error: str | None = None


class StepRecord(Frozen):
    run_id: str
    pair_index: int
    step_index: int
    kind: str
    label: str = ""
    stage: str
    scenario_started: datetime
    scenario_finished: datetime
    wall_started: datetime
    wall_finished: datetime
    observations: list[Observation] = Field(default_factory=list)
    cases: list[ProbeCase] = Field(default_factory=list)
    inspections: list[InspectCase] = Field(default_factory=list)
    reads: dict[str, list[StoreRead]] = Field(default_factory=dict)  # by inspect case id
    # Inspect case id -> the key its reads' records are staged under (InspectRequest).
    staged_reads: dict[str, str] = Field(default_factory=dict)
    stores: list[Store] = Field(default_factory=list)
    verdicts: list[CaseVerdict] = Field(default_factory=list)  # judged in the workflow
    latency_budget_ms: float = 700.0
    tenants: list[TenantIdentity] = Field(default_factory=list)
    # A probe step's cases of one tenant forbid the same values, and those lists were most
    # of a cohort's recording payload: sent once each (`forbidden_lists`), each case saying
    # which is its own (`case_forbidden`, by position). Empty: every case carries its own.
    forbidden_lists: list[list[ForbiddenValue]] = Field(default_factory=list)
    case_forbidden: list[int] = Field(default_factory=list)

    @model_validator(mode="after")
    def _positions_fit(self) -> StepRecord:
        if self.case_forbidden and (
            len(self.case_forbidden) != len(self.cases)
            or any(not 0 <= i < len(self.forbidden_lists) for i in self.case_forbidden)
        ):
            raise ValueError(
                f"{len(self.case_forbidden)} forbidden list position(s) for "
                f"{len(self.cases)} case(s) and {len(self.forbidden_lists)} "
                "list(s)"
            )
        return self

    def with_forbidden_once(self) -> StepRecord:
        """The same record with each distinct forbidden list sent once."""
        lists: dict[tuple[ForbiddenValue, ...], int] = {}  # frozen models: by every field
        shared: list[list[ForbiddenValue]] = []
        positions = []
        for case in self.cases:
            key = tuple(case.forbidden)
            if key not in lists:
                lists[key] = len(shared)
                shared.append(list(case.forbidden))
            positions.append(lists[key])
        return self.model_copy(
            update={
                "cases": [case.model_copy(update={"forbidden": []}) for case in self.cases],
                "forbidden_lists": shared,
                "case_forbidden": positions,
            }
        )

    def with_forbidden_per_case(self) -> StepRecord:
        """The same record with every case's forbidden values in the case again."""
        if not self.case_forbidden:
            return self
        return self.model_copy(
            update={
                "cases": [
                    case.model_copy(update={"forbidden": self.forbidden_lists[i]})
                    for case, i in zip(self.cases, self.case_forbidden, strict=True)
                ],
                "forbidden_lists": [],
                "case_forbidden": [],
            }
        )


class StepOutcome(Frozen):
    verdicts: list[CaseVerdict] = Field(default_factory=list)
    inspections: list[InspectSummary] = Field(default_factory=list)


class PairResult(Frozen):
    pair_index: int
    cases: int
    cases_passed: int
    inconclusive: int
    failures: int
    cancelled: bool = False


class RunSummary(Frozen):
    run_id: str
    passed: bool
    cases: int
    cases_passed: int
    failures: int
    inconclusive: int
    latency_within_target: bool
