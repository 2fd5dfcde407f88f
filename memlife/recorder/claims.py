"""What runs used against one long-lived target: phones and canary values, claimed in the
recorder so that no two runs against that target ever use the same one.

A run against a target named by a target file shares it with every other run pointed at
it (nightly schedules, ad hoc runs, experiments). A phone reused across runs registers as
the earlier run's user; a value reused across runs is found under the earlier run's tenant
and reads as a leak. So a run claims its values and phones before using them: a claim is
one row keyed by (target, kind, text), inserted if absent, and the first run to insert it
owns it; a later run that finds it owned draws another. Runs against a fresh bundled
target (a database of their own) claim nothing and keep their seed's values exactly.

Claims stay bounded: once a run has finished, its claims are reviewed (`retire_claims`, as
the next run against the target is prepared) and those that can no longer mislead are
retired (rules/claims.py decides: its tenants' deletion confirmed, nothing of them seen
where it should not be). Retired claims move to retired_target_claims, so what a run's
preparation and its foreign-value index read (`claims_of_others`) is the live claims only,
by the target's index: as many as the target has tenants who may still hold them, not as
many as its history. What may still be on the target stays claimed.

A run's listed values (pairs written out in the scenario) are made its own too against a
shared target (rules/pairs.py: vary_listed, from its seed) and claimed like generated ones.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, NamedTuple

from sqlalchemy import delete, func, select
from sqlalchemy.engine import Connection

from memlife.errors import MemlifeError
from memlife.recorder.database import dialect_insert, engine_for
from memlife.recorder.tables import (
    ClaimGenerationRow,
    ClaimReviewRow,
    ObservationRow,
    RegistrationAttemptRow,
    RetiredClaimRow,
    RunRow,
    RunValueRow,
    TargetClaimRow,
    TenantRow,
    VerdictRow,
)
from memlife.rules.claims import Retirement, TenantTrail, retirement
from memlife.rules.pairs import materialize, pair_values, vary_listed
from memlife.rules.scenario import Scenario
from memlife.rules.scoring import normalize

# Redraws before giving up: each one avoids every value claimed so far, so a second is
# needed only when another run claimed the same value in the moment between the two.
_ATTEMPTS = 5
_CHUNK = 500


def target_key(base_url: str) -> str:
    """One service, however its target file spells the address."""
    return base_url.rstrip("/").lower()


def _claim_id(target: str, kind: str, text: str) -> str:
    return hashlib.sha256(f"{target}\n{kind}\n{text}".encode()).hexdigest()


def claim(target: str, run_id: str, kind: str, items: Iterable[tuple[str, str, str]]) -> set[str]:
    """Claim each (text, owner, domain) for `run_id`; return the texts (as given) that
    another run, or another tenant of this run, had claimed first. Idempotent: a retried
    activity claims what it claimed before."""
    key = target_key(target)
    wanted = {
        normalize(text) if kind == "value" else text: (text, owner, domain)
        for text, owner, domain in items
    }
    engine = engine_for()
    insert = dialect_insert(engine)
    taken: set[str] = set()
    normalized = list(wanted)
    with engine.begin() as connection:
        for start in range(0, len(normalized), _CHUNK):
            chunk = normalized[start : start + _CHUNK]
            rows = [
                {
                    "id": _claim_id(key, kind, text),
                    "target": key,
                    "kind": kind,
                    "text": text,
                    "run_id": run_id,
                    "owner": wanted[text][1],
                    "domain": wanted[text][2],
                }
                for text in chunk
            ]
            connection.execute(
                insert(TargetClaimRow).on_conflict_do_nothing(index_elements=["id"]), rows
            )
            owners = connection.execute(
                select(TargetClaimRow.text, TargetClaimRow.run_id, TargetClaimRow.owner).where(
                    TargetClaimRow.id.in_([row["id"] for row in rows])
                )
            )
            taken.update(
                wanted[text][0]
                for text, owner_run, owner in owners
                if (owner_run, owner) != (run_id, wanted[text][1])
            )
        if kind == "value" and normalized:  # another run's index of them is stale now
            _bump_generation(connection, key)
    return taken


def _bump_generation(connection: Connection, key: str) -> None:
    insert = dialect_insert(connection.engine)
    statement = insert(ClaimGenerationRow).values(target=key, generation=1)
    connection.execute(
        statement.on_conflict_do_update(
            index_elements=["target"], set_={"generation": ClaimGenerationRow.generation + 1}
        )
    )


def claims_generation(target: str) -> int:
    """How many times the target's value claims changed (claimed or retired): one read by
    key, so a worker can tell its index of them is stale without counting them."""
    with engine_for().connect() as connection:
        generation = connection.execute(
            select(ClaimGenerationRow.generation).where(
                ClaimGenerationRow.target == target_key(target)
            )
        ).scalar_one_or_none()
    return int(generation or 0)


def claims_of_others(target: str, run_id: str) -> list[tuple[str, str, str, str]]:
    """(text, run, owner, domain) of every live value other runs claimed against the
    target (retired claims are not read: `retire_claims`)."""
    with engine_for().connect() as connection:
        rows = connection.execute(
            select(
                TargetClaimRow.text,
                TargetClaimRow.run_id,
                TargetClaimRow.owner,
                TargetClaimRow.domain,
            ).where(
                TargetClaimRow.target == target_key(target),
                TargetClaimRow.kind == "value",
                TargetClaimRow.run_id != run_id,
            )
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]


def claim_count(target: str) -> int:
    """The target's live claims, phones and values."""
    with engine_for().connect() as connection:
        return int(
            connection.execute(
                select(func.count())
                .select_from(TargetClaimRow)
                .where(TargetClaimRow.target == target_key(target))
            ).scalar_one()
        )


