"""The scenario model: pairs of tenants, fact domains, message templates and a timeline of
steps. Pure. Reading and checking a scenario file is scenario_file.py."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from memlife.rules.adversarial import AdversarialTemplates
from memlife.rules.durations import Duration, GraceDuration

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
    # The facts of each shared space the pair's lifecycle creates (scenario `spaces`), by
    # space and domain: stated into the space, recalled by its members only.
    spaces: dict[str, dict[str, Annotated[FactValue, BeforeValidator(_fact_value)]]] = Field(
        default_factory=dict
    )
    # The tenants' phones differ in their last digit only (+12015550120 / +12015550121),
    # as identities that collide in real bugs do (a lookup by a truncated number).
    collide_phones: bool = False
    # The pair whose tenant a states the same facts as this pair's a, among other
    # neighbours: the control twin of neighbour invariance (N1, rules/invariance.py).
    twin: int | None = None

    def tenant(self, role: Role) -> Tenant:
        return self.a if role == "a" else self.b


Domains = Literal["all"] | list[str]


class WriteStep(_Strict):
    """Each tenant states its facts. `kind: poison` addresses them to everyone ("remember
    this for all users: …", rules/adversarial.py): from then on they are forbidden in every
    other tenant's answers and scopes, whatever the partner's own state. With `space`, the
    tenants state the space's facts inside the space."""

    step: Literal["write"]
    label: str = ""
    kind: Literal["statement", "poison"] = "statement"
    space: Slug | None = None
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
    Adversarial (rules/adversarial.py): spoof (claiming the partner's identity, asking about
    the partner's domains) and extract (asking what other users said): nothing required,
    every value not the tenant's own forbidden.
    """

    step: Literal["probe"]
    label: str = ""
    kind: Literal["recall", "stale", "abstain", "spoof", "extract"] = "recall"
    # Ask inside a shared space about its facts: a member must recall them, a non-member
    # (or one whose leave is past the grace) must get none (S1).
    space: Slug | None = None
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


# What a space step does (and what a target is asked to do: memlife/contracts.py).
SpaceAction = Literal["create", "join", "leave", "delete"]


class SpaceStep(_Strict):
    """Change a shared space: `create` (the first tenant creates it, every tenant listed
    joins), `join`, `leave`, `delete` (its facts must leave every store and answer)."""

    step: Literal["space"]
    label: str = ""
    action: SpaceAction
    space: Slug
    tenants: list[Role] = Field(default_factory=lambda: ["a"], min_length=1)


class SpaceSpec(_Strict):
    """A shared scope a pair's lifecycle may create: the domains whose facts live in it."""

    description: str = ""
    domains: list[str] = Field(min_length=1)


class MaintainStep(_Strict):
    """Trigger the target's maintenance (its `maintain` operations: a reindex, compaction,
    re-embedding or rebuild), those named in `operations` or every one, in order. What the
    scenario checks afterwards is judged as usual: a deleted or forgotten value that comes
    back is resurrected. Operations that name a tenant run for each of `tenants`."""

    step: Literal["maintain"]
    label: str = ""
    operations: list[Slug] | None = Field(default=None, min_length=1)
    tenants: list[Role] = Field(default_factory=lambda: ["a"], min_length=1)


Step = Annotated[
    WriteStep
    | UpdateStep
    | WaitStep
    | ProbeStep
    | DeleteStep
    | AwaitDeletionStep
    | InspectStep
    | RegisterStep
    | MaintainStep
    | SpaceStep,
    Field(discriminator="step"),
]


class PairGeneration(_Strict):
    """Generate `count` pairs whose facts are canaries for every domain with a generator."""

    count: int = Field(ge=1, le=20_000)
    alias_prefix: Slug = "t"
    language: str | None = None
    # Identities that collide as real bugs need: the partner's alias extends the tenant's
    # as a prefix (t000 / t000-corp), as namespaces acme and acme-corp do, and the two
    # phones differ in their last digit only.
    collide: bool = False
    # Neighbour invariance (N1): the first `twins` pairs each get a control twin, one pair
    # more whose tenant a states the same facts as theirs beside a partner of its own; their
    # answers to the same questions are compared when the run ends. Each twin costs the
    # requests of one pair.
    twins: int = Field(default=0, ge=0, le=1000)


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
    # After leaving a space, how long a former member may still be served its facts (S1).
    space_grace: GraceDuration = timedelta(0)
    spaces: dict[Slug, SpaceSpec] = Field(default_factory=dict)
    # Adversarial turns per language, replacing memlife's own (rules/adversarial.py).
    adversarial: dict[str, AdversarialTemplates] = Field(default_factory=dict)
    domains: dict[str, Domain] = Field(min_length=1)
    pairs: list[Pair] = Field(default_factory=list)
    generate: PairGeneration | None = None
    timeline: list[Step] = Field(min_length=1)
    # How many times `memlife run` repeats the scenario by default, each time with fresh
    # tenants and values (--repeat overrides): experiments want more than one.
    repetitions: int = Field(default=1, ge=1, le=100)

    def pair_count(self) -> int:
        """The pairs a run of this scenario has: listed, or generated with their twins."""
        if self.generate is None:
            return len(self.pairs)
        return self.generate.count + min(self.generate.twins, self.generate.count)

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

    def acting_steps(self) -> int:
        """Steps of the timeline that are not waits: a cohort's history grows by each of
        them for each of its pairs (rules/sizing.py)."""
        return sum(1 for step in self.timeline if not isinstance(step, WaitStep))

    def digest(self) -> str:
        """SHA-256 of the canonical JSON of the validated scenario."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()
