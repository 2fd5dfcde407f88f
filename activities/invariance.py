"""Neighbour invariance when a run ends: each control twin's answers are set beside its
original's (rules/invariance.py judges them) and the N1 verdicts are written under the
original pair, at the step and stage of the question. A target seen to answer a question
differently when asked it again is judged by rates instead, in one verdict at the run's
last step (stage `run`). Called by finish_run before the run is summarized; idempotent
(rows have deterministic keys)."""

from __future__ import annotations

import json
from typing import Any

from sqlmodel import select

from memlife import recorder
from memlife.rules.invariance import (
    TwinAnswer,
    influence_verdict,
    own_variation,
    twin_links,
    twin_verdict,
)
from memlife.rules.verdicts import CaseVerdict, worst_outcomes


def record_twin_verdicts(run_id: str) -> int:
    """Judge every twin of the run against its original; the number of N1 verdicts."""
    values = recorder.RunValueRow
    with recorder.session() as db:
        stated: dict[int, set[str]] = {}
        for pair, text in db.exec(
            select(values.pair_index, values.text).where(
                values.run_id == run_id, values.role == "a"
            )
        ):
            stated.setdefault(pair, set()).add(text)
    links = twin_links({pair: frozenset(texts) for pair, texts in stated.items()})
    if not links:
        return 0
    pairs = sorted({pair for link in links for pair in link})
    answers, changes = _answers(run_id, pairs)
    by_pair: dict[int, list[TwinAnswer]] = {}
    for (pair, _, _), answer in answers.items():
        by_pair.setdefault(pair, []).append(answer)
    variation = [own_variation(by_pair.get(pair, []), changes.get(pair, [])) for pair in pairs]
    verdicts: list[tuple[int, int, str, CaseVerdict]] = []
    per_link: list[tuple[int, int]] = []
    examples: list[tuple[TwinAnswer, TwinAnswer]] = []
    for original, twin in links:
        differing = compared = 0
        for answer in sorted(by_pair.get(original, []), key=lambda a: (a.step, a.case_id)):
            other = answers.get((twin, answer.step, answer.case_id))
            if other is None:
                continue
            verdict = twin_verdict(answer, other)
            if verdict is None:
                continue
            verdicts.append((original, answer.step, answer.stage, verdict))
            if verdict.outcome != "inconclusive":
                compared += 1
                differing += verdict.outcome == "fail"
                if verdict.outcome == "fail":
                    examples.append((answer, other))
        per_link.append((differing, compared))
    if sum(differing for differing, _ in variation):  # the target varies: judge by rates
        last = max(step for _, step, _ in answers)
        verdicts = [
            (
                links[0][0],
                last,
                "run",
                influence_verdict(
                    per_link, variation, examples, "n1-rates", by_pair[links[0][0]][0].alias
                ),
            )
        ]
    rows: list[dict[str, Any]] = [
        {
            "id": f"{run_id}/{pair}/{step}/{verdict.case_id}",
            "run_id": run_id,
            "pair_index": pair,
            "step_index": step,
            "stage": stage,
            "case_id": verdict.case_id,
            "role": "a",
            "tenant_alias": verdict.tenant_alias,
            "domain": verdict.domain,
            "store": verdict.store,
            "outcome": verdict.outcome,
            "passed": verdict.passed,
            "latency_ms": None,
            "checks_json": recorder.dumps([c.model_dump() for c in verdict.checks]),
            "findings_json": recorder.dumps([f.model_dump() for f in verdict.findings]),
        }
        for pair, step, stage, verdict in verdicts
    ]
    recorder.merge_values({recorder.VerdictRow: rows})
    return len(rows)


# What changes a tenant's facts between two askings of one question (its domain, or all).
_CHANGES = ("register", "write", "update", "delete", "maintain", "space")


def _answers(
    run_id: str, pairs: list[int]
) -> tuple[dict[tuple[int, int, str], TwinAnswer], dict[int, list[tuple[int, str | None]]]]:
    """Tenant a's answers in the pairs, by (pair, step, case), with their checks; and the
    steps at which each pair's tenant a changed (its domain, None for all)."""
    verdicts, observations = recorder.VerdictRow, recorder.ObservationRow
    answers: dict[tuple[int, int, str], TwinAnswer] = {}
    changes: dict[int, list[tuple[int, str | None]]] = {}
    with recorder.session() as db:
        for pair, step, kind, domain in db.exec(
            select(
                observations.pair_index,
                observations.step_index,
                observations.kind,
                observations.domain,
            ).where(
                observations.run_id == run_id,
                observations.role == "a",
                observations.kind.in_(_CHANGES),  # type: ignore[attr-defined]
                observations.pair_index.in_(pairs),
            )
        ):  # type: ignore[attr-defined]
            changes.setdefault(pair, []).append(
                (step, domain if kind in ("write", "update", "delete") else None)
            )
        replies = {
            (pair, step, case): (reply, question)
            for pair, step, case, reply, question in db.exec(
                select(
                    observations.pair_index,
                    observations.step_index,
                    observations.case_id,
                    observations.reply,
                    observations.request,
                ).where(
                    observations.run_id == run_id,
                    observations.kind == "probe",
                    observations.role == "a",
                    observations.pair_index.in_(pairs),
                )
            )
        }  # type: ignore[attr-defined]
        for row in db.exec(
            select(verdicts).where(
                verdicts.run_id == run_id, verdicts.role == "a", verdicts.pair_index.in_(pairs)
            )
        ):  # type: ignore[attr-defined]
            key = (row.pair_index, row.step_index, row.case_id)
            if key not in replies:
                continue  # a store's verdict, or an N1 verdict already written
            answers[key] = TwinAnswer(
                step=row.step_index,
                stage=row.stage,
                case_id=row.case_id,
                domain=row.domain,
                alias=row.tenant_alias,
                checks=worst_outcomes(json.loads(row.checks_json)),
                reply=replies[key][0],
                question=replies[key][1],
            )
    return answers, changes
