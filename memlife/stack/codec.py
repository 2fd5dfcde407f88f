"""How memlife's payloads reach Temporal: pydantic JSON, and zlib above a size.

A cohort's step batches are its history's bulk: every pair's probe cases and answers go to
the recording activity, every pair's replies come back from the target. JSON of that kind
shrinks several times under zlib, and history is what the server stores, replays and warns
about (10 MB). Payloads under COMPRESS_ABOVE stay plain JSON, readable as they are in the
Web UI: workflow inputs, results, single calls. What a compressed payload held is in the
recorder, and `memlife report` shows it.

Every client and worker of memlife uses DATA_CONVERTER (stack/connection.py,
stack/embedded.py); a worker reads plain payloads as before, so histories written before
replay unchanged.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, PayloadCodec

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


DATA_CONVERTER: DataConverter = dataclasses.replace(
    pydantic_data_converter, payload_codec=CompressingCodec()
)
