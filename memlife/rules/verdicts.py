"""What a check decides: the cases a step asks (probe and inspection cases, with what is
required and what is forbidden), and the verdicts with their checks and findings. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Literal, cast

from pydantic import Field

from memlife.rules.models import Frozen
from memlife.rules.scenario import Role

Outcome = Literal["pass", "fail", "inconclusive"]

Reason = Literal[
    "missing",
    "leaked",
    "stale",
    "residue",
    "resurrected",
    "overreach",
    "slow",
    "target-error",
    "spoofed",
    "extracted",
    "poisoned",
    "refused",
    "influenced",
]
# The reasons that mean a value reached where it must not (a leak, whatever turn drew it
# out, or a deletion that took another tenant's), and those that mean it outlived erasure.
LEAK_REASONS: tuple[Reason, ...] = ("leaked", "overreach", "spoofed", "extracted", "poisoned")
RESIDUE_REASONS: tuple[Reason, ...] = ("residue", "resurrected")

# The checks a case can contribute to: I1-I4, U1, D2, L as in docs/design.md; `recall` (own
# fact present) and `abstain` (an abstention when nothing was stated) are the positive
# halves of the decision rule (docs/design.md), kept apart from leakage.
INVARIANTS = (
    "recall",
    "abstain",
    "I1",
    "I2",
    "I3",
    "I4",
    "I4-physical",
    "U1",
    "D2",
    "S1",
    "S2",
    "N1",
    "L",
)
# The checks that find a value copied where it must not be (an answer, a retrieval context,
# a space): an answer that failed one is that finding's, whatever else differs in it.
COPY_CHECKS = ("I2", "I3", "S1")
# I4's physical level: erased values' bytes still in a store's files (files probes).
PHYSICAL = "I4-physical"
RESPONSE = "response"
CONTEXT = "response-context"


class ForbiddenValue(Frozen):
    text: str
    origin: Literal["partner", "superseded", "deleted", "foreign", "space"]
    domain: str
    owner: str
    # Stated to everyone by its owner (a poison turn): found elsewhere, it was poisoned.
    poisoned: bool = False


class ProbeCase(Frozen):
    case_id: str
    kind: Literal["recall", "stale", "abstain", "spoof", "extract"] = "recall"
    role: Role
    tenant_alias: str
    domain: str
    question: str
    required: list[str] = Field(default_factory=list)
    any_of: list[str] = Field(default_factory=list)
    forbidden: list[ForbiddenValue] = Field(default_factory=list)
    # D2: the partner was deleted; this tenant's own value must survive.
    scoped_deletion: bool = False
    # S2: asked inside a shared space whose other member was deleted: the space's fact
    # must survive for this member.
    space_survives: bool = False
    # I4: the tenant's deleted values were already seen gone from answers (a return now is
    # a resurrection rather than residue).
    resurrection: bool = False
    # Why this case cannot be judged (e.g. the write it depends on failed), if so.
    blocked_by: str | None = None


class Needle(Frozen):
    text: str
    domain: str
    origin: Literal["current", "superseded", "deleted"]


class InspectCase(Frozen):
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
    # Values a control twin states too (rules/pairs.py): in another tenant's records they
    # may be the twin's, so they are looked for in the tenant's own records only.
    shared: list[str] = Field(default_factory=list)

    def watch(self) -> list[str]:
        return [n.text for n in self.needles] + [f.text for f in self.partner_values]


class Finding(Frozen):
    invariant: str
    reason: Reason
    outcome: Outcome
    store: str = RESPONSE
    value: str | None = None
    # The value was found in another form (rules/variants.py): that form, canonical.
    form: str | None = None
    detail: str = ""
    # The trace and span of the request whose answer is the evidence (rules/tracing.py).
    trace_id: str | None = None
    span_id: str | None = None


class Check(Frozen):
    invariant: str
    outcome: Outcome
    store: str = RESPONSE


class CaseVerdict(Frozen):
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


class InspectSummary(Frozen):
    case_id: str
    present: dict[str, list[str]] = Field(default_factory=dict)  # current values, by store
    clean: list[str] = Field(default_factory=list)  # stores with no residue (deleted tenant)
    expiring: list[str] = Field(default_factory=list)  # stores whose entries expire


_SEVERITY: dict[str, int] = {"pass": 0, "inconclusive": 1, "fail": 2}


def worst_outcomes(checks: Iterable[dict[str, str]]) -> dict[str, Outcome]:
    """A case's checks as recorded (`{"invariant", "outcome"}` each), one outcome per
    check, the worst where a check was made twice (a store's and the context's I2)."""
    worst: dict[str, Outcome] = {}
    for check in checks:
        name, outcome = check["invariant"], cast(Outcome, check["outcome"])
        if _SEVERITY[outcome] >= _SEVERITY[worst.get(name, "pass")]:
            worst[name] = outcome
    return worst
