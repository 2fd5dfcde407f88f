"""The recorder under 64 concurrent recording activities, on SQLite (WAL, busy timeout,
short transactions) and on a real PostgreSQL: no lock errors, no lost row, and retried
activities add nothing."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from sqlmodel import func, select

from memlife import recorder
from memlife.activities.record import record_step
from memlife.contracts import StepRecord
from memlife.rules.evidence import Observation
from memlife.rules.pairs import TenantIdentity
from memlife.rules.verdicts import ProbeCase

NOW = datetime(2026, 11, 30, tzinfo=UTC)
STEPS = 256
OBSERVATIONS_PER_STEP = 12


def step(index: int) -> StepRecord:
    observations = [
        Observation(
            seq=n,
            role="a",
            kind="probe",
            domain="job",
            case_id=f"c{n}",
            request="¿Dónde trabajo?",
            reply="En Panadería Quispe",
            latency_ms=3.0,
            scenario_time=NOW,
            wall_time=NOW,
        )
        for n in range(OBSERVATIONS_PER_STEP)
    ]
    cases = [
        ProbeCase(
            case_id=f"c{n}",
            role="a",
            tenant_alias="ana",
            domain="job",
            question="¿Dónde trabajo?",
            required=["Panadería Quispe"],
        )
        for n in range(OBSERVATIONS_PER_STEP)
    ]
    return StepRecord(
        run_id="concurrency",
        pair_index=index // 8,
        step_index=index % 8,
        kind="probe",
        stage="s",
        scenario_started=NOW,
        scenario_finished=NOW,
        wall_started=NOW,
        wall_finished=NOW,
        observations=observations,
        cases=cases,
        tenants=[TenantIdentity(role="a", alias="ana", phone="+12015550101", language="es")],
    )


def count(model: type) -> int:
    with recorder.session() as db:
        return db.exec(select(func.count()).select_from(model)).one()


def test_64_concurrent_recorders_lose_and_duplicate_nothing(recorder_url: str) -> None:
    work = [step(i) for i in range(STEPS)]
    retries = work[::3]  # an activity retried after its first attempt already wrote
    with ThreadPoolExecutor(max_workers=64) as pool:
        outcomes = list(pool.map(record_step, work + retries))
    assert all(len(o.verdicts) == OBSERVATIONS_PER_STEP for o in outcomes)
    assert all(v.passed for o in outcomes for v in o.verdicts)
    assert count(recorder.StepRow) == STEPS
    assert count(recorder.ObservationRow) == STEPS * OBSERVATIONS_PER_STEP
    assert count(recorder.VerdictRow) == STEPS * OBSERVATIONS_PER_STEP
