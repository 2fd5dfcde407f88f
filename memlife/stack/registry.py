"""What a memlife worker runs: every workflow and activity, in one list each."""

from __future__ import annotations

from memlife.activities.batch import target_batch
from memlife.activities.paraphrase import queue_paraphrases
from memlife.activities.record import (
    finish_run,
    load_cohort,
    load_pairs,
    materialize_pairs,
    prepare_run,
    prepare_scheduled_run,
    record_receipt,
    record_run_started,
    record_step,
    record_steps,
    record_tenant_sets,
    record_tenants,
)
from memlife.activities.review import queue_for_review, record_adjudications
from memlife.activities.stores import inspect_stores
from memlife.activities.target import (
    converse,
    delete_tenant,
    deletion_status,
    forget_fact,
    maintain_target,
    register_tenant,
    space_operation,
)
from memlife.workflows.adjudication import AdjudicationWorkflow
from memlife.workflows.cohort import CohortLifecycleWorkflow
from memlife.workflows.deletion_check import DeletionCheckWorkflow
from memlife.workflows.pair import PairLifecycleWorkflow
from memlife.workflows.suite import SuiteWorkflow

WORKFLOWS = [
    SuiteWorkflow,
    PairLifecycleWorkflow,
    CohortLifecycleWorkflow,
    DeletionCheckWorkflow,
    AdjudicationWorkflow,
]
ASYNC_ACTIVITIES = [
    register_tenant,
    converse,
    delete_tenant,
    deletion_status,
    forget_fact,
    maintain_target,
    space_operation,
    inspect_stores,
    queue_for_review,
    queue_paraphrases,
    target_batch,
]
SYNC_ACTIVITIES = [
    record_run_started,
    record_tenants,
    record_step,
    record_steps,
    record_tenant_sets,
    materialize_pairs,
    load_pairs,
    load_cohort,
    finish_run,
    prepare_run,
    prepare_scheduled_run,
    record_adjudications,
    record_receipt,
]
ACTIVITIES = ASYNC_ACTIVITIES + SYNC_ACTIVITIES
