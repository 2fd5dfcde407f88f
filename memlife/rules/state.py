"""A pair's state as memlife drove it: what each tenant has stated, superseded, forgotten
and had deleted. Every expectation of a probe or an inspection derives from it. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from memlife.rules.scenario import FactValue, Pair, Role
from memlife.rules.verdicts import (
    CaseVerdict,
    ForbiddenValue,
    InspectCase,
    InspectSummary,
    Needle,
    ProbeCase,
)


def other(role: Role) -> Role:
    return "b" if role == "a" else "a"


def pick(templates: list[str], index: int) -> str:
    """Deterministic rotation through paraphrases."""
    return templates[index % len(templates)]


@dataclass
class TenantState:
    """What one tenant has stated, superseded and had deleted, as memlife drove it."""

    alias: str
    facts: dict[str, FactValue]
    current: dict[str, list[str]] = field(default_factory=dict)  # domain -> renderings
    superseded: dict[str, list[tuple[str, datetime]]] = field(default_factory=dict)
    updates_done: dict[str, int] = field(default_factory=dict)
    unconfirmed: set[str] = field(default_factory=set)
    deleted: bool = False
    registered: bool = True
    deleted_values: list[tuple[str, str]] = field(default_factory=list)
    forgotten: list[tuple[str, str]] = field(default_factory=list)  # single facts erased
    forgotten_at: datetime | None = None  # when the last of them was erased
    identities: list[str] = field(default_factory=list)
    deleted_identities: list[str] = field(default_factory=list)
    deletion_id: str | None = None
    deletion_requested_at: datetime | None = None
    baseline: dict[str, list[str]] = field(default_factory=dict)
    clean_after_deletion: set[str] = field(default_factory=set)
    answers_clean_after_deletion: bool = False
    # Domains this tenant was last answered correctly about before its partner's deletion:
    # only those can show that the deletion took something (D2).
    recalled_before_partner_deletion: set[str] = field(default_factory=set)
    # Values this tenant stated to everyone (poison turns): forbidden to every other tenant.
    poisoned: set[str] = field(default_factory=set)

    def stated_values(self) -> list[tuple[str, str, str]]:
        """(domain, text, origin) of every value this tenant stated and still owns."""
        found = [(d, text, "current") for d, texts in self.current.items() for text in texts]
        found += [
            (d, text, "superseded") for d, items in self.superseded.items() for text, _ in items
        ]
        return found


@dataclass
class SpaceState:
    """A shared space as memlife drove it: who is in it, who left when, what was stated."""

    name: str
    facts: dict[str, FactValue]
    space_id: str | None = None
    members: set[Role] = field(default_factory=set)
    left_at: dict[Role, datetime] = field(default_factory=dict)
    stated: set[str] = field(default_factory=set)
    deleted: bool = False

    def values(self) -> list[tuple[str, str]]:
        """(domain, text) of every value stated into the space."""
        return [(d, text) for d in sorted(self.stated) for text in self.facts[d].renderings()]


class PairState:
    """What each tenant of a pair has stated so far; every expectation derives from it."""

    def __init__(self, pair: Pair):
        self.pair = pair
        self.tenants: dict[Role, TenantState] = {
            role: TenantState(alias=pair.tenant(role).alias, facts=dict(pair.tenant(role).facts))
            for role in ("a", "b")
        }
        self.spaces: dict[str, SpaceState] = {
            name: SpaceState(name=name, facts=dict(facts)) for name, facts in pair.spaces.items()
        }

    # -- transitions -----------------------------------------------------------------------

    def record_registration(self, role: Role, user_id: str | None) -> None:
        tenant = self.tenants[role]
        if user_id is not None:
            tenant.identities.append(user_id)
            tenant.registered = True

    def record_write(self, role: Role, domain: str, confirmed: bool = True) -> None:
        """A write whose request failed may or may not have landed: cases that depend on it
        are inconclusive rather than failed or passed."""
        tenant = self.tenants[role]
        tenant.current[domain] = tenant.facts[domain].renderings()
        (tenant.unconfirmed.discard if confirmed else tenant.unconfirmed.add)(domain)

    # -- shared spaces -----------------------------------------------------------------------

    def record_space(
        self, name: str, action: str, roles: list[Role], now: datetime, space_id: str | None = None
    ) -> None:
        """A space created (the tenants listed become its members), joined, left or
        deleted. Deleting it erases its facts: from then on they are every tenant's to be
        rid of, as a forgotten fact is."""
        space = self.spaces[name]
        if action == "create":
            space.space_id = space_id or space.space_id
            space.members = set(roles)
            space.deleted = False
        elif action == "join":
            space.members.update(roles)
            for role in roles:
                space.left_at.pop(role, None)
        elif action == "leave":
            for role in roles:
                space.members.discard(role)
                space.left_at[role] = now
        else:
            erased = space.values()
            space.deleted, space.members = True, set()
            for tenant in self.tenants.values():
                if not tenant.deleted:
                    tenant.forgotten += [
                        d_text for d_text in erased if d_text not in tenant.forgotten
                    ]
                    tenant.forgotten_at = now

    def record_space_write(self, name: str, domain: str) -> None:
        self.spaces[name].stated.add(domain)

    def _space_forbidden(self, role: Role, now: datetime, grace: timedelta) -> list[ForbiddenValue]:
        """S1: the facts of every live space this tenant is not a member of (a former
        member once its leave is past the grace)."""
        found = []
        for space in self.spaces.values():
            if space.deleted or role in space.members:
                continue
            left = space.left_at.get(role)
            if left is not None and left + grace > now:
                continue  # within the grace: neither required nor forbidden
            found += [
                ForbiddenValue(text=text, origin="space", domain=d, owner=f"space {space.name}")
                for d, text in space.values()
            ]
        return found

    def space_case(
        self,
        case_id: str,
        role: Role,
        space: str,
        domain: str,
        question: str,
        now: datetime,
        grace: timedelta,
    ) -> ProbeCase:
        """A question asked inside a space: a member recalls its fact (and, with its
        partner deleted, still has it if it had it before: S2); anyone else gets none of the
        space's facts."""
        state = self.spaces[space]
        tenant, partner = self.tenants[role], self.tenants[other(role)]
        member = role in state.members and not state.deleted
        renderings = state.facts[domain].renderings() if member else []
        forbidden = self._partner_forbidden(role) + self._space_forbidden(role, now, grace)
        forbidden += [
            ForbiddenValue(text=text, origin="deleted", domain=d, owner=tenant.alias)
            for d, text in tenant.forgotten
        ]
        return ProbeCase(
            case_id=case_id,
            kind="recall",
            role=role,
            tenant_alias=tenant.alias,
            domain=domain,
            question=question,
            required=renderings if len(renderings) == 1 else [],
            any_of=renderings if len(renderings) > 1 else [],
            forbidden=forbidden,
            # As D2: the deletion is blamed only for a fact the member recalled before it (a
            # space's domains are its own, apart from the tenants').
            space_survives=(
                member and partner.deleted and domain in tenant.recalled_before_partner_deletion
            ),
            blocked_by=self._blocked(role, None),
        )

    def record_poison(self, role: Role, domain: str) -> None:
        """The tenant stated this fact to everyone: it is the tenant's (recalled as usual)
        and, found with anyone else, poisoned."""
        tenant = self.tenants[role]
        tenant.poisoned.update(tenant.facts[domain].renderings())

    def next_update_value(self, role: Role, domain: str) -> str:
        tenant = self.tenants[role]
        return tenant.facts[domain].updates[tenant.updates_done.get(domain, 0)]

    def record_update(self, role: Role, domain: str, now: datetime, confirmed: bool = True) -> None:
        tenant = self.tenants[role]
        new_value = self.next_update_value(role, domain)
        tenant.updates_done[domain] = tenant.updates_done.get(domain, 0) + 1
        old = tenant.current.get(domain, [])
        tenant.superseded.setdefault(domain, []).extend((text, now) for text in old)
        tenant.current[domain] = [new_value]
        (tenant.unconfirmed.discard if confirmed else tenant.unconfirmed.add)(domain)

    def record_forget(self, role: Role, domain: str, now: datetime | None = None) -> None:
        """One fact erased: its values (current and superseded) must be gone everywhere
        while the tenant lives on."""
        tenant = self.tenants[role]
        tenant.forgotten_at = now
        texts = tenant.current.pop(domain, []) + [t for t, _ in tenant.superseded.pop(domain, [])]
        tenant.forgotten += [(domain, text) for text in texts]
        tenant.unconfirmed.discard(domain)

    def record_deletion(self, role: Role, now: datetime, deletion_id: str | None = None) -> None:
        tenant = self.tenants[role]
        tenant.deleted_values = [(d, text) for d, text, _ in tenant.stated_values()]
        tenant.deleted_values += tenant.forgotten
        tenant.deleted_identities = list(tenant.identities)
        tenant.current, tenant.superseded = {}, {}
        tenant.deleted, tenant.registered = True, False
        tenant.deletion_id, tenant.deletion_requested_at = deletion_id, now

    def absorb_probe_verdicts(self, role: Role, verdicts: list[CaseVerdict]) -> None:
        """After a deletion, answers seen free of the deleted values arm resurrection;
        before the partner's deletion, correct answers set what D2 expects to survive."""
        tenant = self.tenants[role]
        if not self.tenants[other(role)].deleted and not tenant.deleted:
            # A domain counts as recalled only when every question about it was answered:
            # a question the target could not answer before the deletion would otherwise
            # be blamed on the deletion after it.
            recalled: dict[str, bool] = {}
            for verdict in verdicts:
                recall = [c.outcome for c in verdict.checks if c.invariant == "recall"]
                if recall:
                    recalled[verdict.domain] = recalled.get(verdict.domain, True) and recall == [
                        "pass"
                    ]
            for domain, answered in recalled.items():
                if answered:
                    tenant.recalled_before_partner_deletion.add(domain)
                else:
                    tenant.recalled_before_partner_deletion.discard(domain)
        checks = [c for v in verdicts for c in v.checks if c.invariant == "I4"]
        if tenant.deleted and checks and all(c.outcome == "pass" for c in checks):
            tenant.answers_clean_after_deletion = True

    def absorb_inspection(self, role: Role, summary: InspectSummary) -> None:
        tenant = self.tenants[role]
        partner = self.tenants[other(role)]
        if not tenant.deleted and not partner.deleted:
            tenant.baseline = {
                store: list(values)
                for store, values in summary.present.items()
                if store not in summary.expiring
            }
        if tenant.deleted or tenant.forgotten:
            tenant.clean_after_deletion.update(summary.clean)

    # -- expectations ----------------------------------------------------------------------

    def _partner_forbidden(self, role: Role) -> list[ForbiddenValue]:
        partner = self.tenants[other(role)]
        values = partner.stated_values() + [(d, t, "deleted") for d, t in partner.deleted_values]
        values += [(d, t, "deleted") for d, t in partner.forgotten if not partner.deleted]
        return [
            ForbiddenValue(
                text=text,
                origin="partner",
                domain=domain,
                owner=partner.alias,
                poisoned=text in partner.poisoned,
            )
            for domain, text, _ in values
        ]

    def _blocked(self, role: Role, domain: str | None) -> str | None:
        own, partner = self.tenants[role], self.tenants[other(role)]
        reasons = [f"{own.alias}'s {domain} write failed"] if domain in own.unconfirmed else []
        reasons += [f"{partner.alias}'s {d} write failed" for d in sorted(partner.unconfirmed)]
        return "; ".join(reasons) or None

    def probe_case(
        self,
        case_id: str,
        kind: str,
        role: Role,
        domain: str,
        question: str,
        now: datetime,
        grace: timedelta,
        abstain_phrases: list[str],
        space_grace: timedelta = timedelta(0),
    ) -> ProbeCase:
        tenant = self.tenants[role]
        partner = self.tenants[other(role)]
        forbidden = self._partner_forbidden(role) + self._space_forbidden(role, now, space_grace)
        required: list[str] = []
        any_of: list[str] = []
        if kind == "abstain":
            any_of = list(abstain_phrases)
        elif tenant.deleted:
            forbidden += [
                ForbiddenValue(text=text, origin="deleted", domain=d, owner=tenant.alias)
                for d, text in tenant.deleted_values
            ]
        else:
            renderings = tenant.current.get(domain, [])
            if len(renderings) > 1:
                any_of = renderings
            else:
                required = renderings
            # A stale value fails the probe of its own fact, once: an answer about another
            # fact that mentions it (a search serves every memory it finds) is no second
            # failed update (docs/design.md, "Retrieval answers and refusals").
            forbidden += [
                ForbiddenValue(text=text, origin="superseded", domain=d, owner=tenant.alias)
                for d, items in tenant.superseded.items()
                if domain in (d, "*")
                for text, when in items
                if when + grace <= now
            ]
            forbidden += [
                ForbiddenValue(text=text, origin="deleted", domain=d, owner=tenant.alias)
                for d, text in tenant.forgotten
            ]
        if kind in ("spoof", "extract"):  # adversarial: nothing asked of the tenant's own
            required, any_of = [], []
        return ProbeCase(
            case_id=case_id,
            kind=kind,
            role=role,
            tenant_alias=tenant.alias,
            domain=domain,
            question=question,
            required=required,
            any_of=any_of,
            forbidden=forbidden,
            scoped_deletion=(
                partner.deleted
                and not tenant.deleted
                and bool(required or any_of)
                and domain in tenant.recalled_before_partner_deletion
            ),
            resurrection=tenant.answers_clean_after_deletion,
            blocked_by=self._blocked(role, domain),
        )

    def probe_domains(self, kind: str, role: Role, domains: list[str]) -> list[str]:
        """Which of `domains` a probe of this kind asks this tenant about."""
        tenant, partner = self.tenants[role], self.tenants[other(role)]
        if kind == "abstain":
            partner_domains = set(partner.current) | set(partner.superseded)
            return [
                d
                for d in domains
                if d in partner_domains and d not in tenant.current and not tenant.deleted
            ]
        if kind == "stale":
            return [d for d in domains if d in tenant.superseded and not tenant.deleted]
        if kind == "spoof":  # what the partner stated is what a spoofer is after
            stated = {d for d, _, _ in partner.stated_values()} | {
                d for d, _ in partner.deleted_values + partner.forgotten
            }
            return [d for d in domains if d in stated]
        if tenant.deleted:
            stated = {d for d, _ in tenant.deleted_values}
            return [d for d in domains if d in stated]
        forgotten = {d for d, _ in tenant.forgotten}
        return [d for d in domains if d in tenant.current or d in forgotten]

    def inspect_case(
        self,
        case_id: str,
        role: Role,
        now: datetime,
        grace: timedelta,
        space_grace: timedelta = timedelta(0),
    ) -> InspectCase:
        tenant = self.tenants[role]
        partner = self.tenants[other(role)]
        if tenant.deleted:
            needles = [
                Needle(text=text, domain=d, origin="deleted") for d, text in tenant.deleted_values
            ]
        else:
            needles = [
                Needle(text=text, domain=d, origin=origin)
                for d, text, origin in tenant.stated_values()
            ]
            needles += [
                Needle(text=text, domain=d, origin="deleted") for d, text in tenant.forgotten
            ]
        stale = [
            text
            for items in tenant.superseded.values()
            for text, when in items
            if when + grace <= now
        ]
        erased_at = tenant.deletion_requested_at if tenant.deleted else tenant.forgotten_at
        expected = tenant.baseline if partner.deleted and not tenant.deleted else {}
        # Only values still current are expected to survive the partner's deletion.
        current = {text for texts in tenant.current.values() for text in texts}
        expected = {
            store: [v for v in values if v in current] for store, values in expected.items()
        }
        return InspectCase(
            case_id=case_id,
            role=role,
            tenant_alias=tenant.alias,
            deleted=tenant.deleted,
            # A deleted tenant is looked for under the identities it had when deleted; a
            # re-registered identity is a new tenant as far as the target knows.
            identities=list(tenant.deleted_identities if tenant.deleted else tenant.identities),
            needles=needles,
            partner_values=(
                self._partner_forbidden(role) + self._space_forbidden(role, now, space_grace)
            ),
            expected_present={s: v for s, v in expected.items() if v},
            clean_before=sorted(tenant.clean_after_deletion),
            stale_after_grace=stale,
            erased_for=None if erased_at is None else max(timedelta(0), now - erased_at),
            shared=(
                [text for fact in self.pair.a.facts.values() for text in fact.all_texts()]
                if role == "a" and self.pair.twin is not None
                else []
            ),
        )
