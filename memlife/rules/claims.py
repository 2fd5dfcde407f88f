"""When a run's claims on a long-lived target may be retired (recorder/claims.py keeps
them). Pure.

A claim keeps other runs from using a value or a phone that may still be on the target:
found there, another run's value would read as that run's own (a recall passed by someone
else's data) or as a leak it did not cause. So a claim may go only when what it names
cannot be on the target any more, and memlife fails closed: what it cannot prove gone
stays claimed. A finished run's claims retire

- a value, when every tenant of the run that stated it had its deletion confirmed (an
  `await-deletion` that passed) and the run saw nothing of any tenant where it should not
  be (no I1, I2, I3 or I4 check failed or inconclusive): a value seen where it should not
  be may well still be there. A value of a shared space never retires (a member's deletion
  says nothing of the space's contents), nor one of a tenant that was never deleted;
- a phone, on the same terms, and only when the tenant was not registered again after its
  deletion (the phone is then a live user's again);
- a value the run claimed but never used (a draw it replaced when another run had claimed
  one of its values first), at once: it never reached the target.

A run not finished (or finished without its summary) keeps every claim: its tenants may
still be on the target, and its verdicts are not final.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from memlife.rules.scoring import normalize

# The checks whose failure (or inconclusive outcome) means a tenant's data was, or may
# have been, somewhere it should not be: a store of another tenant (I1, I2), another
# tenant's answer (I3), or after its deletion (I4, I4-physical).
CONTAINMENT_INVARIANTS = ("I1", "I2", "I3", "I4")


class TenantTrail(NamedTuple):
    """What a finished run recorded of one tenant, as far as its claims are concerned."""

    alias: str
    deletion_confirmed_step: int | None  # the last step whose deletion-status check passed
    registered_steps: tuple[int, ...] = ()  # every step that registered it (-1: the first)

    @property
    def gone(self) -> bool:
        return self.deletion_confirmed_step is not None

    @property
    def registered_again(self) -> bool:
        return self.gone and any(
            step > (self.deletion_confirmed_step or 0) for step in self.registered_steps
        )


class Retirement(NamedTuple):
    """Which of a finished run's claims retire: value texts (normalized) and the aliases
    whose phones do."""

    values: frozenset[str]
    phones: frozenset[str]
    unused: frozenset[str] = frozenset()  # of `values`: claimed, never stated

    @property
    def empty(self) -> bool:
        return not self.values and not self.phones


def _less_gone(one: TenantTrail, other: TenantTrail) -> TenantTrail:
    if not one.gone or (one.registered_again and other.gone):
        return one
    return other


def contained(by_invariant: Mapping[str, Mapping[str, int]]) -> bool:
    """True when no containment check of the run failed or was inconclusive (its summary's
    `by_invariant` tallies)."""
    return not any(
        tally.get("failed", 0) or tally.get("inconclusive", 0)
        for name, tally in by_invariant.items()
        if name.startswith(CONTAINMENT_INVARIANTS)
    )


def retirement(
    tenants: Iterable[TenantTrail],
    values: Iterable[tuple[str, str]],
    claimed_values: Iterable[str],
    by_invariant: Mapping[str, Mapping[str, int]],
) -> Retirement:
    """The claims of a finished run that retire (module doc). `values` are the run's
    (owner alias, text) as recorded (a space's owner is not a tenant's alias);
    `claimed_values` the texts it claimed (normalized)."""
    trails: dict[str, TenantTrail] = {}
    for tenant in tenants:  # one alias twice (a listed scenario's): the one less gone
        other = trails.get(tenant.alias)
        trails[tenant.alias] = tenant if other is None else _less_gone(other, tenant)
    holders: dict[str, set[str]] = {}
    for owner, text in values:
        holders.setdefault(normalize(text), set()).add(owner)
    clean = contained(by_invariant)
    retired_values: set[str] = set()
    unused: set[str] = set()
    for text in claimed_values:
        owners = holders.get(text)
        if owners is None:  # claimed, then replaced by another draw: never stated
            unused.add(text)
        elif clean and all(owner in trails and trails[owner].gone for owner in owners):
            retired_values.add(text)
    phones = frozenset(
        alias
        for alias, trail in trails.items()
        if clean and trail.gone and not trail.registered_again
    )
    return Retirement(frozenset(retired_values | unused), phones, frozenset(unused))
