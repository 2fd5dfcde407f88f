"""How memlife's payloads reach Temporal: pydantic JSON, and zlib above a size.

A cohort's step batches are its history's bulk: every pair's probe cases and answers go to
the recording activity, every pair's replies come back from the target. JSON of that kind
shrinks several times under zlib, and history is what the server stores, replays and warns
about (10 MB). Payloads under COMPRESS_ABOVE stay plain JSON, readable as they are in the
Web UI: workflow inputs, results, single calls. What a compressed payload held is in the
recorder, and `memlife report` shows it.

Every client and worker of memlife uses DATA_CONVERTER (stack/connection.py,
stack/embedded.py); a worker reads plain payloads as before, so histories written before
replay unchanged. The Web UI reads compressed payloads through memlife's codec endpoint
(stack/codec_server.py, `memlife codec serve`; `memlife dev` starts it for its UI).

A verdict is not a crash: a run, a pair or a deletion check that did not pass ends FAILED
with a failure of type VERDICT_FAILURE (its message the verdict, its details the result),
and VerdictFailureConverter sends that failure without the Python stack trace of the
`raise` that ended the workflow, which the Web UI would show under the verdict.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.api.failure.v1 import Failure
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import (
    DataConverter,
    DefaultFailureConverter,
    PayloadCodec,
    PayloadConverter,
)

from memlife.contracts import VERDICT_FAILURE

ENCODING = b"binary/zlib"
COMPRESS_ABOVE = 64 * 1024  # bytes of the serialized payload


class CompressingCodec(PayloadCodec):
    """Payloads of COMPRESS_ABOVE bytes or more, serialized whole and zlib-compressed (the
    original metadata travels inside); smaller ones untouched."""

    def __init__(self, threshold: int = COMPRESS_ABOVE) -> None:
        self._threshold = threshold

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._compress(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [
            Payload.FromString(zlib.decompress(payload.data))
            if payload.metadata.get("encoding") == ENCODING
            else payload
            for payload in payloads
        ]

    def _compress(self, payload: Payload) -> Payload:
        whole = payload.SerializeToString()
        if len(whole) < self._threshold:
            return payload
        return Payload(metadata={"encoding": ENCODING}, data=zlib.compress(whole, 6))


class VerdictFailureConverter(DefaultFailureConverter):
    """The SDK's failure converter, except that a verdict failure (an ApplicationError of
    type VERDICT_FAILURE) carries no stack trace: its message and details say everything,
    and a trace of the workflow's own `raise` under them reads as a crash in the Web UI.
    Every other failure keeps its trace. Replay never compares failures' contents, so this
    changes no history's determinism."""

    def to_failure(
        self, exception: BaseException, payload_converter: PayloadConverter, failure: Failure
    ) -> None:
        super().to_failure(exception, payload_converter, failure)
        if failure.application_failure_info.type == VERDICT_FAILURE:
            failure.stack_trace = ""


DATA_CONVERTER: DataConverter = dataclasses.replace(
    pydantic_data_converter,
    payload_codec=CompressingCodec(),
    failure_converter_class=VerdictFailureConverter,
)
