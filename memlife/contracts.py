"""The wire contracts of memlife's workflows and activities: what a run, a pair and a
cohort are given, what each activity is asked and answers, and the ids workflows are
started under. Changing a field here changes Temporal history: released histories must
still replay (tests/replay).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from urllib.parse import quote

from pydantic import Field, model_validator

from memlife.rules.clock import Clock
from memlife.rules.evidence import Observation, StoreRead
from memlife.rules.models import Frozen
from memlife.rules.pairs import TenantIdentity
from memlife.rules.scenario import Pair, Scenario
from memlife.rules.target import Store, Target
from memlife.rules.verdicts import (
    CaseVerdict,
    ForbiddenValue,
    InspectCase,
    InspectSummary,
    ProbeCase,
)

# The activities a worker registers, by name: workflows call them by these names (they
# import no activity code), and the names are what Temporal history records.
REGISTER_TENANT = "memlife.register_tenant"
CONVERSE = "memlife.converse"
DELETE_TENANT = "memlife.delete_tenant"
DELETION_STATUS = "memlife.deletion_status"
FORGET_FACT = "memlife.forget_fact"
MAINTAIN_TARGET = "memlife.maintain_target"
SPACE_OPERATION = "memlife.space_operation"
INSPECT_STORES = "memlife.inspect_stores"
TARGET_BATCH = "memlife.target_batch"
RECORD_RUN_STARTED = "memlife.record_run_started"
MATERIALIZE_PAIRS = "memlife.materialize_pairs"
LOAD_PAIRS = "memlife.load_pairs"
LOAD_COHORT = "memlife.load_cohort"
RECORD_TENANTS = "memlife.record_tenants"
RECORD_TENANT_SETS = "memlife.record_tenant_sets"
RECORD_STEP = "memlife.record_step"
RECORD_STEPS = "memlife.record_steps"
FINISH_RUN = "memlife.finish_run"
PREPARE_SCHEDULED_RUN = "memlife.prepare_scheduled_run"
RECORD_RECEIPT = "memlife.record_receipt"
QUEUE_FOR_REVIEW = "memlife.queue_for_review"
QUEUE_PARAPHRASES = "memlife.queue_paraphrases"
RECORD_ADJUDICATIONS = "memlife.record_adjudications"



# -- runs, pairs and cohorts ------------------------------------------------------------

class RunMeta(Frozen):
    """What pins a run (docs/artifact.md): versions, files, target, clock."""

    memlife_version: str
    git_revision: str | None
    command: str
    scenario_file: str
    scenario_name: str
    scenario_sha256: str
    target_name: str
    target_base_url: str
    target_identity: dict[str, str] = Field(default_factory=dict)
    settle: str | None = None
    clock: str
    temporal_address: str
    web_ui: str | None = None
    canary_seed: str | None = None
    # An experiment compares configurations over repetitions (docs/experiments.md): its id, which
    # configuration and which repetition this run is.
    experiment: str | None = None
    configuration: str | None = None
    repetition: int | None = None
    # Where the run's workflows are, for links to them (reports, `memlife status`): its
    # namespace, and the pairs per cohort workflow (0: a workflow per pair).
    namespace: str = "default"
    cohort_size: int = 0

    def shared_target(self) -> str | None:
        return shared_target(self.target_identity, self.target_base_url)

# What `memlife run` without --target says of the reference target it starts, with a
# database of the run's own (cli/runner.py).
FRESH_TARGET_KIND = "bundled reference target"


def shared_target(identity: dict[str, str], base_url: str) -> str | None:
    """The target's address when other runs may use it too (a target file names a service
    that outlives the run); None for a bundled target started for this run alone. Runs
    against a shared target claim their phones and values (recorder/claims.py)."""
    return None if identity.get("kind") == FRESH_TARGET_KIND else base_url

class SuiteProgress(Frozen):
    """A cohort run's suite, carried from one of its Temporal runs to the next when it
    continues as new: which cohorts are done, and what they found, in counts and indexes
    (a pair's own results are in the recorder)."""

    next_cohort: int  # the first cohort not yet started
    clock_origin: datetime  # scenario time zero, shared by every cohort of the run
    pairs_total: int
    pairs_done: int
    by_reference: bool  # cohorts read the scenario and target from the recorder
    cases: int = 0
    cases_passed: int = 0
    failures: int = 0
    inconclusive: int = 0
    failing_pairs: list[int] = []
    broken_pairs: list[int] = []  # their lifecycle workflow failed: no result
    cancelled_pairs: list[int] = []
    cancel_reason: str | None = None
    continued: int = 1  # how many times the suite has continued as new

class RunInput(Frozen):
    # Empty for a scheduled run: the workflow assigns a fresh id, seed and tenants at start.
    run_id: str
    scenario: Scenario  # materialized: concrete pairs (a scheduled run: as written)
    target: Target
    clock: Clock = Clock()
    meta: RunMeta
    # Keep memlife's search attributes current (the cluster has them registered).
    search_attributes: bool = False
    # Queue the replies exact matching failed for blinded review (memlife review).
    review_queue: str | None = None
    # With a review queue: also queue the answers close in meaning to a partner's fact
    # that hold none of its forms (activities/paraphrase.py; needs memlife[model]).
    paraphrases: bool = False
    # Pairs per CohortLifecycleWorkflow; 0: one PairLifecycleWorkflow per pair. With
    # cohorts, `scenario` is as written and the suite materializes its pairs from `seed`
    # into the recorder (the input stays small at ten thousand pairs).
    cohort_size: int = 0
    seed: str | None = None
    # Pairs in flight at once, in cohorts (0: all): a worker holds every live pair's state,
    # so a run of ten thousand pairs goes in waves. Later cohorts start as earlier ones end.
    max_active_pairs: int = 0
    # Where the suite left off when it continued as new (workflows/suite.py); None in the
    # run a person or a schedule starts.
    progress: SuiteProgress | None = None
    # Suite history events after which it stops starting cohorts, waits for those in
    # flight and continues as new (0: rules/sizing.py's SUITE_CONTINUE_AT_EVENTS).
    continue_at_events: int = 0
    # The task queue the run's target requests go through, served by workers of their own
    # (`memlife run --target-worker`, docs/scale.md); None: the run's own queue.
    target_task_queue: str | None = None

class CohortInput(Frozen):
    """Pairs first_pair … first_pair + pair_count - 1 of a run, read from the recorder.

    The scenario and the target are read from the recorder too (LOAD_COHORT), where the
    suite put them once: the suite's history holds a cohort's input per cohort, a thousand
    of them at ten thousand pairs. Cohorts started before carry both here."""

    run_id: str
    first_pair: int
    pair_count: int
    scenario: Scenario | None = None  # as written: no pairs
    target: Target | None = None
    clock: Clock
    clock_origin: datetime
    review_queue: str | None = None
    target_task_queue: str | None = None  # RunInput.target_task_queue

class CohortSetup(Frozen):
    """What a cohort reads from the recorder: its run's scenario and target, its pairs."""

    scenario: Scenario
    target: Target
    pairs: list[Pair]

class PairInput(Frozen):
    run_id: str
    pair_index: int
    scenario: Scenario  # the scenario with only this pair in `pairs`
    target: Target
    clock: Clock
    clock_origin: datetime
    tenants: list[TenantIdentity]
    search_attributes: bool = False
    review_queue: str | None = None
    target_task_queue: str | None = None  # RunInput.target_task_queue

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
    action: Literal["create", "join", "leave", "delete"]
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

class TargetBatch(Frozen):
    """Many target calls of one kind in one activity (the cohort workflow's step fan-out).
    The target travels once; each item is its request without the target."""

    kind: Literal["register", "converse", "delete", "deletion-status", "forget", "inspect",
                  "maintain", "space"]
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
        if self.case_forbidden and (len(self.case_forbidden) != len(self.cases) or any(
                not 0 <= i < len(self.forbidden_lists) for i in self.case_forbidden)):
            raise ValueError(f"{len(self.case_forbidden)} forbidden list position(s) for "
                             f"{len(self.cases)} case(s) and {len(self.forbidden_lists)} "
                             "list(s)")
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
        return self.model_copy(update={
            "cases": [case.model_copy(update={"forbidden": []}) for case in self.cases],
            "forbidden_lists": shared, "case_forbidden": positions})

    def with_forbidden_per_case(self) -> StepRecord:
        """The same record with every case's forbidden values in the case again."""
        if not self.case_forbidden:
            return self
        return self.model_copy(update={
            "cases": [case.model_copy(update={"forbidden": self.forbidden_lists[i]})
                      for case, i in zip(self.cases, self.case_forbidden, strict=True)],
            "forbidden_lists": [], "case_forbidden": []})

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

# -- workflow ids ----------------------------------------------------------------------

def suite_workflow_id(scenario: str, run_id: str) -> str:
    return f"memlife/{scenario}/{run_id}"

def pair_workflow_id(scenario: str, run_id: str, pair_index: int) -> str:
    return f"memlife/{scenario}/{run_id}/pair-{pair_index}"


def cohort_workflow_id(scenario: str, run_id: str, first_pair: int) -> str:
    return f"memlife/{scenario}/{run_id}/cohort-{first_pair}"


def pair_home_workflow_id(scenario: str, run_id: str, pair_index: int,
                          cohort_size: int) -> str:
    """The workflow a pair's lifecycle runs in: its own, or its cohort's."""
    if cohort_size:
        first = pair_index - pair_index % cohort_size
        return cohort_workflow_id(scenario, run_id, first)
    return pair_workflow_id(scenario, run_id, pair_index)


# The Web UI `memlife dev` serves by default (stack/__init__.py: DEFAULT_UI_PORT): where a
# run's history is when nothing else says.
DEV_WEB_UI = "http://127.0.0.1:8233"


def web_ui_link(web_ui: str, namespace: str, workflow_id: str) -> str:
    """A workflow's page in the Temporal Web UI."""
    return (f"{web_ui.rstrip('/')}/namespaces/{quote(namespace, safe='')}/workflows/"
            f"{quote(workflow_id, safe='')}")


def review_workflow_id(queue: str) -> str:
    return f"memlife/review/{queue}"
