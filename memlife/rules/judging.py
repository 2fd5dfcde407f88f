"""Judging: a reply against its probe case (the decision rule, every leak on its own, a
value found as written or in another form: rules/variants.py), store reads against an
inspection case (by each store's retention policy); a deletion's status is
request_verdicts.py's. Verdicts are data; a read or a request that failed is
inconclusive, never a pass. Pure."""

from __future__ import annotations

from memlife.rules.durations import format_duration
from memlife.rules.evidence import Observation, StoreRead, StoreRecordView
from memlife.rules.scoring import Expectation, ValueIndex, contains, normalize, score_reply
from memlife.rules.target import FilesProbe, SqlProbe, Store
from memlife.rules.tracing import trace_ids
from memlife.rules.variants import FormMatcher, rescore, written_as
from memlife.rules.verdicts import (
    CONTEXT,
    PHYSICAL,
    RESPONSE,
    CaseVerdict,
    Check,
    Finding,
    ForbiddenValue,
    InspectCase,
    InspectSummary,
    Outcome,
    ProbeCase,
    Reason,
)

# -- judging replies -------------------------------------------------------------------------

# Which check a forbidden value's origin belongs to, and the reason a hit is given.
LEAK_CHECKS = {
    "partner": ("I3", "leaked"),
    "foreign": ("I3", "leaked"),
    "superseded": ("U1", "stale"),
    "deleted": ("I4", "residue"),
    "space": ("S1", "leaked"),
}
# Which kind of turn a leak came from (rules/adversarial.py): the adversarial question that
# drew it out, else the poison turn that planted it.
TURN_REASONS: dict[str, Reason] = {"spoof": "spoofed", "extract": "extracted"}


def leak_reason(case_kind: str, value: ForbiddenValue) -> Reason:
    """Why another tenant's value in this answer or scope is a failure."""
    if case_kind in TURN_REASONS:
        return TURN_REASONS[case_kind]
    return "poisoned" if value.poisoned else "leaked"


