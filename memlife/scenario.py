"""Scenario files: pairs of tenants, fact domains, templates and a timeline. Pure.

A scenario is validated in two passes: pydantic checks the shape (unknown fields, types,
durations), then `semantic_problems` checks what only the whole file can tell: every
domain has templates in each tenant's language, the two tenants of a pair hold mutually
exclusive values after normalization (otherwise a leak could not be seen), steps name
known domains. Every problem is reported as `file: field.path: reason`.
"""

from __future__ import annotations

import hashlib
import json
import string
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from memlife.durations import format_duration, parse_duration
from memlife.errors import Problem
from memlife.scoring import normalize
from memlife.validation import parse_document
from memlife.yamlio import load_yaml_file


def _to_timedelta(value: Any) -> timedelta:
    if isinstance(value, timedelta):
        if value <= timedelta(0):
            raise ValueError("duration must be greater than zero")
        return value
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(
            f"expected a duration string such as '150ms', '6h' or '3d', got {value!r}"
        )
    return parse_duration(value)


Duration = Annotated[
    timedelta,
    BeforeValidator(_to_timedelta),
    PlainSerializer(format_duration, return_type=str),
]

Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$")]
Role = Literal["a", "b"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Templates(_Strict):
    """Message templates of one domain in one language. `question` is the evaluation set
    (what runs ask and report on); `question_dev` is the development set, kept apart so that
    paraphrases tuned on it cannot leak into evaluation. `update` supersedes a value
    (defaults to `statement`)."""

    statement: list[str] = Field(min_length=1)
    question: list[str] = Field(min_length=1)
    question_dev: list[str] = Field(default_factory=list)
    update: list[str] = Field(default_factory=list)

    def updates(self) -> list[str]:
        return self.update or self.statement


CanaryKind = Literal["employer", "address", "person", "pet", "school"]


class Domain(_Strict):
    description: str = ""
    # How to generate run-unique values for this domain (see memlife.canaries).
    canary: CanaryKind | None = None
    templates: dict[str, Templates] = Field(min_length=1)


class FactValue(_Strict):
    """A fact's value; `any_of` lists accepted renderings when one of several will do;
    `updates` are the values later `update` steps supersede it with, in order."""

    value: str = Field(min_length=1)
    any_of: list[str] = Field(default_factory=list)
    updates: list[str] = Field(default_factory=list)

    def renderings(self) -> list[str]:
        return [self.value, *self.any_of]

    def all_texts(self) -> list[str]:
        return [self.value, *self.any_of, *self.updates]


def _fact_value(value: Any) -> Any:
    return {"value": value} if isinstance(value, str) else value


class Tenant(_Strict):
    alias: Slug
    name: str = ""
    language: str | None = None
    facts: dict[str, Annotated[FactValue, BeforeValidator(_fact_value)]] = Field(min_length=1)


class Pair(_Strict):
    a: Tenant
    b: Tenant

    def tenant(self, role: Role) -> Tenant:
        return self.a if role == "a" else self.b


Domains = Literal["all"] | list[str]


class WriteStep(_Strict):
    step: Literal["write"]
    label: str = ""
    tenants: list[Role] = Field(default_factory=lambda: ["a", "b"], min_length=1)
    domains: Domains = "all"


class WaitStep(_Strict):
    step: Literal["wait"]
    label: str = ""
    duration: Duration


class UpdateStep(_Strict):
    """Supersede a value through the conversation, with the fact's next `updates` value."""

    step: Literal["update"]
    label: str = ""
    tenants: list[Role] = Field(default_factory=lambda: ["a", "b"], min_length=1)
    domains: list[str] = Field(min_length=1)


class ProbeStep(_Strict):
    """Ask questions; what each answer must and must not hold is derived from state:
    recall (own current value required; partner's and own superseded/deleted forbidden),
    stale (recall limited to updated domains), abstain (domains only the partner stated:
    the partner's value forbidden, an abstention phrase required when the scenario has one).
    """

    step: Literal["probe"]
    label: str = ""
    kind: Literal["recall", "stale", "abstain"] = "recall"
    tenants: list[Role] = Field(default_factory=lambda: ["a", "b"], min_length=1)
    domains: Domains = "all"


class DeleteStep(_Strict):
    """Request deletion of the whole tenant or, with `domains`, forget single facts (the
    target file's `forget` operation)."""

    step: Literal["delete"]
    label: str = ""
    tenants: list[Role] = Field(default_factory=lambda: ["a"], min_length=1)
    domains: list[str] | None = Field(default=None, min_length=1)


class AwaitDeletionStep(_Strict):
    """Poll deletion status until done or the deadline (the deletion SLA) passes."""

    step: Literal["await-deletion"]
    label: str = ""
    tenants: list[Role] = Field(default_factory=lambda: ["a"], min_length=1)
    deadline: Duration | None = None  # default: the scenario's deletion_sla
    poll: Duration = timedelta(minutes=15)


class InspectStep(_Strict):
    """Read every store the target declares (or those named in `stores`), by tenant scope
    and by needle search."""

    step: Literal["inspect"]
    label: str = ""
    tenants: list[Role] = Field(default_factory=lambda: ["a", "b"], min_length=1)
    stores: list[str] | None = Field(default=None, min_length=1)


class RegisterStep(_Strict):
    """Register the tenant's phone again (after deletion: a fresh identity, same phone)."""

    step: Literal["register"]
    label: str = ""
    tenants: list[Role] = Field(default_factory=lambda: ["a"], min_length=1)


Step = Annotated[
    WriteStep | UpdateStep | WaitStep | ProbeStep | DeleteStep | AwaitDeletionStep
    | InspectStep | RegisterStep,
    Field(discriminator="step"),
]


class PairGeneration(_Strict):
    """Generate `count` pairs whose facts are canaries for every domain with a generator."""

    count: int = Field(ge=1, le=20_000)
    alias_prefix: Slug = "t"
    language: str | None = None


def _non_negative_duration(value: Any) -> timedelta:
    if value in ("0", "0s", 0):
        return timedelta(0)
    return _to_timedelta(value)


GraceDuration = Annotated[
    timedelta,
    BeforeValidator(_non_negative_duration),
    PlainSerializer(lambda v: format_duration(v), return_type=str),
]


class Scenario(_Strict):
    name: Slug
    description: str = ""
    language: str = "es"
    latency_budget: Duration = timedelta(milliseconds=700)
    # After an update, how long the old value may still be served (U1's grace period).
    update_grace: GraceDuration = timedelta(0)
    # The deletion SLA: await-deletion fails when deletion is not confirmed by then.
    deletion_sla: Duration = timedelta(hours=24)
    # Phrases an abstaining answer contains, per language (abstain probes require one).
    abstain_phrases: dict[str, list[str]] = Field(default_factory=dict)
    domains: dict[str, Domain] = Field(min_length=1)
    pairs: list[Pair] = Field(default_factory=list)
    generate: PairGeneration | None = None
    timeline: list[Step] = Field(min_length=1)
    # How many times `memlife run` repeats the scenario by default, each time with fresh
    # tenants and values (--repeat overrides): experiments want more than one.
    repetitions: int = Field(default=1, ge=1, le=100)

    def language_of(self, tenant: Tenant) -> str:
        return tenant.language or self.language

    def step_domains(self, step: WriteStep | ProbeStep | UpdateStep) -> list[str]:
        return list(self.domains) if step.domains == "all" else list(step.domains)

    def update_counts(self) -> dict[tuple[str, str], int]:
        """How many times the timeline updates each (role, domain)."""
        counts: dict[tuple[str, str], int] = {}
        for step in self.timeline:
            if isinstance(step, UpdateStep):
                for role in step.tenants:
                    for domain in step.domains:
                        counts[(role, domain)] = counts.get((role, domain), 0) + 1
        return counts

    def digest(self) -> str:
        """SHA-256 of the canonical JSON of the validated scenario."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()


def _placeholders(template: str) -> list[str]:
    try:
        return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        return [f"<malformed: {exc}>"]


def semantic_problems(scenario: Scenario, file: str) -> list[Problem]:
    """What pydantic cannot check alone; every problem names its field path."""
    problems: list[Problem] = []

    def report(path: str, reason: str) -> None:
        problems.append(Problem(file, path, reason))

    for domain_name, domain in scenario.domains.items():
        for language, templates in domain.templates.items():
            base = f"domains.{domain_name}.templates.{language}"
            for kind in ("statement", "update"):
                for index, template in enumerate(getattr(templates, kind)):
                    names = _placeholders(template)
                    if names != ["value"]:
                        report(
                            f"{base}.{kind}.{index}",
                            "must contain the placeholder {value} exactly once and no other "
                            f"placeholder (found {names or 'none'})",
                        )
            for kind in ("question", "question_dev"):
                for index, template in enumerate(getattr(templates, kind)):
                    if _placeholders(template):
                        report(f"{base}.{kind}.{index}", "a question must not contain "
                               "placeholders: it must not reveal the value")
            evaluation = {normalize(q) for q in templates.question}
            for index, template in enumerate(templates.question_dev):
                if normalize(template) in evaluation:
                    report(f"{base}.question_dev.{index}", "also in the evaluation set "
                           "`question`: dev and eval templates must not overlap")

    if not scenario.pairs and scenario.generate is None:
        report("pairs", "no pairs: list them under `pairs` or generate them with `generate`")
    if scenario.pairs and scenario.generate is not None:
        report("generate", "give either `pairs` or `generate`, not both")
    if scenario.generate is not None:
        for domain_name, domain in scenario.domains.items():
            if domain.canary is None:
                report(f"domains.{domain_name}.canary", "generated pairs need a canary "
                       "generator for every domain (employer, address, person, pet, school)")
        if problems:
            return problems
        scenario = materialize(scenario, seed="validation")

    update_counts = scenario.update_counts()
    aliases: dict[str, str] = {}
    questions_normalized = [
        (f"domains.{d}.templates.{lang}.{kind}.{i}", normalize(q))
        for d, domain in scenario.domains.items()
        for lang, templates in domain.templates.items()
        for kind in ("question", "question_dev")
        for i, q in enumerate(getattr(templates, kind))
    ]
    for pair_index, pair in enumerate(scenario.pairs):
        for role in ("a", "b"):
            tenant = pair.tenant(role)
            path = f"pairs.{pair_index}.{role}"
            if tenant.alias in aliases:
                report(f"{path}.alias", f"duplicate tenant alias {tenant.alias!r} "
                       f"(also at {aliases[tenant.alias]})")
            else:
                aliases[tenant.alias] = path
            language = scenario.language_of(tenant)
            for domain_name, fact in tenant.facts.items():
                fact_path = f"{path}.facts.{domain_name}"
                domain = scenario.domains.get(domain_name)
                if domain is None:
                    report(fact_path, f"unknown domain {domain_name!r}; declared domains: "
                           f"{', '.join(scenario.domains)}")
                    continue
                if language not in domain.templates:
                    report(fact_path, f"domain {domain_name!r} has no templates in language "
                           f"{language!r} (has: {', '.join(domain.templates)})")
                needed = update_counts.get((role, domain_name), 0)
                if needed > len(fact.updates):
                    report(f"{fact_path}.updates", f"the timeline updates {domain_name} "
                           f"{needed} time(s) but {len(fact.updates)} new value(s) are given")
                texts = fact.all_texts()
                for i, first in enumerate(texts):
                    for second in texts[i + 1:]:
                        if _overlap(first, second):
                            report(fact_path, f"{first!r} and {second!r} overlap after "
                                   "normalization: an old value could not be told from the new")
                for rendering in texts:
                    if not normalize(rendering):
                        report(fact_path, "value is empty after normalization")
                    for question_path, question in questions_normalized:
                        if normalize(rendering) and normalize(rendering) in question:
                            report(fact_path, f"value {rendering!r} appears in the question "
                                   f"at {question_path}; an echo would count as recall")
        if set(pair.a.facts) != set(pair.b.facts):
            report(f"pairs.{pair_index}", "both tenants of a pair must hold the same domains "
                   f"(a: {sorted(pair.a.facts)}, b: {sorted(pair.b.facts)})")
        problems.extend(_exclusivity_problems(pair, pair_index, file))

    for step_index, step in enumerate(scenario.timeline):
        if (isinstance(step, WriteStep | ProbeStep | UpdateStep | DeleteStep)
                and step.domains not in ("all", None)):
            for domain_index, domain_name in enumerate(step.domains):
                if domain_name not in scenario.domains:
                    report(f"timeline.{step_index}.domains.{domain_index}",
                           f"unknown domain {domain_name!r}")
    if not any(isinstance(step, ProbeStep | InspectStep) for step in scenario.timeline):
        report("timeline", "has no probe or inspect step: nothing would be checked")
    if not problems and scenario.pairs:
        from memlife.lifecycle import timeline_problems

        problems.extend(Problem(file, path, reason)
                        for path, reason in timeline_problems(scenario))
    return problems


def _overlap(first: str, second: str) -> bool:
    a, b = normalize(first), normalize(second)
    return bool(a and b and (a in b or b in a))


def _exclusivity_problems(pair: Pair, pair_index: int, file: str) -> list[Problem]:
    """Every value of A (current, accepted renderings, updates) against every value of B:
    neither may contain the other.

    Substring scoring would otherwise count B's own answer as a leak of A's value (or miss
    a real leak): the pair could not tell recall from leakage.
    """
    problems: list[Problem] = []
    for domain_a, fact_a in pair.a.facts.items():
        for domain_b, fact_b in pair.b.facts.items():
            for text_a in fact_a.all_texts():
                for text_b in fact_b.all_texts():
                    if _overlap(text_a, text_b):
                        problems.append(Problem(
                            file,
                            f"pairs.{pair_index}.b.facts.{domain_b}",
                            f"value {text_b!r} is not mutually exclusive with tenant a's "
                            f"{domain_a} value {text_a!r} after normalization "
                            f"({normalize(text_b)!r} vs {normalize(text_a)!r}); a leak "
                            "could not be seen",
                        ))
    return problems


def materialize(scenario: Scenario, seed: str) -> Scenario:
    """The scenario with concrete pairs: generated pairs get canary values (and as many
    update values as the timeline needs) drawn from `seed`; listed pairs are kept."""
    if scenario.generate is None:
        return scenario
    from memlife.canaries import CanaryPool

    questions = [q for domain in scenario.domains.values()
                 for templates in domain.templates.values()
                 for q in (*templates.question, *templates.question_dev)]
    pool = CanaryPool(seed, avoid=questions)
    updates = scenario.update_counts()
    generation = scenario.generate
    pairs = []
    for index in range(generation.count):
        tenants = {}
        for role in ("a", "b"):
            facts = {}
            for name, domain in scenario.domains.items():
                assert domain.canary is not None
                value = pool.draw(domain.canary)
                later = [pool.draw(domain.canary) for _ in range(updates.get((role, name), 0))]
                facts[name] = FactValue(value=value, updates=later)
            tenants[role] = Tenant(alias=f"{generation.alias_prefix}{index:03d}{role}",
                                   language=generation.language, facts=facts)
        pairs.append(Pair(a=tenants["a"], b=tenants["b"]))
    return scenario.model_copy(update={"pairs": pairs, "generate": None})


def parse_scenario(data: Any, file: str = "<scenario>") -> Scenario:
    """Validate already-parsed YAML; raise InputError listing every problem."""
    return parse_document(Scenario, data, file, semantic_problems)


def load_scenario(path: str | Path) -> Scenario:
    return parse_scenario(load_yaml_file(path), str(path))
