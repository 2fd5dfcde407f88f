"""The scripted model over HTTP, driven by the `openai` client that memory stacks use:
OpenAI's wire format for completions (plain, streamed, tool calls, logprobs) and
embeddings (any dimension, float and base64), every call recorded, an unknown prompt a
400 that names the caller. The embedding model is replaced by a small deterministic one
here (the wire format is under test); tests/bundled/model/test_embeddings.py runs MiniLM."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from memlife.bundled.model.script import Answer, Rule
from memlife.bundled.model.serve import ScriptedModel, scripted_model, summary

if TYPE_CHECKING:
    import openai  # imported by the tests that use it: half a second in every collecting process

RULES = (
    Rule(
        "test.extract",
        lambda chat: "Extract" in chat.system,
        lambda chat: Answer.json({"facts": [chat.last_user]}),
    ),
    Rule(
        "test.tool",
        lambda chat: bool(chat.tools),
        lambda chat: Answer.call(chat.tool_names[0], content=chat.last_user),
    ),
    Rule(
        "test.rank",
        lambda chat: "relevant" in chat.system,
        lambda chat: Answer(content="True", top_logprobs=(("True", -0.1), ("False", -2.4))),
    ),
)


class HashEmbedder:
    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[b / 255 for b in hashlib.sha256(t.encode()).digest()[:8]] for t in texts]


@pytest.fixture(scope="module")
def model(monkeypatch_module: pytest.MonkeyPatch) -> Iterator[ScriptedModel]:
    from memlife import embeddings

    monkeypatch_module.setattr(embeddings, "shared", HashEmbedder)
    with scripted_model(RULES) as running:
        yield running


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@pytest.fixture(scope="module")
def client(model: ScriptedModel) -> openai.OpenAI:
    import openai

    return openai.OpenAI(base_url=model.base_url, api_key="any", max_retries=0)


def test_json_answers_are_the_rules_and_recorded(
    client: openai.OpenAI, model: ScriptedModel
) -> None:
    before = len(model.calls())
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        response_format={"type": "json_object"},
        messages=[
            {"role": "system", "content": "Extract facts as json"},
            {"role": "user", "content": "I work at Acme"},
        ],
    )
    again = client.chat.completions.create(
        model="gpt-4o-mini",
        response_format={"type": "json_object"},
        messages=[
            {"role": "system", "content": "Extract facts as json"},
            {"role": "user", "content": "I work at Acme"},
        ],
    )
    assert json.loads(reply.choices[0].message.content or "") == {"facts": ["I work at Acme"]}
    assert reply.choices[0].finish_reason == "stop"
    assert reply.model_dump() == again.model_dump()  # same input, same output
    recorded = model.calls()[before:]
    assert [(c.kind, c.endpoint, c.model) for c in recorded] == [
        ("test.extract", "chat", "gpt-4o-mini")
    ] * 2
    assert recorded[0].caller.startswith("OpenAI/Python")
    assert ("test.extract", 2) in [(kind, n) for kind, n, _ in summary(recorded)]


def test_tool_calls_plain_and_streamed(client: openai.OpenAI) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "archival_memory_insert",
                "parameters": {"type": "object", "properties": {"content": {"type": "string"}}},
            },
        }
    ]
    messages = [{"role": "user", "content": "I live on 5 Main St"}]
    reply = client.chat.completions.create(model="m", messages=messages, tools=tools)
    call = reply.choices[0].message.tool_calls[0]
    assert reply.choices[0].finish_reason == "tool_calls"
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "archival_memory_insert",
        {"content": "I live on 5 Main St"},
    )
    stream = client.chat.completions.create(
        model="m",
        messages=messages,
        tools=tools,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    streamed = [d.tool_calls[0] for d in deltas if d.tool_calls]
    assert [(t.id, t.function.name, t.function.arguments) for t in streamed] == [
        (call.id, call.function.name, call.function.arguments)
    ]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_a_tool_call_id_is_the_same_for_the_same_request_only(client: openai.OpenAI) -> None:
    """Letta keeps one tool result per call id: the same call made later in a longer
    conversation needs an id of its own."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "archival_memory_search",
                "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
            },
        }
    ]
    first = [{"role": "user", "content": "Where do I work?"}]
    later = [
        {"role": "user", "content": "I work at Acme"},
        {"role": "assistant", "content": "Noted."},
        *first,
    ]

    def call_id(messages: list[dict[str, str]]) -> str:
        reply = client.chat.completions.create(model="m", messages=messages, tools=tools)
        return reply.choices[0].message.tool_calls[0].id

    assert call_id(first) == call_id(first)
    assert call_id(first) != call_id(later)


def test_logprobs_of_the_first_token(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(
        model="m",
        logprobs=True,
        top_logprobs=2,
        max_tokens=1,
        messages=[
            {"role": "system", "content": "Say whether the passage is relevant"},
            {"role": "user", "content": "passage"},
        ],
    )
    first = reply.choices[0].logprobs.content[0]
    assert [(t.token, t.logprob) for t in first.top_logprobs] == [("True", -0.1), ("False", -2.4)]


def test_an_unknown_prompt_is_a_400_naming_the_caller(
    client: openai.OpenAI, model: ScriptedModel
) -> None:
    import openai

    with pytest.raises(
        openai.BadRequestError, match="no rule knows this prompt; caller OpenAI/Python"
    ):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}])
    assert model.calls()[-1].kind == "unknown"
    assert "no rule knows this prompt" in (model.calls()[-1].error or "")


@pytest.mark.parametrize(
    ("model_name", "dimensions", "size"),
    [
        ("text-embedding-3-small", None, 1536),
        ("memlife-minilm", None, 384),
        ("text-embedding-3-small", 4, 4),
        ("any", 1024, 1024),
    ],
)
def test_embeddings_at_any_dimension(
    client: openai.OpenAI, model_name: str, dimensions: int | None, size: int
) -> None:
    extra = {"dimensions": dimensions} if dimensions else {}
    # The client asks for base64 and decodes it itself; floats are asked for explicitly.
    encoded = client.embeddings.create(input=["I work at Acme", "x"], model=model_name, **extra)
    plain = client.embeddings.create(
        input="I work at Acme", model=model_name, encoding_format="float", **extra
    )
    assert [len(d.embedding) for d in encoded.data] == [size, size]
    assert encoded.data[0].embedding == pytest.approx(plain.data[0].embedding, abs=1e-6)
    if size >= 8:  # padded with zeros: every similarity as the native vector has it
        assert encoded.data[0].embedding[8:] == [0.0] * (size - 8)
    else:
        assert sum(x * x for x in plain.data[0].embedding) == pytest.approx(1.0)
