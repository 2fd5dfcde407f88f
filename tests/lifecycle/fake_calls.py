"""A lifecycle's Calls (workflows/calls.py) with no Temporal: the lifecycle's own code
(workflows/lifecycle.py, steps.py, spaces.py) runs in milliseconds, its activities
answered by name, as temporalio/samples-python mocks them. What stands around the
lifecycle is small and in memory:

- `MemoryTarget` answers the target calls: a memory that keeps each user's latest value
  per domain (it reads the scenario's own templates) and answers a question with it.
  Shared spaces keep their own memory, read by members only; maintenance answers.
  Its faults stand for the bugs the lifecycle must lead to a verdict: `shared` answers
  from every user's memory, `keeps_deleted` forgets nothing (nor a deleted space),
  `space_leak` answers a space to anyone, `revocation_ignored` to a member who left,
  `member_delete_overreach` empties a deleted member's spaces (as the reference target's
  faults of those names), `resurrects` brings erased facts back on maintenance.
- `batch_answers` answers a cohort's batches (TARGET_BATCH, RECORD_STEPS,
  RECORD_TENANT_SETS) with the same target and judge.
- Recording judges with the real rules (memlife/rules/judging.py), so what the lifecycle
  decides is checked by the verdicts it leads to; nothing is written.
- The clock moves only when the lifecycle sleeps.

Temporal tests stay for what only Temporal does: timers, signals, kills and replay.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memlife import contracts
from memlife.bundled.reference.target_file import reference_target
from memlife.contracts import (
    Activity,
    BatchOutcome,
    ConverseRequest,
    DeleteRequest,
    ForgetRequest,
    InspectRequest,
    MaintainRequest,
    PairInput,
    RegisterRequest,
    RegisterResult,
    SpaceRequest,
    StepOutcome,
    StepRecord,
    TargetBatch,
)
from memlife.rules.clock import Clock
from memlife.rules.evidence import (
    DeletionState,
    MaintenanceResult,
    Reply,
    SpaceResult,
    StoreRead,
)
from memlife.rules.judging import judge_step
from memlife.rules.pairs import materialize, pair_tenants
from memlife.rules.scenario import Scenario
from memlife.rules.scenario_file import load_scenario
from memlife.rules.target import Target
from memlife.workflows.calls import BatchItemError

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
NO_ANSWER = "No tengo esa información."


def _pattern(template: str) -> re.Pattern[str]:
    before, _, after = template.partition("{value}")
    return re.compile(re.escape(before) + r"(?P<value>.+?)" + re.escape(after) + r"$")


NO_ACCESS = "No tienes acceso a ese espacio."


@dataclass
class MemorySpace:
    """A shared space: its members (user ids), who left it, what was said in it."""

    name: str
    members: set[str] = field(default_factory=set)
    former: set[str] = field(default_factory=set)
    facts: dict[str, str] = field(default_factory=dict)  # domain -> value
    deleted: bool = False


class MemoryTarget:
    """The target calls, answered from memory (see the module's docstring)."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        shared: bool = False,
        keeps_deleted: bool = False,
        space_leak: bool = False,
        revocation_ignored: bool = False,
        member_delete_overreach: bool = False,
        resurrects: bool = False,
    ) -> None:
        self.shared, self.keeps_deleted = shared, keeps_deleted
        self.space_leak, self.revocation_ignored = space_leak, revocation_ignored
        self.member_delete_overreach, self.resurrects = member_delete_overreach, resurrects
        self.statements: list[tuple[re.Pattern[str], str]] = []
        self.questions: dict[str, str] = {}
        for name, domain in scenario.domains.items():
            for templates in domain.templates.values():
                for template in (*templates.statement, *templates.updates()):
                    self.statements.append((_pattern(template), name))
                for question in (*templates.question, *templates.question_dev):
                    self.questions[question] = name
        self.memory: dict[str, dict[str, str]] = {}  # user -> domain -> value
        self.erased: dict[str, dict[str, str]] = {}  # user -> what was erased of it
        self.spaces: dict[str, MemorySpace] = {}  # by space id
        # Binding names (a space operation's also as "name:action") answered with a target
        # error, before doing anything (unreachable) or after doing it (answer_lost).
        self.unreachable: set[str] = set()
        self.answer_lost: set[str] = set()

    def _fail(self, activity: str, action: str = "", lost: bool = False) -> None:
        if {activity, f"{activity}:{action}"} & (self.answer_lost if lost else self.unreachable):
            raise BatchItemError(
                "TargetUnavailable: connection refused"
                + (" (after the request was sent)" if lost else "")
            )

    def register(self, request: RegisterRequest) -> RegisterResult:
        self._fail(contracts.REGISTER_TENANT.name)
        user = f"user-{request.phone}"
        self.memory.setdefault(user, {})
        return RegisterResult(user_id=user, latency_ms=1.0, status=201, wall_time=START)

    def converse(self, request: ConverseRequest) -> list[Reply]:
        self._fail(contracts.CONVERSE.name)
        if request.space_id is not None:
            return self._converse_in_space(request)
        user = request.user_id or ""
        replies = []
        for index, message in enumerate(request.messages):
            text = "Entendido."
            if index in request.questions:
                text = self._answer(user, self.questions.get(message))
            else:
                for pattern, domain in self.statements:
                    if match := pattern.search(message):
                        self.memory.setdefault(user, {})[domain] = match["value"]
                        break
            replies.append(Reply(index=index, reply=text, latency_ms=5.0, wall_time=START))
        return replies

    def _answer(self, user: str, domain: str | None) -> str:
        memories = list(self.memory.values()) if self.shared else [self.memory.get(user, {})]
        found = [memory[domain] for memory in memories if domain in memory]
        return " / ".join(found) if found else NO_ANSWER

    def _converse_in_space(self, request: ConverseRequest) -> list[Reply]:
        space = self.spaces.get(request.space_id or "")
        if space is None:  # as a real target's 404: the request failed
            raise BatchItemError(f"TargetError: HTTP 404 no space {request.space_id}")
        user = request.user_id
        admitted = not space.deleted and (
            user in space.members
            or self.space_leak
            or (self.revocation_ignored and user in space.former)
        )
        replies = []
        for index, message in enumerate(request.messages):
            text = "Entendido." if admitted else NO_ACCESS
            if index in request.questions:
                domain = self.questions.get(message)
                text = space.facts.get(domain or "", NO_ANSWER) if admitted else NO_ACCESS
            elif admitted:
                for pattern, domain in self.statements:
                    if match := pattern.search(message):
                        space.facts[domain] = match["value"]
                        break
            replies.append(Reply(index=index, reply=text, latency_ms=5.0, wall_time=START))
        return replies

    def space_operation(self, request: SpaceRequest) -> SpaceResult:
        operation = contracts.SPACE_OPERATION.name
        self._fail(operation, request.action)
        user = request.user_id
        if request.action == "create":
            space_id = f"space-{request.space_name}"
            self.spaces[space_id] = MemorySpace(request.space_name, members={user})
        else:
            space_id = request.space_id or request.space_name
            space = self.spaces[space_id]
            if request.action == "join":
                space.members.add(user)
                space.former.discard(user)
            elif request.action == "leave":
                space.members.discard(user)
                space.former.add(user)
            elif not self.keeps_deleted:
                space.deleted = True
                space.facts.clear()
        self._fail(operation, request.action, lost=True)
        return SpaceResult(
            space_id=space_id, status="active", http_status=200, latency_ms=1.0, wall_time=START
        )

    def maintain(self, request: MaintainRequest) -> MaintenanceResult:
        self._fail(contracts.MAINTAIN_TARGET.name, request.operation)
        if self.resurrects:  # a rebuild from what erasure left behind
            erased = self.erased.pop(request.user_id, {})
            self.memory.setdefault(request.user_id, {}).update(erased)
        return MaintenanceResult(
            operation=request.operation,
            status="ok",
            http_status=200,
            latency_ms=1.0,
            wall_time=START,
        )

    def delete(self, request: DeleteRequest) -> DeletionState:
        self._fail(contracts.DELETE_TENANT.name)
        user = request.user_id or ""
        if not self.keeps_deleted:
            self.erased.setdefault(user, {}).update(self.memory.pop(user, {}))
        if self.member_delete_overreach:
            for space in self.spaces.values():
                if user in space.members:
                    space.facts.clear()
        return DeletionState(done=True, http_status=200, latency_ms=1.0, wall_time=START)

    def deletion_status(self, request: DeleteRequest) -> DeletionState:
        return DeletionState(done=True, http_status=200, latency_ms=1.0, wall_time=START)

    def forget(self, request: ForgetRequest) -> DeletionState:
        if not self.keeps_deleted and request.domain in self.memory.get(request.user_id, {}):
            self.erased.setdefault(request.user_id, {})[request.domain] = self.memory[
                request.user_id
            ].pop(request.domain)
        return DeletionState(done=True, http_status=200, latency_ms=1.0, wall_time=START)

    def inspect(self, request: InspectRequest) -> list[StoreRead]:
        return []  # a target of no stores: the lifecycle reads none


