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

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
)

from memlife.durations import format_duration, parse_duration
from memlife.errors import InputError, Problem
from memlife.scoring import normalize
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
    """Message templates of one domain in one language."""

    statement: list[str] = Field(min_length=1)
    question: list[str] = Field(min_length=1)
    update: list[str] = Field(default_factory=list)


class Domain(_Strict):
    description: str = ""
    templates: dict[str, Templates] = Field(min_length=1)


class FactValue(_Strict):
    """A fact's value; `any_of` lists accepted renderings when one of several will do."""

    value: str = Field(min_length=1)
    any_of: list[str] = Field(default_factory=list)

    def renderings(self) -> list[str]:
        return [self.value, *self.any_of]


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


class ProbeStep(_Strict):
    step: Literal["probe"]
    label: str = ""
    kind: Literal["recall"] = "recall"
    tenants: list[Role] = Field(default_factory=lambda: ["a", "b"], min_length=1)
    domains: Domains = "all"


Step = Annotated[WriteStep | WaitStep | ProbeStep, Field(discriminator="step")]


class Scenario(_Strict):
    name: Slug
    description: str = ""
    language: str = "es"
    latency_budget: Duration = timedelta(milliseconds=700)
    domains: dict[str, Domain] = Field(min_length=1)
    pairs: list[Pair] = Field(min_length=1)
    timeline: list[Step] = Field(min_length=1)

    def language_of(self, tenant: Tenant) -> str:
        return tenant.language or self.language

    def step_domains(self, step: WriteStep | ProbeStep) -> list[str]:
        return list(self.domains) if step.domains == "all" else list(step.domains)

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
            for index, template in enumerate(templates.question):
                if _placeholders(template):
                    report(
                        f"{base}.question.{index}",
                        "a question must not contain placeholders: it must not reveal the value",
                    )

    aliases: dict[str, str] = {}
    questions_normalized = [
        (f"domains.{d}.templates.{lang}.question.{i}", normalize(q))
        for d, domain in scenario.domains.items()
        for lang, templates in domain.templates.items()
        for i, q in enumerate(templates.question)
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
                for rendering in fact.renderings():
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
        if isinstance(step, WriteStep | ProbeStep) and step.domains != "all":
            for domain_index, domain_name in enumerate(step.domains):
                if domain_name not in scenario.domains:
                    report(f"timeline.{step_index}.domains.{domain_index}",
                           f"unknown domain {domain_name!r}")
    if not any(isinstance(step, ProbeStep) for step in scenario.timeline):
        report("timeline", "has no probe step: nothing would be checked")
    return problems


def _exclusivity_problems(pair: Pair, pair_index: int, file: str) -> list[Problem]:
    """Every value of A against every value of B: neither may contain the other.

    Substring scoring would otherwise count B's own answer as a leak of A's value (or miss
    a real leak): the pair could not tell recall from leakage.
    """
    problems: list[Problem] = []
    for domain_a, fact_a in pair.a.facts.items():
        for domain_b, fact_b in pair.b.facts.items():
            for text_a in fact_a.renderings():
                for text_b in fact_b.renderings():
                    norm_a, norm_b = normalize(text_a), normalize(text_b)
                    if norm_a and norm_b and (norm_a in norm_b or norm_b in norm_a):
                        problems.append(Problem(
                            file,
                            f"pairs.{pair_index}.b.facts.{domain_b}",
                            f"value {text_b!r} is not mutually exclusive with tenant a's "
                            f"{domain_a} value {text_a!r} after normalization "
                            f"({norm_b!r} vs {norm_a!r}); a leak could not be seen",
                        ))
    return problems


def _pydantic_problems(error: ValidationError, file: str) -> list[Problem]:
    problems = []
    for item in error.errors(include_url=False):
        # Drop union-member tags pydantic inserts (e.g. 'function-before[...]'), keep the path.
        path = ".".join(
            str(part) for part in item["loc"]
            if not (isinstance(part, str) and ("[" in part or part in {"write", "wait", "probe"}))
        )
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field"
        elif item["type"] == "union_tag_invalid":
            message = f"unknown step kind; expected one of: write, wait, probe ({message})"
        elif message.startswith("Value error, "):
            message = message.removeprefix("Value error, ")
        problems.append(Problem(file, path, message))
    return problems


def parse_scenario(data: Any, file: str = "<scenario>") -> Scenario:
    """Validate already-parsed YAML; raise InputError listing every problem."""
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise InputError([Problem(file, "", f"expected a mapping at the top level, got {kind}")])
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise InputError(_pydantic_problems(exc, file)) from None
    problems = semantic_problems(scenario, file)
    if problems:
        raise InputError(problems)
    return scenario


def load_scenario(path: str | Path) -> Scenario:
    return parse_scenario(load_yaml_file(path), str(path))
