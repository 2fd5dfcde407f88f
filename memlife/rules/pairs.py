"""Pairs made concrete, in one place: generated pairs get their canary values from a seed
(`materialize`), and every pair's two tenants their run-unique synthetic phones
(`pair_tenants`). The CLI, a scheduled run and the recorder all go through here. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

from memlife.rules.canaries import CanaryPool
from memlife.rules.models import Frozen
from memlife.rules.phones import synthetic_phone
from memlife.rules.scenario import FactValue, Pair, Role, Scenario, Tenant
from memlife.rules.scoring import normalize


class TenantIdentity(Frozen):
    """Who a tenant is to the target: alias, phone and language, and the user id the
    target gave it when it registered."""

    role: Role
    alias: str
    phone: str
    language: str
    user_id: str | None = None


def materialize(scenario: Scenario, seed: str, avoid: Iterable[str] = ()) -> Scenario:
    """The scenario with concrete pairs: generated pairs get canary values (and as many
    update values as the timeline needs) drawn from `seed`, none equal to, inside or holding
    a text of `avoid` (values other runs used against the same target); listed pairs are
    kept."""
    if scenario.generate is None:
        return scenario
    return scenario.model_copy(
        update={"pairs": list(generated_pairs(scenario, seed, avoid)), "generate": None}
    )


def vary_listed(scenario: Scenario, seed: str, avoid: Iterable[str] = ()) -> Scenario:
    """The listed pairs with each value made this run's own, for a long-lived target: a
    marker drawn from `seed` after it (`azul` -> `azul Quintana 412`), so that no two runs
    state the same values there, and a run's values are its seed's again when it is run
    again. Every occurrence of one text gets the same marked text (a twin states its
    original's values), a fact's renderings (`any_of`) the same marker as its value; none
    clashes with a text of `avoid`, a question, or another marked value. A fresh target of
    the run's own keeps the values as written (`materialize`)."""
    if scenario.generate is not None:
        return scenario
    questions = [
        q
        for domain in scenario.domains.values()
        for templates in domain.templates.values()
        for q in (*templates.question, *templates.question_dev)
    ]
    pool = CanaryPool(f"listed:{seed}", avoid=[*questions, *avoid])
    marked: dict[str, tuple[str, str]] = {}  # normalized text -> (marked text, marker)

    def mark(text: str, language: str) -> tuple[str, str]:
        key = normalize(text)
        if key not in marked:
            value = pool.mark(text, language)
            marked[key] = value, value[len(text) + 1 :]
        return marked[key]

    def vary(fact: FactValue, language: str) -> FactValue:
        value, marker = mark(fact.value, language)
        renderings = [f"{text} {marker}" for text in fact.any_of]
        for text in renderings:  # the fact's own: they may overlap its value
            pool.take(text)
        return fact.model_copy(
            update={
                "value": value,
                "any_of": renderings,
                "updates": [mark(text, language)[0] for text in fact.updates],
            }
        )

    pairs = []
    for pair in scenario.pairs:
        tenants = {}
        for role in ("a", "b"):
            tenant = pair.tenant(role)
            language = scenario.language_of(tenant)
            tenants[role] = tenant.model_copy(
                update={
                    "facts": {domain: vary(fact, language) for domain, fact in tenant.facts.items()}
                }
            )
        spaces = {
            space: {domain: vary(fact, scenario.language) for domain, fact in facts.items()}
            for space, facts in pair.spaces.items()
        }
        pairs.append(pair.model_copy(update={**tenants, "spaces": spaces}))
    return scenario.model_copy(update={"pairs": pairs})


def generated_pairs(scenario: Scenario, seed: str, avoid: Iterable[str] = ()) -> Iterator[Pair]:
    """`materialize`'s pairs one at a time, in order: a run of ten thousand pairs is
    written to the recorder as it is drawn, never held whole (activities/record.py)."""
    assert scenario.generate is not None
    questions = [
        q
        for domain in scenario.domains.values()
        for templates in domain.templates.values()
        for q in (*templates.question, *templates.question_dev)
    ]
    pool = CanaryPool(seed, avoid=[*questions, *avoid])
    updates = scenario.update_counts()
    generation = scenario.generate
    language = generation.language or scenario.language
    twins = min(generation.twins, generation.count)
    twinned: list[Tenant] = []  # the first pairs' tenants a, stated again by their twins
    for index in range(generation.count + twins):
        if index >= generation.count:  # a control twin: the same tenant a, a new partner
            original = twinned[index - generation.count]
            twin = index - generation.count
            tenants = {"a": original.model_copy(update={"alias": f"{original.alias}-twin"})}
        else:
            twin = generation.count + index if index < twins else None
            tenants = {}
        for role in ("a", "b"):
            if role in tenants:
                continue
            facts = {}
            for name in scenario.domains:
                value = pool.draw(_canary(scenario, name), language)
                later = [
                    pool.draw(_canary(scenario, name), language)
                    for _ in range(updates.get((role, name), 0))
                ]
                facts[name] = FactValue(value=value, updates=later)
            alias = f"{generation.alias_prefix}{index:03d}"
            alias += ("" if role == "a" else "-corp") if generation.collide else role
            tenants[role] = Tenant(alias=alias, language=generation.language, facts=facts)
        if index < twins:
            twinned.append(tenants["a"])
        spaces = {
            space: {
                d: FactValue(value=pool.draw(_canary(scenario, d), language)) for d in spec.domains
            }
            for space, spec in scenario.spaces.items()
        }
        yield Pair(
            a=tenants["a"],
            b=tenants["b"],
            collide_phones=generation.collide,
            spaces=spaces,
            twin=twin,
        )


def _canary(scenario: Scenario, domain: str) -> str:
    kind = scenario.domains[domain].canary
    assert kind is not None  # scenario_file.py refuses generated domains without one
    return kind


def pair_tenants(
    run_id: str, pair_index: int, pair: Pair, scenario: Scenario
) -> list[TenantIdentity]:
    """The pair's two tenants with their run-unique synthetic phones."""
    return [
        TenantIdentity(
            role=role,
            alias=pair.tenant(role).alias,
            phone=synthetic_phone(run_id, 2 * pair_index + offset, aligned=pair.collide_phones),
            language=scenario.language_of(pair.tenant(role)),
        )
        for offset, role in enumerate(("a", "b"))
    ]


class PairValue(NamedTuple):
    """One fact value a pair states: whose, which domain, and its place among the value
    and its updates."""

    pair: int
    role: Role
    alias: str
    domain: str
    position: int
    text: str


def pair_values(pairs: Iterable[Pair], first: int = 0) -> Iterator[PairValue]:
    """Every fact value the pairs state, updates included; a shared space's values are
    attributed to the tenant that creates it (a), named as the space's. The pairs are the
    run's from pair `first` on."""
    for index, pair in enumerate(pairs, start=first):
        for role in ("a", "b"):
            tenant = pair.tenant(role)
            for domain, fact in tenant.facts.items():
                for position, text in enumerate(fact.all_texts()):
                    yield PairValue(index, role, tenant.alias, domain, position, text)
        for space, facts in pair.spaces.items():
            for domain, fact in facts.items():
                for position, text in enumerate(fact.all_texts()):
                    yield PairValue(
                        index, "a", f"{pair.a.alias} (space {space})", domain, position, text
                    )
