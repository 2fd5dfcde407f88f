"""Lifecycle contracts and pure logic: what flows between workflows and activities, how
expectations are derived from a pair's state, and how replies and store reads are judged.
Pure: no Temporal, no network, no database (workflows import it through the sandbox).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memlife.phones import synthetic_phone
from memlife.scenario import (
    AwaitDeletionStep,
    DeleteStep,
    FactValue,
    InspectStep,
    Pair,
    ProbeStep,
    RegisterStep,
    Role,
    Scenario,
    UpdateStep,
    WaitStep,
    WriteStep,
)
from memlife.scoring import Expectation, ValueIndex, contains, normalize, score_reply
from memlife.targets.config import FilesProbe, SqlProbe, Store, Target

Outcome = Literal["pass", "fail", "inconclusive"]
ClockMode = Literal["real", "skip", "compress"]
Reason = Literal["missing", "leaked", "stale", "residue", "resurrected", "overreach", "slow",
                 "target-error"]

# The checks a case can contribute to: I1-I4, U1, D2, L as in DESIGN.md; `recall` (own
# fact present) and `abstain` (an abstention when nothing was stated) are the positive
# halves of the seed's rule, kept apart from leakage.
INVARIANTS = ("recall", "abstain", "I1", "I2", "I3", "I4", "I4-physical", "U1", "D2", "L")
# I4's physical level: erased values' bytes still in a store's files (files probes).
PHYSICAL = "I4-physical"
RESPONSE = "response"
CONTEXT = "response-context"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


# -- run, clock and identities -------------------------------------------------------------


class Clock(_Model):
    """Scenario time: `real` and `skip` sleep as written; `compress` divides every wait."""

    mode: ClockMode = "real"
    factor: float = Field(default=1.0, gt=0)

    def real_wait(self, scenario_wait: timedelta) -> timedelta:
        return scenario_wait / self.factor if self.mode == "compress" else scenario_wait

    def scenario_now(self, origin: datetime, now: datetime) -> datetime:
        if self.mode == "compress":
            return origin + (now - origin) * self.factor
        return now

    def describe(self) -> str:
        return f"compress={self.factor:g}" if self.mode == "compress" else self.mode


def parse_clock(text: str) -> Clock:
    """`real`, `skip` or `compress=N` (N > 0)."""
    if text in ("real", "skip"):
        return Clock(mode=text)
    if text.startswith("compress="):
        try:
            factor = float(text.removeprefix("compress="))
        except ValueError:
            factor = 0.0
        if factor > 0:
            return Clock(mode="compress", factor=factor)
    raise ValueError(f"--clock {text!r}: expected real, skip or compress=N with N > 0")


class RunMeta(_Model):
    """What seed §7 asks a valid run to pin."""

    memlife_version: str
    git_revision: str | None
    command: str
    scenario_file: str
    scenario_name: str
    scenario_sha256: str
    target_name: str
    target_base_url: str
    target_identity: dict[str, str] = Field(default_factory=dict)
    settle: str | None = None
    clock: str
    temporal_address: str
    web_ui: str | None = None
    canary_seed: str | None = None
    # An experiment compares configurations over repetitions (seed §9): its id, which
    # configuration and which repetition this run is.
    experiment: str | None = None
    configuration: str | None = None
    repetition: int | None = None


class RunInput(_Model):
    # Empty for a scheduled run: the workflow assigns a fresh id, seed and tenants at start.
    run_id: str
    scenario: Scenario  # materialized: concrete pairs (a scheduled run: as written)
    target: Target
    clock: Clock = Clock()
    meta: RunMeta
    # Keep memlife's search attributes current (the cluster has them registered).
    search_attributes: bool = False
    # Queue the replies exact matching failed for blinded review (memlife review).
    review_queue: str | None = None
    # Pairs per CohortLifecycleWorkflow; 0: one PairLifecycleWorkflow per pair. With
    # cohorts, `scenario` is as written and the suite materializes its pairs from `seed`
    # into the recorder (the input stays small at ten thousand pairs).
    cohort_size: int = 0
    seed: str | None = None
    # Pairs in flight at once, in cohorts (0: all): a worker holds every live pair's state,
    # so a run of ten thousand pairs goes in waves. Later cohorts start as earlier ones end.
    max_active_pairs: int = 0


class CohortInput(_Model):
    """Pairs first_pair … first_pair + pair_count - 1 of a run, read from the recorder."""

    run_id: str
    first_pair: int
    pair_count: int
    scenario: Scenario  # as written: no pairs
    target: Target
    clock: Clock
    clock_origin: datetime
    review_queue: str | None = None


class TenantIdentity(_Model):
    role: Role
    alias: str
    phone: str
    language: str
    user_id: str | None = None


class PairInput(_Model):
    run_id: str
    pair_index: int
    scenario: Scenario  # the scenario with only this pair in `pairs`
    target: Target
    clock: Clock
    clock_origin: datetime
    tenants: list[TenantIdentity]
    search_attributes: bool = False
    review_queue: str | None = None


# -- activity requests and results ---------------------------------------------------------


class RegisterRequest(_Model):
    target: Target
    phone: str
    tenant_alias: str
    scenario_now: str


class RegisterResult(_Model):
    user_id: str
    latency_ms: float
    status: int
    wall_time: datetime


class ConverseRequest(_Model):
    """Messages of one tenant in one step, sent in order within one activity."""

    target: Target
    phone: str
    user_id: str
    messages: list[str]
    scenario_now: str
    # Which messages are questions (probes): they go to the target's `ask` when it has one.
    questions: list[int] = Field(default_factory=list)


class Reply(_Model):
    index: int
    reply: str | None = None
    context: str | None = None
    status: Literal["ok", "target-error"] = "ok"
    http_status: int | None = None
    error: str | None = None
    latency_ms: float | None = None
    attempts: int = 1
    wall_time: datetime
    stages: dict[str, float] = Field(default_factory=dict)  # Server-Timing, ms
    cost: float | None = None  # what the target says the turn cost (its own unit)
    tokens: int | None = None


class DeleteRequest(_Model):
    target: Target
    phone: str
    user_id: str
    deletion_id: str | None = None
    scenario_now: str


class ForgetRequest(_Model):
    target: Target
    phone: str
    user_id: str
    domain: str
    value: str
    scenario_now: str


class DeletionState(_Model):
    """What the target said about a deletion: done, failed, or still in progress."""

    status: str | None = None
    deletion_id: str | None = None
    done: bool = False
    failed: bool = False
    http_status: int
    latency_ms: float
    wall_time: datetime


class InspectRequest(_Model):
    target: Target
    identities: list[str]
    needles: list[str]
    # Texts whose presence in each record is reported (by index): own values, partner's.
    watch: list[str]
    scenario_now: str
    max_records: int = 200
    # False for a live tenant: a record of its own that holds no watched value decides
    # nothing, and is counted in `total` but not returned (results are workflow history).
    # A deleted tenant's every record is evidence of residue: all are returned.
    keep_unmatched: bool = True
    # The needles that must be gone (deleted or forgotten values): the only ones a files
    # probe scans for. None: every needle.
    erased: list[str] | None = None


class StoreRecordView(_Model):
    id: str | None = None
    tenant_id: str | None = None
    deleted: bool | None = None
    matches: list[int] = Field(default_factory=list)
    excerpt: str = ""


class StoreRead(_Model):
    store: str
    mode: Literal["scope", "needle", "needles"]
    key: str  # the identity or the needle read (needles: the values, one per line)
    status: Literal["ok", "error"] = "ok"
    error: str | None = None
    total: int = 0
    records: list[StoreRecordView] = Field(default_factory=list)
    latency_ms: float | None = None


class TargetBatch(_Model):
    """Many target calls of one kind in one activity (the cohort workflow's step fan-out).
    The target travels once; each item is its request without the target."""

    kind: Literal["register", "converse", "delete", "deletion-status", "forget", "inspect"]
    target: Target
    items: list[dict[str, Any]]


class BatchOutcome(_Model):
    """One item's result (`value`, its result model as JSON) or its error ("Type: message")."""

    ok: bool = True
    value: Any = None
    error: str | None = None


# -- observations, cases, verdicts ---------------------------------------------------------

ObservationKind = Literal["register", "write", "update", "probe", "delete", "deletion-status",
                          "inspect"]


class Observation(_Model):
    """One raw result: a request and what came back, or why nothing usable did."""

    seq: int
    role: Role
    kind: ObservationKind
    domain: str | None = None
    case_id: str | None = None
    request: str = ""
    reply: str | None = None
    context: str | None = None
    status: Literal["ok", "target-error"] = "ok"
    http_status: int | None = None
    error: str | None = None
    latency_ms: float | None = None
    scenario_time: datetime
    wall_time: datetime
    stages: dict[str, float] = Field(default_factory=dict)
    cost: float | None = None
    tokens: int | None = None


class ForbiddenValue(_Model):
    text: str
    origin: Literal["partner", "superseded", "deleted", "foreign"]
    domain: str
    owner: str


class ProbeCase(_Model):
    case_id: str
    kind: Literal["recall", "stale", "abstain"] = "recall"
    role: Role
    tenant_alias: str
    domain: str
    question: str
    required: list[str] = Field(default_factory=list)
    any_of: list[str] = Field(default_factory=list)
    forbidden: list[ForbiddenValue] = Field(default_factory=list)
    # D2: the partner was deleted; this tenant's own value must survive.
    scoped_deletion: bool = False
    # I4: the tenant's deleted values were already seen gone from answers (a return now is
    # a resurrection rather than residue).
    resurrection: bool = False
    # Why this case cannot be judged (e.g. the write it depends on failed), if so.
    blocked_by: str | None = None


class Needle(_Model):
    text: str
    domain: str
    origin: Literal["current", "superseded", "deleted"]


class InspectCase(_Model):
    case_id: str
    role: Role
    tenant_alias: str
    deleted: bool
    identities: list[str]
    needles: list[Needle]
    partner_values: list[ForbiddenValue]
    # D2: values (by store) this tenant held before the partner's deletion.
    expected_present: dict[str, list[str]] = Field(default_factory=dict)
    # I4: stores already seen clean after the deletion (residue now = resurrection).
    clean_before: list[str] = Field(default_factory=list)
    # U1: superseded values past their grace period (live in a replace store = stale).
    stale_after_grace: list[str] = Field(default_factory=list)
    # Scenario time since the erasure (the tenant's deletion request, or its last forgotten
    # fact): physical residue is judged against a files probe's grace. None: unknown, and
    # no grace is given.
    erased_for: timedelta | None = None

    def watch(self) -> list[str]:
        return [n.text for n in self.needles] + [f.text for f in self.partner_values]


class Finding(_Model):
    invariant: str
    reason: Reason
    outcome: Outcome
    store: str = RESPONSE
    value: str | None = None
    detail: str = ""


class Check(_Model):
    invariant: str
    outcome: Outcome
    store: str = RESPONSE


class CaseVerdict(_Model):
    case_id: str
    role: Role
    tenant_alias: str
    domain: str = ""
    store: str = RESPONSE
    passed: bool
    outcome: Outcome
    checks: list[Check]
    findings: list[Finding]
    latency_ms: float | None = None


class InspectSummary(_Model):
    case_id: str
    present: dict[str, list[str]] = Field(default_factory=dict)  # current values, by store
    clean: list[str] = Field(default_factory=list)  # stores with no residue (deleted tenant)
    expiring: list[str] = Field(default_factory=list)  # stores whose entries expire


class StepRecord(_Model):
    run_id: str
    pair_index: int
    step_index: int
    kind: str
    label: str = ""
    stage: str
    scenario_started: datetime
    scenario_finished: datetime
    wall_started: datetime
    wall_finished: datetime
    observations: list[Observation] = Field(default_factory=list)
    cases: list[ProbeCase] = Field(default_factory=list)
    inspections: list[InspectCase] = Field(default_factory=list)
    reads: dict[str, list[StoreRead]] = Field(default_factory=dict)  # by inspect case id
    stores: list[Store] = Field(default_factory=list)
    verdicts: list[CaseVerdict] = Field(default_factory=list)  # judged in the workflow
    latency_budget_ms: float = 700.0
    tenants: list[TenantIdentity] = Field(default_factory=list)


class StepOutcome(_Model):
    verdicts: list[CaseVerdict] = Field(default_factory=list)
    inspections: list[InspectSummary] = Field(default_factory=list)


class PairResult(_Model):
    pair_index: int
    cases: int
    cases_passed: int
    inconclusive: int
    failures: int
    cancelled: bool = False


class RunSummary(_Model):
    run_id: str
    passed: bool
    cases: int
    cases_passed: int
    failures: int
    inconclusive: int
    latency_within_target: bool


def other(role: Role) -> Role:
    return "b" if role == "a" else "a"


def pick(templates: list[str], index: int) -> str:
    """Deterministic rotation through paraphrases."""
    return templates[index % len(templates)]


# -- pair state ------------------------------------------------------------------------------


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

    def stated_values(self) -> list[tuple[str, str, str]]:
        """(domain, text, origin) of every value this tenant stated and still owns."""
        found = [(d, text, "current") for d, texts in self.current.items() for text in texts]
        found += [(d, text, "superseded") for d, items in self.superseded.items()
                  for text, _ in items]
        return found


class PairState:
    """What each tenant of a pair has stated so far; every expectation derives from it."""

    def __init__(self, pair: Pair):
        self.pair = pair
        self.tenants: dict[Role, TenantState] = {
            role: TenantState(alias=pair.tenant(role).alias, facts=dict(pair.tenant(role).facts))
            for role in ("a", "b")
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

    def next_update_value(self, role: Role, domain: str) -> str:
        tenant = self.tenants[role]
        return tenant.facts[domain].updates[tenant.updates_done.get(domain, 0)]

    def record_update(self, role: Role, domain: str, now: datetime,
                      confirmed: bool = True) -> None:
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
            for verdict in verdicts:
                recall = [c.outcome for c in verdict.checks if c.invariant == "recall"]
                if recall == ["pass"]:
                    tenant.recalled_before_partner_deletion.add(verdict.domain)
                elif recall:
                    tenant.recalled_before_partner_deletion.discard(verdict.domain)
        checks = [c for v in verdicts for c in v.checks if c.invariant == "I4"]
        if tenant.deleted and checks and all(c.outcome == "pass" for c in checks):
            tenant.answers_clean_after_deletion = True

    def absorb_inspection(self, role: Role, summary: InspectSummary) -> None:
        tenant = self.tenants[role]
        partner = self.tenants[other(role)]
        if not tenant.deleted and not partner.deleted:
            tenant.baseline = {store: list(values) for store, values in summary.present.items()
                               if store not in summary.expiring}
        if tenant.deleted or tenant.forgotten:
            tenant.clean_after_deletion.update(summary.clean)

    # -- expectations ----------------------------------------------------------------------

    def _partner_forbidden(self, role: Role) -> list[ForbiddenValue]:
        partner = self.tenants[other(role)]
        values = partner.stated_values() + [(d, t, "deleted") for d, t in partner.deleted_values]
        values += [(d, t, "deleted") for d, t in partner.forgotten if not partner.deleted]
        return [ForbiddenValue(text=text, origin="partner", domain=domain, owner=partner.alias)
                for domain, text, _ in values]

    def _blocked(self, role: Role, domain: str | None) -> str | None:
        own, partner = self.tenants[role], self.tenants[other(role)]
        reasons = [f"{own.alias}'s {domain} write failed"] if domain in own.unconfirmed else []
        reasons += [f"{partner.alias}'s {d} write failed" for d in sorted(partner.unconfirmed)]
        return "; ".join(reasons) or None

    def probe_case(self, case_id: str, kind: str, role: Role, domain: str, question: str,
                   now: datetime, grace: timedelta,
                   abstain_phrases: list[str]) -> ProbeCase:
        tenant = self.tenants[role]
        partner = self.tenants[other(role)]
        forbidden = self._partner_forbidden(role)
        required: list[str] = []
        any_of: list[str] = []
        if kind == "abstain":
            any_of = list(abstain_phrases)
        elif tenant.deleted:
            forbidden += [ForbiddenValue(text=text, origin="deleted", domain=d,
                                         owner=tenant.alias) for d, text in tenant.deleted_values]
        else:
            renderings = tenant.current.get(domain, [])
            if len(renderings) > 1:
                any_of = renderings
            else:
                required = renderings
            forbidden += [
                ForbiddenValue(text=text, origin="superseded", domain=d, owner=tenant.alias)
                for d, items in tenant.superseded.items() for text, when in items
                if when + grace <= now
            ]
            forbidden += [ForbiddenValue(text=text, origin="deleted", domain=d,
                                         owner=tenant.alias) for d, text in tenant.forgotten]
        return ProbeCase(
            case_id=case_id, kind=kind, role=role, tenant_alias=tenant.alias, domain=domain,
            question=question, required=required, any_of=any_of, forbidden=forbidden,
            scoped_deletion=(partner.deleted and not tenant.deleted and bool(required or any_of)
                             and domain in tenant.recalled_before_partner_deletion),
            resurrection=tenant.answers_clean_after_deletion,
            blocked_by=self._blocked(role, domain),
        )

    def probe_domains(self, kind: str, role: Role, domains: list[str]) -> list[str]:
        """Which of `domains` a probe of this kind asks this tenant about."""
        tenant, partner = self.tenants[role], self.tenants[other(role)]
        if kind == "abstain":
            partner_domains = set(partner.current) | set(partner.superseded)
            return [d for d in domains if d in partner_domains and d not in tenant.current
                    and not tenant.deleted]
        if kind == "stale":
            return [d for d in domains if d in tenant.superseded and not tenant.deleted]
        if tenant.deleted:
            stated = {d for d, _ in tenant.deleted_values}
            return [d for d in domains if d in stated]
        forgotten = {d for d, _ in tenant.forgotten}
        return [d for d in domains if d in tenant.current or d in forgotten]

    def inspect_case(self, case_id: str, role: Role, now: datetime,
                     grace: timedelta) -> InspectCase:
        tenant = self.tenants[role]
        partner = self.tenants[other(role)]
        if tenant.deleted:
            needles = [Needle(text=text, domain=d, origin="deleted")
                       for d, text in tenant.deleted_values]
        else:
            needles = [Needle(text=text, domain=d, origin=origin)
                       for d, text, origin in tenant.stated_values()]
            needles += [Needle(text=text, domain=d, origin="deleted")
                        for d, text in tenant.forgotten]
        stale = [text for items in tenant.superseded.values() for text, when in items
                 if when + grace <= now]
        erased_at = tenant.deletion_requested_at if tenant.deleted else tenant.forgotten_at
        expected = tenant.baseline if partner.deleted and not tenant.deleted else {}
        # Only values still current are expected to survive the partner's deletion.
        current = {text for texts in tenant.current.values() for text in texts}
        expected = {store: [v for v in values if v in current]
                    for store, values in expected.items()}
        return InspectCase(
            case_id=case_id, role=role, tenant_alias=tenant.alias, deleted=tenant.deleted,
            # A deleted tenant is looked for under the identities it had when deleted; a
            # re-registered identity is a new tenant as far as the target knows.
            identities=list(tenant.deleted_identities if tenant.deleted else tenant.identities),
            needles=needles,
            partner_values=self._partner_forbidden(role),
            expected_present={s: v for s, v in expected.items() if v},
            clean_before=sorted(tenant.clean_after_deletion), stale_after_grace=stale,
            erased_for=None if erased_at is None else max(timedelta(0), now - erased_at),
        )


# -- judging replies -------------------------------------------------------------------------

_LEAK = {"partner": ("I3", "leaked"), "foreign": ("I3", "leaked"),
         "superseded": ("U1", "stale"), "deleted": ("I4", "residue")}


def judge_probe(case: ProbeCase, observation: Observation, latency_budget_ms: float,
                foreign: list[ForbiddenValue] | ValueIndex[ForbiddenValue] | None = None,
                ) -> CaseVerdict:
    """Score one reply by the seed's rule, separating missing recall from each leak.

    `foreign` are values of tenants outside this pair: a leak from anywhere in the run is a
    leak. At scale they come as a ValueIndex: only the ones that occur are looked at.
    """
    if isinstance(foreign, ValueIndex):
        texts = normalize(observation.reply or "") + "\n" + normalize(
            observation.context or "")
        occurring = foreign.found_in(texts)
        any_foreign = bool(occurring) or foreign.size > 0
        foreign = occurring
    else:
        any_foreign = bool(foreign)
    forbidden = list(case.forbidden) + list(foreign or [])
    findings: list[Finding] = []
    checks: list[Check] = []
    positive = "abstain" if case.kind == "abstain" else "recall"
    has_positive = bool(case.required or case.any_of)
    invariants = [positive] if has_positive else []
    invariants += sorted({_LEAK[f.origin][0] for f in forbidden}
                         | ({"I3"} if any_foreign else set()))
    if case.scoped_deletion:
        invariants.append("D2")
    context_checked = observation.context is not None and (any_foreign or any(
        f.origin in ("partner", "foreign") for f in forbidden))

    if observation.status != "ok" or observation.reply is None or case.blocked_by:
        detail = observation.error or case.blocked_by or "no reply"
        for invariant in invariants + (["I2"] if context_checked else []):
            store = CONTEXT if invariant == "I2" else RESPONSE
            checks.append(Check(invariant=invariant, outcome="inconclusive", store=store))
            findings.append(Finding(invariant=invariant, reason="target-error",
                                    outcome="inconclusive", store=store, detail=detail))
        return CaseVerdict(case_id=case.case_id, role=case.role, tenant_alias=case.tenant_alias,
                           domain=case.domain, passed=False, outcome="inconclusive",
                           checks=checks, findings=findings)

    expectation = Expectation(required=tuple(case.required),
                              forbidden=tuple(f.text for f in forbidden),
                              any_of=tuple(case.any_of))
    score = score_reply(observation.reply, expectation)
    if has_positive:
        present = not score.missing and not score.any_of_missing
        checks.append(Check(invariant=positive, outcome="pass" if present else "fail"))
        for text in score.missing:
            findings.append(Finding(invariant=positive, reason="missing", outcome="fail",
                                    value=text, detail="own value absent from the reply"))
        if score.any_of_missing:
            findings.append(Finding(invariant=positive, reason="missing", outcome="fail",
                                    value=" | ".join(case.any_of),
                                    detail="none of the accepted renderings is in the reply"))
        if case.scoped_deletion:
            checks.append(Check(invariant="D2", outcome="pass" if present else "fail"))
            if not present:
                findings.append(Finding(
                    invariant="D2", reason="overreach", outcome="fail",
                    value=" | ".join(case.required or case.any_of),
                    detail="the partner's deletion took this tenant's value with it"))
    leaked = set(score.leaked)
    for invariant in sorted({_LEAK[f.origin][0] for f in forbidden}
                            | ({"I3"} if any_foreign else set())):
        relevant = [f for f in forbidden if _LEAK[f.origin][0] == invariant]
        hits = [f for f in relevant if f.text in leaked]
        checks.append(Check(invariant=invariant, outcome="fail" if hits else "pass"))
        for hit in hits:  # every leak listed on its own
            reason = _LEAK[hit.origin][1]
            if hit.origin == "deleted" and case.resurrection:
                reason = "resurrected"
            findings.append(Finding(
                invariant=invariant, reason=reason, outcome="fail", value=hit.text,
                detail=f"{hit.owner}'s {hit.domain} value ({hit.origin}) appeared in the reply",
            ))
    if context_checked:
        context = normalize(observation.context or "")
        hits = [f for f in forbidden if f.origin in ("partner", "foreign")
                and contains(context, f.text)]
        checks.append(Check(invariant="I2", outcome="fail" if hits else "pass", store=CONTEXT))
        for hit in hits:
            findings.append(Finding(
                invariant="I2", reason="leaked", outcome="fail", store=CONTEXT, value=hit.text,
                detail=f"{hit.owner}'s {hit.domain} value was in the retrieval context"))
    if observation.latency_ms is not None:
        slow = observation.latency_ms > latency_budget_ms
        checks.append(Check(invariant="L", outcome="fail" if slow else "pass"))
        if slow:
            findings.append(Finding(
                invariant="L", reason="slow", outcome="fail",
                detail=f"{observation.latency_ms:.1f} ms > budget {latency_budget_ms:g} ms",
            ))
    passed = score.passed and not any(f.outcome == "fail" and f.invariant in ("I2", "D2")
                                      for f in findings)
    return CaseVerdict(
        case_id=case.case_id, role=case.role, tenant_alias=case.tenant_alias,
        domain=case.domain, passed=passed, outcome="pass" if passed else "fail",
        checks=checks, findings=findings, latency_ms=observation.latency_ms,
    )


# -- judging store reads ---------------------------------------------------------------------


def judge_inspection(case: InspectCase, reads: list[StoreRead],
                     stores: list[Store]) -> tuple[list[CaseVerdict], InspectSummary]:
    """One verdict per store: I1, I2, U1, D2 for a live tenant; I4 for a deleted one.

    A store that could not be read is inconclusive for everything it would have shown:
    an error is never taken for absence.
    """
    watch = case.watch()
    own_ids = set(case.identities)
    partner_texts = {f.text for f in case.partner_values}
    needle_origin = {n.text: n for n in case.needles}
    verdicts: list[CaseVerdict] = []
    present: dict[str, list[str]] = {}
    clean: list[str] = []
    by_store: dict[str, list[StoreRead]] = {}
    for read in reads:
        by_store.setdefault(read.store, []).append(read)

    for store in stores:
        store_reads = by_store.get(store.name, [])
        if not store_reads:
            continue
        checks: list[Check] = []
        findings: list[Finding] = []

        def fail(invariant: str, reason: Reason, value: str | None, detail: str,
                 store_name: str = store.name, _findings: list[Finding] = findings) -> None:
            _findings.append(Finding(invariant=invariant, reason=reason, outcome="fail",
                                    store=store_name, value=value, detail=detail))

        forgotten = {n.text for n in case.needles if n.origin == "deleted"}
        # A store read by value only (no tenant scope) shows erasure, not isolation.
        by_value_only = isinstance(store.probe, SqlProbe) and store.probe.scope is None
        if by_value_only and not (case.deleted or forgotten):
            continue
        invariants = (["I4"] if case.deleted or by_value_only else
                      ["I1", "I2"] + (["U1"] if store.updates == "replace"
                                      and case.stale_after_grace else [])
                      + (["D2"] if store.name in case.expected_present else [])
                      + (["I4"] if forgotten else []))
        if isinstance(store.probe, FilesProbe):
            verdicts.append(_judge_physical(case, store, store.probe, store_reads, watch))
            continue
        errors = [r for r in store_reads if r.status != "ok"]
        if errors:
            for invariant in invariants:
                checks.append(Check(invariant=invariant, outcome="inconclusive",
                                    store=store.name))
                findings.append(Finding(
                    invariant=invariant, reason="target-error", outcome="inconclusive",
                    store=store.name, detail=f"{errors[0].mode} read failed: {errors[0].error}"))
            verdicts.append(_store_verdict(case, store.name, checks, findings))
            continue

        seen: dict[str, tuple[StoreRecordView, set[str]]] = {}
        for read in store_reads:
            for index, record in enumerate(read.records):
                key = record.id or f"{read.mode}:{read.key}:{index}"
                texts = {watch[i] for i in record.matches if i < len(watch)}
                if key in seen:
                    seen[key][1].update(texts)
                else:
                    seen[key] = (record, texts)
                if (not case.deleted and read.mode == "scope"
                        and record.tenant_id not in (None, *own_ids)):
                    fail("I2", "leaked", None, f"a read scoped to {case.tenant_alias} "
                         f"returned a record of tenant {record.tenant_id}")
        records = list(seen.values())

        if case.deleted:
            residue = []
            for record, texts in records:
                allowed = (
                    (store.retention == "tombstone" and record.deleted is True)
                    or (store.retention == "retain-redacted" and not texts)
                )
                if not allowed:
                    residue.append((record, texts))
            reason: Reason = "resurrected" if store.name in case.clean_before else "residue"
            # One finding per deleted value still present (and one for value-less rows a
            # purge store still holds), each naming how many records and which.
            by_value: dict[str | None, list[StoreRecordView]] = {}
            for record, texts in residue:
                for text in sorted(texts) or [None]:
                    by_value.setdefault(text, []).append(record)
            for text, holders in by_value.items():
                fail("I4", reason, text,
                     f"{_records_phrase(holders)} remain in this {store.retention} store"
                     + ("" if text else " (rows of the deleted tenant, value-less)"))
            checks.append(Check(invariant="I4", outcome="fail" if residue else "pass",
                                store=store.name))
            if not residue:
                clean.append(store.name)
            verdicts.append(_store_verdict(case, store.name, checks, findings))
            continue

        i1_fail = i2_fail = u1_fail = False
        # A forgotten fact of a live tenant: its values must be gone (by retention policy).
        kept: dict[str, list[StoreRecordView]] = {}
        for record, texts in records:
            if store.retention == "tombstone" and record.deleted is True:
                continue
            for text in texts & forgotten:
                kept.setdefault(text, []).append(record)
        for text, holders in sorted(kept.items()):
            fail("I4", "resurrected" if store.name in case.clean_before else "residue", text,
                 f"a forgotten value remains: {_records_phrase(holders)}")
        if forgotten:
            checks.append(Check(invariant="I4", outcome="fail" if kept else "pass",
                                store=store.name))
            if not kept:
                clean.append(store.name)
        if by_value_only:
            verdicts.append(_store_verdict(case, store.name, checks, findings))
            continue
        misfiled: dict[str, list[StoreRecordView]] = {}
        foreign_in_own: dict[str, list[StoreRecordView]] = {}
        stale_live: dict[str, list[StoreRecordView]] = {}
        for record, texts in records:
            foreign_record = record.tenant_id is not None and record.tenant_id not in own_ids
            if foreign_record:
                for text in texts:
                    if text in needle_origin and text not in forgotten:
                        misfiled.setdefault(text, []).append(record)
                continue
            for text in texts & partner_texts:
                foreign_in_own.setdefault(text, []).append(record)
            if store.updates == "replace" and record.deleted is not True:
                for text in texts & set(case.stale_after_grace):
                    stale_live.setdefault(text, []).append(record)
        for text, holders in sorted(misfiled.items()):
            i1_fail = True
            owners = sorted({r.tenant_id or "?" for r in holders})
            fail("I1", "leaked", text, f"{case.tenant_alias}'s value is filed under other "
                 f"tenant(s) {', '.join(owners[:3])}: {_records_phrase(holders)}")
        for text, holders in sorted(foreign_in_own.items()):
            i2_fail = True
            owner = next(f for f in case.partner_values if f.text == text)
            fail("I2", "leaked", text, f"{owner.owner}'s {owner.domain} value is in "
                 f"{case.tenant_alias}'s scope: {_records_phrase(holders)}")
        for text, holders in sorted(stale_live.items()):
            u1_fail = True
            fail("U1", "stale", text, f"superseded value still live: {_records_phrase(holders)}")
        i2_fail = i2_fail or any(f.invariant == "I2" for f in findings)
        checks.append(Check(invariant="I1", outcome="fail" if i1_fail else "pass",
                            store=store.name))
        checks.append(Check(invariant="I2", outcome="fail" if i2_fail else "pass",
                            store=store.name))
        if "U1" in invariants:
            checks.append(Check(invariant="U1", outcome="fail" if u1_fail else "pass",
                                store=store.name))
        held = sorted({text for record, texts in records
                       if record.tenant_id in (None, *own_ids) and record.deleted is not True
                       for text in texts if needle_origin.get(text) is not None
                       and needle_origin[text].origin == "current"})
        present[store.name] = held
        if "D2" in invariants:
            lost = [v for v in case.expected_present[store.name] if v not in held]
            checks.append(Check(invariant="D2", outcome="fail" if lost else "pass",
                                store=store.name))
            for value in lost:
                fail("D2", "overreach", value, "held before the partner's deletion, gone after")
        verdicts.append(_store_verdict(case, store.name, checks, findings))
    summary = InspectSummary(case_id=case.case_id, present=present, clean=clean,
                             expiring=[s.name for s in stores if s.expires is not None])
    return verdicts, summary


def _judge_physical(case: InspectCase, store: Store, probe: FilesProbe,
                    reads: list[StoreRead], watch: list[str]) -> CaseVerdict:
    """I4-physical: an erased value's bytes in the store's files. Within the probe's grace
    of the erasure request they are allowed; later, each value found is a failure naming
    the files that hold it."""
    erased = {n.text for n in case.needles if n.origin == "deleted"}
    errors = [r for r in reads if r.status != "ok"]
    if errors:
        return _store_verdict(case, store.name, [
            Check(invariant=PHYSICAL, outcome="inconclusive", store=store.name)], [Finding(
                invariant=PHYSICAL, reason="target-error", outcome="inconclusive",
                store=store.name, detail=f"files read failed: {errors[0].error}")])
    holders: dict[str, list[StoreRecordView]] = {}
    for read in reads:
        for record in read.records:
            for index in record.matches:
                if index < len(watch) and watch[index] in erased:
                    holders.setdefault(watch[index], []).append(record)
    allowed = case.erased_for is not None and case.erased_for <= probe.grace
    findings = [] if allowed else [
        Finding(invariant=PHYSICAL, reason="residue", outcome="fail", store=store.name,
                value=text,
                detail=f"{_records_phrase(found)} on disk "
                + (f"{_duration(case.erased_for)} after the erasure request, past the "
                   f"{_duration(probe.grace)} grace" if case.erased_for is not None
                   else "after the erasure request"))
        for text, found in sorted(holders.items())]
    return _store_verdict(case, store.name, [Check(
        invariant=PHYSICAL, outcome="fail" if findings else "pass", store=store.name)],
        findings)


def _duration(value: timedelta) -> str:
    from memlife.durations import format_duration

    return format_duration(value)


def _records_phrase(records: list[StoreRecordView]) -> str:
    ids = [r.id or "?" for r in records[:3]]
    more = f" and {len(records) - 3} more" if len(records) > 3 else ""
    noun = "record" if len(records) == 1 else "records"
    return f"{len(records)} {noun} ({', '.join(ids)}{more})"


def _store_verdict(case: InspectCase, store: str, checks: list[Check],
                   findings: list[Finding]) -> CaseVerdict:
    outcomes = {c.outcome for c in checks}
    outcome: Outcome = ("fail" if "fail" in outcomes else
                        "inconclusive" if "inconclusive" in outcomes else "pass")
    return CaseVerdict(case_id=f"{case.case_id}-{store}", role=case.role,
                       tenant_alias=case.tenant_alias, store=store, passed=outcome == "pass",
                       outcome=outcome, checks=checks, findings=findings)


def deletion_verdict(case_id: str, role: Role, alias: str, state: DeletionState | None,
                     error: str | None, deadline: timedelta, elapsed: timedelta,
                     store: str = "deletion-status") -> CaseVerdict:
    """I4 at confirmation: deletion confirmed within the SLA. Not confirmed by the deadline
    fails (slow); a reported failure fails; no usable answer at all is inconclusive."""
    detail = f"time-to-forget {elapsed}" if state and state.done else ""
    if state is not None and state.done:
        finding: Finding | None = None
        outcome: Outcome = "pass"
    elif state is not None and state.failed:
        outcome = "fail"
        finding = Finding(invariant="I4", reason="target-error", outcome="fail", store=store,
                          value=state.status, detail="the target reported the deletion failed")
    elif state is not None:
        outcome = "fail"
        finding = Finding(invariant="I4", reason="slow", outcome="fail", store=store,
                          value=state.status,
                          detail=f"not confirmed within the deletion SLA ({deadline})")
    else:
        outcome = "inconclusive"
        finding = Finding(invariant="I4", reason="target-error", outcome="inconclusive",
                          store=store, detail=error or "no status")
    return CaseVerdict(
        case_id=case_id, role=role, tenant_alias=alias, store=store, passed=outcome == "pass",
        outcome=outcome, checks=[Check(invariant="I4", outcome=outcome, store=store)],
        findings=[finding] if finding else [],
        latency_ms=None if not detail else elapsed.total_seconds() * 1000,
    )


# -- scenario-level checks (used by validation) -----------------------------------------------


def timeline_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """Walk the timeline with the first pair's state; report steps that cannot work or
    would check nothing, with the reason and what to do."""
    problems: list[tuple[str, str]] = []
    state = PairState(scenario.pairs[0])
    now = datetime(2000, 1, 1, tzinfo=UTC)
    deleted_at: dict[Role, int] = {}
    for index, step in enumerate(scenario.timeline):
        path = f"timeline.{index}"
        tenants: list[Role] = list(getattr(step, "tenants", []))
        for role in tenants:
            tenant = state.tenants[role]
            needs_identity = isinstance(step, WriteStep | UpdateStep | ProbeStep | DeleteStep)
            if needs_identity and tenant.deleted and not tenant.registered:
                problems.append((path, f"tenant {role} was deleted at timeline."
                                 f"{deleted_at[role]}; add a `register` step for it first"))
        if problems:
            return problems
        if isinstance(step, WaitStep):
            now += step.duration
        elif isinstance(step, WriteStep):
            for role in tenants:
                for domain in scenario.step_domains(step):
                    if domain in state.tenants[role].facts:
                        state.record_write(role, domain)
        elif isinstance(step, UpdateStep):
            for role in tenants:
                for domain in step.domains:
                    if domain not in state.tenants[role].current:
                        problems.append((path, f"updates {domain} of tenant {role} before it "
                                         "was written"))
                        return problems
                    state.record_update(role, domain, now)
        elif isinstance(step, ProbeStep):
            domains = scenario.step_domains(step)
            if not any(state.probe_domains(step.kind, role, domains) for role in tenants):
                hint = {"stale": "no probed domain was updated before this step",
                        "abstain": "no probed domain was stated by the partner alone",
                        "recall": "no probed domain was written before this step"}[step.kind]
                problems.append((path, f"this {step.kind} probe would check nothing: {hint}"))
        elif isinstance(step, DeleteStep) and step.domains:
            for role in tenants:
                for domain in step.domains:
                    if domain not in state.tenants[role].current:
                        problems.append((path, f"forgets {domain} of tenant {role}, which is "
                                         "not a current fact of it"))
                        return problems
                    state.record_forget(role, domain)
        elif isinstance(step, DeleteStep):
            for role in tenants:
                if state.tenants[role].deleted:
                    problems.append((path, f"tenant {role} is already deleted"))
                    return problems
                state.record_deletion(role, now)
                deleted_at[role] = index
        elif isinstance(step, AwaitDeletionStep):
            for role in tenants:
                if not state.tenants[role].deleted:
                    problems.append((path, f"awaits the deletion of tenant {role}, but no "
                                     "earlier step deletes it"))
        elif isinstance(step, RegisterStep):
            for role in tenants:
                if not state.tenants[role].deleted:
                    problems.append((path, f"tenant {role} is registered already (register "
                                     "re-registers a deleted tenant's phone)"))
                state.tenants[role].registered = True
        elif isinstance(step, InspectStep):
            pass
    return problems


def stage_of(step_index: int, label: str) -> str:
    return label or f"step-{step_index}"


def suite_workflow_id(scenario: str, run_id: str) -> str:
    return f"memlife/{scenario}/{run_id}"


def pair_tenants(run_id: str, pair_index: int, pair: Pair,
                 scenario: Scenario) -> list[TenantIdentity]:
    """The pair's two tenants with their run-unique synthetic phones."""
    return [TenantIdentity(role=role, alias=pair.tenant(role).alias,
                           phone=synthetic_phone(run_id, 2 * pair_index + offset),
                           language=scenario.language_of(pair.tenant(role)))
            for offset, role in enumerate(("a", "b"))]


def pair_workflow_id(scenario: str, run_id: str, pair_index: int) -> str:
    return f"memlife/{scenario}/{run_id}/pair-{pair_index}"


# Runs of more pairs than this go in cohorts of AUTO_COHORT pairs per workflow.
AUTO_COHORT = 10
AUTO_COHORT_ABOVE = 64


def cohort_size(pairs: int) -> int:
    """A workflow per pair keeps small runs easy to read pair by pair in the Web UI; above
    that, cohorts batch every step's calls (workflows/cohort.py). Measured on the nightly:
    cohorts of 10 ran 100 pairs faster than cohorts of 50 (smaller batches pipeline, as
    long as there are enough cohorts in flight), and at 10,000 pairs with 300 live pairs,
    six cohorts of 50 ran at 110 requests/s where thirty of 10 ran 1,000 pairs at 270. Run
    size no longer matters: the waves (max_active_pairs) bound the workflows in flight."""
    return 0 if pairs <= AUTO_COHORT_ABOVE else AUTO_COHORT


# A worker holds every live pair, roughly its workflow history so far: measured on the
# nightly, 2,000 live pairs took the worker to 1.2 GB and 500 to 610 MB (about 0.7 MB
# each over a 240 MB base). More pairs in flight than this add memory, not throughput: the
# target is the bound, and 100 pairs already keep it busy.
DEFAULT_MAX_ACTIVE_PAIRS = 300


def active_cohorts(cohort_size: int, max_active_pairs: int, cohorts: int) -> int:
    """How many cohorts run at once: as many as `max_active_pairs` allows, at least one."""
    if not max_active_pairs or not cohort_size:
        return cohorts
    return max(1, min(cohorts, max_active_pairs // cohort_size))


def cohort_workflow_id(scenario: str, run_id: str, first_pair: int) -> str:
    return f"memlife/{scenario}/{run_id}/cohort-{first_pair}"
