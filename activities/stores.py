"""Reading a target's stores (`memlife.inspect_stores`): every store the target file
probes, by the tenant's scope and by needle search for its values, eight reads at a time.
A store that could not be read comes back as an error: unread is never absent."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from memlife import contracts, recorder
from memlife.activities.calls import (
    application_error,
    call_with_retries,
    heartbeating,
    log,
    text_of,
)
from memlife.contracts import (
    InspectRequest,
)
from memlife.rules.evidence import StoreRead, StoreRecordView
from memlife.rules.scoring import normalize
from memlife.rules.target import (
    ChromaProbe,
    FalkorDBProbe,
    FilesProbe,
    QdrantProbe,
    SqlProbe,
    Store,
    StoreProbe,
)
from memlife.rules.variants import FormMatcher
from memlife.targets import files, http, sql, stores
from memlife.targets.http import MissingSecret, TargetError

READ_CONCURRENCY = 8
EXCERPT_CHARS = 160


async def _read_store(
    request: InspectRequest,
    store: Store,
    mode: str,
    key: str,
    limit: asyncio.Semaphore,
    watch_normalized: list[str],
) -> StoreRead:
    assert store.probe is not None
    probe = store.probe
    trace: str | None = None  # an HTTP read's traceparent
    async with limit:
        wall_time = datetime.now(UTC)
        try:
            if isinstance(probe, SqlProbe):
                raw, total, latency_ms = await _sql_read(probe, mode, key, request.max_records)
            elif isinstance(probe, FilesProbe):
                raw, total, latency_ms = await _files_read(probe, key, request.max_records)
            elif isinstance(probe, QdrantProbe):
                raw, total, latency_ms = await asyncio.to_thread(
                    stores.qdrant_read, probe, mode, key, request.max_records
                )
            elif isinstance(probe, FalkorDBProbe):
                raw, total, latency_ms = await asyncio.to_thread(
                    stores.falkordb_read, probe, mode, key, request.max_records
                )
            elif isinstance(probe, ChromaProbe):
                raw, total, latency_ms = await asyncio.to_thread(
                    stores.chroma_read, probe, mode, key, request.max_records
                )
            else:
                raw, latency_ms, trace = await _http_read(request, store, probe, mode, key)
                total = len(raw)
        except MissingSecret as error:  # the worker is misconfigured: no read can succeed
            raise application_error(error) from None
        except Exception as error:  # one store's failure is its own alone
            # Unread is never absent, and one store that cannot be read (a driver missing,
            # a client's own error) leaves every other store's reads standing.
            reason = (
                f"no records at {getattr(probe, 'records', '?')!r}"
                if isinstance(error, KeyError)
                else f"{type(error).__name__}: {error}"
            )
            if not isinstance(error, TargetError | KeyError):
                log.warning(
                    "store read failed",
                    store=store.name,
                    mode=mode,
                    error=f"{type(error).__name__}: {error}"[:300],
                )
            return StoreRead(
                store=store.name,
                mode=mode,
                key=key,
                status="error",
                error=reason,
                traceparent=getattr(error, "traceparent", None),
                wall_time=wall_time,
            )
    views = []
    watch = tuple(request.watch)  # one key for every record's _reworded
    for record in raw[: request.max_records]:
        value = _field(record, probe.content)
        content = text_of(value if value is not None else record)
        normalized = _normalized(content)
        deleted = _field(record, probe.deleted)
        tenant = _field(record, probe.tenant_field)
        record_id = _field(record, probe.id)
        matched = [i for i, text in enumerate(watch_normalized) if text and text in normalized]
        reworded = _reworded(normalized, watch, matched)
        matched += sorted(reworded)
        own = tenant is None or str(tenant) in request.identities
        if not matched and own and not request.keep_unmatched:
            continue
        views.append(
            StoreRecordView(
                id=None if record_id is None else str(record_id),
                tenant_id=None if tenant is None else str(tenant),
                deleted=None if probe.deleted is None else bool(deleted),
                matches=matched,
                forms=reworded,
                # Evidence only where a watched value is: the rest would only weigh on history.
                excerpt=content[:EXCERPT_CHARS] if matched else "",
            )
        )
    return StoreRead(
        store=store.name,
        mode=mode,
        key=key,
        total=total,
        records=views,
        latency_ms=latency_ms,
        traceparent=trace,
        wall_time=wall_time,
    )


def _reworded(normalized: str, watch: tuple[str, ...], matched: list[int]) -> dict[int, str]:
    """The watched values the record holds in another form only (rules/variants.py), by
    position in the watch list: where none written as stated explains the text."""
    if len(matched) == len(watch):
        return {}
    if len(normalized) > 2048:
        return dict(_find_reworded(normalized, watch, tuple(matched)))
    return dict(_find_reworded_cached(normalized, watch, tuple(matched)))


def _find_reworded(
    normalized: str, watch: tuple[str, ...], matched: tuple[int, ...]
) -> tuple[tuple[int, str], ...]:
    matcher = FormMatcher(normalized, explained=[watch[i] for i in matched])
    return tuple(
        (index, form.text)
        for index, text in enumerate(watch)
        if index not in matched and (form := matcher.find(text)) is not None
    )


# Every inspection of a pair reads its stores again, mostly the same records with the same
# watched values: building each record's matcher again was a tenth of what a target
# worker spent (py-spy, a 100-pair nightly). Full, its keys held about 1.1 MB on that run
# (their texts 0.5, the watch lists 0.6); a text is at most 2 KB (_reworded).
_find_reworded_cached = functools.lru_cache(maxsize=8192)(_find_reworded)


def _field(record: Any, pointer: str | None) -> Any:
    """What the record holds at the pointer (None: nothing there, or no pointer)."""
    if pointer is None:
        return None
    try:
        return http.extract(record, pointer)
    except KeyError:
        return None


# About 4 MB at most; at 100 pairs 82% of the contents a read normalizes were normalized
# before (21,600 distinct of 122,000).
@functools.lru_cache(maxsize=8192)
def _normalized_cached(content: str) -> str:
    return normalize(content)


def _normalized(content: str) -> str:
    """`normalize`, remembered for short contents: a run reads the same records again at
    every inspection, and normalizing each was a third of what a read cost the worker's
    event loop."""
    return _normalized_cached(content) if len(content) <= 2048 else normalize(content)


async def _http_read(
    request: InspectRequest, store: Store, probe: StoreProbe, mode: str, key: str
) -> tuple[list[Any], float, str | None]:
    operation, variables = {
        "scope": (probe.scope, {"user_id": key}),
        "needle": (probe.needle, {"needle": key}),
        "needles": (probe.needles, {"needles": key.split("\n")}),
    }[mode]
    assert operation is not None
    response, _ = await call_with_retries(
        request.target, operation, variables, request.scenario_now, request.run_id
    )
    if response.refused:  # a status the probe lists as `refused`: nothing held
        return [], response.latency_ms, response.traceparent
    raw = http.extract(response.data, probe.records)
    if not isinstance(raw, list):
        raise http.TargetBadResponse(
            f"{probe.records!r} is not a list of records in the {store.name} response"
        )
    return raw, response.latency_ms, response.traceparent


async def _sql_read(
    probe: SqlProbe, mode: str, key: str, max_records: int
) -> tuple[list[Any], int, float]:
    """One parameterized SELECT in a read-only transaction, off the event loop."""
    query, parameters = (
        (probe.scope, {"user_id": key}) if mode == "scope" else (probe.needle, {"needle": key})
    )
    return await asyncio.to_thread(sql.read_rows, probe.url_env, query, parameters, max_records)


async def _files_read(
    probe: FilesProbe, key: str, max_records: int
) -> tuple[list[Any], int, float]:
    """Every file under the store's data directory, byte by byte, off the event loop."""

    def scan() -> tuple[list[Any], int, float]:
        root = files.data_directory(probe.path, probe.path_env)
        return files.scan(root, probe.include, key.split("\n"), list(probe.encodings), max_records)

    return await asyncio.to_thread(scan)