def materialize_unclaimed(
    scenario: Scenario, seed: str, run_id: str, target: str | None
) -> Scenario:
    """`materialize`, with values no other run uses against `target` (None: a fresh
    target of this run's own, nothing to avoid, listed values kept as written). Against a
    shared target listed values get a marker drawn from `seed` (rules/pairs.py:
    vary_listed), and finished runs' claims that can no longer mislead are retired first
    (`retire_claims`)."""
    if target is None:
        return materialize(scenario, seed)
    retire_claims(target)
    avoid = [text for text, *_ in claims_of_others(target, run_id)]
    for _ in range(_ATTEMPTS):
        result = (
            materialize(scenario, seed, avoid)
            if scenario.generate is not None
            else vary_listed(scenario, seed, avoid)
        )
        taken = claim(
            target,
            run_id,
            "value",
            ((v.text, f"{v.alias} (pair {v.pair})", v.domain) for v in pair_values(result.pairs)),
        )
        if not taken:
            return result
        avoid = [*avoid, *taken]
    raise MemlifeError(
        f"could not claim canary values against {target} in {_ATTEMPTS} "
        "attempts: other runs keep claiming the same ones"
    )


class RetiredClaims(NamedTuple):
    """What one review of a target's claims did: runs reviewed, claims retired and kept
    (of the runs reviewed), and the live claims left."""

    runs: int
    retired: int
    kept: int
    live: int


def _review_id(key: str, run_id: str) -> str:
    return hashlib.sha256(f"{key}\n{run_id}".encode()).hexdigest()


def retire_claims(target: str, now: datetime | None = None) -> RetiredClaims:
    """Review the claims of every run against `target` that finished since the last
    review, once each (its verdicts are final), and retire what can no longer mislead
    (rules/claims.py). Read by the target's index and each run's: the work grows with the
    runs finished since, not with the target's history. Idempotent, and safe beside
    another review (both retire the same claims)."""
    key = target_key(target)
    now = now or datetime.now(UTC)
    engine = engine_for()
    with engine.connect() as connection:
        holding = {
            run
            for (run,) in connection.execute(
                select(TargetClaimRow.run_id).where(TargetClaimRow.target == key).distinct()
            )
        }
        reviewed = {
            run
            for (run,) in connection.execute(
                select(ClaimReviewRow.run_id).where(
                    ClaimReviewRow.id.in_([_review_id(key, run) for run in holding])
                )
            )
        }
        finished = {
            run: summary
            for run, summary in connection.execute(
                select(RunRow.id, RunRow.summary_json).where(
                    RunRow.id.in_(holding - reviewed),
                    RunRow.finished_at.is_not(None),
                    RunRow.summary_json.is_not(None),
                )
            )
        }
    retired = kept = 0
    for run_id, summary in sorted(finished.items()):
        gone, stay = _review_run(engine, key, run_id, json.loads(summary or "{}"), now)
        retired, kept = retired + gone, kept + stay
    return RetiredClaims(len(finished), retired, kept, claim_count(target))