def judge(step: StepRecord) -> StepOutcome:
    """What record_step answers (activities/record.py), without the recorder: the rules'
    verdicts on the step. No other run, so no foreign values."""
    step = step.with_forbidden_per_case()
    verdicts, summaries = judge_step(
        step.cases,
        step.observations,
        step.inspections,
        step.reads,
        step.stores,
        step.latency_budget_ms,
    )
    return StepOutcome(verdicts=verdicts + list(step.verdicts), inspections=summaries)


@dataclass
class Call:
    activity: str
    arg: Any
    at: datetime
    options: dict[str, Any]


@dataclass
class FakeCalls:
    """workflows/calls.py's Calls, answered by `handlers` keyed by activity name."""

    handlers: dict[str, Callable[[Any], Any]]
    clock: datetime = START
    records_beside: bool = False
    patches: set[str] | None = None  # None: every patch taken, as a new run takes them
    skip_waits: bool = False  # an operator ends each wait at once (skip_wait)
    calls: list[Call] = field(default_factory=list)
    sleeps: list[tuple[timedelta, str]] = field(default_factory=list)
    logged: list[str] = field(default_factory=list)

    async def _call(self, activity: Activity[Any, Any], arg: Any, options: dict[str, Any]) -> Any:
        assert "start_to_close_timeout" in options, f"{activity.name} has no timeout"
        assert "retry_policy" in options, f"{activity.name} has no retry policy"
        self.calls.append(Call(activity.name, arg, self.clock, options))
        await asyncio.sleep(0)  # as an activity would, let the other tenant's calls go
        return self.handlers[activity.name](arg)

    async def activity(self, activity: Activity[Any, Any], arg: Any, **options: Any) -> Any:
        return await self._call(activity, arg, options)

    async def local_activity(self, activity: Activity[Any, Any], arg: Any, **options: Any) -> Any:
        return await self._call(activity, arg, options)

    async def direct(self, activity: Activity[Any, Any], arg: Any, **options: Any) -> Any:
        return await self._call(activity, arg, options)

    async def sleep(self, real: timedelta, summary: str) -> timedelta | None:
        self.sleeps.append((real, summary))
        if self.skip_waits:
            return real
        self.clock += real
        return None

    def now(self) -> datetime:
        return self.clock

    def patched(self, patch_id: str) -> bool:
        return self.patches is None or patch_id in self.patches

    def log(self, level: int, message: str, *args: object) -> None:
        self.logged.append(message % args)

    def names(self) -> list[str]:
        """The activities called, in order, each once per run of equal names."""
        names: list[str] = []
        for call in self.calls:
            short = call.activity.removeprefix("memlife.")
            if not names or names[-1] != short:
                names.append(short)
        return names


