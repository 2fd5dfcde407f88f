"""memlife's Python API (memlife/api/__init__.py) as a project uses it: a scenario run
against the bundled reference target, in plain code and under asyncio, its result typed,
bad input refused before anything starts."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import memlife
from memlife.recorder.artifact import Artifact
from memlife.rules.scenario_file import load_scenario
from memlife.stack import embedded
from memlife.stack.processes import ChildProcess

pytestmark = pytest.mark.slow  # whole runs, each on a time-skipping server of its own

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "scenarios" / "seed-six-case.yaml"


@pytest.fixture
def workdir(tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory of its own (memlife keeps .memlife/ there), a recorder of its
    own, and no cluster configured."""
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_seed_run_from_plain_code_passes_and_reads_as_its_artifact(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched: list[ChildProcess] = []

    def launch(argv: list[str], log_path: Path) -> ChildProcess:
        launched.append(launch_target(argv, log_path))
        return launched[-1]

    launch_target = embedded.launch_target
    monkeypatch.setattr(embedded, "launch_target", launch)
    result = memlife.run(str(SEED))
    # The reference target it started has stopped, on its own SIGTERM (exit 0), before the
    # call returned (memlife/stack/processes.py, StoppedTogether).
    assert [process.poll() for process in launched] == [0]
    assert isinstance(result, memlife.RunResult)
    assert result.passed and result.failures == [] and result.inconclusive == []
    assert isinstance(result.digest, Artifact)
    assert result.digest.summary.cases == 6 and result.digest.meta.run_id == result.run_id
    cases = result.cases()
    assert len(cases) == 6 and all(case.outcome == "pass" for case in cases)
    written = result.write(workdir / "artifact.json")
    document = json.loads((workdir / "artifact.json").read_text())
    assert written == (workdir / "artifact.json").stat().st_size
    jsonschema.validate(document, json.loads((REPO / "docs" / "artifact.schema.json").read_text()))
    assert document["meta"]["run_id"] == result.run_id


async def test_a_leaking_target_from_asyncio_fails_with_every_leak_as_evidence(
    workdir: Path,
) -> None:
    scenario = load_scenario(SEED)  # a model, not a file
    heard: list[str] = []

    class Heard(memlife.Output):
        def say(self, line: str) -> None:
            heard.append(line)

    result = await memlife.run_async(scenario, faults=["cross-tenant-leak"], output=Heard())
    assert not result.passed
    assert {(f.invariant, f.reason) for f in result.failures} == {("I3", "leaked")}
    assert len(result.failures) == 6
    pair = scenario.pairs[0]
    partners = {pair.a.alias: pair.b, pair.b.alias: pair.a}
    assert all(
        f.evidence.value == partners[f.tenant].facts[f.domain or ""].value for f in result.failures
    )
    assert result.digest.meta.scenario_file == f"(scenario {scenario.name})"
    assert result.digest.meta.scenario_sha256 == scenario.digest()
    assert len(heard) == 1 and heard[0].startswith(f"memlife {memlife.__version__} · run ")


def test_bad_input_is_refused_with_every_problem_before_anything_starts(workdir: Path) -> None:
    with pytest.raises(memlife.InputError) as refused:
        memlife.run(str(SEED), pairs=3, faults=["no-such-fault"], clock="sometimes")
    lines = str(refused.value).splitlines()
    assert any("--pairs" in line and "lists its pairs" in line for line in lines), lines
    assert any("unknown fault 'no-such-fault'" in line for line in lines), lines
    assert any("--clock" in line for line in lines), lines
    assert not (workdir / ".memlife").exists()  # nothing was started


def test_a_missing_scenario_file_is_one_line_naming_it(workdir: Path) -> None:
    with pytest.raises(memlife.InputError) as refused:
        memlife.run("nowhere.yaml")
    assert str(refused.value).startswith("nowhere.yaml: ")
    assert len(str(refused.value).splitlines()) == 1


async def test_the_blocking_call_inside_an_event_loop_says_to_await_instead() -> None:
    with pytest.raises(memlife.MemlifeError, match=r"await memlife\.run_async"):
        memlife.run(str(SEED))


def test_the_api_is_what_the_package_exports_and_is_versioned() -> None:
    import memlife.api

    assert set(memlife.api.__all__) <= set(dir(memlife))
    assert memlife.API_VERSION.count(".") == 2
    with pytest.raises(AttributeError):
        memlife.no_such_name  # noqa: B018
