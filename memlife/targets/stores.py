"""Store probes that read a database with its own client: Qdrant, FalkorDB and Chroma.

Each read returns JSON-ready records (`id`, `tenant_id`, `content`, and whatever the store
holds), for the same record pointers as HTTP probes. Connection details come from
environment variables read here, on the worker, and never reach an error message, the
recorder or Temporal history. A store that cannot be read raises a StoreProbeError: the
read is inconclusive, never "absent". The clients are optional extras
(`memlife[qdrant]`, `memlife[falkordb]`, `memlife[chroma]`): without one, the read says
which to install.
"""

from __future__ import annotations

import fnmatch
import json
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

from memlife.rules.scoring import normalize
from memlife.targets.http import TargetError, required_env


class StoreProbeError(TargetError):
    """The store could not be read; the read is an error (inconclusive), never empty."""


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    properties = getattr(value, "properties", None)  # a graph node or edge
    if isinstance(properties, dict):
        found = {"id": getattr(value, "id", None), **_jsonable(properties)}
        labels = getattr(value, "labels", None)
        if labels:
            found["labels"] = list(labels)
        return found
    return str(value)


def _text_values(payload: Any) -> list[str]:
    if isinstance(payload, str):
        return [payload]
    if isinstance(payload, dict):
        return [text for value in payload.values() for text in _text_values(value)]
    if isinstance(payload, list):
        return [text for value in payload for text in _text_values(value)]
    return []


# -- Qdrant ------------------------------------------------------------------------------------

_qdrant_clients: dict[tuple[str, str | None], Any] = {}
_qdrant_lock = threading.Lock()
_local_locks: dict[str, threading.Lock] = {}


def _qdrant(url_env: str | None, api_key_env: str | None, path: str | None) -> Any:
    try:
        from qdrant_client import QdrantClient
    except ImportError:
        raise StoreProbeError(
            "qdrant probes need the Qdrant client: install memlife[qdrant]"
        ) from None
    if path is not None:
        # Local storage is locked by whoever opened it: open it per read, close it after.
        try:
            return QdrantClient(path=path)
        except Exception as error:  # the client raises plain RuntimeErrors (lock, path)
            raise StoreProbeError(
                f"cannot open Qdrant storage {path}: {str(error).splitlines()[0]}"
            ) from None
    assert url_env is not None
    url = required_env(url_env, "a qdrant probe's server URL")
    api_key = required_env(api_key_env, "a qdrant probe's API key") if api_key_env else None
    key = (url, api_key)
    with _qdrant_lock:
        client = _qdrant_clients.get(key)
        if client is None:
            client = _qdrant_clients[key] = QdrantClient(url=url, api_key=api_key, timeout=10)
        return client


def qdrant_read(
    probe: Any, mode: str, key: str, max_records: int
) -> tuple[list[dict[str, Any]], int, float]:
    """(the first max_records records, how many there were, latency in ms). `scope`: the
    points whose payload names the tenant; `needle`/`needles`: every point whose payload
    holds one of the values (newline-separated), found by scrolling the collection.
    Blocking: run it in a thread."""
    if probe.path is None:
        return _qdrant_scroll(probe, mode, key, max_records)
    with _local_lock(probe.path):  # local storage admits one client at a time
        return _qdrant_scroll(probe, mode, key, max_records)


def _local_lock(path: str) -> threading.Lock:
    with _qdrant_lock:
        return _local_locks.setdefault(path, threading.Lock())


def _qdrant_scroll(
    probe: Any, mode: str, key: str, max_records: int
) -> tuple[list[dict[str, Any]], int, float]:
    started = time.perf_counter()
    client = _qdrant(probe.url_env, probe.api_key_env, probe.path)
    try:
        records, total = qdrant_records(
            client,
            probe.collection,
            tenant_key=probe.tenant_key,
            content_key=probe.content_key,
            page_size=probe.page_size,
            max_records=max_records,
            **({"tenant": key} if mode == "scope" else {"needles": key.split("\n")}),
        )
    except StoreProbeError:
        raise
    except Exception as error:  # transport, HTTP and missing-collection errors alike
        raise _read_error(error) from None
    finally:
        if probe.path is not None:
            client.close()
    return records, total, (time.perf_counter() - started) * 1000


