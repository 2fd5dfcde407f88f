"""The Markdown report (for a pull request) and the JUnit XML report (one test case per
check, for CI)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from typing import Any
from xml.etree import ElementTree

from memlife.recorder.artifact import CaseEntry, CheckEntry, FindingEntry
from memlife.reports.scorecard import (
    Scorecard,
    changes,
    finding_line,
    interval,
    invariant_order,
    latency_line,
    matrix_rows,
    pair_link,
    ratio,
    used_stages,
    verdict_word,
)

# -- Markdown ------------------------------------------------------------------------------


def markdown(card: Scorecard) -> str:
    meta, summary = card.meta, card.summary
    lines = [
        f"## memlife · {meta.scenario_name} against {meta.target_name}: **{verdict_word(card)}**",
        "",
        f"{summary.cases_passed}/{summary.cases} cases passed · "
        f"{len(card.leaks)} leak(s) · {len(card.residues)} residue(s) · "
        f"{len(card.other_failures)} other failure(s) · "
        f"{len(card.inconclusive)} inconclusive · run `{meta.run_id}` · "
        f"clock {meta.clock} · {meta.pairs} pair(s)",
        "",
        "| invariant | checked | failed | inconclusive |",
        "|---|---:|---:|---:|",
    ]
    for name, tally in summary.by_invariant.items():
        if tally.checked:
            mark = " ❌" if tally.failed else " ⚠️" if tally.inconclusive else ""
            lines.append(
                f"| {name}{mark} | {tally.checked} | {tally.failed} | {tally.inconclusive} |"
            )
    lines += [
        "",
        "**Rates** (95% bootstrap interval over pairs)",
        "",
        "| rate | estimate |",
        "|---|---|",
    ]
    for name, rate in card.rates.items():
        lines.append(f"| {name} ({rate.invariant}) | {interval(rate)} |")
    if card.adjudicated_rates:
        lines += [
            "",
            f"**Adjudicated** ({len(card.adjudications)} reply(ies) reviewed "
            "blind; exact match above)",
            "",
            "| rate | adjudicated |",
            "|---|---|",
        ]
        for name, rate in card.adjudicated_rates.items():
            lines.append(f"| {name} ({rate.invariant}) | {interval(rate)} |")
        lines += [
            "",
            "| case | stage | reviewer | stated | exact → adjudicated |",
            "|---|---|---|---|---|",
        ]
        for entry in card.adjudications:
            changed = changes(entry)
            stated = (
                "abstains"
                if entry.abstains
                else ", ".join(f"`{v}`" for v in entry.stated) or "nothing"
            )
            lines.append(
                f"| {entry.case} (pair {entry.pair}) | {entry.stage} | "
                f"{entry.reviewer} | {stated} | {changed} |"
            )
    stages = used_stages(card)
    if stages:
        lines += [
            "",
            "**Invariant × store × stage** (passed/checked)",
            "",
            "| invariant | store | " + " | ".join(stages) + " |",
            "|---|---|" + "---|" * len(stages),
        ]
        for invariant, store, cells in matrix_rows(card, stages):
            row = [
                "" if cell is None else f"**{ratio(cell)}** ❌" if cell.failed else ratio(cell)
                for cell in cells
            ]
            lines.append(f"| {invariant} | {store} | " + " | ".join(row) + " |")
    latency = card.latency_ms
    if latency.count:
        lines += ["", f"**Latency** (ms): {latency_line(latency)}"]
    for title, entries in (
        ("Leaks", card.leaks),
        ("Residues", card.residues),
        ("Other failures", card.other_failures),
    ):
        if entries:
            lines += ["", f"<details open><summary><b>{title} ({len(entries)})</b></summary>", ""]
            lines += [
                f"- {finding_line(f, pair_link(card.meta, f.pair), markdown=True)}" for f in entries
            ]
            lines += ["", "</details>"]
    if card.inconclusive:
        lines += [
            "",
            f"<details><summary><b>Inconclusive ({len(card.inconclusive)})</b></summary>",
            "",
        ]
        lines += [
            f"- {finding_line(f, pair_link(card.meta, f.pair), markdown=True)}"
            for f in card.inconclusive
        ]
        lines += ["", "</details>"]
    if meta.redacted:
        lines += ["", "_Phone numbers and tenant ids are redacted (`--no-redact` keeps them)._"]
    return "\n".join(lines) + "\n"


# -- JUnit ---------------------------------------------------------------------------------


def junit(card: Scorecard) -> str:
    """One test suite per invariant, one test case per check: CI systems list each."""
    return junit_document(f"memlife {card.meta.run_id}", [("", card)])


def junit_document(name: str, cards: list[tuple[str, Scorecard]]) -> str:
    """Several runs in one JUnit file; each run's suites named with its label first."""
    root = ElementTree.Element("testsuites", name=name)
    for label, card in cards:
        _junit_suites(root, card, f"{label} " if label else "")
    ElementTree.indent(root)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        + ElementTree.tostring(root, encoding="unicode")
        + "\n"
    )


