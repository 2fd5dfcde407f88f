"""Target credentials come from environment variables named in the target file, are
resolved inside activities, and reach neither Temporal history, nor the database, nor the
logs, nor the artifact. The target here *requires* the credential, so a passing run proves
it was sent."""

from __future__ import annotations

import base64
import json
import uuid
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife import recorder
from memlife.contracts import pair_workflow_id, suite_workflow_id
from memlife.recorder.builder import build_artifact
from memlife.rules.scenario import Scenario
from memlife.rules.target import Target, parse_target
from memlife.stack import embedded
from tests.workflows.helpers import run_input, run_suite

REPO = Path(__file__).resolve().parents[2]
SECRET_VARIABLE = "MEMLIFE_TEST_TARGET_TOKEN"


def authenticated_target(base_url: str) -> Target:
    import yaml

    data = yaml.safe_load((REPO / "scenarios" / "targets" / "reference.yaml").read_text())
    data["base_url"] = base_url
    data["headers"] = {"Authorization": {"env": SECRET_VARIABLE, "prefix": "Bearer "}}
    return parse_target(data)


async def test_secret_is_used_but_never_recorded(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    db_url: str,
    seed_scenario: Scenario,
) -> None:
    secret = f"sk-memlife-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv(SECRET_VARIABLE, secret)
    monkeypatch.setenv("MEMLIFE_LOG_LEVEL", "DEBUG")
    with _authenticated(tmp_path) as process:
        target = authenticated_target(process.base_url)
        assert secret not in target.model_dump_json()  # the file names it, never holds it
        run = run_input(seed_scenario, target)
        summary = await run_suite(skip_env.client, skip_worker, run)
    assert summary.passed and summary.cases == 6  # the target accepted the credential

    for workflow_id in (
        suite_workflow_id(seed_scenario.name, run.run_id),
        pair_workflow_id(seed_scenario.name, run.run_id, 0),
    ):
        history = await skip_env.client.get_workflow_handle(workflow_id).fetch_history()
        text = history_text(history.to_json())
        assert secret not in text
        assert SECRET_VARIABLE in text  # only its name travels (and the search can see)
    database = Path(db_url.removeprefix("sqlite:///"))
    for path in database.parent.glob(database.name + "*"):  # the file and its WAL
        assert secret.encode() not in path.read_bytes()
    loaded = recorder.load_run(run.run_id)
    assert loaded is not None
    assert secret not in json.dumps(build_artifact(loaded).model_dump(mode="json"))
    captured = capfd.readouterr()
    assert secret not in captured.out + captured.err


async def test_a_missing_secret_is_inconclusive_and_named(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    db_url: str,
    seed_scenario: Scenario,
) -> None:
    monkeypatch.setenv(SECRET_VARIABLE, "set-for-the-target-only")
    with _authenticated(tmp_path) as process:
        monkeypatch.delenv(SECRET_VARIABLE)  # the worker no longer has it
        run = run_input(seed_scenario, authenticated_target(process.base_url))
        summary = await run_suite(skip_env.client, skip_worker, run)
    assert not summary.passed and summary.cases_passed == 0
    loaded = recorder.load_run(run.run_id)
    assert loaded is not None
    errors = {o.error for o in loaded["observations"] if o.kind == "register"}
    assert all(f"environment variable {SECRET_VARIABLE} is not set" in (e or "") for e in errors), (
        errors
    )


def history_text(history_json: str) -> str:
    """The history with every payload decoded: payload data is base64 in the JSON form."""
    parts: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "data" and isinstance(value, str):
                    parts.append(base64.b64decode(value).decode("utf-8", "replace"))
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, str):
            parts.append(node)

    walk(json.loads(history_json))
    return "\n".join(parts)


def _authenticated(tmp_path: Path) -> AbstractContextManager[embedded.ReferenceTargetProcess]:
    """The reference target, requiring the credential (read from the environment)."""
    return embedded.reference_target(tmp_path / "target", api_key_env=SECRET_VARIABLE)