@activity.defn(name=contracts.INSPECT_STORES.name)
async def inspect_stores(request: InspectRequest) -> list[StoreRead]:
    """Read every probed store by tenant scope (each identity) and by needle (each value),
    with bounded concurrency. A read that fails is returned as an error, never as empty."""
    async with heartbeating(lambda: None):
        return await inspect_and_stage(request)


async def inspect_and_stage(request: InspectRequest) -> list[StoreRead]:
    """`inspect`; with a stage key, the whole reads go to the recorder and the workflow gets
    them without their records (recorder/staging.py)."""
    return (await stage_and_strip([(request, await inspect(request))]))[0]


async def stage_and_strip(
    inspected: Sequence[tuple[InspectRequest, list[StoreRead]]],
) -> list[list[StoreRead]]:
    """Each inspection's reads, staged under its request's stage key (those that have one)
    in one write, and returned without their records."""
    staged = [
        (request.stage_key, request.run_id, reads)
        for request, reads in inspected
        if request.stage_key is not None
    ]
    if staged:
        await asyncio.to_thread(recorder.stage_many_reads, staged)
    return [
        reads
        if request.stage_key is None
        else [read.model_copy(update={"records": []}) for read in reads]
        for request, reads in inspected
    ]


async def inspect(request: InspectRequest) -> list[StoreRead]:
    limit = asyncio.Semaphore(READ_CONCURRENCY)
    watch_normalized = [normalize(text) for text in request.watch]
    reads = []
    for store in request.target.stores:
        if store.probe is None:
            continue
        erased = request.needles if request.erased is None else request.erased
        if isinstance(store.probe, FilesProbe):
            # Bytes on disk have no tenant: one scan for the values that must be gone.
            if erased:
                reads.append(
                    _read_store(
                        request, store, "needles", "\n".join(erased), limit, watch_normalized
                    )
                )
            continue
        if isinstance(store.probe, SqlProbe) and store.probe.scope is None:
            # No tenant column: only the values that must be gone are looked for.
            reads += [
                _read_store(request, store, "needle", needle, limit, watch_normalized)
                for needle in erased
            ]
            continue
        reads += [
            _read_store(request, store, "scope", identity, limit, watch_normalized)
            for identity in request.identities
        ]
        # One read for all the values where the probe can (SQL, Cypher: one per value).
        if request.needles and (
            isinstance(store.probe, QdrantProbe | ChromaProbe)
            or (isinstance(store.probe, StoreProbe) and store.probe.needles is not None)
        ):
            reads.append(
                _read_store(
                    request, store, "needles", "\n".join(request.needles), limit, watch_normalized
                )
            )
        else:
            reads += [
                _read_store(request, store, "needle", needle, limit, watch_normalized)
                for needle in request.needles
            ]
    return list(await asyncio.gather(*reads))
