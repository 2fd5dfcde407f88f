"""Reading a scenario file. Pure.

A scenario is validated in two passes: pydantic checks the shape (unknown fields, types,
durations), then `semantic_problems` checks what only the whole file can tell: every
domain has templates in each tenant's language, the two tenants of a pair hold mutually
exclusive values after normalization (otherwise a leak could not be seen), steps name
known domains, and walking the timeline finds no step that cannot work. Every problem is
reported as `file: field.path: reason`.
"""

from __future__ import annotations

import itertools
import string
from pathlib import Path
from typing import Any

from memlife.errors import Problem
from memlife.rules import adversarial
from memlife.rules.canaries import CanarySpaceExhausted
from memlife.rules.documents import load_yaml_file, parse_document
from memlife.rules.pairs import materialize
from memlife.rules.scenario import (
    DeleteStep,
    InspectStep,
    Pair,
    ProbeStep,
    Scenario,
    UpdateStep,
    WriteStep,
)
from memlife.rules.scoring import normalize
from memlife.rules.timeline import timeline_problems


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

    for language, turns in scenario.adversarial.items():
        for kind, allowed in adversarial.PLACEHOLDERS.items():
            for index, template in enumerate(getattr(turns, kind)):
                names = set(_placeholders(template))
                needed = {"spoof": {"question"}, "poison": {"statement"}}.get(kind, set())
                if names - allowed or needed - names:
                    may = ", ".join(f"{{{n}}}" for n in sorted(allowed)) or "no placeholder"
                    must = ", ".join(f"{{{n}}}" for n in sorted(needed))
                    report(
                        f"adversarial.{language}.{kind}.{index}",
                        f"may use {may}"
                        + (f" and must use {must}" if must else "")
                        + f" (found {sorted(names) or 'none'})",
                    )
    problems.extend(_space_problems(scenario, file))
    if problems:
        return problems
    colliding = {pair.collide_phones for pair in scenario.pairs}
    if len(colliding) > 1:  # aligned and unaligned phone blocks would overlap
        first = next(
            i
            for i, pair in enumerate(scenario.pairs)
            if pair.collide_phones != scenario.pairs[0].collide_phones
        )
        report(
            f"pairs.{first}.collide_phones",
            "every pair or none: a run's phones collide by pair or not at all",
        )
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
                        report(
                            f"{base}.{kind}.{index}",
                            "a question must not contain "
                            "placeholders: it must not reveal the value",
                        )
            evaluation = {normalize(q) for q in templates.question}
            for index, template in enumerate(templates.question_dev):
                if normalize(template) in evaluation:
                    report(
                        f"{base}.question_dev.{index}",
                        "also in the evaluation set "
                        "`question`: dev and eval templates must not overlap",
                    )

    if not scenario.pairs and scenario.generate is None:
        report("pairs", "no pairs: list them under `pairs` or generate them with `generate`")
    if scenario.pairs and scenario.generate is not None:
        report("generate", "give either `pairs` or `generate`, not both")
    if scenario.generate is not None:
        for domain_name, domain in scenario.domains.items():
            if domain.canary is None:
                report(
                    f"domains.{domain_name}.canary",
                    "generated pairs need a canary "
                    "generator for every domain (employer, address, person, pet, school)",
                )
        if scenario.generate.twins > scenario.generate.count:
            report(
                "generate.twins",
                f"at most generate.count ({scenario.generate.count}): "
                "each twin copies one generated pair's tenant a",
            )
        if scenario.generate.twins and scenario.generate.collide:
            report(
                "generate.twins",
                "not with collide: a twin's alias would extend its "
                "original's as colliding identities' do",
            )
        if problems:
            return problems
        try:
            scenario = materialize(scenario, seed="validation")
        except CanarySpaceExhausted as error:
            report("generate", str(error))
            return problems

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
                report(
                    f"{path}.alias",
                    f"duplicate tenant alias {tenant.alias!r} (also at {aliases[tenant.alias]})",
                )
            else:
                aliases[tenant.alias] = path
            language = scenario.language_of(tenant)
            for domain_name, fact in tenant.facts.items():
                fact_path = f"{path}.facts.{domain_name}"
                domain = scenario.domains.get(domain_name)
                if domain is None:
                    report(
                        fact_path,
                        f"unknown domain {domain_name!r}; declared domains: "
                        f"{', '.join(scenario.domains)}",
                    )
                    continue
                if language not in domain.templates:
                    report(
                        fact_path,
                        f"domain {domain_name!r} has no templates in language "
                        f"{language!r} (has: {', '.join(domain.templates)})",
                    )
                needed = update_counts.get((role, domain_name), 0)
                if needed > len(fact.updates):
                    report(
                        f"{fact_path}.updates",
                        f"the timeline updates {domain_name} "
                        f"{needed} time(s) but {len(fact.updates)} new value(s) are given",
                    )
                # Each text normalized once: generated pairs have a score of texts per
                # fact and every question is tried against each of them.
                folded = [(text, normalize(text)) for text in fact.all_texts()]
                for (first, a), (second, b) in itertools.combinations(folded, 2):
                    if _overlap(a, b):
                        report(
                            fact_path,
                            f"{first!r} and {second!r} overlap after "
                            "normalization: an old value could not be told from the new",
                        )
                for rendering, normalized in folded:
                    if not normalized:
                        report(fact_path, "value is empty after normalization")
                        continue
                    for question_path, question in questions_normalized:
                        if normalized in question:
                            report(
                                fact_path,
                                f"value {rendering!r} appears in the question "
                                f"at {question_path}; an echo would count as recall",
                            )
        if set(pair.a.facts) != set(pair.b.facts):
            report(
                f"pairs.{pair_index}",
                "both tenants of a pair must hold the same domains "
                f"(a: {sorted(pair.a.facts)}, b: {sorted(pair.b.facts)})",
            )
        problems.extend(_exclusivity_problems(pair, pair_index, file))

    for step_index, step in enumerate(scenario.timeline):
        if isinstance(
            step, WriteStep | ProbeStep | UpdateStep | DeleteStep
        ) and step.domains not in ("all", None):
            for domain_index, domain_name in enumerate(step.domains):
                if domain_name not in scenario.domains:
                    report(
                        f"timeline.{step_index}.domains.{domain_index}",
                        f"unknown domain {domain_name!r}",
                    )
    if not any(isinstance(step, ProbeStep | InspectStep) for step in scenario.timeline):
        report("timeline", "has no probe or inspect step: nothing would be checked")
    if not problems and scenario.pairs:
        problems.extend(Problem(file, path, reason) for path, reason in timeline_problems(scenario))
    return problems


