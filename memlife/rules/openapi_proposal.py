"""A target file proposed from a service's OpenAPI 3.x document (`memlife target init`).
Pure: the document arrives parsed (a dict); fetching it is the command's.

Every guess carries where it came from, how sure it is and what a person must confirm; the
rendered file says all three in comments. What is guessed:

- `say`: the POST that takes a message (a `messages` list of role/content objects, or a
  `message`, `content`, `text`, `input` field) and whose name or path says add, send or chat
  about memories, messages or episodes.
- the tenant: how `say` names whose conversation it is. A user-ish path parameter
  (`/agents/{agent_id}/messages`: the tenant is an agent) needs a registration that creates
  one (the collection's POST, and before it its owner's when the create needs the owner's
  id); a user-ish body or query field (`user_id`) is the tenant's id as memlife gives it
  (the phone, without registration); a `phone` field is the phone.
- `ask`: a search taking a query and naming the tenant as `say` does, when `say` stores
  rather than answers (a memory API's add beside its search).
- `delete_tenant`, `deletion_status`, `forget`: the DELETE of the tenant's item (or of its
  records, by the tenant's query parameter), a GET of its deletion's status, a forget or
  erase taking the value, or else a memory deleted by id after a look-up (a sequence).
- `headers`: the document's security schemes (or header parameters such as
  `Authorization`) as secrets read from environment variables.

A response without a schema (FastAPI's `Any`) is read with tolerant JMESPath: the usual
field names, else the whole answer as text, never an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

import yaml

Confidence = Literal["high", "medium", "low"]
METHODS = ("get", "post", "put", "patch", "delete")

SAY_VERBS = frozenset(
    "add create send post ingest remember store write insert chat converse".split()
)
SAY_NOUNS = frozenset(
    "memory memories message messages episode episodes chat conversation conversations "
    "preview turn turns interaction interactions".split()
)
CONVERSATIONAL = frozenset(
    "send chat converse conversation preview reply respond completion".split()
)
SEARCH_WORDS = frozenset("search query ask retrieve recall find lookup".split())
SPACE_WORDS = frozenset("graph graphs group groups block blocks space spaces shared entity".split())
REGISTER_VERBS = frozenset("create register signup add new".split())
TENANT_NOUNS = frozenset(
    "user users tenant tenants customer customers account accounts agent agents thread "
    "threads session sessions".split()
)
STATUS_WORDS = frozenset("status deletion deletions task tasks job jobs operation".split())
FORGET_WORDS = frozenset("forget erase redact unlearn".split())
MEMORY_NOUNS = frozenset(
    "memory memories passage passages archival fact facts record records".split()
)

MESSAGE_FIELDS = ("message", "content", "text", "input", "prompt", "utterance", "data")
QUERY_FIELDS = ("query", "question", "q", "search", "text", "message", "input", "prompt")
PHONE_FIELDS = ("phone", "phone_number", "phonenumber", "msisdn", "mobile")
USER_FIELDS = ("user_id", "userid", "user", "tenant_id", "tenantid", "customer_id", "uid")
NAME_FIELDS = ("name", "first_name", "firstname", "username", "display_name", "label")
VALUE_FIELDS = ("value", "fact", "memory", "text", "content")
LIMIT_FIELDS = ("limit", "top_k", "page_size", "size", "per_page")
# What the authorization-ish header parameters of a document without securitySchemes are.
AUTH_HEADERS = ("authorization", "x-api-key", "api-key", "apikey", "x-api-token")

REPLY_FIELDS = ("reply", "answer", "response", "output", "text", "context")
RECORD_LISTS = ("results", "items", "memories", "messages")
# In an untyped answer: the records whose text answers (a message list without the user's own
# messages echoed back).
ANSWER_LISTS = "results || items || memories || messages[?role != 'user']"
RECORD_TEXT = ("memory", "fact", "content", "text")
ID_FIELDS = ("id", "uuid")
STATUS_FIELDS = ("status", "state")
DONE_VALUES = ["completed", "succeeded", "done", "deleted", "success"]


class ProposalError(Exception):
    """The document cannot be proposed from: `field` says where, the message why."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        super().__init__(reason)


@dataclass(frozen=True)
class Guess:
    """One part of the proposal: what is written (`value`), from where, how sure, and what
    a person must confirm. A `low` guess is written commented out: it would likely fail."""

    role: str
    value: Any
    confidence: Confidence
    source: str
    confirm: tuple[str, ...] = ()

    @property
    def live(self) -> bool:
        return self.confidence != "low"


