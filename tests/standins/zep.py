"""A stand-in for Zep's v4 API, for tests: NOT Zep.

It follows the API as the `zep-cloud` 4.0.1 Python client describes it (PyPI; its generated
code is the reference: zep_cloud/environment.py, core/client_wrapper.py, user/, thread/,
graph/, graph/episode/, task/, user_group/ raw_client.py, types/), so that the client drives
it unchanged with `Zep(api_key=..., base_url=f"{url}/api/v4")`:

- every request carries `Authorization: Api-Key <key>`; anything else is 401. Errors answer
  the client's `ApiError` shape, `{"error": {"code", "message", "request_id"}}`, with the
  statuses its errors map (400 BadRequestError, 401, 403 ForbiddenError, 404 NotFoundError,
  409 ConflictError); a malformed body is 400, not FastAPI's 422.
- everything is addressed by a service-assigned `uuid` (v4: a user's `user_id` is an
  optional external identity, unique in the project, "not an address").
- `POST /users` (201 User, with its graph's `graph_uuid`); `GET /users/{uuid}`;
  `DELETE /users/{uuid}` answers 202 with a `task`: the deletion is asynchronous, and "once it
  completes, the user's threads, messages, and graph are removed as well"
  (types/user_delete_result.py). `GET /tasks/{uuid}` reports it: pending, then succeeded.
- `POST /threads {user_uuid}` (201 Thread; the thread's id cannot be chosen);
  `GET /threads/{uuid}`; `POST /threads/{uuid}/messages` (202 AddMessagesResult: the messages,
  a task, and with `return_context` the context block for the thread's latest messages);
  `GET /threads/{uuid}/context`; `GET /threads/{uuid}/messages` (cursor pages).
- `POST /graphs` (201 Graph, a standard graph), `GET`/`DELETE /graphs/{uuid}` (DELETE: 202 and
  a task), `POST /graphs/{uuid}/episodes` (202: the episode and a task) and
  `POST /graphs/{uuid}/search/edges?page_size&cursor` (an EdgePage: `items`, and
  `next_cursor` only while more remain). A user graph may be named by its user's uuid.
- user groups (`/user-groups`, members added, removed, listed): they need attribute-based
  access control on the account (`abac=False` makes every call 403, as an account without
  it would see). Membership is real but, as Zep documents (help.getzep.com, "UserGroup
  access"), UserGroup policies govern Context MCP users only and "do not affect ordinary
  API-key traffic": with the project key, any graph is readable by its uuid, member or not.

Where Zep extracts a knowledge graph with an LLM, this keeps each user statement (a user
message without a question mark, or an episode's text) as one fact, and answers the context
and a search with the facts sharing words with the query. Superseded facts are not
invalidated (Zep sets `invalid_at` on an edge a newer fact contradicts).
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from unidecode import unidecode


class ZepError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class CreateUser(BaseModel):
    user_id: str | None = None
    email: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    metadata: dict[str, Any] | None = None
    time_zone: str | None = None
    content_policy: dict[str, Any] | None = None
    disable_default_ontology: bool | None = None


class CreateThread(BaseModel):
    user_uuid: str


class AddMessage(BaseModel):
    content: str
    role: str | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = None
    reference_time: str | None = None


class AddMessages(BaseModel):
    messages: list[AddMessage]
    return_context: bool | None = None
    ignore_roles: list[str] | None = None
    strict_ontology: bool | None = None


class CreateGraph(BaseModel):
    name: str | None = None
    description: str | None = None
    time_zone: str | None = None
    content_policy: dict[str, Any] | None = None


class AddEpisode(BaseModel):
    data: str
    type: str | None = "text"
    metadata: dict[str, Any] | None = None
    source_description: str | None = None
    reference_time: str | None = None
    document_id: str | None = None
    strict_ontology: bool | None = None


class SearchEdges(BaseModel):
    query: str
    filters: dict[str, Any] | None = None
    reranker: str | None = None


class CreateUserGroup(BaseModel):
    name: str
    description: str | None = None


class Members(BaseModel):
    user_uuids: list[str]


class ListSearch(BaseModel):
    search: str | None = None


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", unidecode(text).casefold()) if len(w) > 2}


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _page(items: list[Any], page_size: int | None, cursor: str | None) -> dict[str, Any]:
    """A cursor page as Zep's: `items`, and `next_cursor` only while more remain."""
    start = int(cursor) if cursor and cursor.isdigit() else 0
    size = page_size or 50
    page: dict[str, Any] = {"items": items[start : start + size]}
    if start + size < len(items):
        page["next_cursor"] = str(start + size)
    return page