def _review_run(
    engine: Any, key: str, run_id: str, summary: dict[str, Any], now: datetime
) -> tuple[int, int]:
    """One finished run's claims against the target: retire what rules/claims.py lets go,
    note the run as reviewed, and drop its registration journal (nothing retries now)."""
    with engine.connect() as connection:
        claims = connection.execute(
            select(
                TargetClaimRow.id,
                TargetClaimRow.kind,
                TargetClaimRow.text,
                TargetClaimRow.owner,
            ).where(TargetClaimRow.target == key, TargetClaimRow.run_id == run_id)
        ).all()
        decision = retirement(
            _tenant_trails(connection, run_id),
            connection.execute(
                select(RunValueRow.alias, RunValueRow.text).where(RunValueRow.run_id == run_id)
            ).all(),
            [text for _, kind, text, _ in claims if kind == "value"],
            summary.get("by_invariant", {}),
        )
    going = [
        claim_id for claim_id, kind, text, owner in claims if _retires(decision, kind, text, owner)
    ]
    with engine.begin() as connection:
        insert = dialect_insert(engine)
        for start in range(0, len(going), _CHUNK):
            chunk = going[start : start + _CHUNK]
            rows = (
                connection.execute(select(TargetClaimRow).where(TargetClaimRow.id.in_(chunk)))
                .mappings()
                .all()
            )
            if rows:
                connection.execute(
                    insert(RetiredClaimRow).on_conflict_do_nothing(index_elements=["id"]),
                    [
                        {
                            **row,
                            "id": _review_id(row["id"], run_id),
                            "claim_id": row["id"],
                            "retired_at": now,
                            "reason": _reason(row["kind"], row["text"], decision),
                        }
                        for row in rows
                    ],
                )
            connection.execute(delete(TargetClaimRow).where(TargetClaimRow.id.in_(chunk)))
        connection.execute(
            insert(ClaimReviewRow).on_conflict_do_nothing(index_elements=["id"]),
            [
                {
                    "id": _review_id(key, run_id),
                    "target": key,
                    "run_id": run_id,
                    "reviewed_at": now,
                    "retired": len(going),
                    "kept": len(claims) - len(going),
                }
            ],
        )
        connection.execute(
            delete(RegistrationAttemptRow).where(RegistrationAttemptRow.run_id == run_id)
        )
        if going:
            _bump_generation(connection, key)
    return len(going), len(claims) - len(going)


def _retires(decision: Retirement, kind: str, text: str, owner: str) -> bool:
    return text in decision.values if kind == "value" else owner in decision.phones


def _reason(kind: str, text: str, decision: Retirement) -> str:
    if kind == "phone":
        return "its tenant's deletion confirmed"
    return "never used" if text in decision.unused else "its tenants' deletion confirmed"


def _tenant_trails(connection: Connection, run_id: str) -> list[TenantTrail]:
    """Each tenant of the run: the last step that confirmed its deletion, and every step
    that registered it (a failed registration too: its user may exist all the same)."""
    aliases = {
        (pair, role): alias
        for pair, role, alias in connection.execute(
            select(TenantRow.pair_index, TenantRow.role, TenantRow.alias).where(
                TenantRow.run_id == run_id
            )
        )
    }
    confirmed: dict[tuple[int, str], int] = {}
    for pair, role, step in connection.execute(
        select(VerdictRow.pair_index, VerdictRow.role, VerdictRow.step_index).where(
            VerdictRow.run_id == run_id,
            VerdictRow.store == "deletion-status",
            VerdictRow.passed.is_(True),
        )
    ):
        confirmed[(pair, role)] = max(step, confirmed.get((pair, role), step))
    registered: dict[tuple[int, str], list[int]] = {}
    for pair, role, step in connection.execute(
        select(ObservationRow.pair_index, ObservationRow.role, ObservationRow.step_index).where(
            ObservationRow.run_id == run_id, ObservationRow.kind == "register"
        )
    ):
        registered.setdefault((pair, role), []).append(step)
    return [
        TenantTrail(alias, confirmed.get(tenant), tuple(registered.get(tenant, ())))
        for tenant, alias in aliases.items()
    ]