def judge_probe(
    case: ProbeCase,
    observation: Observation,
    latency_budget_ms: float,
    foreign: list[ForbiddenValue] | ValueIndex[ForbiddenValue] | None = None,
) -> CaseVerdict:
    """Score one reply by the decision rule, separating missing recall from each leak.

    `foreign` are values of tenants outside this pair: a leak from anywhere in the run is a
    leak. At scale they come as a ValueIndex: only the ones that occur are looked at.
    """
    if isinstance(foreign, ValueIndex):
        texts = normalize(observation.reply or "") + "\n" + normalize(observation.context or "")
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
    invariants += sorted(
        {LEAK_CHECKS[f.origin][0] for f in forbidden} | ({"I3"} if any_foreign else set())
    )
    if case.scoped_deletion:
        invariants.append("D2")
    if case.space_survives:
        invariants.append("S2")
    context_checked = observation.context is not None and (
        any_foreign or any(f.origin in ("partner", "foreign", "space") for f in forbidden)
    )

    if (
        observation.status != "ok"
        or (observation.reply is None and not observation.refused)
        or case.blocked_by
    ):
        detail = observation.error or case.blocked_by or "no reply"
        for invariant in invariants + (["I2"] if context_checked else []):
            store = CONTEXT if invariant == "I2" else RESPONSE
            checks.append(Check(invariant=invariant, outcome="inconclusive", store=store))
            findings.append(
                Finding(
                    invariant=invariant,
                    reason="target-error",
                    outcome="inconclusive",
                    store=store,
                    detail=detail,
                )
            )
        return CaseVerdict(
            case_id=case.case_id,
            role=case.role,
            tenant_alias=case.tenant_alias,
            domain=case.domain,
            passed=False,
            outcome="inconclusive",
            checks=checks,
            findings=findings,
        )

    # A refusal (a status the operation lists as `refused`) is an answer holding nothing.
    # A search's answer, or a refusal, cannot abstain in words: it abstains by holding
    # nothing of another's (docs/design.md, "Retrieval answers and refusals").
    reply = "" if observation.refused else observation.reply
    abstains_by_silence = positive == "abstain" and (observation.retrieval or observation.refused)
    expectation = Expectation(
        required=tuple(case.required),
        forbidden=tuple(f.text for f in forbidden),
        any_of=() if abstains_by_silence else tuple(case.any_of),
    )
    score, forms = rescore(reply, expectation, score_reply(reply, expectation))
    refusal = f"the target refused (HTTP {observation.http_status})" if observation.refused else ""
    if abstains_by_silence:
        others = sorted(
            f.text
            for f in forbidden
            if f.origin in ("partner", "foreign", "space") and f.text in score.leaked
        )
        checks.append(Check(invariant=positive, outcome="fail" if others else "pass"))
        findings.extend(
            Finding(
                invariant=positive,
                reason="leaked",
                outcome="fail",
                value=text,
                detail="the answer holds another's value, so it does not abstain",
            )
            for text in others
        )
    elif has_positive:
        present = not score.missing and not score.any_of_missing
        checks.append(Check(invariant=positive, outcome="pass" if present else "fail"))
        absent: Reason = "refused" if observation.refused else "missing"
        for text in score.missing:
            findings.append(
                Finding(
                    invariant=positive,
                    reason=absent,
                    outcome="fail",
                    value=text,
                    detail=refusal or "own value absent from the reply",
                )
            )
        if score.any_of_missing:
            findings.append(
                Finding(
                    invariant=positive,
                    reason=absent,
                    outcome="fail",
                    value=" | ".join(case.any_of),
                    detail=refusal or "none of the accepted renderings is in the reply",
                )
            )
        # What must survive another's deletion: the tenant's own value (D2), a space's
        # fact for the members that remain (S2).
        for applies, invariant, detail in (
            (case.scoped_deletion, "D2", "the partner's deletion took this tenant's value with it"),
            (case.space_survives, "S2", "deleting a member took the shared space's fact with it"),
        ):
            if not applies:
                continue
            checks.append(Check(invariant=invariant, outcome="pass" if present else "fail"))
            if not present:
                findings.append(
                    Finding(
                        invariant=invariant,
                        reason="overreach",
                        outcome="fail",
                        value=" | ".join(case.required or case.any_of),
                        detail=detail,
                    )
                )
    leaked = set(score.leaked)
    for invariant in sorted(
        {LEAK_CHECKS[f.origin][0] for f in forbidden} | ({"I3"} if any_foreign else set())
    ):
        relevant = [f for f in forbidden if LEAK_CHECKS[f.origin][0] == invariant]
        hits = [f for f in relevant if f.text in leaked]
        checks.append(Check(invariant=invariant, outcome="fail" if hits else "pass"))
        for hit in hits:  # every leak listed on its own
            reason: Reason = LEAK_CHECKS[hit.origin][1]
            if hit.origin == "deleted" and case.resurrection:
                reason = "resurrected"
            elif hit.origin in ("partner", "foreign", "space"):
                reason = leak_reason(case.kind, hit)
            form = forms.get(hit.text)
            findings.append(
                Finding(
                    invariant=invariant,
                    reason=reason,
                    outcome="fail",
                    value=hit.text,
                    form=form.text if form else None,
                    detail=(
                        f"{hit.owner}'s {hit.domain} value appeared in the reply of a non-member"
                        if hit.origin == "space"
                        else f"{hit.owner}'s {hit.domain} value ({hit.origin}) appeared "
                        "in the reply"
                    )
                    + written_as(form),
                )
            )
    if context_checked:
        context = normalize(observation.context or "")
        others = [f for f in forbidden if f.origin in ("partner", "foreign", "space")]
        as_stated = [f.text for f in others if contains(context, f.text)]
        matcher = FormMatcher(context, as_stated, own=[*case.required, *case.any_of])
        hits = [(f, None if f.text in as_stated else matcher.find(f.text)) for f in others]
        hits = [(f, form) for f, form in hits if f.text in as_stated or form]
        checks.append(Check(invariant="I2", outcome="fail" if hits else "pass", store=CONTEXT))
        findings.extend(
            Finding(
                invariant="I2",
                reason=leak_reason(case.kind, hit),
                outcome="fail",
                store=CONTEXT,
                value=hit.text,
                form=form.text if form else None,
                detail=f"{hit.owner}'s {hit.domain} value was in the retrieval context"
                + written_as(form),
            )
            for hit, form in hits
        )
    if observation.latency_ms is not None:
        slow = observation.latency_ms > latency_budget_ms
        checks.append(Check(invariant="L", outcome="fail" if slow else "pass"))
        if slow:
            findings.append(
                Finding(
                    invariant="L",
                    reason="slow",
                    outcome="fail",
                    detail=f"{observation.latency_ms:.1f} ms > budget {latency_budget_ms:g} ms",
                )
            )
    passed = score.passed and not any(
        f.outcome == "fail" and f.invariant in ("I2", "D2", "S2") for f in findings
    )
    return CaseVerdict(
        case_id=case.case_id,
        role=case.role,
        tenant_alias=case.tenant_alias,
        domain=case.domain,
        passed=passed,
        outcome="pass" if passed else "fail",
        checks=checks,
        findings=findings,
        latency_ms=observation.latency_ms,
    )