@dataclass
class Proposal:
    name: str
    base_url: str
    description: str
    source: str
    headers: dict[str, Any] = field(default_factory=dict)
    header_guesses: list[Guess] = field(default_factory=list)
    operations: list[Guess] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # what was looked for and not found
    base_url_confirm: list[str] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        """The target file as data: what the rendered file holds uncommented."""
        data: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "base_url": self.base_url,
        }
        if self.headers:
            data["headers"] = self.headers
        data["operations"] = {g.role: g.value for g in self.operations if g.live}
        return data

    def secrets(self) -> list[str]:
        return [v["env"] for v in self.headers.values() if isinstance(v, dict) and "env" in v]

    def to_confirm(self) -> list[str]:
        items = [f"base_url: {text}" for text in self.base_url_confirm]
        items += [f"{g.role}: {text}" for g in self.header_guesses for text in g.confirm]
        for guess in self.operations:
            if not guess.live:
                items.append(
                    f"{guess.role}: written commented out (a guess too weak to send); "
                    "uncomment and complete it if the service has it"
                )
            items.extend(f"{guess.role}: {text}" for text in guess.confirm)
        return items

    def render(self, file_name: str = "FILE") -> str:
        lines = [
            f"# Proposed by `memlife target init` from {self.source}.",
            "# Every part below is a guess from the OpenAPI document: each says where it came",
            "# from and what a person must confirm. Then check it against the service:",
        ]
        for name in self.secrets():
            lines.append(f"#   export {name}=…")
        lines.append(f"#   memlife target check {file_name}")
        confirm = self.to_confirm()
        if confirm:
            lines += ["#", "# To confirm:"]
            lines += _wrapped(confirm, "#   - ", "#     ")
        if self.missing:
            lines += ["#", "# Not found in the document (add by hand if the service has it):"]
            lines += _wrapped(self.missing, "#   - ", "#     ")
        lines += [
            "# Shared spaces (create_space, space_say, …) and store probes are never proposed:",
            "# docs/target-files.md says how to write them.",
        ]
        lines.append(_dump({"name": self.name}))
        lines.append(_dump({"description": self.description}))
        lines.append(_dump({"base_url": self.base_url}))
        if self.headers:
            lines.append("headers:")
            for guess in self.header_guesses:
                lines += _comments(guess, "  ")
            lines.append(_indent(_dump(self.headers), "  "))
        lines.append("operations:")
        for guess in self.operations:
            lines += _comments(guess, "  ")
            body = _indent(_dump({guess.role: guess.value}), "  ")
            if not guess.live:
                body = "\n".join(
                    "  # " + line[2:] if line.startswith("  ") else "# " + line
                    for line in body.splitlines()
                )
            lines.append(body)
        return "\n".join(lines) + "\n"


def _dump(data: Any) -> str:
    return yaml.safe_dump(
        data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=200
    ).rstrip("\n")


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _wrapped(items: list[str], first: str, rest: str, width: int = 92) -> list[str]:
    import textwrap

    out: list[str] = []
    for item in items:
        out += textwrap.wrap(item, width, initial_indent=first, subsequent_indent=rest)
    return out


def _comments(guess: Guess, indent: str) -> list[str]:
    head = f"{guess.role}: guessed from {guess.source} (confidence {guess.confidence})"
    items = [head] + [f"confirm: {text}" for text in guess.confirm]
    out: list[str] = []
    for index, item in enumerate(items):
        out += _wrapped([item], f"{indent}# " + ("" if index == 0 else "  "), f"{indent}#   ")
    return out


# --- the document ----------------------------------------------------------------------


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
            _words(self.operation_id) | _words(self.summary) | _words(self.static_path())
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
            if param.where == where and _norm(param.name) in {_norm(n) for n in names}:
                return param
        return None

    def success(self) -> list[int]:
        return sorted(self.responses) or [200]

    def response(self) -> dict[str, Any] | None:
        for status in sorted(self.responses):
            if self.responses[status]:
                return self.responses[status]
        return None


def _words(text: str) -> set[str]:
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text or "")
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if w}


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _singular(noun: str) -> str:
    if noun.endswith("ies"):
        return noun[:-3] + "y"
    return noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun


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


def _kind(schema: dict[str, Any]) -> str:
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
                responses[int(status)] = schema if schema and _kind(schema) else None
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


# --- values for a request's fields -----------------------------------------------------


def _match(name: str, names: tuple[str, ...]) -> bool:
    return _norm(name) in {_norm(n) for n in names}


def _is_message_list(schema: dict[str, Any], schemas: Schemas) -> bool:
    if _kind(schema) != "array":
        return False
    item = schemas.resolve(schema.get("items") or {})
    props = schemas.properties(item)
    return "content" in props or "text" in props or "message" in props


def _message_list(schema: dict[str, Any], schemas: Schemas) -> list[dict[str, Any]]:
    item = schemas.resolve(schema.get("items") or {})
    props = schemas.properties(item)
    text = next(n for n in ("content", "text", "message") if n in props)
    entry: dict[str, Any] = {}
    if "role" in props:
        entry["role"] = "user"
    entry[text] = "{message}"
    return [entry]


