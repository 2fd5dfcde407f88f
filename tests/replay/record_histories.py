"""Record workflow histories into tests/histories/ for the replay tests.

    python -m tests.replay.record_histories

Run it when a workflow version is released, then keep the files: the point of the
recorded histories is that *old* runs keep replaying against *new* code. A change that
breaks replay of a released history belongs behind `workflow.patched`; new histories are
added beside the old ones (a new name prefix), never written over them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from bench.histories import temporal_runs
from memlife.bundled.reference.target_file import reference_target
from memlife.contracts import cohort_workflow_id, pair_workflow_id, suite_workflow_id
from memlife.rules.pairs import materialize
from memlife.rules.scenario_file import load_scenario
from memlife.stack import embedded
from memlife.stack.codec import DATA_CONVERTER
from memlife.stack.connection import bundled_binary, suite_result, verdict_result
from memlife.stack.worker import build_worker
from memlife.targets import http
from tests.reliability.helpers import written_nightly
from tests.workflows.helpers import run_input, run_suite

REPO = Path(__file__).resolve().parents[2]
HISTORIES = REPO / "tests" / "histories"


@contextlib.asynccontextmanager
async def _time_skipping(
    faults: list[str] | None = None,
    refuse: bool = False,
) -> AsyncIterator[tuple[WorkflowEnvironment, embedded.ReferenceTargetProcess, ThreadPoolExecutor]]:
    """A scratch recorder, the time-skipping server, a reference target with `faults`, and
    an executor for a worker's activities."""
    import os

    scratch = Path(tempfile.mkdtemp(prefix="memlife-histories-"))
    os.environ["MEMLIFE_DB_URL"] = f"sqlite:///{scratch / 'memlife.db'}"
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=DATA_CONVERTER,
        test_server_existing_path=bundled_binary("temporal-test-server"),
    )
    try:
        with (
            embedded.reference_target(scratch, faults or [], refuse=refuse) as process,
            ThreadPoolExecutor(max_workers=8) as executor,
        ):
            yield env, process, executor
    finally:
        await http.close_clients()  # this target's sessions: the next record has its own
        await env.shutdown()


@contextlib.asynccontextmanager
async def _dev_server() -> AsyncIterator[tuple[Client, Path]]:
    """A scratch recorder and the dev server with memlife's search attributes (the
    time-skipping server has none); its client and the scratch directory."""
    import os

    from memlife.stack.connection import ensure_search_attributes

    scratch = Path(tempfile.mkdtemp(prefix="memlife-histories-"))
    os.environ["MEMLIFE_DB_URL"] = f"sqlite:///{scratch / 'memlife.db'}"
    server = embedded.start_dev_server(scratch / "temporal", ui_port=None)
    try:
        client = await embedded.wait_for_client(server)
        assert not await ensure_search_attributes(client)
        yield client, scratch
    finally:
        server.stop()


async def record(
    name: str,
    scenario_path: Path,
    faults: list[str],
    generated_pairs: int | None = None,
    cohort_size: int = 0,
    max_active_pairs: int = 0,
    refuse: bool = False,
    options: dict[str, object] | None = None,
    as_written: bool = False,
) -> None:
    """A run's suite history and its first pair's (or, in cohorts, first cohort's).
    `as_written`: the scenario goes to the suite as written, its pairs drawn by the run's
    preparation (as `memlife run` starts runs since v18)."""
    async with _time_skipping(faults, refuse) as (env, process, executor):
        task_queue = f"record-{uuid.uuid4().hex[:6]}"
        async with build_worker(env.client, task_queue, executor):
            scenario = load_scenario(scenario_path)
            if generated_pairs is not None:
                assert scenario.generate is not None
                scenario = scenario.model_copy(
                    update={
                        "generate": scenario.generate.model_copy(update={"count": generated_pairs})
                    }
                )
                if not (cohort_size or as_written):  # else the suite draws the pairs
                    scenario = materialize(scenario, seed=name)
            run = run_input(scenario, reference_target(process.base_url)).model_copy(
                update={
                    "cohort_size": cohort_size,
                    "seed": name if cohort_size or as_written else None,
                    "max_active_pairs": max_active_pairs,
                    **(options or {}),
                }
            )
            await run_suite(env.client, task_queue, run)
        first = (
            ("cohort", cohort_workflow_id(scenario.name, run.run_id, 0))
            if cohort_size
            else ("pair", pair_workflow_id(scenario.name, run.run_id, 0))
        )
        for kind, workflow_id in (
            ("suite", f"memlife/{scenario.name}/{run.run_id}"),
            first,
        ):
            history = await env.client.get_workflow_handle(workflow_id).fetch_history()
            path = HISTORIES / f"{name}-{kind}.json"
            path.write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")
            print(f"wrote {path.relative_to(REPO)}")


