"""Paraphrase candidates when a run ends (`memlife run --review --paraphrases`): every
answer that held no value of the partner in any form is embedded with a local model
(all-MiniLM-L6-v2 from PyPI, as the scripted model and realstack use: no network, no paid
model) beside the pair's statements; those closer in meaning to the partner's than to the
tenant's own (rules/paraphrase.py) go to the blinded review queue, never to a verdict.
The run records how many (its meta `paraphrase_candidates`)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any, NamedTuple

from sqlmodel import select
from temporalio import activity
from temporalio.exceptions import ApplicationError

from memlife import contracts, recorder
from memlife.activities.review import enqueue
from memlife.log import get_logger
from memlife.rules.adjudication import ReviewItem, ticket_for
from memlife.rules.paraphrase import Statement, close_statements
from memlife.rules.scoring import normalize
from memlife.rules.verdicts import COPY_CHECKS, Outcome, worst_outcomes

log = get_logger("memlife.activities.paraphrase")


class _Answer(NamedTuple):
    pair: int
    step: int
    stage: str
    case_id: str
    role: str
    alias: str
    domain: str
    question: str
    reply: str
    kind: str


@activity.defn(name=contracts.QUEUE_PARAPHRASES.name)
async def queue_paraphrases(run_id: str, queue: str) -> int:
    """Queue the run's paraphrase candidates for review; how many were queued."""
    try:
        from memlife.embeddings import shared

        await asyncio.to_thread(shared().embed, [run_id])  # loads the model, or cannot
    except ImportError as error:
        raise ApplicationError(
            f"paraphrase candidates need the local embedding model ({error}): install "
            "memlife[model] into the worker's environment",
            type="ParaphraseModelMissing",
            non_retryable=True,
        ) from None
    answers, statements, values = await asyncio.to_thread(_load, run_id)
    items = await asyncio.to_thread(_candidates, run_id, answers, statements, values)
    if items:
        await enqueue(queue, items)
    await asyncio.to_thread(_record_count, run_id, len(items))
    log.info("paraphrase candidates", run_id=run_id, answers=len(answers), queued=len(items))
    return len(items)


def _load(
    run_id: str,
) -> tuple[
    list[_Answer], dict[tuple[int, str], list[Statement]], dict[tuple[int, str, str], list[str]]
]:
    observations, verdicts, run_values = (
        recorder.ObservationRow,
        recorder.VerdictRow,
        recorder.RunValueRow,
    )
    values: dict[tuple[int, str, str], list[str]] = {}
    statements: dict[tuple[int, str], list[Statement]] = {}
    answers = []
    with recorder.session() as db:
        for pair, role, domain, text in db.exec(
            select(
                run_values.pair_index, run_values.role, run_values.domain, run_values.text
            ).where(run_values.run_id == run_id)
        ):
            values.setdefault((pair, role, domain), []).append(text)
        checks: dict[tuple[int, int, str], tuple[str, dict[str, Outcome]]] = {
            (row.pair_index, row.step_index, row.case_id): (
                row.stage,
                worst_outcomes(json.loads(row.checks_json)),
            )
            for row in db.exec(
                select(verdicts).where(verdicts.run_id == run_id, verdicts.store == "response")
            )
        }
        for row in db.exec(
            select(observations).where(
                observations.run_id == run_id,
                observations.kind.in_(("write", "update", "probe")),  # type: ignore[attr-defined]
                observations.status == "ok",
            )
        ):
            if row.kind != "probe":
                stated = [
                    v
                    for v in values.get((row.pair_index, row.role, row.domain or ""), [])
                    if normalize(v) in normalize(row.request)
                ]
                if stated:
                    statements.setdefault((row.pair_index, row.role), []).append(
                        Statement(row.request, stated[0])
                    )
                continue
            judged = checks.get((row.pair_index, row.step_index, row.case_id or ""))
            if (
                not row.reply
                or judged is None
                or any(judged[1].get(name, "pass") != "pass" for name in COPY_CHECKS)
            ):
                continue
            answers.append(
                _Answer(
                    row.pair_index,
                    row.step_index,
                    judged[0],
                    row.case_id or "",
                    row.role,
                    row.tenant_alias,
                    row.domain or "",
                    row.request,
                    row.reply,
                    "abstain" if "abstain" in judged[1] else "recall",
                )
            )
    return answers, statements, values


def _candidates(
    run_id: str,
    answers: list[_Answer],
    statements: dict[tuple[int, str], list[Statement]],
    values: dict[tuple[int, str, str], list[str]],
) -> list[ReviewItem]:
    from memlife.embeddings import shared

    texts = [a.reply for a in answers] + [s.text for group in statements.values() for s in group]
    vectors = dict(zip(texts, shared().embed(texts), strict=True))
    # Every value of each tenant, for the words a candidate must not share with its own.
    owned: dict[tuple[int, str], list[str]] = {}
    for (pair, role, _), texts in values.items():
        owned.setdefault((pair, role), []).extend(texts)
    items = []
    for answer in answers:
        partner_role = "b" if answer.role == "a" else "a"
        own = [(s, vectors[s.text]) for s in statements.get((answer.pair, answer.role), [])]
        partner = [(s, vectors[s.text]) for s in statements.get((answer.pair, partner_role), [])]
        close = list(
            dict.fromkeys(
                s.value
                for s in close_statements(
                    vectors[answer.reply],
                    answer.reply,
                    own,
                    partner,
                    owned.get((answer.pair, answer.role), []),
                )
            )
        )
        if not close:
            continue
        ticket = ticket_for(f"{run_id}/{answer.pair}/{answer.step}/{answer.case_id}/paraphrase")
        mine = values.get((answer.pair, answer.role, answer.domain), [])
        candidates = sorted(
            dict.fromkeys([*mine, *close]),
            key=lambda v: hashlib.sha256(f"{ticket}/{v}".encode()).hexdigest(),
        )
        items.append(
            ReviewItem(
                ticket=ticket,
                question=answer.question,
                reply=answer.reply,
                candidates=candidates,
                run_id=run_id,
                pair_index=answer.pair,
                step_index=answer.step,
                stage=answer.stage,
                case_id=answer.case_id,
                tenant_alias=answer.alias,
                kind="abstain" if answer.kind == "abstain" else "recall",
                forbidden={"I3": close},
                exact={"I3": "pass"},
            )
        )
    return items


def _record_count(run_id: str, count: int) -> None:
    with recorder.session() as db:
        run = db.get(recorder.RunRow, run_id)
        if run is None:
            return
        meta: dict[str, Any] = json.loads(run.meta_json)
        meta["paraphrase_candidates"] = count
        run.meta_json = json.dumps(meta)
        db.add(run)