def _filler(schema: dict[str, Any]) -> Any:
    """A value for a required field memlife has no variable for: its default, example or
    first enum value, else an empty one of its type (a person confirms it)."""
    for key in ("default", "example"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    return {"string": "", "integer": 0, "number": 0, "boolean": False, "array": []}.get(
        _kind(schema), {}
    )


@dataclass
class Filled:
    """A JSON body (or query) proposed for an operation, and what it bound."""

    value: dict[str, Any]
    bound: set[str] = field(default_factory=set)  # the variables used
    filled: list[str] = field(default_factory=list)  # required fields given a stand-in value


def _fill_body(
    schema: dict[str, Any] | None,
    schemas: Schemas,
    slots: dict[str, tuple[str, ...]],
    extra: dict[str, Any] | None = None,
) -> Filled | None:
    """Required fields, and the optional ones a variable fits. `slots`: variable -> the
    field names it goes in (first fitting field wins)."""
    if schema is None or _kind(schema) != "object":
        return None
    props = schemas.properties(schema)
    required = set(schema.get("required") or [])
    result = Filled({})
    for name, prop in props.items():
        if "message" in slots and _is_message_list(prop, schemas) and "message" not in result.bound:
            result.value[name] = _message_list(prop, schemas)
            result.bound.add("message")
            continue
        variable = next(
            (v for v, names in slots.items() if v not in result.bound and _match(name, names)),
            None,
        )
        if variable is not None and _kind(prop) in ("string", "", "array"):
            if variable == "tenant_alias":
                result.value[name] = (
                    "memlife-{tenant_alias}" if _match(name, ("name",)) else "{tenant_alias}"
                )
            elif variable == "values" and _kind(prop) == "array":
                result.value[name] = "{values}"
            elif _kind(prop) == "array":
                continue
            else:
                result.value[name] = "{" + variable + "}"
            result.bound.add(variable)
        elif extra and name in extra:
            result.value[name] = extra[name]
        elif name in required:
            result.value[name] = _filler(prop)
            result.filled.append(name)
    return result


# --- reading answers -------------------------------------------------------------------


def _field(schema: dict[str, Any] | None, schemas: Schemas, names: tuple[str, ...]) -> str | None:
    if not schema:
        return None
    props = schemas.properties(schema)
    for name in names:
        for prop in props:
            if _match(prop, (name,)):
                return prop
    return None


def reply_expression(schema: dict[str, Any] | None, schemas: Schemas) -> tuple[str, bool]:
    """Where an answer's text is, and whether the schema said so (else a tolerant guess)."""
    if schema and _kind(schema) == "object":
        props = schemas.properties(schema)
        for name in REPLY_FIELDS:
            prop = _field(schema, schemas, (name,))
            if prop and _kind(props[prop]) == "string":
                return f"/{prop}", True
        for name in RECORD_LISTS:
            prop = _field(schema, schemas, (name,))
            if prop and _kind(props[prop]) == "array":
                item = schemas.resolve(props[prop].get("items") or {})
                text = _field(item, schemas, RECORD_TEXT)
                if text:
                    return f"join(' · ', {prop}[].{text} || `[]`)", True
    if schema and _kind(schema) == "array":
        item = schemas.resolve(schema.get("items") or {})
        text = _field(item, schemas, RECORD_TEXT)
        if text:
            return f"join(' · ', [].{text})", True
    texts = " || ".join(RECORD_TEXT)
    return (
        " || ".join(REPLY_FIELDS)
        + f" || join(' · ', map(&({texts} || ''), {ANSWER_LISTS} || `[]`)) || to_string(@)",
        False,
    )


def id_expression(
    schema: dict[str, Any] | None, schemas: Schemas, resource: str
) -> tuple[str, bool]:
    """Where a created resource's id is in the answer."""
    noun = _singular(resource)
    names = (f"{noun}_id", *ID_FIELDS, f"{noun}_uuid")
    prop = _field(schema, schemas, names)
    if prop:
        return f"/{prop}", True
    return " || ".join(n.replace("-", "_") for n in names), False


# --- choosing operations ---------------------------------------------------------------


@dataclass
class Tenant:
    """How `say` names the tenant."""

    kind: Literal["path", "body", "query", "phone", "none"]
    name: str = ""  # the parameter or field
    resource: str = ""  # path: the collection before the parameter (`agents`)
    collection: str = ""  # path: the collection's path (`/v1/agents`)


def _user_ish(name: str) -> bool:
    return _match(name, USER_FIELDS) or _norm(name) in {"userid", "useruuid"}


def _path_tenant(op: Op) -> Tenant | None:
    params = op.path_params()
    if not params:
        return None
    name = params[0]
    before = op.path.split("{" + name + "}")[0].rstrip("/")
    resource = before.rsplit("/", 1)[-1]
    return Tenant("path", name, resource, before)


def _say_score(op: Op, schemas: Schemas) -> int:
    if op.method != "POST":
        return -100
    score = 0
    props = schemas.properties(op.body) if op.body else {}
    if any(_is_message_list(p, schemas) for p in props.values()):
        score += 4
    elif any(_match(n, MESSAGE_FIELDS[:-1]) for n in props):
        score += 3
    elif any(_match(n, ("data",)) for n in props):
        score += 1
    else:
        return -100
    score += 2 * bool(op.words & SAY_VERBS) + 2 * bool(op.words & SAY_NOUNS)
    score -= 4 * bool(op.words & SEARCH_WORDS) + 2 * bool(op.words & SPACE_WORDS)
    score -= 2 * max(0, len(op.path_params()) - 1)
    return score


def _tenant_of(op: Op, schemas: Schemas) -> Tenant:
    props = schemas.properties(op.body) if op.body else {}
    path = _path_tenant(op)
    if path is not None:
        return path
    for name in props:
        if _match(name, PHONE_FIELDS):
            return Tenant("phone", name)
    for name in props:
        if _user_ish(name):
            return Tenant("body", name)
    query = next((p for p in op.params if p.where == "query" and _user_ish(p.name)), None)
    if query is not None:
        return Tenant("query", query.name)
    return Tenant("none")


def _collection_create(ops: list[Op], collection: str) -> Op | None:
    for op in ops:
        if op.method == "POST" and op.path.rstrip("/") == collection.rstrip("/"):
            return op
    return None


def _refers_to(name: str) -> str | None:
    """The resource a foreign-key field names (`user_uuid`, `userId` -> `user`)."""
    match = re.fullmatch(r"([a-z]+?)(?:uuid|id)", _norm(name))
    return match.group(1) if match else None


class _Builder:
    def __init__(self, document: dict[str, Any], ops: list[Op]) -> None:
        self.document = document
        self.ops = ops
        self.schemas = Schemas(document)

    # say -------------------------------------------------------------------------------

    def say(self) -> tuple[Op, Tenant]:
        scored = sorted(
            ((self._say_rank(op), index, op) for index, op in enumerate(self.ops)),
            key=lambda t: (-t[0], t[1]),
        )
        if not scored or scored[0][0] < 3:
            raise ProposalError(
                "paths",
                "no operation takes a message (a POST whose body has `messages`, `message`, "
                "`content` or `text`): write the target file by hand (docs/target-files.md)",
            )
        op = scored[0][2]
        return op, _tenant_of(op, self.schemas)

    def _say_rank(self, op: Op) -> int:
        score = _say_score(op, self.schemas)
        tenant = _tenant_of(op, self.schemas) if score > 0 else Tenant("none")
        # A scope without a create of its own is hardly a tenant.
        if (
            tenant.kind == "path"
            and not _user_ish(tenant.name)
            and _collection_create(self.ops, tenant.collection) is None
        ):
            score -= 2
        return score + (tenant.kind != "none")

    def operation(
        self,
        op: Op,
        tenant: Tenant,
        slots: dict[str, tuple[str, ...]],
        *,
        extra: dict[str, Any] | None = None,
        path_values: dict[str, str] | None = None,
    ) -> tuple[dict[str, Any], list[str]]:
        """An operation's request, its tenant bound as `say` binds it; what to confirm."""
        confirm: list[str] = []
        request: dict[str, Any] = {"method": op.method}
        path = op.path
        for name in op.path_params():
            value = (path_values or {}).get(name)
            if value is None and tenant.kind == "path" and (name == tenant.name or _user_ish(name)):
                value = "{user_id}"
            if value is None:
                value = "{user_id}"
                confirm.append(f"the path parameter {{{name}}} was given the tenant's id")
            path = path.replace("{" + name + "}", value)
        request["path"] = path
        query: dict[str, str] = {}
        for param in op.params:
            if param.where != "query":
                continue
            if _user_ish(param.name) and tenant.kind in ("body", "query", "path"):
                query[param.name] = "{user_id}"
            elif _match(param.name, PHONE_FIELDS):
                query[param.name] = "{phone}"
            elif "message" in slots and _match(param.name, slots["message"]):
                query[param.name] = "{message}"
            elif param.required:
                query[param.name] = str(_filler(param.schema))
                confirm.append(f"the required query parameter {param.name!r}")
        if query:
            request["query"] = query
        if op.body is not None:
            all_slots = dict(slots)
            if tenant.kind in ("body", "query", "path"):
                all_slots.setdefault(
                    "user_id", USER_FIELDS + ((tenant.name,) if tenant.name else ())
                )
            all_slots.setdefault("phone", PHONE_FIELDS)
            filled = _fill_body(op.body, self.schemas, all_slots, extra)
            if filled is not None:
                request["json"] = filled.value
                if filled.filled:
                    confirm.append(
                        "required body field(s) with no memlife variable, given the "
                        "schema's default or an empty value: " + ", ".join(filled.filled)
                    )
        success = op.success()
        if success != [200] and set(success) - {200, 201, 202, 204}:
            request["success"] = success
        return request, confirm

    # the tenant's registration ---------------------------------------------------------

    def register(self, tenant: Tenant) -> Guess | None:
        if tenant.kind == "path":
            create = _collection_create(self.ops, tenant.collection)
            if create is None:
                return None
            steps: list[dict[str, Any]] = []
            sources = [create.describe()]
            confirm: list[str] = []
            owner_step = self._owner_step(create)
            slots = {"tenant_alias": NAME_FIELDS, "phone": PHONE_FIELDS}
            extra: dict[str, Any] = {}
            if owner_step is not None:
                owner_op, foreign = owner_step
                step, more = self._create_step(
                    owner_op, owner_op.path.rstrip("/").rsplit("/", 1)[-1]
                )
                steps.append(step)
                confirm += more
                sources.insert(0, owner_op.describe())
                extra[foreign] = "{user_id}"
                confirm.append(
                    f"a tenant is made in two requests: the second's {foreign!r} is the first's id"
                )
            step, more = self._create_step(create, tenant.resource, slots, extra)
            steps.append(step)
            confirm += more
            return Guess(
                "register",
                steps if len(steps) > 1 else steps[0],
                "medium",
                " then ".join(sources),
                tuple(confirm),
            )
        if tenant.kind == "phone":
            for op in self.ops:
                if (
                    op.method == "POST"
                    and not op.path_params()
                    and op.words & TENANT_NOUNS
                    and op.body is not None
                    and any(_match(n, PHONE_FIELDS) for n in self.schemas.properties(op.body))
                ):
                    resource = op.path.rstrip("/").rsplit("/", 1)[-1]
                    step, confirm = self._create_step(op, resource)
                    created = _field(op.response(), self.schemas, ("created",))
                    if created:
                        step["extract"]["created"] = f"/{created}"
                    return Guess("register", step, "high", op.describe(), tuple(confirm))
        return None

    def _owner_step(self, create: Op) -> tuple[Op, str] | None:
        """A create whose body requires another resource's id (`user_uuid`): that
        resource's own create, and the field."""
        if create.body is None:
            return None
        for name in create.body.get("required") or []:
            noun = _refers_to(str(name))
            if noun is None:
                continue
            prefix = create.path.rstrip("/").rsplit("/", 1)[0]
            for plural in (noun + "s", noun + "es", noun):
                owner = _collection_create(self.ops, f"{prefix}/{plural}")
                if owner is not None and owner is not create:
                    return owner, str(name)
        return None

    def _create_step(
        self,
        op: Op,
        resource: str,
        slots: dict[str, tuple[str, ...]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], list[str]]:
        slots = slots or {"tenant_alias": NAME_FIELDS, "phone": PHONE_FIELDS}
        request, confirm = self.operation(op, Tenant("none"), slots, extra=extra)
        pointer, typed = id_expression(op.response(), self.schemas, resource)
        request["extract"] = {"user_id": pointer}
        if not typed:
            confirm.append(
                f"the new {_singular(resource)}'s id is read with {pointer!r} (the answer "
                "has no schema)"
            )
        return request, confirm

    # ask -------------------------------------------------------------------------------

    def ask(self, say_op: Op, tenant: Tenant) -> Guess | None:
        if say_op.words & CONVERSATIONAL:
            return None  # it answers what it is told
        best: tuple[int, Op] | None = None
        for op in self.ops:
            if op is say_op or op.method not in ("POST", "GET") or not op.words & SEARCH_WORDS:
                continue
            props = self.schemas.properties(op.body) if op.body else {}
            takes_query = any(_match(n, QUERY_FIELDS) for n in props) or any(
                p.where == "query" and _match(p.name, QUERY_FIELDS) for p in op.params
            )
            if not takes_query:
                continue
            if not self._binds(op, tenant):
                continue
            score = 2 * bool(op.words & MEMORY_NOUNS) - 2 * bool(op.words & SPACE_WORDS)
            if best is None or score > best[0]:
                best = (score, op)
        if best is None:
            return None
        op = best[1]
        request, confirm = self.operation(op, tenant, {"message": QUERY_FIELDS})
        pointer, typed = reply_expression(op.response(), self.schemas)
        request["extract"] = {"reply": pointer}
        if not typed:
            confirm.append("the answer has no schema: narrow `reply` to the field that answers")
        confirm.append("the search is scoped to the tenant by the field the say uses")
        return Guess("ask", request, "medium", op.describe(), tuple(confirm))

    def _binds(self, op: Op, tenant: Tenant) -> bool:
        if tenant.kind == "path":
            found = _path_tenant(op)
            return found is not None and found.collection == tenant.collection
        props = self.schemas.properties(op.body) if op.body else {}
        names = [*props, *(p.name for p in op.params if p.where == "query")]
        if tenant.kind in ("body", "query"):
            return any(_match(n, (tenant.name,)) for n in names)
        if tenant.kind == "phone":
            return any(_match(n, PHONE_FIELDS) for n in names)
        return True

    # deletion --------------------------------------------------------------------------

    def delete_tenant(self, tenant: Tenant, register: Guess | None) -> Guess | None:
        for op in self.ops:
            if op.method != "DELETE":
                continue
            found = _path_tenant(op)
            if (
                tenant.kind == "path"
                and found is not None
                and found.collection == tenant.collection
                and op.path.rstrip("/").endswith("{" + found.name + "}")
            ):
                return self._delete_guess(op, tenant, "high")
            if tenant.kind == "phone" and register is not None and found is not None:
                reg_path = register.value["path"] if isinstance(register.value, dict) else ""
                if found.collection.rstrip("/") == reg_path.rstrip("/") and op.path.rstrip(
                    "/"
                ).endswith("{" + found.name + "}"):
                    return self._delete_guess(op, Tenant("path", found.name), "high")
            if (
                tenant.kind in ("body", "query")
                and not op.path_params()
                and op.param("query", (tenant.name,)) is not None
            ):
                return self._delete_guess(op, tenant, "high")
        if tenant.kind == "path" and register is not None and isinstance(register.value, list):
            return self._delete_owner(tenant, register)
        return None

    def _delete_guess(self, op: Op, tenant: Tenant, confidence: Confidence) -> Guess:
        request, confirm = self.operation(op, tenant, {})
        response = op.response()
        extract = {}
        status = _field(response, self.schemas, STATUS_FIELDS)
        if status:
            extract["status"] = f"/{status}"
        ident = _field(response, self.schemas, ("deletion_id", "task_id", "job_id"))
        if ident:
            extract["deletion_id"] = f"/{ident}"
        if extract:
            request["extract"] = extract
            request["done_values"] = DONE_VALUES
            confirm.append(
                "the statuses that mean the deletion is done (done_values) and failed "
                "(failed_values, default [failed, error])"
            )
        request["refused"] = [404]
        confirm.append("404 is taken as nothing left to delete (refused)")
        return Guess("delete_tenant", request, confidence, op.describe(), tuple(confirm))

    def _delete_owner(self, tenant: Tenant, register: Guess) -> Guess | None:
        """A tenant made in two requests (a user, then its thread) is deleted through its
        owner: look the owner's id up on the tenant's item, delete the owner."""
        first = register.value[0]
        owner_collection = first["path"].rstrip("/")
        foreign = next(
            (k for k, v in (register.value[1].get("json") or {}).items() if v == "{user_id}"),
            None,
        )
        lookup = next(
            (
                op
                for op in self.ops
                if op.method == "GET"
                and (found := _path_tenant(op)) is not None
                and found.collection == tenant.collection
                and op.path.rstrip("/").endswith("{" + found.name + "}")
            ),
            None,
        )
        delete = next(
            (
                op
                for op in self.ops
                if op.method == "DELETE"
                and (found := _path_tenant(op)) is not None
                and found.collection.rstrip("/") == owner_collection
                and op.path.rstrip("/").endswith("{" + found.name + "}")
            ),
            None,
        )
        if lookup is None or delete is None or foreign is None:
            return None
        get, _ = self.operation(lookup, tenant, {})
        get["extract"] = {"owner": foreign}
        get["refused"] = [404]
        owner_id = delete.path_params()[0]
        guess = self._delete_guess(delete, tenant, "medium")
        last = dict(guess.value)
        last["path"] = delete.path.replace("{" + owner_id + "}", "{owner}")
        return Guess(
            "delete_tenant",
            [get, last],
            "medium",
            f"{lookup.describe()} then {delete.describe()}",
            (
                f"the tenant's owner is read from the answer's {foreign!r} and deleted with "
                "all it owns",
                *guess.confirm,
            ),
        )

    def deletion_status(self, tenant: Tenant, delete: Guess | None) -> Guess | None:
        if delete is None:
            return None
        last = delete.value[-1] if isinstance(delete.value, list) else delete.value
        for op in self.ops:
            if op.method != "GET" or not op.words & STATUS_WORDS:
                continue
            params = op.path_params()
            item = re.sub(r"\{[^}]*\}", "{user_id}", op.path)
            if (
                len(params) == 1
                and item.startswith(last["path"].rstrip("/") + "/")
                and "{user_id}" in last["path"]
            ):
                request, confirm = self.operation(
                    op, tenant if tenant.kind == "path" else Tenant("path", params[0]), {}
                )
                self._status_extract(op, request, confirm)
                return Guess("deletion_status", request, "high", op.describe(), tuple(confirm))
        for op in self.ops:
            params = op.path_params()
            if (
                op.method != "GET"
                or len(params) != 1
                or not op.words & {"task", "tasks", "job", "jobs", "operation"}
            ):
                continue
            request, confirm = self.operation(
                op, tenant, {}, path_values={params[0]: "{deletion_id}"}
            )
            self._status_extract(op, request, confirm)
            confirm.append(
                "delete_tenant must extract the task's id as deletion_id (and its status): "
                "the deletion's answer has no schema to say where"
            )
            return Guess("deletion_status", request, "low", op.describe(), tuple(confirm))
        return None

    def _status_extract(self, op: Op, request: dict[str, Any], confirm: list[str]) -> None:
        status = _field(op.response(), self.schemas, STATUS_FIELDS)
        request["extract"] = {"status": f"/{status}" if status else " || ".join(STATUS_FIELDS)}
        request["done_values"] = DONE_VALUES
        confirm.append("the statuses that mean done (done_values) and failed (failed_values)")

    # forget ----------------------------------------------------------------------------

    def forget(self, tenant: Tenant, say_op: Op) -> Guess | None:
        for op in self.ops:
            if op.method not in ("POST", "DELETE", "PUT") or not op.words & FORGET_WORDS:
                continue
            if not self._binds(op, tenant) and tenant.kind != "phone":
                continue
            slots = {"values": ("values",), "value": VALUE_FIELDS}
            request, confirm = self.operation(op, tenant, slots)
            if tenant.kind == "phone" and op.path_params():
                request, confirm = self.operation(op, Tenant("path", op.path_params()[0]), slots)
            return Guess("forget", request, "high", op.describe(), tuple(confirm))
        # A memory deleted by id, after a look-up of the tenant's memories by value.
        for op in self.ops:
            params = op.path_params()
            if op.method != "DELETE" or not params or not op.words & MEMORY_NOUNS:
                continue
            collection = op.path.rsplit("{" + params[-1] + "}", 1)[0].rstrip("/")
            listing = next(
                (o for o in self.ops if o.method == "GET" and o.path.rstrip("/") == collection),
                None,
            )
            if listing is None or not self._binds(listing, tenant):
                continue
            get, confirm = self.operation(listing, tenant, {})
            limit = next(
                (p for p in listing.params if p.where == "query" and _match(p.name, LIMIT_FIELDS)),
                None,
            )
            if limit is not None:
                top = limit.schema.get("maximum", 100)
                get.setdefault("query", {})[limit.name] = str(top)
            response = listing.response()
            texts = " || ".join(RECORD_TEXT)
            get["select"] = {
                "records": " || ".join(RECORD_LISTS[:3]) + " || @",
                "content": texts,
                "holding": "{values}",
                "extract": {"memory_id": " || ".join(ID_FIELDS)},
            }
            if response is None:
                confirm.append(
                    "the listing's answer has no schema: select reads its records and their "
                    "text and id with tolerant expressions"
                )
            path_values = {params[-1]: "{memory_id}"}
            delete, more = self.operation(op, tenant, {}, path_values=path_values)
            delete["refused"] = [404]
            return Guess(
                "forget",
                [get, delete],
                "medium",
                f"{listing.describe()} then {op.describe()}",
                (
                    "a fact is forgotten by deleting each memory that holds it, found in the "
                    "tenant's list",
                    *confirm,
                    *more,
                ),
            )
        return None


# --- security --------------------------------------------------------------------------


def _env_name(name: str) -> str:
    first = re.split(r"[^A-Za-z0-9]+", name.strip())[0] or "TARGET"
    return re.sub(r"[^A-Z0-9]", "_", first.upper()) + "_API_KEY"


def security_headers(
    document: dict[str, Any], ops: list[Op], name: str
) -> tuple[dict[str, Any], list[Guess]]:
    """The secrets every request carries: one scheme the chosen operations accept."""
    env = _env_name(name)
    schemes = (document.get("components") or {}).get("securitySchemes") or {}
    used: list[str] = []
    for op in ops:
        for requirement in op.security or []:
            if isinstance(requirement, dict):
                used += [n for n in requirement if n not in used]
    candidates = [n for n in used if isinstance(schemes.get(n), dict)] or [
        n for n in schemes if isinstance(schemes[n], dict)
    ]

    def rank(scheme_name: str) -> int:
        scheme = schemes[scheme_name]
        kind = scheme.get("type")
        if kind == "apiKey" and scheme.get("in") == "header":
            return 0
        if kind == "http" and str(scheme.get("scheme", "")).lower() == "bearer":
            return 1
        if kind in ("oauth2", "openIdConnect"):
            return 2
        if kind == "http":
            return 3
        return 9

    headers: dict[str, Any] = {}
    guesses: list[Guess] = []
    if candidates:
        chosen = min(candidates, key=rank)
        scheme = schemes[chosen]
        others = [n for n in candidates if n != chosen]
        also = f"; the document also accepts {', '.join(others)}" if others else ""
        kind = scheme.get("type")
        source = f"securitySchemes.{chosen} ({kind}"
        if kind == "apiKey" and scheme.get("in") == "header":
            headers[str(scheme.get("name"))] = {"env": env}
            source += f" in header {scheme.get('name')})"
            confirm = [f"{env} holds the key{also}"]
        elif kind == "apiKey":
            source += f" in {scheme.get('in')} {scheme.get('name')})"
            return {}, [
                Guess(
                    "headers",
                    {},
                    "low",
                    source,
                    (
                        f"the key goes in the {scheme.get('in')} parameter "
                        f"{scheme.get('name')!r}: a target file keeps secrets in headers only, "
                        "so none is written; put the key in a header if the service takes one",
                    ),
                )
            ]
        elif kind == "http" and str(scheme.get("scheme", "")).lower() == "basic":
            headers["Authorization"] = {"env": env, "prefix": "Basic "}
            source += " basic)"
            confirm = [f"{env} holds base64 of user:password{also}"]
        else:
            headers["Authorization"] = {"env": env, "prefix": "Bearer "}
            source += f" {scheme.get('scheme', '')})".replace(" )", ")")
            confirm = [f"{env} holds the token{also}"]
        guesses.append(Guess("headers", headers, "medium", source, tuple(confirm)))
        return headers, guesses
    # No securitySchemes: a header parameter the operations take (FastAPI's Header()).
    for op in ops:
        for param in op.params:
            if param.where == "header" and _norm(param.name) in {_norm(h) for h in AUTH_HEADERS}:
                is_auth = _norm(param.name) == "authorization"
                header = "Authorization" if is_auth else param.name
                # A scheme the parameter's description or example shows (`Api-Key <key>`).
                said = " ".join(
                    str(x) for x in (param.description, param.schema.get("example")) if x
                )
                shown = re.search(r"\b(Bearer|Api-Key|Token|Basic|Key)\s+[<{\w]", said)
                prefix = f"{shown.group(1)} " if shown else "Bearer "
                headers[header] = {"env": env, "prefix": prefix} if is_auth else {"env": env}
                confirm = [f"{env} holds the key"]
                if is_auth and not shown:
                    confirm.append(
                        "the document does not say the scheme: `Bearer ` is a guess "
                        "(others: `Api-Key `, `Token `, `Basic `)"
                    )
                guesses.append(
                    Guess(
                        "headers",
                        headers,
                        "medium",
                        f"the header parameter {param.name!r} of {op.describe()}",
                        tuple(confirm),
                    )
                )
                return headers, guesses
    return {}, []


def fetched_headers(fetched_with: dict[str, str], name: str) -> tuple[dict[str, Any], list[Guess]]:
    """The headers the document itself was fetched with (names and their schemes only): a
    server that guards its document guards its API the same way."""
    env = _env_name(name)
    headers: dict[str, Any] = {}
    for header, prefix in fetched_with.items():
        headers[header] = {"env": env, "prefix": prefix} if prefix else {"env": env}
    confirm = (f"{env} holds what the document was fetched with",)
    source = "the header(s) the document was fetched with (it names no security scheme)"
    return headers, [Guess("headers", headers, "medium", source, confirm)]


# --- the whole proposal ----------------------------------------------------------------


def slug(text: str) -> str:
    head = re.split(r"[(\[:,]", text or "")[0]
    words = re.findall(r"[a-z0-9]+", head.lower())[:3]
    return "-".join(words) or "my-memory"


def base_url_of(document: dict[str, Any], document_url: str | None) -> str | None:
    """The service's base URL: the first server's (relative to the document's URL when
    relative), else the origin the document was fetched from."""
    servers = document.get("servers")
    if isinstance(servers, list) and servers and isinstance(servers[0], dict):
        server = servers[0]
        url = str(server.get("url") or "")
        for key, variable in (server.get("variables") or {}).items():
            if isinstance(variable, dict) and "default" in variable:
                url = url.replace("{" + key + "}", str(variable["default"]))
        if url.startswith(("http://", "https://")):
            fetched = urlsplit(document_url or "")
            host = urlsplit(url).hostname or ""
            if (host == "localhost" or host.endswith(".localhost")) and fetched.hostname in (
                "127.0.0.1",
                "::1",
                "localhost",
            ):
                # A loopback name the server gave itself (Letta lists its CORS origins,
                # http://letta.localhost): where the document came from answers.
                return f"{fetched.scheme}://{fetched.netloc}"
            return url.rstrip("/")
        if document_url and url and url != "/":
            return urljoin(document_url, url).rstrip("/")
    if document_url and document_url.startswith(("http://", "https://")):
        parts = urlsplit(document_url)
        return f"{parts.scheme}://{parts.netloc}"
    return None


def propose(
    document: Any,
    source: str,
    *,
    name: str | None = None,
    base_url: str | None = None,
    document_url: str | None = None,
    fetched_with: dict[str, str] | None = None,
) -> Proposal:
    """A target file proposed from an OpenAPI 3 document; ProposalError when it is not
    one, has no operations or none that takes a message, or names no base URL.
    `fetched_with`: the headers the document was fetched with, by name, each with its
    scheme (`Bearer `) and never its secret."""
    ops = read_operations(document)
    info = document.get("info") if isinstance(document.get("info"), dict) else {}
    title = str(info.get("title") or "")
    url = base_url or base_url_of(document, document_url)
    if not url:
        raise ProposalError(
            "servers",
            "the document names no server URL: give the service's with --base-url",
        )
    base_confirm: list[str] = []
    if not base_url and document_url:
        fetched = urlsplit(document_url)
        if not url.startswith(f"{fetched.scheme}://{fetched.netloc}"):
            base_confirm.append(
                f"{url} is the document's first server; it was fetched from "
                f"{fetched.scheme}://{fetched.netloc}"
            )
    builder = _Builder(document, ops)
    say_op, tenant = builder.say()
    proposal = Proposal(
        name=name or slug(title),
        base_url=url,
        description=f"{title or 'a memory service'}, as its OpenAPI document describes it"
        + (f" (version {info['version']})" if info.get("version") else ""),
        source=source,
    )
    register = builder.register(tenant)
    say_request, say_confirm = builder.operation(say_op, tenant, {"message": MESSAGE_FIELDS})
    if say_op.body is not None and "json" in say_request:
        for prop, schema in builder.schemas.properties(say_op.body).items():
            if _kind(schema) == "boolean" and "context" in prop.lower():
                say_request["json"][prop] = True
                say_confirm.append(f"{prop}: true, so that the answer carries the context")
    pointer, typed = reply_expression(say_op.response(), builder.schemas)
    say_request["extract"] = {"reply": pointer}
    if not typed:
        say_confirm.append(
            "the answer has no schema: `reply` is read with a tolerant expression (the "
            "usual fields, else the whole answer as text); narrow it to the field that answers"
        )
    tenant_note = {
        "path": f"the tenant is the {tenant.name!r} of {tenant.collection}/{{{tenant.name}}}",
        "body": f"the tenant is the body's {tenant.name!r} (memlife's user id: the phone, "
        "without registration)",
        "query": f"the tenant is the query's {tenant.name!r}",
        "phone": f"the tenant is known by the body's {tenant.name!r}",
        "none": "no field names whose conversation it is: tenants cannot be told apart",
    }[tenant.kind]
    say = Guess(
        "say",
        say_request,
        "high" if _say_score(say_op, builder.schemas) >= 6 else "medium",
        say_op.describe(),
        (tenant_note, *say_confirm),
    )
    if tenant.kind == "path" and register is None:
        proposal.missing.append(
            f"register: the tenant is a {_singular(tenant.resource)} (a path parameter), but "
            f"no POST {tenant.collection} creates one"
        )
    ask = builder.ask(say_op, tenant)
    delete = builder.delete_tenant(tenant, register)
    status = builder.deletion_status(tenant, delete)
    forget = builder.forget(tenant, say_op)
    proposal.operations = [g for g in (register, say, ask, delete, status, forget) if g]
    proposal.base_url_confirm = base_confirm
    if ask is None and not say_op.words & CONVERSATIONAL:
        proposal.missing.append("ask: no search takes a query for the tenant: questions go to say")
    for role, guess in (("delete_tenant", delete), ("forget", forget)):
        if guess is None:
            proposal.missing.append(f"{role}: no operation looks like it")
    chosen_ops = [say_op] + [o for o in ops if o is not say_op]
    # Secrets are named after the service (its title), whatever the target is called.
    service = slug(title) if title else proposal.name
    proposal.headers, proposal.header_guesses = security_headers(document, chosen_ops, service)
    if not proposal.headers and fetched_with:
        proposal.headers, proposal.header_guesses = fetched_headers(fetched_with, service)
    return proposal