async def record_cohort_attributes(name: str = "v21-cohort-attributes") -> None:
    """On the dev server (search attributes): a leaking seed run in a cohort of one pair,
    which keeps the cohort's run, scenario, target, phase and verdict current."""
    async with _dev_server() as (client, scratch):
        seed = load_scenario(REPO / "scenarios" / "seed-six-case.yaml")
        with (
            embedded.reference_target(scratch, ["cross-tenant-leak"]) as process,
            ThreadPoolExecutor(max_workers=8) as executor,
        ):
            task_queue = f"record-{uuid.uuid4().hex[:6]}"
            async with build_worker(client, task_queue, executor):
                run = run_input(seed, reference_target(process.base_url)).model_copy(
                    update={"cohort_size": 1, "seed": name, "search_attributes": True}
                )
                await run_suite(client, task_queue, run)
        for kind, workflow_id in (
            ("suite", suite_workflow_id(seed.name, run.run_id)),
            ("cohort", cohort_workflow_id(seed.name, run.run_id, 0)),
        ):
            _save(f"{name}-{kind}", await client.get_workflow_handle(workflow_id).fetch_history())


def _save(name: str, history: object) -> None:
    path = HISTORIES / f"{name}.json"
    path.write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")  # type: ignore[attr-defined]
    print(f"wrote {path.relative_to(REPO)}")


async def record_operator_runs(
    runs: tuple[tuple[str, str, str, bool], ...] = (
        ("v2-seed-fastforward", "6h", "skip_wait", False),
        ("v2-scheduled-cancel", "2d", "cancel", True),
    ),
) -> None:
    """On the dev server (the time-skipping server has no custom search attributes):
    search attributes kept current, an operator fast-forward, and a scheduled-style run
    (empty run id, a schedule's workflow id) cancelled by an operator."""
    from memlife.workflows.suite import SuiteWorkflow

    async with _dev_server() as (client, scratch):
        seed_text = (REPO / "scenarios" / "seed-six-case.yaml").read_text()
        with (
            embedded.reference_target(scratch) as process,
            ThreadPoolExecutor(max_workers=8) as executor,
        ):
            task_queue = f"record-{uuid.uuid4().hex[:6]}"
            async with build_worker(client, task_queue, executor):
                for name, wait, signal, scheduled in runs:
                    scenario_file = scratch / f"{name}.yaml"
                    scenario_file.write_text(
                        seed_text.replace("duration: 150ms", f"duration: {wait}")
                    )
                    scenario = load_scenario(scenario_file)
                    run = run_input(scenario, reference_target(process.base_url)).model_copy(
                        update={"search_attributes": True}
                    )
                    from memlife.rules.clock import Clock

                    run = run.model_copy(update={"clock": Clock(mode="real")})
                    if scheduled:
                        run = run.model_copy(update={"run_id": ""})
                    suite_id = f"memlife/{scenario.name}/{name}-{uuid.uuid4().hex[:6]}"
                    handle = await client.start_workflow(
                        SuiteWorkflow.run, run, id=suite_id, task_queue=task_queue
                    )
                    run_id = run.run_id
                    while True:  # until the pair waits
                        await asyncio.sleep(0.2)
                        progress = await handle.query("progress")
                        run_id = progress.get("run_id") or run_id
                        if not run_id or progress["phase"] != "lifecycles":
                            continue
                        pair = client.get_workflow_handle(
                            pair_workflow_id(scenario.name, run_id, 0)
                        )
                        try:
                            if (await pair.query("progress")).get("wake_at"):
                                break
                        except Exception:
                            continue
                    if signal == "cancel":
                        await handle.signal("cancel", "recorded cancellation")
                    else:
                        await handle.signal("skip_wait")
                    run_id = (await suite_result(handle)).run_id
                    _save(f"{name}-suite", await handle.fetch_history())
                    _save(
                        f"{name}-pair",
                        await client.get_workflow_handle(
                            pair_workflow_id(scenario.name, run_id, 0)
                        ).fetch_history(),
                    )


