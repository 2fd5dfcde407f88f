"""The OpenAPI 3 document read: local `$ref`s, `allOf`, nullable `anyOf`/`oneOf` resolved,
and every operation with its parameters, JSON request body and 2xx answers' schemas."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from memlife.rules.openapi.proposal import ProposalError
from memlife.rules.openapi.vocabulary import normalized, words_in

METHODS = ("get", "post", "put", "patch", "delete")


@dataclass
class Param:
    name: str
    where: str  # path, query, header
    required: bool
    schema: dict[str, Any]
    description: str = ""


@dataclass
class Op:
    method: str
    path: str
    operation_id: str
    summary: str
    params: list[Param]
    body: dict[str, Any] | None  # resolved JSON request body schema
    body_required: bool
    responses: dict[int, dict[str, Any] | None]  # 2xx status -> resolved schema (None: none)
    security: list[dict[str, Any]] | None
    words: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self.words = frozenset(
            words_in(self.operation_id) | words_in(self.summary) | words_in(self.static_path())
        )

    def static_path(self) -> str:
        return re.sub(r"\{[^}]*\}", " ", self.path)

    def describe(self) -> str:
        named = [f"operationId {self.operation_id}"] if self.operation_id else []
        if self.summary:
            named.append(repr(self.summary))
        return f"{self.method} {self.path}" + (f" ({', '.join(named)})" if named else "")

    def path_params(self) -> list[str]:
        return re.findall(r"\{([^}]+)\}", self.path)

    def param(self, where: str, names: tuple[str, ...]) -> Param | None:
        for param in self.params:
            if param.where == where and normalized(param.name) in {normalized(n) for n in names}:
                return param
        return None

    def success(self) -> list[int]:
        return sorted(self.responses) or [200]

    def response(self) -> dict[str, Any] | None:
        for status in sorted(self.responses):
            if self.responses[status]:
                return self.responses[status]
        return None


class Schemas:
    """Local `$ref`s resolved, `allOf` merged, nullable `anyOf`/`oneOf` unwrapped."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document

    def resolve(self, schema: Any, depth: int = 0) -> dict[str, Any]:
        if not isinstance(schema, dict) or depth > 12:
            return {}
        if "$ref" in schema:
            target = self._pointer(str(schema["$ref"]))
            return self.resolve(target, depth + 1)
        if "allOf" in schema and isinstance(schema["allOf"], list):
            merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
            for part in schema["allOf"]:
                part = self.resolve(part, depth + 1)
                merged["properties"].update(part.get("properties") or {})
                merged["required"] += list(part.get("required") or [])
            return merged
        for key in ("anyOf", "oneOf"):
            variants = schema.get(key)
            if isinstance(variants, list) and variants:
                real = [
                    self.resolve(v, depth + 1)
                    for v in variants
                    if not (isinstance(v, dict) and v.get("type") == "null")
                ]
                if real:
                    chosen = dict(real[0])
                    for extra in ("default", "description", "title"):
                        if extra in schema and extra not in chosen:
                            chosen[extra] = schema[extra]
                    return chosen
        return schema

    def _pointer(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            return {}  # an external reference: not followed
        node: Any = self.document
        for token in ref[2:].split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or token not in node:
                return {}
            node = node[token]
        return node

    def properties(self, schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
        props = schema.get("properties")
        if not isinstance(props, dict):
            return {}
        return {str(k): self.resolve(v) for k, v in props.items()}


def schema_type(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and "properties" in schema:
        return "object"
    return str(kind or "")


def read_operations(document: dict[str, Any]) -> list[Op]:
    """Every operation of the document, its schemas resolved; ProposalError when the
    document is not OpenAPI 3 or has none."""
    if not isinstance(document, dict):
        raise ProposalError("", "not an OpenAPI document (a JSON or YAML mapping)")
    version = document.get("openapi")
    if version is None:
        if "swagger" in document:
            raise ProposalError(
                "swagger",
                f"Swagger {document['swagger']} is not OpenAPI 3: convert it first "
                "(e.g. with swagger2openapi)",
            )
        raise ProposalError("openapi", "missing: not an OpenAPI 3 document")
    if not str(version).startswith("3."):
        raise ProposalError("openapi", f"version {version!r}: memlife reads OpenAPI 3.x")
    paths = document.get("paths")
    if not isinstance(paths, dict) or not paths:
        raise ProposalError("paths", "the document describes no operations")
    schemas = Schemas(document)
    operations: list[Op] = []
    for path, item in paths.items():
        if not isinstance(item, dict):
            continue
        shared = item.get("parameters") or []
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            params = []
            for raw in [*shared, *(op.get("parameters") or [])]:
                raw = schemas.resolve(raw)
                if not raw.get("name") or raw.get("in") not in ("path", "query", "header"):
                    continue
                params.append(
                    Param(
                        str(raw["name"]),
                        str(raw["in"]),
                        bool(raw.get("required")) or raw.get("in") == "path",
                        schemas.resolve(raw.get("schema") or {}),
                        str(raw.get("description") or raw.get("example") or ""),
                    )
                )
            request = schemas.resolve(op.get("requestBody") or {})
            content = request.get("content") or {}
            json_type = next((t for t in content if "json" in t), None)
            body = schemas.resolve(content[json_type].get("schema")) if json_type else None
            responses: dict[int, dict[str, Any] | None] = {}
            for status, response in (op.get("responses") or {}).items():
                if not str(status).isdigit() or not 200 <= int(status) < 300:
                    continue
                response = schemas.resolve(response)
                media = response.get("content") or {}
                kind = next((t for t in media if "json" in t), None)
                schema = schemas.resolve(media[kind].get("schema")) if kind else None
                responses[int(status)] = schema if schema and schema_type(schema) else None
            operations.append(
                Op(
                    method.upper(),
                    str(path),
                    str(op.get("operationId") or ""),
                    str(op.get("summary") or ""),
                    params,
                    body,
                    bool(request.get("required")),
                    responses,
                    op.get("security", document.get("security")),
                )
            )
    if not operations:
        raise ProposalError("paths", "no operation (get, post, put, patch, delete) under any path")
    return operations
