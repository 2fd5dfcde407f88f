"""A lifecycle whose stores are read by SQL, straight from the reference target's own
database file instead of its admin HTTP surface: clean, it passes every check in those
stores; with a deletion fault, the SQL-read graph store is where the residue is found."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife import recorder
from memlife.bundled.reference.target_file import reference_target
from memlife.recorder.builder import build_artifact
from memlife.rules.pairs import materialize
from memlife.rules.scenario_file import load_scenario
from memlife.rules.target import SqlProbe
from memlife.stack import embedded
from tests.workflows.helpers import run_input, run_suite

NIGHTLY = Path(__file__).resolve().parents[2] / "scenarios" / "lifecycle-nightly.yaml"
URL_ENV = "MEMLIFE_TEST_REFERENCE_DB_URL"

SQL_PROBES = {
    "memory": SqlProbe(
        kind="sql",
        url_env=URL_ENV,
        scope="SELECT id, tenant_id, text AS content FROM memories WHERE tenant_id = :user_id",
        needle="SELECT id, tenant_id, text AS content FROM memories WHERE instr(text, :needle) > 0",
    ),
    "graph": SqlProbe(
        kind="sql",
        url_env=URL_ENV,
        scope="SELECT node_key AS id, tenant_id, predicate || ': ' || value AS content "
        "FROM graph_nodes WHERE tenant_id = :user_id",
        needle="SELECT node_key AS id, tenant_id, predicate || ': ' || value AS content "
        "FROM graph_nodes WHERE instr(value, :needle) > 0",
    ),
}


@pytest.mark.parametrize(
    ("faults", "residue_in"), [([], set()), (["graph-unscoped-delete"], {"graph"})]
)
async def test_sql_read_stores_carry_the_lifecycle(
    tmp_path: Path,
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    monkeypatch: pytest.MonkeyPatch,
    faults: list[str],
    residue_in: set[str],
) -> None:
    scenario = load_scenario(NIGHTLY)
    assert scenario.generate is not None
    scenario = materialize(
        scenario.model_copy(update={"generate": scenario.generate.model_copy(update={"count": 2})}),
        "sql-probes",
    )
    database = tmp_path / "reference.db"
    monkeypatch.setenv(URL_ENV, f"sqlite:///{database}")
    with embedded.reference_target(tmp_path, faults, db_path=database) as process:
        target = reference_target(process.base_url)
        target = target.model_copy(
            update={
                "stores": [
                    store.model_copy(update={"probe": SQL_PROBES[store.name]})
                    if store.name in SQL_PROBES
                    else store
                    for store in target.stores
                ]
            }
        )
        run = run_input(scenario, target)
        await run_suite(skip_env.client, skip_worker, run)
    loaded = recorder.load_run(run.run_id)
    assert loaded is not None
    artifact = build_artifact(loaded).model_dump(mode="json")

    assert artifact["inconclusive"] == []
    read_by_sql = [
        o
        for o in loaded["observations"]
        if o.kind == "inspect" and o.request.split()[0] in SQL_PROBES
    ]
    assert read_by_sql and all(o.status == "ok" for o in read_by_sql)
    checked = {(v.store, v.outcome) for v in loaded["verdicts"]}
    assert {("memory", "pass"), ("graph", "pass")} <= checked
    failing_stores = {f["store"] for f in artifact["failures"]}
    assert "memory" not in failing_stores  # its purge worked, as read by SQL
    if residue_in:
        assert ("I4", "graph", "residue") in {
            (f["invariant"], f["store"], f["reason"]) for f in artifact["failures"]
        }
    else:
        assert artifact["summary"]["passed"] and not failing_stores
