"""A probe step's forbidden values travel once per distinct list (StepRecord.case_forbidden):
the recording judges the compact record exactly as the whole one, and a record whose
positions do not fit its cases is refused rather than judged against the wrong values."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from memlife.activities.record import record_step
from memlife.contracts import StepRecord
from memlife.rules.evidence import Observation
from memlife.rules.verdicts import ForbiddenValue, ProbeCase

T0 = datetime(2026, 12, 1, tzinfo=UTC)
ANA_FORBIDDEN = [
    ForbiddenValue(text="Trufa", origin="partner", domain="pet", owner="Bea"),
    ForbiddenValue(text="Calle Sol 3", origin="partner", domain="address", owner="Bea"),
]
BEA_FORBIDDEN = [ForbiddenValue(text="Olmo", origin="partner", domain="pet", owner="Ana")]


def _probe_step() -> StepRecord:
    """Two questions each to Ana and Bea; Bea's second answer leaks Ana's pet."""
    cases, observations = [], []
    for seq, (role, alias, own, forbidden, reply) in enumerate(
        [
            ("a", "Ana", "Olmo", ANA_FORBIDDEN, "Tu perro se llama Olmo."),
            ("a", "Ana", "Olmo", ANA_FORBIDDEN, "Olmo."),
            ("b", "Bea", "Trufa", BEA_FORBIDDEN, "Tu gata es Trufa."),
            ("b", "Bea", "Trufa", BEA_FORBIDDEN, "Trufa, y también Olmo."),
        ]
    ):
        case_id = f"s4-{role}-pet-q{seq}"
        cases.append(
            ProbeCase(
                case_id=case_id,
                role=role,
                tenant_alias=alias,
                domain="pet",
                question="¿Cómo se llama mi mascota?",
                required=[own],
                forbidden=forbidden,
            )
        )
        observations.append(
            Observation(
                seq=seq,
                role=role,
                kind="probe",
                domain="pet",
                case_id=case_id,
                request="?",
                reply=reply,
                latency_ms=5.0,
                scenario_time=T0,
                wall_time=T0,
            )
        )
    return StepRecord(
        run_id="r-forbidden",
        pair_index=0,
        step_index=4,
        kind="probe",
        stage="recall",
        scenario_started=T0,
        scenario_finished=T0,
        wall_started=T0,
        wall_finished=T0,
        observations=observations,
        cases=cases,
    )


def test_each_distinct_list_travels_once_and_comes_back_whole() -> None:
    whole = _probe_step()
    compact = whole.with_forbidden_once()
    assert compact.forbidden_lists == [ANA_FORBIDDEN, BEA_FORBIDDEN]
    assert compact.case_forbidden == [0, 0, 1, 1]
    assert all(case.forbidden == [] for case in compact.cases)
    sent = compact.model_dump_json()
    assert sent.count("Calle Sol 3") == 1 < whole.model_dump_json().count("Calle Sol 3")
    assert StepRecord.model_validate_json(sent).with_forbidden_per_case() == whole


def test_a_record_without_positions_is_taken_as_it_came() -> None:
    whole = _probe_step()
    assert whole.with_forbidden_per_case() is whole


def test_the_recording_judges_the_compact_record_as_the_whole_one(db_url: str) -> None:
    judged_whole = record_step(_probe_step())
    judged_compact = record_step(
        StepRecord.model_validate_json(_probe_step().with_forbidden_once().model_dump_json())
    )
    assert judged_compact == judged_whole
    outcomes = {v.case_id: v.outcome for v in judged_compact.verdicts}
    assert outcomes == {
        "s4-a-pet-q0": "pass",
        "s4-a-pet-q1": "pass",
        "s4-b-pet-q2": "pass",
        "s4-b-pet-q3": "fail",
    }


@pytest.mark.parametrize("positions", [[0, 0, 1], [0, 0, 1, 2], [0, 0, 1, -1]])
def test_positions_that_do_not_fit_the_cases_are_refused(positions: list[int]) -> None:
    compact = _probe_step().with_forbidden_once().model_dump(mode="json")
    with pytest.raises(ValidationError, match="forbidden list position"):
        StepRecord.model_validate({**compact, "case_forbidden": positions})
