"""The scripted model's HTTP surface, OpenAI's wire format (what the `openai` client and
the clients built on it send and parse):

  POST /v1/chat/completions   plain, JSON mode, `json_schema`, tools, `stream: true`,
                              `logprobs`
  POST /v1/embeddings         strings or lists of them; `dimensions`; float or base64
  GET  /v1/models             the models it answers as (any name is accepted)
  GET  /calls                 every call so far: which prompt kind, who asked, how long
  GET  /health

An unknown prompt is a 400 (`unknown_prompt`) naming the caller: clients do not retry a
400, so the stack fails at once, with the reason in its own log.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from memlife import embeddings
from memlife.bundled.model.script import Answer, Chat, Rule, UnknownPrompt, respond

MODEL_NAME = "memlife-scripted"


@dataclass(frozen=True)
class Call:
    """One request the model answered (or refused)."""

    endpoint: str  # "chat" or "embeddings"
    kind: str  # the prompt kind, "embeddings", or "unknown"
    caller: str
    model: str
    milliseconds: float
    error: str | None = None


class CallLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Call] = []

    def add(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)

    def all(self) -> list[Call]:
        with self._lock:
            return list(self._calls)


def _error(status: int, message: str, code: str) -> JSONResponse:
    return JSONResponse(
        {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": None,
                "code": code,
            }
        },
        status_code=status,
    )


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:24]


def _tool_calls(chat: Chat, answer: Answer) -> list[dict[str, Any]]:
    # The conversation is part of the id: Letta drops a tool result whose call id an
    # earlier result in the agent's history already had (a repeated search, say).
    return [
        {
            "id": f"call_{_digest(chat.messages, index, call.name, dict(call.arguments))}",
            "type": "function",
            "function": {
                "name": call.name,
                "arguments": json.dumps(dict(call.arguments), ensure_ascii=False),
            },
        }
        for index, call in enumerate(answer.tool_calls)
    ]


def _logprobs(answer: Answer) -> dict[str, Any] | None:
    if not answer.top_logprobs:
        return None
    token, logprob = answer.top_logprobs[0]
    return {
        "content": [
            {
                "token": token,
                "logprob": logprob,
                "bytes": list(token.encode()),
                "top_logprobs": [
                    {"token": t, "logprob": p, "bytes": list(t.encode())}
                    for t, p in answer.top_logprobs
                ],
            }
        ]
    }


def _usage(chat: Chat, answer: Answer) -> dict[str, int]:
    # Words, not tokens: a count a client can add up, the same for the same request.
    prompt = len(chat.prompt.split())
    completion = len((answer.content or "").split()) + sum(
        len(json.dumps(dict(c.arguments)).split()) for c in answer.tool_calls
    )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def completion(chat: Chat, answer: Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.content, "refusal": None}
    if answer.tool_calls:
        message["tool_calls"] = _tool_calls(chat, answer)
    return {
        "id": f"chatcmpl-{_digest(chat.messages, chat.tools)}",
        "object": "chat.completion",
        "created": 0,
        "model": chat.model or MODEL_NAME,
        "system_fingerprint": "memlife-scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": _logprobs(answer),
                "finish_reason": "tool_calls" if answer.tool_calls else "stop",
            }
        ],
        "usage": _usage(chat, answer),
    }


def chunks(chat: Chat, answer: Answer, include_usage: bool) -> Iterable[dict[str, Any]]:
    """The same completion as server-sent chunks: the role, the content, each tool call,
    then the finish reason (and the usage, when asked for)."""
    whole = completion(chat, answer)
    base = {
        "id": whole["id"],
        "object": "chat.completion.chunk",
        "created": 0,
        "model": whole["model"],
        "system_fingerprint": whole["system_fingerprint"],
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **base,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    if answer.content:
        yield chunk({"content": answer.content})
    for index, call in enumerate(whole["choices"][0]["message"].get("tool_calls", [])):
        yield chunk({"tool_calls": [{"index": index, **call}]})
    yield chunk({}, whole["choices"][0]["finish_reason"])
    if include_usage:
        yield {**base, "choices": [], "usage": whole["usage"]}


def create_app(
    rules: Iterable[Rule], log: CallLog | None = None, embedder: embeddings.Embedder | None = None
) -> Starlette:
    rules = tuple(rules)
    calls = log if log is not None else CallLog()

    def caller_of(request: Request) -> str:
        return request.headers.get("user-agent", "unknown client")

    async def chat_completions(request: Request) -> Response:
        started = time.perf_counter()
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body is not JSON", "invalid_json")
        chat = Chat.from_request(body, caller_of(request))
        try:
            kind, answer = respond(chat, rules)
        except UnknownPrompt as error:
            calls.add(
                Call(
                    "chat",
                    "unknown",
                    chat.caller,
                    chat.model,
                    (time.perf_counter() - started) * 1000,
                    str(error),
                )
            )
            return _error(400, str(error), "unknown_prompt")
        calls.add(
            Call("chat", kind, chat.caller, chat.model, (time.perf_counter() - started) * 1000)
        )
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

            async def events() -> AsyncIterator[bytes]:
                for item in chunks(chat, answer, include_usage):
                    yield f"data: {json.dumps(item, ensure_ascii=False)}\n\n".encode()
                yield b"data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream")
        return JSONResponse(completion(chat, answer))

    async def embed(request: Request) -> Response:
        started = time.perf_counter()
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body is not JSON", "invalid_json")
        given = body.get("input")
        texts = [given] if isinstance(given, str) else given
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return _error(
                400,
                "input: a string or a non-empty list of strings (token "
                "arrays are not supported by the scripted model)",
                "invalid_input",
            )
        model = str(body.get("model", ""))
        try:
            size = embeddings.dimensions_for(model, body.get("dimensions"))
        except ValueError as error:
            return _error(400, str(error), "invalid_dimensions")
        vectors = await run_in_threadpool((embedder or embeddings.shared()).embed, texts)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, vector in enumerate(vectors):
            fitted = embeddings.fit(vector, size)
            value: Any = (
                base64.b64encode(struct.pack(f"<{len(fitted)}f", *fitted)).decode()
                if as_base64
                else fitted
            )
            data.append({"object": "embedding", "index": index, "embedding": value})
        words = sum(len(t.split()) for t in texts)
        calls.add(
            Call(
                "embeddings",
                "embeddings",
                caller_of(request),
                model,
                (time.perf_counter() - started) * 1000,
            )
        )
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": model or MODEL_NAME,
                "usage": {"prompt_tokens": words, "total_tokens": words},
            }
        )

    async def models(request: Request) -> Response:
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {"id": MODEL_NAME, "object": "model", "created": 0, "owned_by": "memlife"}
                ],
            }
        )

    async def recorded(request: Request) -> Response:
        return JSONResponse({"calls": [asdict(c) for c in calls.all()]})

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "rules": [r.kind for r in rules]})

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/embeddings", embed, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/calls", recorded, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
        ]
    )
    app.state.calls = calls
    return app