def qdrant_records(
    client: Any,
    collection: str,
    *,
    tenant_key: str,
    content_key: str,
    tenant: str | None = None,
    needles: Iterable[str] = (),
    page_size: int = 256,
    max_records: int | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """A Qdrant collection's points, through a client already open: the tenant's (a payload
    filter), or those holding a needle (a scroll of the whole collection: Qdrant has no
    substring search). Also what the realstack target serves its own store with."""
    from qdrant_client import models

    condition = (
        None
        if tenant is None
        else models.Filter(
            must=[models.FieldCondition(key=tenant_key, match=models.MatchValue(value=tenant))]
        )
    )

    def points() -> Iterator[tuple[str, dict[str, Any], str]]:
        offset = None
        while True:
            page, offset = client.scroll(
                collection_name=collection,
                scroll_filter=condition,
                limit=page_size,
                offset=offset,
                with_payload=True,
                with_vectors=False,
            )
            for point in page:
                payload = _jsonable(point.payload or {})
                texts = _text_values(payload.get(content_key, "")) + _text_values(
                    {k: v for k, v in payload.items() if k != content_key}
                )
                yield str(point.id), payload, " · ".join(texts)
            if offset is None:
                return

    return _select(points(), tenant_key, needles, max_records)


def _select(
    rows: Iterable[tuple[str, dict[str, Any], str]],
    tenant_key: str,
    needles: Iterable[str],
    max_records: int | None,
) -> tuple[list[dict[str, Any]], int]:
    """(the first max_records records, how many there were) of (id, payload, content) rows,
    kept when no needles are given or the content holds one, compared as memlife does."""
    wanted = [normalize(needle) for needle in needles if normalize(needle)]
    records: list[dict[str, Any]] = []
    total = 0
    for record_id, payload, content in rows:
        if wanted and not any(value in normalize(content) for value in wanted):
            continue
        total += 1
        if max_records is None or len(records) < max_records:
            tenant = payload.get(tenant_key)
            records.append(
                {
                    **payload,
                    "id": record_id,
                    "content": content,
                    "tenant_id": None if tenant is None else str(tenant),
                }
            )
    return records, total


def _read_error(error: Exception) -> StoreProbeError:
    reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return StoreProbeError(f"{type(error).__name__}: {reason}"[:300])


# -- FalkorDB ----------------------------------------------------------------------------------

_falkordb_clients: dict[str, Any] = {}
_falkordb_lock = threading.Lock()


def _falkordb(url_env: str) -> Any:
    try:
        from falkordb import FalkorDB
    except ImportError:
        raise StoreProbeError(
            "falkordb probes need the FalkorDB client: install memlife[falkordb]"
        ) from None
    url = required_env(url_env, "a falkordb probe's server URL")
    with _falkordb_lock:
        client = _falkordb_clients.get(url)
        if client is None:
            try:
                client = _falkordb_clients[url] = FalkorDB.from_url(url)
            except Exception as error:
                raise StoreProbeError(
                    f"cannot connect to FalkorDB ({type(error).__name__})"
                ) from None
        return client


def falkordb_read(
    probe: Any, mode: str, key: str, max_records: int
) -> tuple[list[dict[str, Any]], int, float]:
    """One read-only Cypher query (GRAPH.RO_QUERY) per read; each row a record. Blocking:
    run it in a thread."""
    query, parameters = (
        (probe.scope, {"user_id": key}) if mode == "scope" else (probe.needle, {"needle": key})
    )
    started = time.perf_counter()
    client = _falkordb(probe.url_env)
    records = []
    try:
        for name in _falkordb_graphs(client, probe.graph):
            result = client.select_graph(name).ro_query(query, parameters)
            names = [
                column[1] if isinstance(column, list | tuple) else str(column)
                for column in (result.header or [])
            ]
            for row in result.result_set:
                values = [_jsonable(value) for value in row]
                if (
                    len(values) == 1
                    and isinstance(values[0], dict)
                    and names[0] not in ("content", "id", "tenant_id")
                ):
                    record = dict(values[0])  # a node returned whole: its properties
                else:
                    record = dict(zip(names, values, strict=False))
                if "content" not in record:
                    record["content"] = json.dumps(record, ensure_ascii=False, sort_keys=True)
                records.append(record)
    except Exception as error:  # connection, syntax, or a write refused by RO_QUERY
        raise _read_error(error) from None
    return records[:max_records], len(records), (time.perf_counter() - started) * 1000


def _falkordb_graphs(client: Any, graph: str) -> list[str]:
    """The graph a probe names, or, for a glob, every graph of the server it matches
    (GRAPH.LIST, sorted: the same order on every read)."""
    if not any(char in graph for char in "*?["):
        return [graph]
    listed = [n.decode() if isinstance(n, bytes) else str(n) for n in client.list_graphs()]
    return sorted(name for name in listed if fnmatch.fnmatchcase(name, graph))


# -- Chroma ------------------------------------------------------------------------------------

_chroma_clients: dict[tuple[str, str], Any] = {}
_chroma_lock = threading.Lock()


def _chroma(probe: Any) -> Any:
    try:
        import chromadb
    except ImportError:
        raise StoreProbeError(
            "chroma probes need the Chroma client: install memlife[chroma]"
        ) from None
    if probe.url_env is not None:
        where = ("url", required_env(probe.url_env, "a chroma probe's server URL"))
    else:
        where = (
            "path",
            probe.path or required_env(probe.path_env, "a chroma probe's persistent directory"),
        )
    with _chroma_lock:
        client = _chroma_clients.get(where)
        if client is None:
            try:
                if where[0] == "url":
                    parsed = urlsplit(where[1])
                    client = chromadb.HttpClient(
                        host=parsed.hostname or "127.0.0.1",
                        port=parsed.port or 8000,
                        ssl=parsed.scheme == "https",
                        settings=chromadb.Settings(anonymized_telemetry=False),
                    )
                else:
                    client = chromadb.PersistentClient(
                        path=where[1], settings=chromadb.Settings(anonymized_telemetry=False)
                    )
            except Exception as error:  # unreachable server, unreadable directory
                raise StoreProbeError(
                    f"cannot open Chroma ({type(error).__name__}: {str(error).strip()[:200]})"
                ) from None
            _chroma_clients[where] = client
        return client


def chroma_read(
    probe: Any, mode: str, key: str, max_records: int
) -> tuple[list[dict[str, Any]], int, float]:
    """(the first max_records records, how many there were, latency in ms). `scope`: the
    records whose metadata names the tenant; `needle`/`needles`: every record whose
    document or metadata holds one of the values (newline-separated), found by paging
    through the collection. Blocking: run it in a thread."""
    started = time.perf_counter()
    where = {probe.tenant_key: key} if mode == "scope" else None

    def rows(collection: Any) -> Iterator[tuple[str, dict[str, Any], str]]:
        offset = 0
        while True:
            page = collection.get(
                where=where,
                include=["documents", "metadatas"],
                limit=probe.page_size,
                offset=offset,
            )
            ids = page.get("ids") or []
            documents = page.get("documents") or [None] * len(ids)
            metadatas = page.get("metadatas") or [None] * len(ids)
            for record_id, document, metadata in zip(ids, documents, metadatas, strict=True):
                metadata = _jsonable(metadata or {})
                yield (
                    str(record_id),
                    metadata,
                    " · ".join([document or "", *_text_values(metadata)]),
                )
            if len(ids) < probe.page_size:
                return
            offset += len(ids)

    try:
        collection = _chroma(probe).get_collection(probe.collection)
        records, total = _select(
            rows(collection),
            probe.tenant_key,
            [] if mode == "scope" else key.split("\n"),
            max_records,
        )
    except StoreProbeError:
        raise
    except Exception as error:  # transport, missing collection, a corrupt directory
        raise _read_error(error) from None
    return records, total, (time.perf_counter() - started) * 1000
