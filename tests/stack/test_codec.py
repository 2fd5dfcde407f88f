"""Payloads reach Temporal as pydantic JSON, compressed above a size: a cohort's bulky
step batches shrink in history, everything small stays readable JSON."""

from __future__ import annotations

from temporalio.api.common.v1 import Payload

from memlife.rules.evidence import StoreRead, StoreRecordView
from memlife.stack.codec import COMPRESS_ABOVE, DATA_CONVERTER, ENCODING, CompressingCodec


def _reads(records: int) -> list[StoreRead]:
    return [
        StoreRead(
            store="memory",
            mode="scope",
            key="u_ana",
            total=records,
            records=[
                StoreRecordView(
                    id=str(i),
                    tenant_id="u_ana",
                    matches=[0],
                    excerpt=f"Trabaja en Panadería Quispe {i}",
                )
                for i in range(records)
            ],
        )
    ]


async def test_a_bulky_payload_is_compressed_and_comes_back_the_same() -> None:
    bulky = _reads(2_000)
    [encoded] = await DATA_CONVERTER.encode([bulky])
    assert encoded.metadata["encoding"] == ENCODING
    plain = DATA_CONVERTER.payload_converter.to_payloads([bulky])[0]
    assert plain.ByteSize() >= COMPRESS_ABOVE
    assert encoded.ByteSize() * 5 < plain.ByteSize()
    [decoded] = await DATA_CONVERTER.decode([encoded], [list[StoreRead]])
    assert decoded == bulky


async def test_a_small_payload_stays_readable_json() -> None:
    [encoded] = await DATA_CONVERTER.encode([_reads(3)])
    assert encoded.metadata["encoding"] == b"json/plain"
    assert b'"Trabaja en Panader' in encoded.data


async def test_payloads_written_before_compression_are_read_as_they_are() -> None:
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'{"a": 1}')
    assert await CompressingCodec(threshold=1).decode([plain]) == [plain]
    [compressed] = await CompressingCodec(threshold=1).encode([plain])
    assert compressed.metadata["encoding"] == ENCODING
    assert await CompressingCodec().decode([compressed]) == [plain]
