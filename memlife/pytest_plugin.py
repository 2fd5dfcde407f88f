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
`--collect-only`, and a `-k` or `-m` that could keep none of the items, do not run it.
docs/pytest.md says more.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
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
_NOT_RUN = pytest.StashKey[str]()  # why collection did not run the scenario


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
        if not case.checks:  # every item answers to -m memlife (_known_mark)
            self.add_marker(pytest.mark.memlife)

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
    # The items are the checks a run made, so listing them means making the run: not for
    # a listing (an editor's test discovery runs `--collect-only` often), nor for a -k or
    # -m that could keep none of them.
    if config.option.collectonly:
        config.stash[_NOT_RUN] = (
            "the scenario is not run by --collect-only, so its checks are not listed: they "
            "are the checks a run makes"
        )
        return
    for option, flag, known in (
        (config.option.keyword, "-k", _known_keyword),
        (config.option.markexpr, "-m", _known_mark),
    ):
        if option and not _may_be_true(option, known):
            config.stash[_NOT_RUN] = (
                f"{flag} {option!r} keeps none of its checks: the scenario was not run"
            )
            return
    items.extend(MemlifeRun.from_parent(session, name="memlife", nodeid="memlife").collect())


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    reason = config.stash.get(_NOT_RUN, None)
    return [f"memlife: {reason}"] if reason else []


# What an item's -k and -m see before the run: True, False, or None where it depends on
# what the run finds (an item's own name, pair-N::STAGE::CASE, and its checks' invariants).
_Known = Callable[[str, dict[str, Any]], "bool | None"]


def _known_keyword(name: str, kwargs: dict[str, Any]) -> bool | None:
    # -k matches a part of any of the item's names, which include `memlife` (its parent's
    # name and its marker's).
    return True if name.lower() in "memlife" else None


def _known_mark(name: str, kwargs: dict[str, Any]) -> bool | None:
    # Its only markers are memlife(invariant=...), one per check, and it has one at least.
    if name != "memlife":
        return False
    return None if kwargs else True


class _Unseen(Exception):
    """An identifier the expression reached for the first time."""


def _evaluate(
    expression: Any,
    known: _Known,
    truth: dict[tuple[str, str], bool],
    unknown: list[tuple[str, str]],
) -> bool:
    def matcher(name: str, /, **kwargs: Any) -> bool:
        value = known(name, kwargs)
        if value is not None:
            return value
        key = (name, repr(sorted(kwargs.items())))
        if key not in truth:
            unknown.append(key)
            raise _Unseen
        return truth[key]

    return bool(expression.evaluate(matcher))


def _may_be_true(text: str, known: _Known) -> bool:
    """Whether the -k or -m expression is true for some item, whatever the names and
    invariants the run will give them: every truth of what is not known yet is tried."""
    try:  # pytest's own parser, as -k and -m use it; it has no public name
        from _pytest.mark.expression import Expression
    except ImportError:
        return True
    try:
        expression = Expression.compile(text)
    except Exception:  # pytest reports a malformed expression itself
        return True
    unknown: list[tuple[str, str]] = []
    while len(unknown) <= 8:
        try:
            return any(
                _evaluate(expression, known, dict(zip(unknown, truths, strict=True)), unknown)
                for truths in itertools.product((False, True), repeat=len(unknown))
            )
        except _Unseen:
            continue  # again, with that identifier tried both ways
    return True  # too many to try: assume it may be


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
