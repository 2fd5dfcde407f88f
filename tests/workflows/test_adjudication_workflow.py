"""Blinded adjudication end to end on the dev server: a leaky run queues its
failed answers, reviewers decide through the `decide` update, decisions are recorded and
reports give exact-match and adjudicated rates apart. The model judge is exercised against
a stand-in OpenAI-compatible server. The dev server, not the time-skipping one: the latter
loses update outcomes under load (tests/conftest.py, dev_client)."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from io import StringIO
from typing import Any

import pytest
from fastapi import FastAPI, Header, HTTPException, Request
from temporalio.client import Client, WorkflowUpdateFailedError

from memlife import recorder
from memlife.activities.review import review_workflow_id
from memlife.cli import main, review
from memlife.recorder.builder import build_artifact
from memlife.reports import scorecard
from memlife.rules.adjudication import Decision
from memlife.rules.scenario import Scenario
from memlife.rules.target import Target
from tests.servers import serve_in_thread
from tests.workflows.helpers import run_input, run_suite


async def leaky_run_with_review(
    client: Client, task_queue: str, scenario: Scenario, target: Target
) -> tuple[str, str]:
    queue = f"q-{uuid.uuid4().hex[:6]}"
    run = run_input(scenario, target).model_copy(update={"review_queue": queue})
    summary = await run_suite(client, task_queue, run)
    assert not summary.passed  # six leaks: six failed answers queued
    return queue, run.run_id


def own_value_only(item: dict[str, Any]) -> review.Verdict:
    """A reviewer who reads every reply as stating the first value it mentions only."""
    first = min(
        (item["reply"].find(v), i) for i, v in enumerate(item["candidates"]) if v in item["reply"]
    )
    return review.Verdict([first[1]], False)


async def test_reviewers_decide_blind_and_reports_show_both_rates(
    dev_client: Client, dev_worker: str, seed_scenario: Scenario, leaky_target: Target, db_url: str
) -> None:
    queue, run_id = await leaky_run_with_review(dev_client, dev_worker, seed_scenario, leaky_target)
    handle = dev_client.get_workflow_handle(review_workflow_id(queue))
    pending = await handle.query("pending", 50)
    assert len(pending) == 6
    assert all(set(item) == {"ticket", "question", "reply", "candidates"} for item in pending)

    # A decision the workflow cannot accept is refused before anything is recorded.
    for refused in (
        Decision(ticket="nope", reviewer="mallory"),
        Decision(ticket=pending[0]["ticket"], asserted=[99], reviewer="mallory"),
    ):
        try:
            recorded = await review.decide(handle, refused)
        except WorkflowUpdateFailedError:
            recorded = False
        assert not recorded
    assert len(await handle.query("pending", 50)) == 6
    assert "mallory" not in (await handle.query("status"))["reviewers"]

    out = StringIO()
    counts = await review.review(dev_client, queue, "alice", judge=own_value_only, limit=4, out=out)
    assert counts == {"decided": 4, "skipped": 0}, out.getvalue()
    shown = out.getvalue()
    assert not re.search(r"\b(ana|bruno|pair)\b", shown) and run_id not in shown
    answers = iter(["s", "1 2", "q"])  # skip one, decide one, quit
    counts = await review.review(
        dev_client, queue, "bob", ask=lambda _prompt: next(answers), out=out
    )
    assert counts == {"decided": 1, "skipped": 1}
    status = await handle.query("status")
    assert status == {"pending": 1, "decided": 5, "reviewers": {"alice": 4, "bob": 1}}

    # The decisions reach the recorder (an activity after each update).
    for _ in range(50):
        loaded = recorder.load_run(run_id, db_url)
        assert loaded is not None
        if len(loaded["adjudications"]) == 5:
            break
        await asyncio.sleep(1)
    artifact = build_artifact(loaded)
    decided = artifact.adjudications
    assert {d.reviewer for d in decided} == {"alice", "bob"}
    alice = [d for d in decided if d.reviewer == "alice"]
    assert all(d.exact["I3"] == "fail" and d.adjudicated["I3"] == "pass" for d in alice)
    card = scorecard(artifact)
    assert card.rates["response isolation"].rate == 0.0
    assert card.adjudicated_rates["response isolation"].successes == 4
    # Recall passed by exact match everywhere; the reviewers' reading moves it case by case.
    assert card.rates["recall"].successes == 6
    overturned = sum(1 for d in decided if d.adjudicated["recall"] == "fail")
    assert card.adjudicated_rates["recall"].successes == 6 - overturned


def stand_in_judge(key: str, clients: list[tuple[str, int]] | None = None) -> FastAPI:
    """Follows the shape of OpenAI's chat completions API (a stand-in, not a model): it
    states the candidates that appear in the reply after "Reply:". Each request's client
    address goes to `clients`: one connection shows as one port."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    def complete(
        request: Request, body: dict[str, Any], authorization: str = Header("")
    ) -> dict[str, Any]:
        if clients is not None and request.client is not None:
            clients.append((request.client.host, request.client.port))
        if authorization != f"Bearer {key}":
            raise HTTPException(401, "bad key")
        prompt = body["messages"][0]["content"]
        reply = re.search(r"^Reply: (.*)$", prompt, re.M).group(1)  # type: ignore[union-attr]
        candidates = re.findall(r"^(\d+)\. (.*)$", prompt, re.M)
        stated = [int(n) for n, value in candidates if value in reply]
        content = json.dumps({"stated": stated, "abstains": not stated})
        return {
            "id": "stand-in",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            ],
        }

    return app


async def test_a_model_judge_can_take_the_reviewers_place(
    dev_client: Client,
    dev_worker: str,
    seed_scenario: Scenario,
    leaky_target: Target,
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    queue, run_id = await leaky_run_with_review(dev_client, dev_worker, seed_scenario, leaky_target)
    clients: list[tuple[str, int]] = []
    with serve_in_thread(stand_in_judge("sk-test", clients)) as base:

        def judge(item: dict[str, Any]) -> review.Verdict:
            return review.judge_with_model(f"{base}/v1", "stand-in", "wrong", item)

        # A judge that fails decides nothing: every item is left for a person.
        counts = await review.review(
            dev_client, queue, "model:stand-in", judge=judge, out=StringIO()
        )
        assert counts == {"decided": 0, "skipped": 6}
        # The command, with the key in an environment variable; it blocks, so in a thread.
        monkeypatch.setenv("TEMPORAL_ADDRESS", dev_client.service_client.config.target_host)
        monkeypatch.setenv("JUDGE_KEY", "sk-test")
        command = ["review", "--queue", queue, "--judge-model", "stand-in"]
        command += ["--judge-endpoint", f"{base}/v1", "--judge-key-env", "JUDGE_KEY"]
        assert await asyncio.to_thread(main, command) == 0
        assert "review: 6 decided, 0 skipped, by model:stand-in" in capsys.readouterr().out
    # A client of its own for each item asked by itself; the command's six share one
    # connection (and, over TLS, one handshake).
    assert len(clients) == 12
    assert len(set(clients[:6])) == 6 and len(set(clients[6:])) == 1, clients

    handle = dev_client.get_workflow_handle(review_workflow_id(queue))
    assert (await handle.query("status"))["reviewers"] == {"model:stand-in": 6}