def target_handlers(target: MemoryTarget) -> dict[str, Callable[[Any], Any]]:
    """The target calls' answers, by activity name."""
    return {
        contracts.REGISTER_TENANT.name: target.register,
        contracts.CONVERSE.name: target.converse,
        contracts.DELETE_TENANT.name: target.delete,
        contracts.DELETION_STATUS.name: target.deletion_status,
        contracts.FORGET_FACT.name: target.forget,
        contracts.INSPECT_STORES.name: target.inspect,
        contracts.SPACE_OPERATION.name: target.space_operation,
        contracts.MAINTAIN_TARGET.name: target.maintain,
    }


def fake_calls(target: MemoryTarget, **options: Any) -> FakeCalls:
    handlers: dict[str, Callable[[Any], Any]] = {
        **target_handlers(target),
        contracts.RECORD_STEP.name: judge,
        contracts.RECORD_TENANTS.name: lambda _: None,
        contracts.QUEUE_FOR_REVIEW.name: lambda arg: len(arg[1]),
    }
    return FakeCalls(handlers, **options)


# A batch's kind -> the single call it stands for (as workflows/batching.py groups them).
BATCH_KINDS: dict[str, Activity[Any, Any]] = {
    "register": contracts.REGISTER_TENANT,
    "converse": contracts.CONVERSE,
    "delete": contracts.DELETE_TENANT,
    "deletion-status": contracts.DELETION_STATUS,
    "forget": contracts.FORGET_FACT,
    "maintain": contracts.MAINTAIN_TARGET,
    "space": contracts.SPACE_OPERATION,
    "inspect": contracts.INSPECT_STORES,
}