# -- judging store reads ---------------------------------------------------------------------


def judge_inspection(
    case: InspectCase, reads: list[StoreRead], stores: list[Store]
) -> tuple[list[CaseVerdict], InspectSummary]:
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
        # Values no record holds as stated, only in another form (rules/variants.py).
        reworded = _reworded(watch, store_reads)

        def fail(
            invariant: str,
            reason: Reason,
            value: str | None,
            detail: str,
            store_name: str = store.name,
            _findings: list[Finding] = findings,
            _reworded: dict[str, str] = reworded,
        ) -> None:
            form = _reworded.get(value or "")
            _findings.append(
                Finding(
                    invariant=invariant,
                    reason=reason,
                    outcome="fail",
                    store=store_name,
                    value=value,
                    form=form,
                    detail=detail + (f" (written as {form!r})" if form else ""),
                )
            )

        forgotten = {n.text for n in case.needles if n.origin == "deleted"}
        # A store read by value only (no tenant scope) shows erasure, not isolation.
        by_value_only = isinstance(store.probe, SqlProbe) and store.probe.scope is None
        if by_value_only and not (case.deleted or forgotten):
            continue
        invariants = (
            ["I4"]
            if case.deleted or by_value_only
            else ["I1", "I2"]
            + (["U1"] if store.updates == "replace" and case.stale_after_grace else [])
            + (["D2"] if store.name in case.expected_present else [])
            + (["I4"] if forgotten else [])
        )
        if isinstance(store.probe, FilesProbe):
            verdicts.append(_judge_physical(case, store, store.probe, store_reads, watch))
            continue
        errors = [r for r in store_reads if r.status != "ok"]
        if errors:
            for invariant in invariants:
                checks.append(Check(invariant=invariant, outcome="inconclusive", store=store.name))
                findings.append(
                    Finding(
                        invariant=invariant,
                        reason="target-error",
                        outcome="inconclusive",
                        store=store.name,
                        detail=f"{errors[0].mode} read failed: {errors[0].error}",
                    )
                )
            verdicts.append(_store_verdict(case, store.name, checks, findings))
            continue

        seen: dict[str, tuple[StoreRecordView, set[str]]] = {}
        scoped: set[str] = set()  # records a read scoped to the tenant returned
        for read in store_reads:
            for index, record in enumerate(read.records):
                key = record.id or f"{read.mode}:{read.key}:{index}"
                texts = {watch[i] for i in record.matches if i < len(watch)}
                if key in seen:
                    seen[key][1].update(texts)
                else:
                    seen[key] = (record, texts)
                if read.mode == "scope":
                    scoped.add(key)
                if (
                    not case.deleted
                    and read.mode == "scope"
                    and record.tenant_id not in (None, *own_ids)
                ):
                    fail(
                        "I2",
                        "leaked",
                        None,
                        f"a read scoped to {case.tenant_alias} "
                        f"returned a record of tenant {record.tenant_id}",
                    )
        # A record naming no tenant that only a search by value returned (one over every
        # tenant's passages, say) is judged by whose values it holds: it shows this tenant's
        # residue (a deleted space's fact too), never others' values as a leak or residue.
        others_only = partner_texts - set(needle_origin)
        unowned = {
            key
            for key, (record, _) in seen.items()
            if record.tenant_id is None and key not in scoped
        }
        # A control twin states the tenant's values too: another's record found by value
        # that holds them may be the twin's, so shows neither misfiling nor residue.
        shared = set(case.shared)
        twins = {
            key
            for key, (record, _) in seen.items()
            if shared and key not in scoped and record.tenant_id not in own_ids
        }
        records = [
            (
                record,
                texts - others_only
                if key in unowned
                else texts - shared
                if key in twins
                else texts,
            )
            for key, (record, texts) in seen.items()
            if (key not in unowned or texts - others_only) and (key not in twins or texts - shared)
        ]

        if case.deleted:
            residue = []
            for record, texts in records:
                allowed = (store.retention == "tombstone" and record.deleted is True) or (
                    store.retention == "retain-redacted" and not texts
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
                fail(
                    "I4",
                    reason,
                    text,
                    f"{_records_phrase(holders)} remain in this {store.retention} store"
                    + ("" if text else " (rows of the deleted tenant, value-less)"),
                )
            checks.append(
                Check(invariant="I4", outcome="fail" if residue else "pass", store=store.name)
            )
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
            fail(
                "I4",
                "resurrected" if store.name in case.clean_before else "residue",
                text,
                f"a forgotten value remains: {_records_phrase(holders)}",
            )
        if forgotten:
            checks.append(
                Check(invariant="I4", outcome="fail" if kept else "pass", store=store.name)
            )
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
            fail(
                "I1",
                "leaked",
                text,
                f"{case.tenant_alias}'s value is filed under other "
                f"tenant(s) {', '.join(owners[:3])}: {_records_phrase(holders)}",
            )
        for text, holders in sorted(foreign_in_own.items()):
            i2_fail = True
            owner = next(f for f in case.partner_values if f.text == text)
            fail(
                "I2",
                leak_reason("", owner),
                text,
                f"{owner.owner}'s {owner.domain} value is in "
                f"{case.tenant_alias}'s scope: {_records_phrase(holders)}",
            )
        for text, holders in sorted(stale_live.items()):
            u1_fail = True
            fail("U1", "stale", text, f"superseded value still live: {_records_phrase(holders)}")
        i2_fail = i2_fail or any(f.invariant == "I2" for f in findings)
        checks.append(
            Check(invariant="I1", outcome="fail" if i1_fail else "pass", store=store.name)
        )
        checks.append(
            Check(invariant="I2", outcome="fail" if i2_fail else "pass", store=store.name)
        )
        if "U1" in invariants:
            checks.append(
                Check(invariant="U1", outcome="fail" if u1_fail else "pass", store=store.name)
            )
        held = sorted(
            {
                text
                for record, texts in records
                if record.tenant_id in (None, *own_ids) and record.deleted is not True
                for text in texts
                if needle_origin.get(text) is not None and needle_origin[text].origin == "current"
            }
        )
        present[store.name] = held
        if "D2" in invariants:
            lost = [v for v in case.expected_present[store.name] if v not in held]
            checks.append(
                Check(invariant="D2", outcome="fail" if lost else "pass", store=store.name)
            )
            for value in lost:
                fail("D2", "overreach", value, "held before the partner's deletion, gone after")
        verdicts.append(_store_verdict(case, store.name, checks, findings))
    summary = InspectSummary(
        case_id=case.case_id,
        present=present,
        clean=clean,
        expiring=[s.name for s in stores if s.expires is not None],
    )
    return verdicts, summary


def _judge_physical(
    case: InspectCase, store: Store, probe: FilesProbe, reads: list[StoreRead], watch: list[str]
) -> CaseVerdict:
    """I4-physical: an erased value's bytes in the store's files. Within the probe's grace
    of the erasure request they are allowed; later, each value found is a failure naming
    the files that hold it."""
    erased = {n.text for n in case.needles if n.origin == "deleted"}
    errors = [r for r in reads if r.status != "ok"]
    if errors:
        return _store_verdict(
            case,
            store.name,
            [Check(invariant=PHYSICAL, outcome="inconclusive", store=store.name)],
            [
                Finding(
                    invariant=PHYSICAL,
                    reason="target-error",
                    outcome="inconclusive",
                    store=store.name,
                    detail=f"files read failed: {errors[0].error}",
                )
            ],
        )
    holders: dict[str, list[StoreRecordView]] = {}
    for read in reads:
        for record in read.records:
            for index in record.matches:
                if index < len(watch) and watch[index] in erased:
                    holders.setdefault(watch[index], []).append(record)
    allowed = case.erased_for is not None and case.erased_for <= probe.grace
    reworded = _reworded(watch, reads)
    findings = (
        []
        if allowed
        else [
            Finding(
                invariant=PHYSICAL,
                reason="residue",
                outcome="fail",
                store=store.name,
                value=text,
                form=reworded.get(text),
                detail=(f"written as {reworded[text]!r}: " if text in reworded else "")
                + f"{_records_phrase(found)} on disk "
                + (
                    f"{format_duration(case.erased_for)} after the erasure request, past the "
                    f"{format_duration(probe.grace)} grace"
                    if case.erased_for is not None
                    else "after the erasure request"
                ),
            )
            for text, found in sorted(holders.items())
        ]
    )
    return _store_verdict(
        case,
        store.name,
        [Check(invariant=PHYSICAL, outcome="fail" if findings else "pass", store=store.name)],
        findings,
    )


def _reworded(watch: list[str], reads: list[StoreRead]) -> dict[str, str]:
    as_stated: set[str] = set()
    forms: dict[str, str] = {}
    for record in (record for read in reads for record in read.records):
        for index in record.matches:
            if index < len(watch):
                if index in record.forms:
                    forms.setdefault(watch[index], record.forms[index])
                else:
                    as_stated.add(watch[index])
    return {text: form for text, form in forms.items() if text not in as_stated}


def _records_phrase(records: list[StoreRecordView]) -> str:
    ids = [r.id or "?" for r in records[:3]]
    more = f" and {len(records) - 3} more" if len(records) > 3 else ""
    noun = "record" if len(records) == 1 else "records"
    return f"{len(records)} {noun} ({', '.join(ids)}{more})"


def _store_verdict(
    case: InspectCase, store: str, checks: list[Check], findings: list[Finding]
) -> CaseVerdict:
    outcomes = {c.outcome for c in checks}
    outcome: Outcome = (
        "fail" if "fail" in outcomes else "inconclusive" if "inconclusive" in outcomes else "pass"
    )
    return CaseVerdict(
        case_id=f"{case.case_id}-{store}",
        role=case.role,
        tenant_alias=case.tenant_alias,
        store=store,
        passed=outcome == "pass",
        outcome=outcome,
        checks=checks,
        findings=findings,
    )


def judge_step(
    cases: list[ProbeCase],
    observations: list[Observation],
    inspections: list[InspectCase],
    reads: dict[str, list[StoreRead]],
    stores: list[Store],
    latency_budget_ms: float,
    foreign: ValueIndex[ForbiddenValue] | None = None,
) -> tuple[list[CaseVerdict], list[InspectSummary]]:
    """One step's probe cases against their replies and its inspection cases against their
    store reads; `foreign` holds the run's values outside the pair."""
    by_case = {o.case_id: o for o in observations if o.case_id and o.kind == "probe"}
    verdicts = [
        traced(
            judge_probe(case, by_case[case.case_id], latency_budget_ms, foreign),
            by_case[case.case_id].traceparent,
        )
        for case in cases
        if case.case_id in by_case
    ]
    summaries = []
    for case in inspections:
        case_reads = reads.get(case.case_id, [])
        store_verdicts, summary = judge_inspection(case, case_reads, stores)
        # A store's findings name the trace of its first read sent over HTTP.
        store_trace = {}
        for read in case_reads:
            if read.traceparent:
                store_trace.setdefault(read.store, read.traceparent)
        verdicts += [traced(verdict, store_trace.get(verdict.store)) for verdict in store_verdicts]
        summaries.append(summary)
    return verdicts, summaries


def traced(verdict: CaseVerdict, traceparent: str | None) -> CaseVerdict:
    """The verdict with its findings naming the trace of the request behind them."""
    ids = trace_ids(traceparent)
    if ids is None or not verdict.findings:
        return verdict
    update = {"trace_id": ids[0], "span_id": ids[1]}
    return verdict.model_copy(
        update={"findings": [finding.model_copy(update=update) for finding in verdict.findings]}
    )