async def record_deletion_check(name: str = "v2-deletion-check-graph-residue") -> None:
    """DeletionCheckWorkflow: a deletion that misses the graph, polled to its deadline."""
    from datetime import timedelta

    import httpx

    from memlife.rules.erasure import DeletionCheckInput, ErasureReceipt
    from memlife.workflows.deletion_check import DeletionCheckWorkflow

    async with _time_skipping(["graph-unscoped-delete"]) as (env, process, executor):
        phone = "+34600000123"
        with httpx.Client(base_url=process.base_url) as http:
            user_id = http.post("/v1/users", json={"phone": phone}).json()["user_id"]
            http.post(
                "/v1/preview", json={"phone": phone, "message": "Trabajo en Astilleros Norte."}
            )
        task_queue = f"record-{uuid.uuid4().hex[:6]}"
        async with build_worker(env.client, task_queue, executor):
            check = DeletionCheckInput(
                check_id="recorded",
                target=reference_target(process.base_url),
                user_id=user_id,
                phone=phone,
                values=["Astilleros Norte"],
                questions=["¿Dónde trabajo?"],
                ask_through_say=True,
                request=True,
                deadline=timedelta(hours=2),
                poll=timedelta(minutes=20),
            )
            handle = await env.client.start_workflow(
                DeletionCheckWorkflow.run,
                check,
                id="memlife/deletion-check/recorded",
                task_queue=task_queue,
            )
            await verdict_result(handle, ErasureReceipt)
            _save(name, await handle.fetch_history())


async def record_adjudication() -> None:
    """v2 AdjudicationWorkflow: six replies queued by a leaky run, two decided (one update
    refused by the validator), recorded by an activity. The queue never ends: the history
    is taken while it waits."""

    from memlife.rules.adjudication import Decision

    async with _time_skipping(["cross-tenant-leak"]) as (env, process, executor):
        task_queue = f"record-{uuid.uuid4().hex[:6]}"
        async with build_worker(env.client, task_queue, executor):
            scenario = load_scenario(REPO / "scenarios" / "seed-six-case.yaml")
            run = run_input(scenario, reference_target(process.base_url)).model_copy(
                update={"review_queue": "recorded"}
            )
            await run_suite(env.client, task_queue, run)
            handle = env.client.get_workflow_handle("memlife/review/recorded")
            pending = await handle.query("pending", 10)
            with contextlib.suppress(Exception):  # refused by the validator
                await handle.execute_update("decide", Decision(ticket="nope", reviewer="x"))
            await handle.execute_update(
                "decide", Decision(ticket=pending[0]["ticket"], asserted=[0], reviewer="alice")
            )
            await handle.execute_update(
                "decide", Decision(ticket=pending[1]["ticket"], abstains=True, reviewer="bob")
            )
            await env.sleep(2)
            _save("v2-adjudication-queue", await handle.fetch_history())


async def record_phone_taken(name: str = "v6-seed-phone-taken") -> None:
    """v6: every target request names its run (run_id in each request), and a tenant whose
    phone the target already knows (created: false) registers under a fresh phone, which
    the pair then uses for every request."""

    import httpx

    from memlife.rules.phones import synthetic_phone

    async with _time_skipping() as (env, process, executor):
        scenario = load_scenario(REPO / "scenarios" / "seed-six-case.yaml")
        run = run_input(scenario, reference_target(process.base_url))
        with httpx.Client(base_url=process.base_url) as http:  # someone else's user
            http.post("/v1/users", json={"phone": synthetic_phone(run.run_id, 0)})
        task_queue = f"record-{uuid.uuid4().hex[:6]}"
        async with build_worker(env.client, task_queue, executor):
            await run_suite(env.client, task_queue, run)
        _save(
            f"{name}-suite",
            await env.client.get_workflow_handle(
                f"memlife/{scenario.name}/{run.run_id}"
            ).fetch_history(),
        )
        _save(
            f"{name}-pair",
            await env.client.get_workflow_handle(
                pair_workflow_id(scenario.name, run.run_id, 0)
            ).fetch_history(),
        )


async def record_continued(name: str = "v12-suite-continued") -> None:
    """A suite that continues as new: two cohorts of one pair, one at a time, and a history
    budget that each Temporal run of the suite passes after its first cohort. Both runs of
    the suite are kept (the first ends CONTINUED_AS_NEW); the cohorts are as in v11."""
    async with _time_skipping() as (env, process, executor):
        scenario = written_nightly(2)
        run = run_input(scenario, reference_target(process.base_url)).model_copy(
            update={"cohort_size": 1, "seed": name, "max_active_pairs": 1, "continue_at_events": 1}
        )
        task_queue = f"record-{uuid.uuid4().hex[:6]}"
        async with build_worker(env.client, task_queue, executor):
            await run_suite(env.client, task_queue, run)
        first, last = await temporal_runs(env.client, suite_workflow_id(scenario.name, run.run_id))
        _save(f"{name}-suite", first)
        _save(f"{name}-suite-continued", last)


