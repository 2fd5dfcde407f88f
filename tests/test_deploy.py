"""deploy/: the compose file against the Compose specification's JSON schema (the one the
PyPI docker-compose package ships, tests/fixtures/compose_spec.json), the Kubernetes
manifests against the Kubernetes API schemas (kubernetes-validate, offline), and what
neither schema knows: commands that memlife itself accepts, files that exist, grace
periods that let a worker drain, secrets that stay out of files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from memlife import DEFAULT_TASK_QUEUE
from memlife.cli import build_parser
from memlife.rules.durations import parse_duration
from memlife.rules.scenario_file import load_scenario
from memlife.rules.target import load_target
from memlife.stack.worker_process import target_task_queue
from memlife.workflows.attributes import REGISTRATION

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
COMPOSE = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
MANIFESTS = [
    doc
    for path in sorted((DEPLOY / "kubernetes").glob("*.yaml"))
    if path.name != "kustomization.yaml"
    for doc in yaml.safe_load_all(path.read_text())
    if doc
]


def memlife_command(command: list[str]) -> None:
    """A memlife command line in a deployment is one memlife accepts, with valid files."""
    assert command[0] == "memlife"
    args = build_parser().parse_args(command[1:])
    for name in ("scenario", "target"):
        value = getattr(args, name, None)
        if isinstance(value, str) and value != "reference":
            assert (REPO / value).exists(), value
            (load_scenario if name == "scenario" else load_target)(REPO / value)


def compose_errors(document: dict[str, Any]) -> list[str]:
    schema = json.loads((REPO / "tests" / "fixtures" / "compose_spec.json").read_text())
    validator = jsonschema.Draft201909Validator(schema)  # the draft the spec declares
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(document)]


def test_the_compose_file_follows_the_compose_specification() -> None:
    assert compose_errors(COMPOSE) == []
    # The schema is strict enough to matter: a misspelt key or a wrong type is caught.
    broken = json.loads(json.dumps(COMPOSE))
    broken["services"]["worker"]["restart_policy"] = "always"
    broken["services"]["temporal"]["depends_on"] = "postgresql"
    assert len(compose_errors(broken)) == 2
    services = COMPOSE["services"]
    for name, service in services.items():
        for dependency in service.get("depends_on", []):
            assert dependency in services, (name, dependency)
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)  # nothing public


def test_compose_keeps_secrets_out_and_lets_workers_drain() -> None:
    text = (DEPLOY / "compose.yaml").read_text()
    values = re.findall(r"(?im)^\s*\w*(?:password|pwd)\w*:\s*(.+)$", text)
    assert len(values) == 3
    for value in values:  # a key named like a password takes its value from the environment
        assert value.startswith("${"), value
    assert "${MEMLIFE_DB_PASSWORD" in COMPOSE["services"]["worker"]["environment"]["MEMLIFE_DB_URL"]
    worker = COMPOSE["services"]["worker"]
    drain = parse_duration(worker["environment"]["MEMLIFE_GRACEFUL_SHUTDOWN"])
    assert drain < parse_duration(worker["stop_grace_period"])
    memlife_command(COMPOSE["services"]["schedule"]["command"])
    memlife_command(COMPOSE["services"]["reference-target"]["command"])
    # The same search attributes memlife registers on the embedded dev server.
    registered = dict(
        re.findall(r"(Memlife\w+):(\w+)", COMPOSE["services"]["search-attributes"]["command"][0])
    )
    assert registered == REGISTRATION


def test_the_image_carries_what_the_commands_use() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    copied = {line.split()[1] for line in dockerfile.splitlines() if line.startswith("COPY")}
    assert {
        "memlife",
        "workflows",
        "activities",
        "scenarios",
        "deploy/targets",
        "worker.py",
    } <= copied
    for path in copied:
        assert (REPO / path).exists(), path


@pytest.mark.parametrize(
    "manifest", MANIFESTS, ids=[f"{m['kind']}/{m['metadata']['name']}" for m in MANIFESTS]
)
def test_every_manifest_follows_the_kubernetes_api_schema(manifest: dict[str, Any]) -> None:
    kubernetes_validate.validate(manifest, kubernetes_validate.latest_version(), strict=True)


def test_workers_drain_within_the_grace_period_with_config_from_configmap_and_secret() -> None:
    by_kind = {(m["kind"], m["metadata"]["name"]): m for m in MANIFESTS}
    config = by_kind[("ConfigMap", "memlife-config")]["data"]
    assert "MEMLIFE_DB_URL" not in config  # it carries a password: the Secret holds it
    worker = by_kind[("Deployment", "memlife-worker")]["spec"]["template"]["spec"]
    drain = parse_duration(config["MEMLIFE_GRACEFUL_SHUTDOWN"])
    assert drain.total_seconds() < worker["terminationGracePeriodSeconds"]
    refs = {
        (kind, ref["name"])
        for container in worker["containers"]
        for source in container["envFrom"]
        for kind, ref in source.items()
    }
    assert refs == {("configMapRef", "memlife-config"), ("secretRef", "memlife-secrets")}
    assert ("Secret", "memlife-secrets") in by_kind
    job = by_kind[("Job", "memlife-schedule-nightly")]["spec"]["template"]["spec"]
    memlife_command(job["containers"][0]["command"])
    target = by_kind[("Deployment", "reference-target")]["spec"]["template"]["spec"]
    memlife_command(target["containers"][0]["command"])
    kustomization = yaml.safe_load((DEPLOY / "kubernetes" / "kustomization.yaml").read_text())
    for resource in kustomization["resources"]:
        assert (DEPLOY / "kubernetes" / resource).exists()
    assert "worker.yaml" in kustomization["resources"]


def test_the_target_request_workers_serve_the_queue_the_schedules_send_them() -> None:
    """A worker for the target requests beside the others, in Compose and in Kubernetes:
    activities only, on the queue memlife derives from the runs' (as `memlife run
    --target-worker` and `memlife dev` do), which the nightly schedule names; configured
    and drained like the other workers."""
    queue = target_task_queue(DEFAULT_TASK_QUEUE)
    by_kind = {(m["kind"], m["metadata"]["name"]): m for m in MANIFESTS}
    pod = by_kind[("Deployment", "memlife-target-worker")]["spec"]["template"]["spec"]
    worker_pod = by_kind[("Deployment", "memlife-worker")]["spec"]["template"]["spec"]
    job = by_kind[("Job", "memlife-schedule-nightly")]["spec"]["template"]["spec"]
    services = COMPOSE["services"]
    drain = parse_duration(
        by_kind[("ConfigMap", "memlife-config")]["data"]["MEMLIFE_GRACEFUL_SHUTDOWN"]
    )
    assert drain.total_seconds() < pod["terminationGracePeriodSeconds"]
    assert pod["containers"][0]["envFrom"] == worker_pod["containers"][0]["envFrom"]
    compose_worker = services["target-worker"]
    assert compose_worker["environment"] == services["worker"]["environment"]
    assert parse_duration(compose_worker["environment"]["MEMLIFE_GRACEFUL_SHUTDOWN"]) < (
        parse_duration(compose_worker["stop_grace_period"])
    )
    for command in (pod["containers"][0]["command"], compose_worker["command"]):
        memlife_command(command)
        args = build_parser().parse_args(command[1:])
        assert (args.serve, args.task_queue) == ("activities", queue), command
    for command in (job["containers"][0]["command"], services["schedule"]["command"]):
        assert build_parser().parse_args(command[1:]).target_queue == queue, command
    kustomization = yaml.safe_load((DEPLOY / "kubernetes" / "kustomization.yaml").read_text())
    assert "target-worker.yaml" in kustomization["resources"]
    readme = (DEPLOY / "README.md").read_text()
    assert f"--target-queue {queue}" in readme and "target-worker" in readme


def test_the_readme_shows_how_to_run_the_stack() -> None:
    readme = (DEPLOY / "README.md").read_text()
    for needle in (
        "docker compose -f deploy/compose.yaml",
        "kubectl apply -k deploy/kubernetes",
        "TEMPORAL_API_KEY",
    ):
        assert needle in readme, needle
