"""memlife in a project's own pytest run (a `pytest11` plugin, on whenever memlife is
installed, and doing nothing until a scenario is named).

    # pytest.ini (or [tool.pytest.ini_options] in pyproject.toml)
    [pytest]
    memlife_scenario = memlife/nightly.yaml
    memlife_target = memlife/our-service.yaml

Then `pytest` runs the scenario once, at collection, through memlife's Python API
(memlife/api), and makes one test item per check the run made: `memlife::STAGE::CASE`,
passing or failing with the finding's evidence as its message (an inconclusive check
fails too: memlife fails closed), so `--junitxml` carries every verdict. The
`memlife_result` fixture gives the run's RunResult to the project's own assertions.
Options on the command line (`--memlife-scenario`, …) take precedence over the ini file.
docs/pytest.md says more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from memlife.api import RunResult
    from memlife.recorder.artifact import CaseEntry, FindingEntry

# option: (ini name, help); every option is also an ini setting of the same meaning.
_SETTINGS = {
    "scenario": "the scenario file to run (nothing runs without one)",
    "target": "the target file to run it against (default: the bundled reference target)",
    "clock": "real, skip or compress=N (default: skip)",
    "seed": "the canary seed: the same seed, the same tenants and values",
    "pairs": "how many pairs a scenario with `generate` draws",
    "artifact": "also write the run's whole artifact (JSON) to this file",
}
_RESULT = pytest.StashKey["RunResult | None"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("memlife", "memlife lifecycle checks (docs/pytest.md)")
    for name, description in _SETTINGS.items():
        group.addoption(f"--memlife-{name}", dest=f"memlife_{name}", default=None, help=description)
        parser.addini(f"memlife_{name}", description)
    group.addoption(
        "--memlife-fault",
        dest="memlife_faults",
        action="append",
        default=[],
        help="a fault of the bundled reference target (repeatable)",
    )
    parser.addini("memlife_faults", "faults of the bundled reference target", type="linelist")


def _setting(config: pytest.Config, name: str) -> Any:
    given = config.getoption(f"memlife_{name}")
    return given if given not in (None, []) else (config.getini(f"memlife_{name}") or None)


def _run(config: pytest.Config) -> RunResult | None:
    """The configured run's result, run once per session (None: no scenario named)."""
    if _RESULT in config.stash:
        return config.stash[_RESULT]
    scenario = _setting(config, "scenario")
    result = None
    if scenario is not None:
        if hasattr(config, "workerinput"):
            raise pytest.UsageError(
                "memlife: its checks run once, in one process; run them without -n "
                "(pytest-xdist), e.g. `pytest -p no:xdist`"
            )
        import memlife

        root = config.rootpath

        def here(path: str) -> str:
            return str(root / path) if not path.startswith("/") else path

        target = _setting(config, "target")
        pairs = _setting(config, "pairs")
        try:
            result = memlife.run(
                here(scenario),
                None if target in (None, "reference") else here(target),
                clock=_setting(config, "clock") or "skip",
                faults=list(_setting(config, "faults") or []),
                seed=_setting(config, "seed"),
                pairs=int(pairs) if pairs is not None else None,
            )
        except memlife.MemlifeError as error:  # one line each: the file, the field, why
            raise pytest.UsageError(f"memlife: {error}") from None
        artifact = _setting(config, "artifact")
        if artifact:
            result.write(here(artifact))
    config.stash[_RESULT] = result
    return result


class MemlifeRun(pytest.Collector):
    """The configured scenario's run: one item per check it made."""

    def collect(self) -> list[pytest.Item]:
        result = _run(self.config)
        if result is None:
            return []
        findings: dict[tuple[int, str, str], list[FindingEntry]] = {}
        for finding in (*result.failures, *result.inconclusive):
            findings.setdefault((finding.pair, finding.case, finding.store), []).append(finding)
        return [
            MemlifeCheck.from_parent(
                self,
                name=f"pair-{case.pair}::{case.stage.replace(' ', '-')}::{case.case}"
                + ("" if case.store == "response" else f"[{case.store}]"),
                case=case,
                findings=findings.get((case.pair, case.case, case.store), []),
            )
            for case in result.cases()
        ]


class MemlifeCheck(pytest.Item):
    """One check of the run: passed, or failed (or inconclusive) with its evidence."""

    def __init__(self, *, case: CaseEntry, findings: list[FindingEntry], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case, self.findings = case, findings
        for check in case.checks:
            self.add_marker(pytest.mark.memlife(invariant=check.invariant))

    def runtest(self) -> None:
        if self.case.outcome != "pass":
            raise CheckFailed(self)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CheckFailed):
            return excinfo.value.text()
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[str, int | None, str]:
        return (str(_setting(self.config, "scenario")), None, self.name)


class CheckFailed(Exception):
    """A check that did not pass, told as memlife's report tells a finding."""

    def __init__(self, item: MemlifeCheck) -> None:
        super().__init__(item.name)
        self.item = item

    def text(self) -> str:
        case = self.item.case
        lines = [
            f"{case.outcome.upper()}: {case.tenant}'s {case.domain or 'case'} {case.case} at "
            f"stage {case.stage} (pair {case.pair}, {case.store})"
        ]
        for finding in self.item.findings:
            evidence = finding.evidence
            found = f" · value {evidence.value!r}" if evidence.value else ""
            form = f" · found as {evidence.form!r}" if evidence.form else ""
            trace = f" · trace {finding.trace_id}" if finding.trace_id else ""
            lines.append(
                f"  {finding.invariant} · {finding.reason}{found}{form}{trace}: {evidence.detail}"
            )
        return "\n".join(lines)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "memlife(invariant): a check of memlife's run, by the invariant it checks"
    )


# First, so that -k, -m and the other plugins' reordering see memlife's items too.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if _setting(config, "scenario") is None:
        return
    items.extend(MemlifeRun.from_parent(session, name="memlife", nodeid="memlife").collect())


@pytest.fixture(scope="session")
def memlife_result(pytestconfig: pytest.Config) -> RunResult:
    """The configured run's RunResult (memlife/api): its digest, failures, cases and the
    whole artifact, for the project's own assertions."""
    result = _run(pytestconfig)
    if result is None:
        raise pytest.UsageError(
            "memlife_result: no scenario named; set memlife_scenario in the ini file or "
            "pass --memlife-scenario FILE"
        )
    return result