def _findings_by_check(card: Scorecard) -> dict[tuple[str, str, str], list[FindingEntry]]:
    findings: dict[tuple[str, str, str], list[FindingEntry]] = {}
    for entry in (*card.leaks, *card.residues, *card.other_failures, *card.inconclusive):
        findings.setdefault((entry.case, entry.invariant, entry.store), []).append(entry)
    return findings


def _testcase(
    parent: ElementTree.Element | None,
    case: CaseEntry,
    check: CheckEntry,
    findings: dict[tuple[str, str, str], list[FindingEntry]],
) -> ElementTree.Element:
    invariant, store = check.invariant, check.store
    attributes = {
        "classname": f"memlife.{invariant}.{case.stage}",
        "name": f"{case.case} [{store}] pair {case.pair} {case.tenant}",
    }
    testcase = (
        ElementTree.Element("testcase", attributes)
        if parent is None
        else ElementTree.SubElement(parent, "testcase", attributes)
    )
    if check.outcome != "pass":
        related = findings.get((case.case, invariant, store), [])
        text = "\n".join(finding_line(f) for f in related) or check.outcome
        tag = "failure" if check.outcome == "fail" else "error"
        element = ElementTree.SubElement(
            testcase, tag, message=(related[0].reason if related else check.outcome), type=invariant
        )
        element.text = text
    return testcase


def _junit_suites(root: ElementTree.Element, card: Scorecard, prefix: str) -> None:
    findings = _findings_by_check(card)
    suites: dict[str, list[tuple[CaseEntry, CheckEntry]]] = {}
    for case in card.cases:
        for check in case.checks:
            suites.setdefault(check.invariant, []).append((case, check))
    for invariant in invariant_order(suites):
        items = suites[invariant]
        failed = sum(1 for _, check in items if check.outcome == "fail")
        errors = sum(1 for _, check in items if check.outcome == "inconclusive")
        suite = ElementTree.SubElement(
            root,
            "testsuite",
            name=f"{prefix}{invariant}",
            tests=str(len(items)),
            failures=str(failed),
            errors=str(errors),
            skipped="0",
        )
        for case, check in items:
            _testcase(suite, case, check, findings)


def junit_chunks(card: Scorecard, cases: Iterable[dict[str, Any]]) -> Iterator[str]:
    """`junit(card)` for the cases given, written piece by piece: each invariant's test
    cases are spooled to a temporary file (on disk past a megabyte) as the cases are read,
    so a run of any size is listed in bounded memory."""
    return junit_runs_chunks(f"memlife {card.meta.run_id}", [("", card, cases)])


def junit_runs_chunks(
    name: str,
    runs: Iterable[tuple[str, Scorecard, Iterable[dict[str, Any]]]],
) -> Iterator[str]:
    """`junit_document(name, ...)` for runs given with their cases (label, card, cases),
    written piece by piece, one run's cases spooled at a time (`junit_chunks`)."""
    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    root = ElementTree.Element("testsuites", name=name)
    opened = False
    for label, card, cases in runs:
        for suite in _spooled_suites(card, cases, f"{label} " if label else ""):
            if not opened:
                yield _opening(root)
                opened = True
            yield suite
    yield "\n</testsuites>\n" if opened else ElementTree.tostring(root, encoding="unicode") + "\n"


def _spooled_suites(
    card: Scorecard,
    cases: Iterable[dict[str, Any]],
    prefix: str,
) -> Iterator[str]:
    """One run's test suites, each invariant's test cases spooled while the cases are read
    and written out once they all have been."""
    findings = _findings_by_check(card)
    spools: dict[str, Any] = {}
    counts: dict[str, list[int]] = {}  # tests, failures, errors
    with ExitStack() as opened:
        for entry in cases:
            case = CaseEntry.model_validate(entry)
            for check in case.checks:
                testcase = _testcase(None, case, check, findings)
                ElementTree.indent(testcase, level=2)
                spool = spools.get(check.invariant)
                if spool is None:
                    spool = spools[check.invariant] = opened.enter_context(
                        tempfile.SpooledTemporaryFile(max_size=1 << 20, mode="w+", encoding="utf-8")
                    )
                    counts[check.invariant] = [0, 0, 0]
                spool.write("\n    " + ElementTree.tostring(testcase, encoding="unicode"))
                tally = counts[check.invariant]
                tally[0] += 1
                tally[1] += check.outcome == "fail"
                tally[2] += check.outcome == "inconclusive"
        for invariant in invariant_order(spools):
            tests, failed, errors = counts[invariant]
            yield "\n  " + _opening(
                ElementTree.Element(
                    "testsuite",
                    name=f"{prefix}{invariant}",
                    tests=str(tests),
                    failures=str(failed),
                    errors=str(errors),
                    skipped="0",
                )
            )
            spool = spools[invariant]
            spool.seek(0)
            while chunk := spool.read(1 << 16):
                yield chunk
            yield "\n  </testsuite>"


def _opening(element: ElementTree.Element) -> str:
    """An element's start tag, its attributes escaped as ElementTree writes them."""
    element.text = "memlife-end-of-start-tag"
    written = ElementTree.tostring(element, encoding="unicode")
    return written[: written.index(">memlife-end-of-start-tag<") + 1]
