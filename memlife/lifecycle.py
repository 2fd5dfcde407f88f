"""Lifecycle contracts and pure logic: what flows between workflows and activities, how
expectations are derived from a pair's state, and how one reply is judged. Pure: no
Temporal, no network, no database (workflows import this module through the sandbox).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memlife.scenario import Pair, Role, Scenario
from memlife.scoring import Expectation, score_reply
from memlife.targets.config import Target

Outcome = Literal["pass", "fail", "inconclusive"]
ClockMode = Literal["real", "skip", "compress"]

# The checks a case can contribute to. I1-I4, U1, D2, L as in DESIGN.md; `recall` is the
# positive half of the seed's rule (own fact present), kept apart from leakage.
INVARIANTS = ("recall", "I1", "I2", "I3", "I4", "U1", "D2", "L")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


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


class RunInput(_Model):
    run_id: str
    scenario: Scenario
    target: Target
    clock: Clock = Clock()
    meta: RunMeta


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


class SayRequest(_Model):
    target: Target
    phone: str
    user_id: str
    message: str
    scenario_now: str


class SayResult(_Model):
    reply: str
    latency_ms: float
    status: int
    wall_time: datetime


class Observation(_Model):
    """One raw result: a request and what came back, or why nothing usable did."""

    seq: int
    role: Role
    kind: Literal["register", "write", "probe", "wait"]
    domain: str | None = None
    case_id: str | None = None
    request: str = ""
    reply: str | None = None
    status: Literal["ok", "target-error"] = "ok"
    http_status: int | None = None
    error: str | None = None
    latency_ms: float | None = None
    scenario_time: datetime
    wall_time: datetime


class ForbiddenValue(_Model):
    text: str
    origin: Literal["partner", "superseded"]
    domain: str
    owner: str


class ProbeCase(_Model):
    case_id: str
    role: Role
    tenant_alias: str
    domain: str
    question: str
    required: list[str] = Field(default_factory=list)
    any_of: list[str] = Field(default_factory=list)
    forbidden: list[ForbiddenValue] = Field(default_factory=list)
    # Why this case cannot be judged (e.g. the write it depends on failed), if so.
    blocked_by: str | None = None


class Finding(_Model):
    invariant: str
    reason: Literal["missing", "leaked", "stale", "slow", "target-error"]
    outcome: Outcome
    store: str = "response"
    value: str | None = None
    detail: str = ""


class Check(_Model):
    invariant: str
    outcome: Outcome


class CaseVerdict(_Model):
    case_id: str
    role: Role
    tenant_alias: str
    domain: str
    passed: bool
    outcome: Outcome
    checks: list[Check]
    findings: list[Finding]
    latency_ms: float | None = None


class StepRecord(_Model):
    run_id: str
    pair_index: int
    step_index: int
    kind: str
    label: str = ""
    scenario_started: datetime
    scenario_finished: datetime
    wall_started: datetime
    wall_finished: datetime
    observations: list[Observation] = Field(default_factory=list)
    cases: list[ProbeCase] = Field(default_factory=list)
    latency_budget_ms: float = 700.0
    tenants: list[TenantIdentity] = Field(default_factory=list)


class PairResult(_Model):
    pair_index: int
    cases: int
    cases_passed: int
    inconclusive: int
    failures: int


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


class PairState:
    """What each tenant of a pair has stated so far; expectations are derived from it."""

    def __init__(self, pair: Pair):
        self.pair = pair
        self.stated: dict[Role, set[str]] = {"a": set(), "b": set()}
        self.unconfirmed: dict[Role, set[str]] = {"a": set(), "b": set()}

    def record_write(self, role: Role, domain: str, confirmed: bool = True) -> None:
        """A write whose request failed may or may not have landed: cases that depend on it
        are inconclusive rather than failed or passed."""
        self.stated[role].add(domain)
        if confirmed:
            self.unconfirmed[role].discard(domain)
        else:
            self.unconfirmed[role].add(domain)

    def recall_case(self, case_id: str, role: Role, domain: str, question: str) -> ProbeCase:
        """Own stated value required; every value of the partner forbidden (each recall
        probe is also a leak probe)."""
        tenant = self.pair.tenant(role)
        partner = self.pair.tenant(other(role))
        required: list[str] = []
        any_of: list[str] = []
        if domain in self.stated[role]:
            fact = tenant.facts[domain]
            if fact.any_of:
                any_of = fact.renderings()
            else:
                required = [fact.value]
        forbidden = [
            ForbiddenValue(text=text, origin="partner", domain=partner_domain,
                           owner=partner.alias)
            for partner_domain, fact in partner.facts.items()
            if partner_domain in self.stated[other(role)]
            for text in fact.renderings()
        ]
        blocked = sorted(
            [f"{tenant.alias}'s {domain} write failed"] * (domain in self.unconfirmed[role])
            + [f"{partner.alias}'s {d} write failed" for d in self.unconfirmed[other(role)]]
        )
        return ProbeCase(case_id=case_id, role=role, tenant_alias=tenant.alias, domain=domain,
                         question=question, required=required, any_of=any_of,
                         forbidden=forbidden, blocked_by="; ".join(blocked) or None)


def pick(templates: list[str], index: int) -> str:
    """Deterministic rotation through paraphrases."""
    return templates[index % len(templates)]


def judge_probe(case: ProbeCase, observation: Observation, latency_budget_ms: float) -> CaseVerdict:
    """Score one reply by the seed's rule, separating missing recall from each leak."""
    findings: list[Finding] = []
    checks: list[Check] = []
    has_recall = bool(case.required or case.any_of)
    leak_invariant = {"partner": "I3", "superseded": "U1"}
    leak_reason = {"partner": "leaked", "superseded": "stale"}
    invariants = ["recall"] if has_recall else []
    invariants += sorted({leak_invariant[f.origin] for f in case.forbidden})

    if observation.status != "ok" or observation.reply is None or case.blocked_by:
        detail = observation.error or case.blocked_by or "no reply"
        for invariant in invariants:
            checks.append(Check(invariant=invariant, outcome="inconclusive"))
            findings.append(Finding(invariant=invariant, reason="target-error",
                                    outcome="inconclusive", detail=detail))
        return CaseVerdict(case_id=case.case_id, role=case.role, tenant_alias=case.tenant_alias,
                           domain=case.domain, passed=False, outcome="inconclusive",
                           checks=checks, findings=findings)

    expectation = Expectation(required=tuple(case.required),
                              forbidden=tuple(f.text for f in case.forbidden),
                              any_of=tuple(case.any_of))
    score = score_reply(observation.reply, expectation)
    if has_recall:
        recall_ok = not score.missing and not score.any_of_missing
        checks.append(Check(invariant="recall", outcome="pass" if recall_ok else "fail"))
        for text in score.missing:
            findings.append(Finding(invariant="recall", reason="missing", outcome="fail",
                                    value=text, detail="own value absent from the reply"))
        if score.any_of_missing:
            findings.append(Finding(invariant="recall", reason="missing", outcome="fail",
                                    value=" | ".join(case.any_of),
                                    detail="none of the accepted renderings is in the reply"))
    leaked = set(score.leaked)
    for invariant in sorted({leak_invariant[f.origin] for f in case.forbidden}):
        relevant = [f for f in case.forbidden if leak_invariant[f.origin] == invariant]
        hits = [f for f in relevant if f.text in leaked]
        checks.append(Check(invariant=invariant, outcome="fail" if hits else "pass"))
        for hit in hits:  # every leak listed on its own
            findings.append(Finding(
                invariant=invariant, reason=leak_reason[hit.origin], outcome="fail",
                value=hit.text,
                detail=f"{hit.owner}'s {hit.domain} value appeared in the reply",
            ))
    if observation.latency_ms is not None:
        slow = observation.latency_ms > latency_budget_ms
        checks.append(Check(invariant="L", outcome="fail" if slow else "pass"))
        if slow:
            findings.append(Finding(
                invariant="L", reason="slow", outcome="fail",
                detail=f"{observation.latency_ms:.1f} ms > budget {latency_budget_ms:g} ms",
            ))
    return CaseVerdict(
        case_id=case.case_id, role=case.role, tenant_alias=case.tenant_alias,
        domain=case.domain, passed=score.passed,
        outcome="pass" if score.passed else "fail",
        checks=checks, findings=findings, latency_ms=observation.latency_ms,
    )


def suite_workflow_id(scenario: str, run_id: str) -> str:
    return f"memlife/{scenario}/{run_id}"


def pair_workflow_id(scenario: str, run_id: str, pair_index: int) -> str:
    return f"memlife/{scenario}/{run_id}/pair-{pair_index}"
