"""Follows zep-cloud 4.0.1 (zep_cloud/*/raw_client.py).

The Zep stand-in driven by Zep's own Python client (`zep-cloud` 4.x): it accepts what the
client sends (paths under /api/v4, `Authorization: Api-Key`, bodies) and answers in shapes the
client parses, with the statuses its errors map."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

zep_cloud = pytest.importorskip("zep_cloud")

from zep_cloud import (  # noqa: E402
    AddMessage,
    AsyncZep,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    UnauthorizedError,
    Zep,
)

from tests.servers import serve_in_thread  # noqa: E402
from tests.standins.zep import create_app  # noqa: E402

KEY = "zep-key-5e0c"
NO_RETRY = {"max_retries": 0}


@pytest.fixture
def zep_url() -> Iterator[str]:
    with serve_in_thread(create_app(KEY)) as url:
        yield f"{url}/api/v4"


@pytest.fixture
def zep(zep_url: str) -> Zep:
    return Zep(api_key=KEY, base_url=zep_url, timeout=5)


def test_a_user_thread_answers_with_its_own_facts_and_deletion_is_a_task(zep: Zep) -> None:
    ana = zep.user.create(first_name="ana", metadata={"phone": "+34600000001"})
    bruno = zep.user.create(first_name="bruno")
    assert ana.uuid_ and ana.graph_uuid and ana.uuid_ != bruno.uuid_
    thread = zep.thread.create(user_uuid=ana.uuid_)
    other = zep.thread.create(user_uuid=bruno.uuid_)
    assert thread.user_uuid == ana.uuid_ and thread.graph_uuid == ana.graph_uuid

    added = zep.thread.add_messages(
        thread.uuid_, messages=[AddMessage(role="user", content="Mi mascota se llama Canelo.")]
    )
    assert added.messages and added.messages[0].uuid_ and added.context is None
    assert added.task is not None and added.task.status == "succeeded"
    zep.thread.add_messages(
        other.uuid_, messages=[AddMessage(role="user", content="Mi mascota se llama Luna.")]
    )
    asked = zep.thread.add_messages(
        thread.uuid_,
        return_context=True,
        messages=[AddMessage(role="user", content="¿Cómo se llama mi mascota?")],
    )
    assert asked.context is not None and "Canelo" in asked.context
    assert "Luna" not in asked.context
    context = zep.thread.get_context(thread.uuid_)
    assert context.context is not None and "Canelo" in context.context

    deletion = zep.user.delete(ana.uuid_)
    assert deletion.task is not None and deletion.task.status == "pending"
    task = zep.task.get(deletion.task.uuid_)
    assert task.status == "succeeded" and task.completed_at
    # The user's threads and graph went with it; the other user is intact.
    for gone in (
        lambda: zep.user.get(ana.uuid_),
        lambda: zep.thread.get(thread.uuid_),
        lambda: zep.thread.get_context(thread.uuid_),
        lambda: zep.user.delete(ana.uuid_),
    ):
        with pytest.raises(NotFoundError) as refused:
            gone()
        assert refused.value.status_code == 404
        assert refused.value.body.error is not None
    assert "Luna" in (zep.thread.get_context(other.uuid_).context or "")


def test_messages_page_with_a_cursor(zep: Zep) -> None:
    user = zep.user.create()
    thread = zep.thread.create(user_uuid=user.uuid_)
    zep.thread.add_messages(
        thread.uuid_, messages=[AddMessage(role="user", content=f"message {i}") for i in range(5)]
    )
    pager = zep.thread.list_messages(thread.uuid_, page_size=2)
    assert len(pager.items or []) == 2 and pager.has_next
    assert [m.content for m in pager] == [f"message {i}" for i in range(5)]


def test_refusals_map_to_the_clients_errors(zep_url: str, zep: Zep) -> None:
    with pytest.raises(UnauthorizedError):
        Zep(api_key="wrong", base_url=zep_url).user.create(request_options=NO_RETRY)
    with pytest.raises(NotFoundError):
        zep.thread.create(user_uuid="no-such-user")
    zep.user.create(user_id="idp|ana")
    # 409 is one of the statuses the client retries; not retried here.
    with pytest.raises(ConflictError):
        zep.user.create(user_id="idp|ana", request_options=NO_RETRY)
    with pytest.raises(BadRequestError):  # a malformed body is 400, as Zep's
        zep.thread.add_messages(
            "x",
            messages=[],
            request_options={"additional_body_parameters": {"messages": "not a list"}},
        )


def test_a_standalone_graph_is_searched_by_edges_and_deleted_by_a_task(zep: Zep) -> None:
    graph = zep.graph.create(name="team", description="a memlife space")
    assert graph.type == "standard" and graph.uuid_
    for supplier in ("Conservas Palacios", "Harinas Palacios", "Aceites Palacios"):
        added = zep.graph.episode.add(graph.uuid_, data=f"El proveedor es {supplier}.", type="text")
        assert added.episode is not None and added.episode.content
    pager = zep.graph.search_edges(graph.uuid_, query="¿Cuál es el proveedor?", page_size=2)
    assert len(pager.items or []) == 2 and pager.has_next
    facts = [edge.fact for edge in pager]
    assert len(facts) == 3 and all("Palacios" in (f or "") for f in facts)

    deletion = zep.graph.delete(graph.uuid_)
    assert deletion.task is not None
    assert zep.task.get(deletion.task.uuid_).status == "succeeded"
    with pytest.raises(NotFoundError):
        zep.graph.search_edges(graph.uuid_, query="proveedor")


def test_user_groups_have_members_that_do_not_gate_api_key_reads(zep: Zep) -> None:
    ana, bruno = zep.user.create(first_name="ana"), zep.user.create(first_name="bruno")
    group = zep.user_group.create(name="team")
    assert group.uuid_ and group.version == 1
    added = zep.user_group.add_members(group.uuid_, user_uuids=[ana.uuid_, ana.uuid_])
    assert added.added_count == 1 and added.no_op_count == 1
    assert [u.uuid_ for u in zep.user_group.list_members(group.uuid_)] == [ana.uuid_]
    assert [g.uuid_ for g in zep.user_group.list_for_user(ana.uuid_)] == [group.uuid_]
    # Membership is not access: with the project key, anyone reads a graph by its uuid.
    graph = zep.graph.create(name="team")
    zep.graph.episode.add(graph.uuid_, data="El proveedor es Conservas Palacios.")
    assert [e.fact for e in zep.graph.search_edges(graph.uuid_, query="proveedor")]
    assert bruno.uuid_ not in [u.uuid_ for u in zep.user_group.list_members(group.uuid_)]
    removed = zep.user_group.remove_members(group.uuid_, user_uuids=[ana.uuid_])
    assert removed.removed_count == 1
    zep.user_group.delete(group.uuid_)
    with pytest.raises(NotFoundError):
        zep.user_group.get(group.uuid_)


def test_user_groups_need_attribute_based_access_control() -> None:
    with serve_in_thread(create_app(KEY, abac=False)) as url:
        zep = Zep(api_key=KEY, base_url=f"{url}/api/v4")
        with pytest.raises(ForbiddenError):
            zep.user_group.create(name="team")


def test_the_async_client_speaks_to_it_too(zep_url: str) -> None:
    async def flow() -> str | None:
        client = AsyncZep(api_key=KEY, base_url=zep_url)
        user = await client.user.create()
        thread = await client.thread.create(user_uuid=user.uuid_)
        await client.thread.add_messages(
            thread.uuid_,
            messages=[AddMessage(role="user", content="Trabajo en Conservas Palacios.")],
        )
        return (await client.thread.get_context(thread.uuid_)).context

    assert "Palacios" in (asyncio.run(flow()) or "")