def create_app(api_key: str, *, abac: bool = True, deletion_delay: float = 0.0) -> FastAPI:
    """Zep v4 for `api_key`. `abac`: whether the account has attribute-based access control
    (user groups). `deletion_delay`: seconds before an accepted deletion's task runs (it runs
    on the first request after that)."""
    lock = threading.RLock()
    users: dict[str, dict[str, Any]] = {}
    threads: dict[str, dict[str, Any]] = {}  # + "messages": list
    graphs: dict[str, dict[str, Any]] = {}  # + "facts": list of (edge uuid, fact, created)
    tasks: dict[str, dict[str, Any]] = {}
    pending: list[tuple[float, str, Any]] = []  # (due, task uuid, what to erase)
    groups: dict[str, dict[str, Any]] = {}  # + "members": list of user uuids
    app = FastAPI(title="Zep v4 API (memlife test stand-in, not Zep)")

    @app.exception_handler(ZepError)
    async def zep_error(_: Request, exc: ZepError) -> JSONResponse:
        return JSONResponse(
            status_code=exc.status,
            content={
                "error": {"code": exc.code, "message": exc.message, "request_id": str(uuid.uuid4())}
            },
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(
            status_code=400,
            content={
                "error": {
                    "code": "bad_request",
                    "message": str(exc.errors()[:3]),
                    "request_id": str(uuid.uuid4()),
                }
            },
        )

    def authorized(authorization: str | None) -> None:
        if authorization != f"Api-Key {api_key}":
            raise ZepError(401, "unauthorized", "invalid or missing API key")
        run_due_tasks()

    def new_task(kind: str) -> dict[str, Any]:
        task = {
            "uuid": str(uuid.uuid4()),
            "type": kind,
            "status": "pending",
            "created_at": _now(),
            "updated_at": _now(),
        }
        tasks[task["uuid"]] = task
        return task

    def done_task(kind: str) -> dict[str, Any]:
        task = new_task(kind)
        task.update(status="succeeded", started_at=_now(), completed_at=_now())
        return dict(task)

    def run_due_tasks() -> None:
        with lock:
            now = time.monotonic()
            for entry in [e for e in pending if e[0] <= now]:
                pending.remove(entry)
                _, task_uuid, erase = entry
                erase()
                tasks[task_uuid].update(
                    status="succeeded", started_at=_now(), completed_at=_now(), updated_at=_now()
                )

    def accept(kind: str, erase: Any) -> dict[str, Any]:
        task = new_task(kind)
        pending.append((time.monotonic() + deletion_delay, task["uuid"], erase))
        return {"task": dict(task)}

    def graph_of(graph_or_user_uuid: str) -> dict[str, Any]:
        graph_uuid = (
            users[graph_or_user_uuid]["graph_uuid"]
            if graph_or_user_uuid in users
            else graph_or_user_uuid
        )
        graph = graphs.get(graph_uuid)
        if graph is None:
            raise ZepError(404, "not_found", f"graph {graph_or_user_uuid} not found")
        return graph

    def graph_view(graph: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in graph.items() if k != "facts"}

    def add_fact(graph: dict[str, Any], fact: str) -> None:
        graph["facts"].append((str(uuid.uuid4()), fact, _now()))

    def relevant(graph: dict[str, Any], query: str) -> list[tuple[str, str, str]]:
        return [f for f in graph["facts"] if _words(f[1]) & _words(query)]

    def edge(graph: dict[str, Any], fact: tuple[str, str, str], score: float) -> dict[str, Any]:
        view = {
            "uuid": fact[0],
            "fact": fact[1],
            "name": "RELATES_TO",
            "scope": "entity",
            "graph_uuid": graph["uuid"],
            "created_at": fact[2],
            "valid_at": fact[2],
            "score": score,
        }
        if graph.get("user_uuid"):
            view["user_uuid"] = graph["user_uuid"]
        return view

    def context_block(graph: dict[str, Any], latest: str) -> str:
        facts = [f[1] for f in relevant(graph, latest)] or [f[1] for f in graph["facts"]]
        lines = "\n".join(f"  - {fact}" for fact in facts[-20:])
        return (
            "FACTS and ENTITIES represent relevant context to the current conversation.\n"
            f"<FACTS>\n{lines}\n</FACTS>"
        )

    # Users -------------------------------------------------------------------------------

    @app.post("/api/v4/users", status_code=201)
    def create_user(body: CreateUser, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            if body.user_id is not None and any(
                u.get("user_id") == body.user_id for u in users.values()
            ):
                raise ZepError(409, "conflict", "a user with this user_id already exists")
            user_uuid, graph_uuid = str(uuid.uuid4()), str(uuid.uuid4())
            graphs[graph_uuid] = {
                "uuid": graph_uuid,
                "type": "user",
                "user_uuid": user_uuid,
                "created_at": _now(),
                "updated_at": _now(),
                "facts": [],
            }
            user = {
                k: v
                for k, v in body.model_dump().items()
                if v is not None and k != "content_policy"
            }
            user.update(uuid=user_uuid, graph_uuid=graph_uuid, created_at=_now())
            users[user_uuid] = user
            return user

    @app.get("/api/v4/users/{user_uuid}")
    def get_user(user_uuid: str, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            if user_uuid not in users:
                raise ZepError(404, "not_found", f"user {user_uuid} not found")
            return users[user_uuid]

    @app.delete("/api/v4/users/{user_uuid}", status_code=202)
    def delete_user(user_uuid: str, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            user = users.pop(user_uuid, None)
            if user is None:
                raise ZepError(404, "not_found", f"user {user_uuid} not found")
            for group in groups.values():
                if user_uuid in group["members"]:
                    group["members"].remove(user_uuid)

            def erase() -> None:  # the user's threads, messages and graph
                for thread_uuid in [t for t, v in threads.items() if v["user_uuid"] == user_uuid]:
                    del threads[thread_uuid]
                graphs.pop(user["graph_uuid"], None)

            return accept("user.delete", erase)

    # Threads -----------------------------------------------------------------------------

    def thread_of(thread_uuid: str) -> dict[str, Any]:
        thread = threads.get(thread_uuid)
        if thread is None:
            raise ZepError(404, "not_found", f"thread {thread_uuid} not found")
        return thread

    @app.post("/api/v4/threads", status_code=201)
    def create_thread(body: CreateThread, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            user = users.get(body.user_uuid)
            if user is None:
                raise ZepError(404, "not_found", f"user {body.user_uuid} not found")
            thread_uuid = str(uuid.uuid4())
            threads[thread_uuid] = {
                "uuid": thread_uuid,
                "user_uuid": body.user_uuid,
                "graph_uuid": user["graph_uuid"],
                "created_at": _now(),
                "updated_at": _now(),
                "messages": [],
            }
            return {k: v for k, v in threads[thread_uuid].items() if k != "messages"}

    @app.get("/api/v4/threads/{thread_uuid}")
    def get_thread(thread_uuid: str, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            return {k: v for k, v in thread_of(thread_uuid).items() if k != "messages"}

    @app.post("/api/v4/threads/{thread_uuid}/messages", status_code=202)
    def add_messages(
        thread_uuid: str, body: AddMessages, authorization: str | None = Header(None)
    ) -> Any:
        authorized(authorization)
        with lock:
            thread = thread_of(thread_uuid)
            graph = graphs[thread["graph_uuid"]]
            added = []
            for message in body.messages:
                stored = {
                    "uuid": str(uuid.uuid4()),
                    "thread_uuid": thread_uuid,
                    "content": message.content,
                    "role": message.role or "user",
                    "created_at": _now(),
                    "processed": True,
                }
                if message.name is not None:
                    stored["name"] = message.name
                thread["messages"].append(stored)
                added.append(stored)
                if (
                    stored["role"] not in (body.ignore_roles or [])
                    and stored["role"] == "user"
                    and "?" not in message.content
                ):
                    add_fact(graph, message.content)
            result: dict[str, Any] = {"messages": added, "task": done_task("thread.messages.add")}
            if body.return_context:
                latest = body.messages[-1].content if body.messages else ""
                result["context"] = context_block(graph, latest)
            return result

    @app.get("/api/v4/threads/{thread_uuid}/context")
    def thread_context(
        thread_uuid: str, template_uuid: str | None = None, authorization: str | None = Header(None)
    ) -> Any:
        authorized(authorization)
        with lock:
            thread = thread_of(thread_uuid)
            latest = " ".join(m["content"] for m in thread["messages"][-2:])
            return {"context": context_block(graphs[thread["graph_uuid"]], latest)}

    @app.get("/api/v4/threads/{thread_uuid}/messages")
    def list_messages(
        thread_uuid: str,
        page_size: int | None = Query(None),
        cursor: str | None = Query(None),
        authorization: str | None = Header(None),
    ) -> Any:
        authorized(authorization)
        with lock:
            return _page(list(thread_of(thread_uuid)["messages"]), page_size, cursor)

    # Graphs ------------------------------------------------------------------------------

    @app.post("/api/v4/graphs", status_code=201)
    def create_graph(body: CreateGraph, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            graph_uuid = str(uuid.uuid4())
            graphs[graph_uuid] = {
                "uuid": graph_uuid,
                "type": "standard",
                "name": body.name,
                "description": body.description,
                "created_at": _now(),
                "updated_at": _now(),
                "facts": [],
            }
            return graph_view(graphs[graph_uuid])

    @app.get("/api/v4/graphs/{graph_uuid}")
    def get_graph(graph_uuid: str, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            return graph_view(graph_of(graph_uuid))

    @app.delete("/api/v4/graphs/{graph_uuid}", status_code=202)
    def delete_graph(graph_uuid: str, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            graph = graph_of(graph_uuid)
            if graph["type"] == "user":
                return accept("graph.delete", graph["facts"].clear)
            return accept("graph.delete", lambda: graphs.pop(graph["uuid"], None))

    @app.post("/api/v4/graphs/{graph_uuid}/episodes", status_code=202)
    def add_episode(
        graph_uuid: str, body: AddEpisode, authorization: str | None = Header(None)
    ) -> Any:
        authorized(authorization)
        with lock:
            graph = graph_of(graph_uuid)
            add_fact(graph, body.data)
            episode = {
                "uuid": str(uuid.uuid4()),
                "content": body.data,
                "source": body.type or "text",
                "graph_uuid": graph["uuid"],
                "created_at": _now(),
                "processed": True,
            }
            if graph.get("user_uuid"):
                episode["user_uuid"] = graph["user_uuid"]
            return {"episode": episode, "task": done_task("graph.episode.add")}

    @app.post("/api/v4/graphs/{graph_uuid}/search/edges")
    def search_edges(
        graph_uuid: str,
        body: SearchEdges,
        page_size: int | None = Query(None),
        cursor: str | None = Query(None),
        authorization: str | None = Header(None),
    ) -> Any:
        authorized(authorization)
        with lock:
            graph = graph_of(graph_uuid)
            found = relevant(graph, body.query)
            scored = [
                edge(graph, fact, round(1.0 - i / (len(found) + 1), 3))
                for i, fact in enumerate(reversed(found))
            ]
            return _page(scored, page_size or 10, cursor)

    # Tasks -------------------------------------------------------------------------------

    @app.get("/api/v4/tasks/{task_uuid}")
    def get_task(task_uuid: str, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            if task_uuid not in tasks:
                raise ZepError(404, "not_found", f"task {task_uuid} not found")
            return tasks[task_uuid]

    # User groups (attribute-based access control) ----------------------------------------

    def with_abac(authorization: str | None) -> None:
        authorized(authorization)
        if not abac:
            raise ZepError(
                403, "forbidden", "attribute-based access control is not enabled for this account"
            )

    def group_of(group_uuid: str) -> dict[str, Any]:
        group = groups.get(group_uuid)
        if group is None:
            raise ZepError(404, "not_found", f"user group {group_uuid} not found")
        return group

    def group_view(group: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in group.items() if k != "members"}

    @app.post("/api/v4/user-groups", status_code=201)
    def create_group(body: CreateUserGroup, authorization: str | None = Header(None)) -> Any:
        with_abac(authorization)
        with lock:
            if any(g["name"] == body.name for g in groups.values()):
                raise ZepError(409, "conflict", "a user group with this name already exists")
            group_uuid = str(uuid.uuid4())
            groups[group_uuid] = {
                "uuid": group_uuid,
                "name": body.name,
                "description": body.description,
                "version": 1,
                "created_at": _now(),
                "updated_at": _now(),
                "members": [],
            }
            return group_view(groups[group_uuid])

    @app.get("/api/v4/user-groups/{group_uuid}")
    def get_group(group_uuid: str, authorization: str | None = Header(None)) -> Any:
        with_abac(authorization)
        with lock:
            return group_view(group_of(group_uuid))

    @app.delete("/api/v4/user-groups/{group_uuid}", status_code=204)
    def delete_group(group_uuid: str, authorization: str | None = Header(None)) -> Response:
        with_abac(authorization)
        with lock:
            group_of(group_uuid)
            del groups[group_uuid]
        return Response(status_code=204)

    def known_users(user_uuids: list[str]) -> None:
        for user_uuid in user_uuids:
            if user_uuid not in users:
                raise ZepError(404, "not_found", f"user {user_uuid} not found")

    @app.post("/api/v4/user-groups/{group_uuid}/members")
    def add_members(
        group_uuid: str, body: Members, authorization: str | None = Header(None)
    ) -> Any:
        with_abac(authorization)
        with lock:
            group = group_of(group_uuid)
            known_users(body.user_uuids)
            new = [u for u in dict.fromkeys(body.user_uuids) if u not in group["members"]]
            group["members"].extend(new)
            group["version"] += 1
            return {"added_count": len(new), "no_op_count": len(body.user_uuids) - len(new)}

    @app.post("/api/v4/user-groups/{group_uuid}/members/remove")
    def remove_members(
        group_uuid: str, body: Members, authorization: str | None = Header(None)
    ) -> Any:
        with_abac(authorization)
        with lock:
            group = group_of(group_uuid)
            gone = [u for u in dict.fromkeys(body.user_uuids) if u in group["members"]]
            for user_uuid in gone:
                group["members"].remove(user_uuid)
            group["version"] += 1
            return {"removed_count": len(gone), "no_op_count": len(body.user_uuids) - len(gone)}

    @app.delete("/api/v4/user-groups/{group_uuid}/members/{user_uuid}", status_code=204)
    def remove_member(
        group_uuid: str, user_uuid: str, authorization: str | None = Header(None)
    ) -> Response:
        with_abac(authorization)
        with lock:
            group = group_of(group_uuid)
            if user_uuid not in group["members"]:
                raise ZepError(404, "not_found", f"user {user_uuid} is not a member")
            group["members"].remove(user_uuid)
        return Response(status_code=204)

    @app.post("/api/v4/user-groups/{group_uuid}/members/list")
    def list_members(
        group_uuid: str,
        body: ListSearch | None = None,
        page_size: int | None = Query(None),
        cursor: str | None = Query(None),
        authorization: str | None = Header(None),
    ) -> Any:
        with_abac(authorization)
        with lock:
            members = [users[u] for u in group_of(group_uuid)["members"] if u in users]
            page = _page(members, page_size, cursor)
            page["total_size"] = len(members)
            return page

    @app.get("/api/v4/users/{user_uuid}/user-groups")
    def groups_of_user(
        user_uuid: str,
        page_size: int | None = Query(None),
        cursor: str | None = Query(None),
        authorization: str | None = Header(None),
    ) -> Any:
        with_abac(authorization)
        with lock:
            if user_uuid not in users:
                raise ZepError(404, "not_found", f"user {user_uuid} not found")
            mine = [group_view(g) for g in groups.values() if user_uuid in g["members"]]
            return _page(mine, page_size, cursor)

    return app