def _jsonable(value: Any) -> Any:
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    return value.model_dump(mode="json")


def batch_answers(target: MemoryTarget) -> dict[str, Callable[[Any], Any]]:
    """What a cohort's batch activities answer (activities/batch.py, record.py), by name:
    each item of a target batch rebuilt from its JSON with the batch's target and answered
    by `target`, an item's error as data (BatchOutcome.ok False); every step judged."""
    single = target_handlers(target)

    def target_batch(batch: TargetBatch) -> list[BatchOutcome]:
        activity = BATCH_KINDS[batch.kind]
        outcomes = []
        for item in batch.items:
            request = activity.input_type.model_validate({**item, "target": batch.target})
            try:
                outcomes.append(BatchOutcome(value=_jsonable(single[activity.name](request))))
            except BatchItemError as error:
                outcomes.append(BatchOutcome(ok=False, error=str(error)))
        return outcomes

    return {
        contracts.TARGET_BATCH.name: target_batch,
        contracts.RECORD_STEPS.name: lambda steps: [judge(step) for step in steps],
        contracts.RECORD_TENANT_SETS.name: lambda _: None,
    }


def pair_input(
    scenario: Scenario,
    target: Target,
    *,
    seed: str = "fake",
    pair: int = 0,
    clock: Clock | None = None,
    review_queue: str | None = None,
) -> PairInput:
    """One pair of `scenario`, drawn from `seed`, as the suite gives it to a lifecycle."""
    drawn = materialize(scenario, seed)
    chosen = drawn.pairs[pair]
    return PairInput(
        run_id="fake-run",
        pair_index=pair,
        scenario=drawn.model_copy(update={"pairs": [chosen]}),
        target=target,
        clock=clock or Clock(mode="skip"),
        clock_origin=START,
        tenants=pair_tenants("fake-run", pair, chosen, drawn),
        review_queue=review_queue,
    )


SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def scenario(name: str) -> Scenario:
    return load_scenario(SCENARIOS / name)


def storeless_target() -> Target:
    """The reference target's operations (register, say, ask, delete, forget, spaces,
    maintain), without its stores: the fake reads none."""
    return reference_target("http://127.0.0.1:9").model_copy(update={"stores": []})


def judged_steps(calls: FakeCalls) -> list[tuple[StepRecord, StepOutcome]]:
    """Every step the lifecycle recorded, with what the rules judged of it."""
    return [
        (call.arg, judge(call.arg))
        for call in calls.calls
        if call.activity == contracts.RECORD_STEP.name
    ]


def failures(calls: FakeCalls) -> Counter[tuple[str, str, str]]:
    """(invariant, stage, reason) of every failed finding, and how often."""
    return Counter(
        (finding.invariant, record.stage, finding.reason)
        for record, outcome in judged_steps(calls)
        for verdict in outcome.verdicts
        for finding in verdict.findings
        if finding.outcome == "fail"
    )
