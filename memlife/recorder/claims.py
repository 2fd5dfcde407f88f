"""What runs used against one long-lived target: phones and canary values, claimed in the
recorder so that no two runs against that target ever use the same one.

A run against a target named by a target file shares it with every other run pointed at
it (nightly schedules, ad hoc runs, experiments). A phone reused across runs registers as
the earlier run's user; a value reused across runs is found under the earlier run's tenant
and reads as a leak. So a run claims its values and phones before using them: a claim is
one row keyed by (target, kind, text), inserted if absent, and the first run to insert it
owns it; a later run that finds it owned draws another. Runs against a fresh bundled
target (a database of their own) claim nothing and keep their seed's values exactly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from sqlalchemy import func, select

from memlife.errors import MemlifeError
from memlife.recorder.database import dialect_insert, engine_for
from memlife.recorder.tables import TargetClaimRow
from memlife.rules.pairs import materialize, pair_values
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


def claim(target: str, run_id: str, kind: str,
          items: Iterable[tuple[str, str, str]]) -> set[str]:
    """Claim each (text, owner, domain) for `run_id`; return the texts (as given) that
    another run, or another tenant of this run, had claimed first. Idempotent: a retried
    activity claims what it claimed before."""
    key = target_key(target)
    wanted = {normalize(text) if kind == "value" else text: (text, owner, domain)
              for text, owner, domain in items}
    engine = engine_for()
    insert = dialect_insert(engine)
    taken: set[str] = set()
    normalized = list(wanted)
    with engine.begin() as connection:
        for start in range(0, len(normalized), _CHUNK):
            chunk = normalized[start:start + _CHUNK]
            rows = [{"id": _claim_id(key, kind, text), "target": key, "kind": kind,
                     "text": text, "run_id": run_id, "owner": wanted[text][1],
                     "domain": wanted[text][2]} for text in chunk]
            connection.execute(insert(TargetClaimRow).on_conflict_do_nothing(
                index_elements=["id"]), rows)
            owners = connection.execute(
                select(TargetClaimRow.text, TargetClaimRow.run_id, TargetClaimRow.owner).where(
                    TargetClaimRow.id.in_([row["id"] for row in rows])))
            taken.update(wanted[text][0] for text, owner_run, owner in owners
                         if (owner_run, owner) != (run_id, wanted[text][1]))
    return taken


def claims_of_others(target: str, run_id: str) -> list[tuple[str, str, str, str]]:
    """(text, run, owner, domain) of every value other runs claimed against the target."""
    with engine_for().connect() as connection:
        rows = connection.execute(select(
            TargetClaimRow.text, TargetClaimRow.run_id, TargetClaimRow.owner,
            TargetClaimRow.domain).where(
            TargetClaimRow.target == target_key(target), TargetClaimRow.kind == "value",
            TargetClaimRow.run_id != run_id))
        return [tuple(row) for row in rows]  # type: ignore[misc]


def claim_count(target: str) -> int:
    with engine_for().connect() as connection:
        return int(connection.execute(select(func.count()).select_from(TargetClaimRow).where(
            TargetClaimRow.target == target_key(target))).scalar_one())


def materialize_unclaimed(scenario: Scenario, seed: str, run_id: str,
                          target: str | None) -> Scenario:
    """`materialize`, with values no other run used against `target` (None: a fresh
    target of this run's own, nothing to avoid). Listed pairs are the scenario's own values
    and are kept as written."""
    if target is None or scenario.generate is None:
        return materialize(scenario, seed)
    avoid = [text for text, *_ in claims_of_others(target, run_id)]
    for _ in range(_ATTEMPTS):
        result = materialize(scenario, seed, avoid)
        taken = claim(target, run_id, "value", (
            (v.text, f"{v.alias} (pair {v.pair})", v.domain)
            for v in pair_values(result.pairs)))
        if not taken:
            return result
        avoid = [*avoid, *taken]
    raise MemlifeError(f"could not claim canary values against {target} in {_ATTEMPTS} "
                       "attempts: other runs keep claiming the same ones")

