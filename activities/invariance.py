"""Neighbour invariance when a run ends: each control twin's answers are set beside its
original's (rules/invariance.py judges them) and the N1 verdicts are written under the
original pair, at the step and stage of the question. Called by finish_run before the run
is summarized; idempotent (rows have deterministic keys)."""

from __future__ import annotations

import json
from typing import Any

from sqlmodel import select

from memlife import recorder
from memlife.rules.invariance import TwinAnswer, twin_links, twin_verdict
from memlife.rules.verdicts import Outcome

_WORST: dict[str, int] = {"pass": 0, "inconclusive": 1, "fail": 2}


def record_twin_verdicts(run_id: str) -> int:
    """Judge every twin of the run against its original; the number of N1 verdicts."""
    values = recorder.RunValueRow
    with recorder.session() as db:
        stated: dict[int, set[str]] = {}
        for pair, text in db.exec(select(values.pair_index, values.text).where(
                values.run_id == run_id, values.role == "a")):
            stated.setdefault(pair, set()).add(text)
    links = twin_links({pair: frozenset(texts) for pair, texts in stated.items()})
    if not links:
        return 0
    pairs = sorted({pair for link in links for pair in link})
    answers = _answers(run_id, pairs)
    rows: list[dict[str, Any]] = []
    for original, twin in links:
        for (pair, step, case), answer in answers.items():
            other = answers.get((twin, step, case))
            if pair != original or other is None:
                continue
            verdict = twin_verdict(answer, other)
            if verdict is None:
                continue
            rows.append({
                "id": f"{run_id}/{original}/{step}/{verdict.case_id}", "run_id": run_id,
                "pair_index": original, "step_index": step, "stage": answer.stage,
                "case_id": verdict.case_id, "role": "a", "tenant_alias": verdict.tenant_alias,
                "domain": verdict.domain, "store": verdict.store, "outcome": verdict.outcome,
                "passed": verdict.passed, "latency_ms": None,
                "checks_json": recorder.dumps([c.model_dump() for c in verdict.checks]),
                "findings_json": recorder.dumps([f.model_dump() for f in verdict.findings])})
    recorder.merge_values({recorder.VerdictRow: rows})
    return len(rows)


def _answers(run_id: str, pairs: list[int]) -> dict[tuple[int, int, str], TwinAnswer]:
    """Tenant a's answers in the pairs, by (pair, step, case), with their checks."""
    verdicts, observations = recorder.VerdictRow, recorder.ObservationRow
    answers: dict[tuple[int, int, str], TwinAnswer] = {}
    with recorder.session() as db:
        replies = {(pair, step, case): reply for pair, step, case, reply in db.exec(
            select(observations.pair_index, observations.step_index, observations.case_id,
                   observations.reply).where(
                observations.run_id == run_id, observations.kind == "probe",
                observations.role == "a",
                observations.pair_index.in_(pairs)))}  # type: ignore[attr-defined]
        for row in db.exec(select(verdicts).where(
                verdicts.run_id == run_id, verdicts.role == "a",
                verdicts.pair_index.in_(pairs))):  # type: ignore[attr-defined]
            key = (row.pair_index, row.step_index, row.case_id)
            if key not in replies:
                continue  # a store's verdict, or an N1 verdict already written
            checks: dict[str, Outcome] = {}
            for check in json.loads(row.checks_json):
                name, outcome = check["invariant"], check["outcome"]
                if _WORST[outcome] >= _WORST[checks.get(name, "pass")]:
                    checks[name] = outcome
            answers[key] = TwinAnswer(step=row.step_index, stage=row.stage,
                                      case_id=row.case_id, domain=row.domain,
                                      alias=row.tenant_alias, checks=checks,
                                      reply=replies[key])
    return answers