async def main() -> None:
    """Records what is missing; released histories are never written over."""
    HISTORIES.mkdir(parents=True, exist_ok=True)
    have = {path.stem for path in HISTORIES.glob("*.json")}
    seed = REPO / "scenarios" / "seed-six-case.yaml"
    nightly = REPO / "scenarios" / "lifecycle-nightly.yaml"
    if "v1-seed-clean-suite" not in have:
        await record("v1-seed-clean", seed, [])
    if "v1-seed-leak-suite" not in have:
        await record("v1-seed-leak", seed, ["cross-tenant-leak"])
    if "v1-nightly-resurrection-suite" not in have:
        await record(
            "v1-nightly-resurrection", nightly, ["nightly-resurrection"], generated_pairs=1
        )
    if "v2-seed-fastforward-suite" not in have:
        await record_operator_runs()
    if "v2-deletion-check-graph-residue" not in have:
        await record_deletion_check()
    if "v2-adjudication-queue" not in have:
        await record_adjudication()
    if "v3-cohort-nightly-suite" not in have:
        # Three pairs in cohorts of two (pairs by reference, batched steps, shared timers).
        await record(
            "v3-cohort-nightly", nightly, ["nightly-resurrection"], generated_pairs=3, cohort_size=2
        )
    if "v4-cohort-window-suite" not in have:
        # Three cohorts of one pair, at most two at a time (the cohort window).
        await record(
            "v4-cohort-window", nightly, [], generated_pairs=3, cohort_size=1, max_active_pairs=2
        )
    # v5: a run or check that does not pass ends FAILED with its verdict; a scheduled run's
    # id is the last part of its workflow id; verdicts shown as current details.
    if "v5-seed-leak-suite" not in have:
        await record("v5-seed-leak", seed, ["cross-tenant-leak"])
    if "v5-scheduled-cancel-suite" not in have:
        await record_operator_runs((("v5-scheduled-cancel", "2d", "cancel", True),))
    if "v5-deletion-check-graph-residue" not in have:
        await record_deletion_check("v5-deletion-check-graph-residue")
    if "v6-seed-phone-taken-suite" not in have:
        await record_phone_taken()
    # v7: every observation carries its request's traceparent, findings their trace and
    # span ids, and a run's meta its namespace and cohort size.
    if "v7-seed-leak-traced-suite" not in have:
        await record("v7-seed-leak-traced", seed, ["cross-tenant-leak"])
    # v8: maintain steps (the target's reindex) and a fault they expose, one pair by itself
    # and two in a cohort (a batch of maintenance calls).
    maintenance = REPO / "scenarios" / "maintenance.yaml"
    if "v8-maintenance-resurrects-suite" not in have:
        await record(
            "v8-maintenance-resurrects", maintenance, ["reindex-resurrects"], generated_pairs=1
        )
    if "v8-cohort-maintenance-suite" not in have:
        await record("v8-cohort-maintenance", maintenance, [], generated_pairs=2, cohort_size=2)
    # v9: shared spaces (space steps, messages said inside a space) batched in a cohort,
    # and adversarial turns (spoof and extract probes, a poison write) by themselves.
    if "v9-cohort-spaces-suite" not in have:
        await record(
            "v9-cohort-spaces",
            REPO / "scenarios" / "shared-spaces.yaml",
            ["revocation-ignored"],
            generated_pairs=2,
            cohort_size=2,
        )
    if "v9-adversarial-spoofed-suite" not in have:
        await record(
            "v9-adversarial-spoofed",
            REPO / "scenarios" / "adversarial.yaml",
            ["identity-from-prompt"],
            generated_pairs=1,
        )
    # v10: a cohort's scenario and target read from the recorder (the suite's inputs stay
    # small), its steps recorded in activities off its workflow tasks, and store reads
    # staged in the recorder (history keeps their counts); a pair alone stages its reads.
    if "v10-cohort-by-reference-suite" not in have:
        await record(
            "v10-cohort-by-reference",
            nightly,
            ["nightly-resurrection"],
            generated_pairs=3,
            cohort_size=2,
        )
    if "v10-nightly-staged-reads-suite" not in have:
        await record(
            "v10-nightly-staged-reads", nightly, ["nightly-resurrection"], generated_pairs=1
        )
    # v11: payloads over 64 KB compressed (stack/codec.py): five pairs in one cohort make
    # step batches that large.
    if "v11-cohort-compressed-suite" not in have:
        await record("v11-cohort-compressed", nightly, [], generated_pairs=5, cohort_size=5)
    # v12: a suite past its history budget continues as new; the run goes on in its next
    # Temporal run, which neither records the run nor materializes its pairs again.
    if "v12-suite-continued-suite" not in have:
        await record_continued()
    # v13: a cohort records the steps it judges itself (register, write, update, delete,
    # wait) beside the next step's target calls instead of before them.
    if "v13-cohort-beside-suite" not in have:
        await record(
            "v13-cohort-beside", nightly, ["nightly-resurrection"], generated_pairs=3, cohort_size=2
        )
    # v14: a probe step's forbidden values sent once per distinct list, in a cohort's
    # recording and a pair's alike (StepRecord.case_forbidden).
    if "v14-forbidden-once-cohort-suite" not in have:
        await record(
            "v14-forbidden-once-cohort",
            nightly,
            ["nightly-resurrection"],
            generated_pairs=3,
            cohort_size=2,
        )
    if "v14-forbidden-once-pair-suite" not in have:
        await record(
            "v14-forbidden-once-pair", nightly, ["nightly-resurrection"], generated_pairs=1
        )
    # v15: a cohort records its tenants in an activity, no longer a local activity that
    # held its workflow task open while the recorder was busy.
    if "v15-tenants-activity-cohort-suite" not in have:
        await record(
            "v15-tenants-activity-cohort",
            nightly,
            ["nightly-resurrection"],
            generated_pairs=3,
            cohort_size=2,
        )
    # v16: a deletion check asks through `ask`, and through `say` only when told to
    # (ask_through_say; the patch deletion-check-never-writes); refusals and retrieval
    # answers are carried in the replies (Reply.refused, Reply.retrieval).
    if "v16-deletion-check-never-writes" not in have:
        await record_deletion_check("v16-deletion-check-never-writes")
    if "v16-spaces-refused-suite" not in have:
        await record(
            "v16-spaces-refused",
            REPO / "scenarios" / "shared-spaces.yaml",
            [],
            generated_pairs=1,
            refuse=True,
        )
    # v17: a run with a review queue looks for paraphrase candidates before it is
    # summarized (the patch paraphrase-candidates).
    if "v17-paraphrases-suite" not in have:
        await record(
            "v17-paraphrases",
            nightly,
            [],
            generated_pairs=1,
            options={"review_queue": "record", "paraphrases": True},
        )
    # v18: every run starts with one preparation activity (prepare_run: its record, its
    # pairs drawn, its values claimed), the scenario sent as written; activities called
    # through their typed bindings (memlife/contracts/activities.py).
    if "v18-prepared-pair-suite" not in have:
        await record(
            "v18-prepared-pair",
            nightly,
            ["nightly-resurrection"],
            generated_pairs=1,
            as_written=True,
        )
    if "v18-prepared-cohort-suite" not in have:
        await record(
            "v18-prepared-cohort",
            nightly,
            ["nightly-resurrection"],
            generated_pairs=3,
            cohort_size=2,
        )
    # v19: a pair that did not pass ends FAILED with its verdict, its PairResult the
    # failure's details, which the suite reads as the pair's result (the patch
    # pair-verdict-as-status); verdict failures carry no stack trace.
    if "v19-pair-verdict-leak-suite" not in have:
        await record("v19-pair-verdict-leak", seed, ["cross-tenant-leak"])
    # v20: a cohort whose pairs did not all pass ends FAILED the same way, its pairs'
    # results the failure's details (the patch cohort-verdict-as-status).
    if "v20-cohort-verdict-suite" not in have:
        await record(
            "v20-cohort-verdict",
            nightly,
            ["nightly-resurrection"],
            generated_pairs=3,
            cohort_size=2,
        )
    # v21: a cohort on a cluster with memlife's search attributes keeps its own current
    # (CohortInput.search_attributes).
    if "v21-cohort-attributes-suite" not in have:
        await record_cohort_attributes()


if __name__ == "__main__":
    asyncio.run(main())
