"""What a run, a cohort and a pair are given, what a pair and a run answer, and the ids
their workflows are started under."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import quote

from pydantic import Field

from memlife.rules.clock import Clock
from memlife.rules.models import Frozen
from memlife.rules.pairs import TenantIdentity
from memlife.rules.scenario import Pair, Scenario
from memlife.rules.target import Target

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
    # As written: the run's preparation (prepare_run) draws its pairs from `seed` (the run
    # id when None). Runs started before it materialized them here, and in a continued
    # suite's input they are drawn.
    scenario: Scenario
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
    # cohorts the pairs stay in the recorder, where the preparation draws them (the
    # suite's input and history stay small at ten thousand pairs).
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


class PreparedRun(Frozen):
    """What a run's preparation (activities/record.py: prepare_run) answers: the run with
    its seed, and, unless cohorts read them from the recorder, its pairs drawn."""

    run: RunInput
    pairs: int  # how many pairs the run has


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
    # RunInput.search_attributes: the cohort keeps its run, scenario, target and verdict
    # current, so a run's saved views find its cohorts as they find its pairs.
    search_attributes: bool = False


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


# The failure type of a workflow that completed and did not pass (a run, a pair, a deletion
# check): its message the one-line verdict, its details the result. Such a failure carries
# no stack trace (stack/codec.py), and memlife reads the result from it
# (stack/connection.py: verdict_result).
VERDICT_FAILURE = "MemlifeVerdict"


# -- workflow ids ----------------------------------------------------------------------


def suite_workflow_id(scenario: str, run_id: str) -> str:
    return f"memlife/{scenario}/{run_id}"


def pair_workflow_id(scenario: str, run_id: str, pair_index: int) -> str:
    return f"memlife/{scenario}/{run_id}/pair-{pair_index}"


def cohort_workflow_id(scenario: str, run_id: str, first_pair: int) -> str:
    return f"memlife/{scenario}/{run_id}/cohort-{first_pair}"


def pair_home_workflow_id(scenario: str, run_id: str, pair_index: int, cohort_size: int) -> str:
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
    return (
        f"{web_ui.rstrip('/')}/namespaces/{quote(namespace, safe='')}/workflows/"
        f"{quote(workflow_id, safe='')}"
    )


def review_workflow_id(queue: str) -> str:
    return f"memlife/review/{queue}"
