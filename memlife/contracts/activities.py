"""Each activity's name bound to what it is given and what it answers."""

from __future__ import annotations

from types import UnionType
from typing import Any, Generic, TypeVar, Union, get_args, get_origin

from memlife.contracts.requests import (
    BatchOutcome,
    ConverseRequest,
    DeleteRequest,
    ForgetRequest,
    InspectRequest,
    MaintainRequest,
    RegisterRequest,
    RegisterResult,
    RunSummary,
    SpaceRequest,
    StepOutcome,
    StepRecord,
    TargetBatch,
)
from memlife.contracts.runs import CohortSetup, PreparedRun, RunInput
from memlife.rules.adjudication import Adjudication, ReviewItem
from memlife.rules.erasure import ErasureReceipt
from memlife.rules.evidence import (
    DeletionState,
    MaintenanceResult,
    Reply,
    SpaceResult,
    StoreRead,
)
from memlife.rules.pairs import TenantIdentity
from memlife.rules.scenario import Pair, Scenario
from memlife.rules.target import Target

# -- the activities ------------------------------------------------------------------------

In = TypeVar("In")
Out = TypeVar("Out")


class Activity(Generic[In, Out]):
    """An activity's name bound once to what it is given and what it answers:
    `Activity[RegisterRequest, RegisterResult]("memlife.register_tenant")`. Workflows call
    it through workflows/calls.py with an `In` and get an `Out`, so a mismatch is a type
    error (mypy, in ./scripts/test); the worker registers the implementation under `name`
    (`@activity.defn(name=REGISTER_TENANT.name)`), and tests/test_contracts.py holds each
    implementation's signature to the binding. An activity of several arguments takes them
    as a tuple, sent as Temporal's argument list, so histories record the same payloads as
    before the binding."""

    def __init__(self, name: str) -> None:
        self.name = name  # what Temporal history records: never change a released one

    def __repr__(self) -> str:
        return f"Activity({self.name!r})"

    def _types(self) -> tuple[Any, Any]:
        # Set by typing when the binding is made as Activity[In, Out](name).
        return get_args(self.__orig_class__)  # type: ignore[attr-defined]

    @property
    def input_type(self) -> Any:
        return self._types()[0]

    @property
    def result_type(self) -> Any:
        """What Temporal converts the result to (None: nothing to convert)."""
        result = self._types()[1]
        return None if result is type(None) else result

    def arguments(self, arg: In) -> list[Any]:
        """The argument list Temporal sends: a tuple spread, anything else alone."""
        declared = self.input_type
        options = get_args(declared) if get_origin(declared) in (Union, UnionType) else (declared,)
        if all(get_origin(option) is tuple for option in options):
            return list(arg)  # type: ignore[call-overload]
        return [arg]


# Target calls (the target-request task queue when the run has one).
REGISTER_TENANT = Activity[RegisterRequest, RegisterResult]("memlife.register_tenant")
CONVERSE = Activity[ConverseRequest, list[Reply]]("memlife.converse")
DELETE_TENANT = Activity[DeleteRequest, DeletionState]("memlife.delete_tenant")
DELETION_STATUS = Activity[DeleteRequest, DeletionState]("memlife.deletion_status")
FORGET_FACT = Activity[ForgetRequest, DeletionState]("memlife.forget_fact")
MAINTAIN_TARGET = Activity[MaintainRequest, MaintenanceResult]("memlife.maintain_target")
SPACE_OPERATION = Activity[SpaceRequest, SpaceResult]("memlife.space_operation")
INSPECT_STORES = Activity[InspectRequest, list[StoreRead]]("memlife.inspect_stores")
TARGET_BATCH = Activity[TargetBatch, list[BatchOutcome]]("memlife.target_batch")

# Recording, in the recorder.
# Every run's first activity: its record, its pairs drawn, its values claimed.
PREPARE_RUN = Activity[RunInput, PreparedRun]("memlife.prepare_run")
RECORD_RUN_STARTED = Activity[RunInput, None]("memlife.record_run_started")
# (run id, scenario, seed[, target]): the target when cohorts read it from the recorder.
MATERIALIZE_PAIRS = Activity[
    tuple[str, Scenario, str] | tuple[str, Scenario, str, Target | None],
    int,
]("memlife.materialize_pairs")
LOAD_PAIRS = Activity[tuple[str, int, int], list[Pair]]("memlife.load_pairs")  # run, first, count
LOAD_COHORT = Activity[tuple[str, int, int], CohortSetup]("memlife.load_cohort")
RECORD_TENANTS = Activity[tuple[str, int, list[TenantIdentity]], None](
    "memlife.record_tenants"
)  # run, pair, its tenants
RECORD_TENANT_SETS = Activity[tuple[str, list[int], list[list[TenantIdentity]]], None](
    "memlife.record_tenant_sets"
)
RECORD_STEP = Activity[StepRecord, StepOutcome]("memlife.record_step")
RECORD_STEPS = Activity[list[StepRecord], list[StepOutcome]]("memlife.record_steps")
# (run id, failed pairs[, cancelled pairs]): runs before cancelled pairs sent two.
FINISH_RUN = Activity[
    tuple[str, list[int]] | tuple[str, list[int], list[int] | None],
    RunSummary,
]("memlife.finish_run")
PREPARE_SCHEDULED_RUN = Activity[tuple[RunInput, str], RunInput](
    "memlife.prepare_scheduled_run"
)  # the schedule's run, the new run id
RECORD_RECEIPT = Activity[ErasureReceipt, None]("memlife.record_receipt")

# Review.
QUEUE_FOR_REVIEW = Activity[tuple[str, list[ReviewItem]], int]("memlife.queue_for_review")
QUEUE_PARAPHRASES = Activity[tuple[str, str], int]("memlife.queue_paraphrases")
RECORD_ADJUDICATIONS = Activity[list[Adjudication], None]("memlife.record_adjudications")

ACTIVITIES = (
    REGISTER_TENANT,
    CONVERSE,
    DELETE_TENANT,
    DELETION_STATUS,
    FORGET_FACT,
    MAINTAIN_TARGET,
    SPACE_OPERATION,
    INSPECT_STORES,
    TARGET_BATCH,
    PREPARE_RUN,
    RECORD_RUN_STARTED,
    MATERIALIZE_PAIRS,
    LOAD_PAIRS,
    LOAD_COHORT,
    RECORD_TENANTS,
    RECORD_TENANT_SETS,
    RECORD_STEP,
    RECORD_STEPS,
    FINISH_RUN,
    PREPARE_SCHEDULED_RUN,
    RECORD_RECEIPT,
    QUEUE_FOR_REVIEW,
    QUEUE_PARAPHRASES,
    RECORD_ADJUDICATIONS,
)
