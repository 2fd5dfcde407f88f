"""The pytest plugin (memlife/pytest_plugin.py) as a project uses it: an example project
whose ini names a scenario, run by pytest in a process of its own (pytester), gets one
item per check, the evidence as each failure's message, JUnit XML that carries it, and
the run's result in a fixture for its own assertions."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow  # a whole run in each project's pytest

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "scenarios" / "seed-six-case.yaml"


@pytest.fixture
def project(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    """A project of its own: its recorder, no cluster configured, none of this
    environment's other plugins (OTHER_PLUGINS)."""
    monkeypatch.setenv("MEMLIFE_DB_URL", f"sqlite:///{tmp_path / 'recorder.db'}")
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(
        test_own="""
            def test_the_run_is_the_projects_to_assert_on(memlife_result):
                assert memlife_result.digest.summary.cases == 6
                print("RUN", memlife_result.run_id, memlife_result.passed)
        """
    )
    return pytester


# Plugins this environment has that a project pointing pytest at memlife need not: the
# first two would reorder or parallelize its run; langsmith's (a dependency of the stacks
# memlife is tried on) took a second of each run's start.
OTHER_PLUGINS = ("randomly", "xdist", "cacheprovider", "langsmith_plugin", "hypothesispytest")


def _run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    disabled = [option for name in OTHER_PLUGINS for option in ("-p", f"no:{name}")]
    return project.runpytest_subprocess(*disabled, "-s", *args, timeout=240)


def test_a_clean_target_gives_a_passing_item_per_check(project: pytest.Pytester) -> None:
    project.makeini(f"[pytest]\nmemlife_scenario = {SEED}\n")
    result = _run(project, "-v")
    result.assert_outcomes(passed=7)  # six checks and the project's own test
    result.stdout.fnmatch_lines(["*memlife::pair-0::six-questions::*PASSED*"])
    assert result.stdout.str().count("::six-questions::") == 6
    result.stdout.fnmatch_lines(["*RUN * True*"])  # the fixture's run is the one collected


def test_leaks_fail_their_items_with_the_evidence_and_junit_carries_it(
    project: pytest.Pytester,
) -> None:
    project.makeini(
        f"[pytest]\nmemlife_scenario = {SEED}\nmemlife_faults =\n    cross-tenant-leak\n"
    )
    result = _run(project, "--junitxml=report.xml", "--memlife-artifact=artifact.json")
    result.assert_outcomes(passed=1, failed=6)
    text = result.stdout.str()
    assert "Traceback" not in text
    result.stdout.fnmatch_lines(["*I3 · leaked · value 'verde'*appeared in the reply*"])
    cases = ElementTree.parse(project.path / "report.xml").getroot().iter("testcase")
    failed = {case.get("name"): case.find("failure") for case in cases}
    leaks = {name: f for name, f in failed.items() if f is not None}
    assert len(leaks) == 6
    assert all("I3 · leaked · value" in (f.text or "") for f in leaks.values())
    assert (project.path / "artifact.json").stat().st_size > 1000


def test_command_line_options_choose_the_run_and_k_selects_its_items(
    project: pytest.Pytester,
) -> None:
    result = _run(
        project,
        f"--memlife-scenario={SEED}",
        "--memlife-fault=cross-tenant-leak",
        "-k",
        "employer",
    )
    result.assert_outcomes(failed=2)  # each tenant's employer question only


def test_a_bad_scenario_is_one_usage_error_naming_it(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nmemlife_scenario = missing.yaml\n")
    result = _run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*memlife: *missing.yaml: *"])
    assert "Traceback" not in result.stderr.str()


def test_without_a_scenario_the_plugin_adds_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_alone="def test_plain():\n    pass\n")
    result = _run(pytester)
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    "selection",
    [["--co"], ["-m", "not memlife"], ["-k", "not memlife"], ["-m", "integration"]],
    ids=["collect-only", "m-not-memlife", "k-not-memlife", "m-the-projects-own"],
)
def test_a_listing_or_a_selection_that_keeps_no_check_does_not_run_the_scenario(
    project: pytest.Pytester, selection: list[str]
) -> None:
    project.makepyfile(
        test_own="import pytest\n\n@pytest.mark.integration\ndef test_own():\n    pass\n"
    )
    project.makeini(
        f"[pytest]\nmemlife_scenario = {SEED}\nmemlife_artifact = artifact.json\n"
        "markers =\n    integration: the project's own\n"
    )
    result = _run(project, *selection)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert not (project.path / "artifact.json").exists()  # the run writes it
    result.stdout.fnmatch_lines(["memlife: *"])
    assert "pair-0::" not in result.stdout.str()
    if selection != ["--co"]:
        result.assert_outcomes(passed=1)  # the project's own test, and nothing of memlife's


@pytest.mark.parametrize(
    ("option", "expression", "may_keep"),
    [
        ("-k", "not memlife", False),
        ("-k", "mem and not life", False),
        ("-k", "employer and not employer", False),
        ("-k", "employer", True),  # a part of an item's name, known once the run is made
        ("-k", "test_foo", True),
        ("-k", "memlife and employer", True),
        ("-m", "not memlife", False),
        ("-m", "slow", False),  # the items carry memlife's markers only
        ("-m", "slow or memlife", True),
        ("-m", "memlife(invariant='I3')", True),
        ("-m", "memlife and not memlife(invariant='I3')", True),
    ],
)
def test_what_a_selection_may_keep_is_decided_before_the_run(
    option: str, expression: str, may_keep: bool
) -> None:
    from memlife.pytest_plugin import _known_keyword, _known_mark, _may_be_true

    known = _known_keyword if option == "-k" else _known_mark
    assert _may_be_true(expression, known) is may_keep