def _space_problems(scenario: Scenario, file: str) -> list[Problem]:
    """Spaces named where they exist, over domains that exist, with facts for every pair."""
    problems = []
    for name, spec in scenario.spaces.items():
        for index, domain in enumerate(spec.domains):
            if domain not in scenario.domains:
                problems.append(
                    Problem(file, f"spaces.{name}.domains.{index}", f"unknown domain {domain!r}")
                )
            elif scenario.generate is not None and scenario.domains[domain].canary is None:
                problems.append(
                    Problem(
                        file,
                        f"spaces.{name}.domains.{index}",
                        "generated pairs need a canary generator for a space's domains too",
                    )
                )
    for index, step in enumerate(scenario.timeline):
        space = getattr(step, "space", None)
        if space is not None and space not in scenario.spaces:
            problems.append(
                Problem(
                    file,
                    f"timeline.{index}.space",
                    f"unknown space {space!r}; declared: {', '.join(scenario.spaces) or 'none'}",
                )
            )
        elif space is not None and getattr(step, "kind", "recall") not in ("recall", "statement"):
            problems.append(
                Problem(
                    file,
                    f"timeline.{index}.kind",
                    "inside a space, a write states and a probe recalls (no other kind)",
                )
            )
    if scenario.generate is None:
        for index, pair in enumerate(scenario.pairs):
            for name, spec in scenario.spaces.items():
                missing = [d for d in spec.domains if d not in pair.spaces.get(name, {})]
                if missing:
                    problems.append(
                        Problem(
                            file,
                            f"pairs.{index}.spaces.{name}",
                            f"needs a value for {', '.join(missing)}",
                        )
                    )
    return problems


def _overlap(a: str, b: str) -> bool:
    """Whether two normalized texts overlap: either holds the other."""
    return bool(a and b and (a in b or b in a))


def _exclusivity_problems(pair: Pair, pair_index: int, file: str) -> list[Problem]:
    """Every value of A (current, accepted renderings, updates) against every value of B:
    neither may contain the other.

    Substring scoring would otherwise count B's own answer as a leak of A's value (or miss
    a real leak): the pair could not tell recall from leakage.
    """
    problems: list[Problem] = []
    normalized = {
        text: normalize(text)
        for tenant in (pair.a, pair.b)
        for fact in tenant.facts.values()
        for text in fact.all_texts()
    }
    for domain_a, fact_a in pair.a.facts.items():
        for domain_b, fact_b in pair.b.facts.items():
            for text_a in fact_a.all_texts():
                for text_b in fact_b.all_texts():
                    if _overlap(normalized[text_a], normalized[text_b]):
                        problems.append(
                            Problem(
                                file,
                                f"pairs.{pair_index}.b.facts.{domain_b}",
                                f"value {text_b!r} is not mutually exclusive with tenant a's "
                                f"{domain_a} value {text_a!r} after normalization "
                                f"({normalized[text_b]!r} vs {normalized[text_a]!r}); a leak "
                                "could not be seen",
                            )
                        )
    return problems


def parse_scenario(data: Any, file: str = "<scenario>") -> Scenario:
    """Validate already-parsed YAML; raise InputError listing every problem."""
    return parse_document(Scenario, data, file, semantic_problems)


def load_scenario(path: str | Path) -> Scenario:
    return parse_scenario(load_yaml_file(path), str(path))
