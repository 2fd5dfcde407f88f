"""The registration journal: what each attempt of one registration sent and got back, so
that a retried registration finds the user its earlier attempt created instead of creating
another one and leaving the first on the target as an orphan (activities/target.py:
register).

A registration is keyed by what Temporal keeps the same across the retries of one activity
(its workflow, workflow run and activity id) and the tenant's alias (a cohort's batch
registers many tenants in one activity). Per phone it tried, one row: written before the
first request goes out ("sent"), and again after each answer, with what the answered
steps extracted; "registered" once every step answered, "refused" when the target said
the phone was someone else's. A run's rows go when its claims are reviewed
(recorder/claims.py: retire_claims): nothing retries its registrations then.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal, NamedTuple

from sqlalchemy import select

from memlife.recorder.database import dialect_insert, engine_for
from memlife.recorder.tables import RegistrationAttemptRow

Outcome = Literal["sent", "refused", "registered"]


class Attempt(NamedTuple):
    """What earlier attempts of a registration did with one phone."""

    phone: str
    outcome: Outcome
    steps_done: int  # register steps that got an answer
    answer: dict[str, Any]  # fields extracted so far, status, latency, trace


def _row_id(key: str, phone: str) -> str:
    return hashlib.sha256(f"{key}\n{phone}".encode()).hexdigest()


def attempts(key: str) -> dict[str, Attempt]:
    """Per phone, what the registration's earlier attempts did (empty on a first one)."""
    with engine_for().connect() as connection:
        rows = connection.execute(
            select(
                RegistrationAttemptRow.phone,
                RegistrationAttemptRow.outcome,
                RegistrationAttemptRow.steps_done,
                RegistrationAttemptRow.answer_json,
            ).where(RegistrationAttemptRow.key == key)
        ).all()
    return {
        phone: Attempt(phone, outcome, steps, json.loads(answer))
        for phone, outcome, steps, answer in rows
    }


def note(
    key: str,
    run_id: str,
    tenant_alias: str,
    phone: str,
    outcome: Outcome,
    steps_done: int = 0,
    answer: dict[str, Any] | None = None,
) -> None:
    """Write (or overwrite) what the registration did with `phone` so far."""
    engine = engine_for()
    values = {
        "id": _row_id(key, phone),
        "key": key,
        "run_id": run_id,
        "tenant_alias": tenant_alias,
        "phone": phone,
        "outcome": outcome,
        "steps_done": steps_done,
        "answer_json": json.dumps(answer or {}, default=str),
    }
    statement = dialect_insert(engine)(RegistrationAttemptRow).values(**values)
    with engine.begin() as connection:
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=["id"],
                set_={name: values[name] for name in ("outcome", "steps_done", "answer_json")},
            )
        )
