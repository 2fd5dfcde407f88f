"""An experiment's comparison rendered: configurations side by side as a table (terminal,
Markdown, HTML), each configuration's findings, and JUnit with one suite per run."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from memlife.recorder.artifact import ExperimentDocument, FindingEntry, Rate
from memlife.recorder.experiment import FAMILIES, configuration_label
from memlife.reports.html import STYLE
from memlife.reports.lists import ArtifactLists, Lists
from memlife.reports.scorecard import RedactedLists, Redactor, pct, redact, scorecard
from memlife.reports.text import junit_runs_chunks
from memlife.rules.verdicts import LEAK_REASONS, RESIDUE_REASONS


@dataclass(frozen=True)
class RunFinding:
    """A leak or a residue, and which repetition of its configuration found it."""

    finding: FindingEntry
    repetition: int | None


def _rate_text(rate: Rate) -> str:
    if rate.rate is None:
        return "—"
    return f"{pct(rate.rate)} [{pct(rate.ci95_low)}, {pct(rate.ci95_high)}]"


def comparison_rows(document: ExperimentDocument) -> tuple[list[str], list[list[str]]]:
    """(configurations, rows): the side-by-side table every format shows."""
    comparison = document.comparison
    labels = document.experiment.configurations
    rows: list[list[str]] = []
    for family in FAMILIES:
        if any(comparison[c].families[family].rate is not None for c in labels):
            rows.append([family] + [_rate_text(comparison[c].families[family]) for c in labels])
    for name, count in (
        ("missing recall (count)", lambda c: c.missing),
        ("leaks (count)", lambda c: c.leaks),
        ("residues (count)", lambda c: c.residues),
        ("inconclusive", lambda c: c.inconclusive),
    ):
        rows.append([name] + [str(count(comparison[c])) for c in labels])
    rows.append(
        ["latency p50 / p95 (ms)"]
        + [
            f"{comparison[c].latency_ms.median or 0:.1f} / {comparison[c].latency_ms.p95 or 0:.1f}"
            for c in labels
        ]
    )
    stages = sorted({stage for c in labels for stage in comparison[c].stages_ms})
    for stage in stages:
        rows.append(
            [f"  {stage} p50 / p95 (ms)"]
            + [
                (
                    f"{comparison[c].stages_ms[stage].median or 0:.2f} / "
                    f"{comparison[c].stages_ms[stage].p95 or 0:.2f}"
                )
                if stage in comparison[c].stages_ms
                else "—"
                for c in labels
            ]
        )
    if any(comparison[c].cost_per_probe is not None for c in labels):
        rows.append(
            ["cost per probe"]
            + [
                f"{cost:.2e}" if (cost := comparison[c].cost_per_probe) is not None else "—"
                for c in labels
            ]
        )
    rows.append(["verdict"] + ["pass" if comparison[c].passed else "FAIL" for c in labels])
    return labels, rows


def comparison_markdown(document: ExperimentDocument) -> str:
    meta = document.experiment
    labels, rows = comparison_rows(document)
    lines = [
        f"## memlife experiment `{meta.id}` · {meta.scenario}",
        "",
        f"{len(labels)} configuration(s) × {meta.repetitions} repetition(s), same "
        f"tenants and values per repetition · clock {meta.clock} · rates with 95% "
        "bootstrap intervals over pairs",
        "",
        "| | " + " | ".join(labels) + " |",
        "|---|" + "---|" * len(labels),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    for label, findings in findings_by_configuration(document).items():
        if findings:
            lines += [
                "",
                f"<details><summary><b>{label}: {len(findings)} leak(s) and "
                "residue(s)</b></summary>",
                "",
            ]
            lines += [
                f"- #{found.repetition} {f.invariant} {f.reason} · stage {f.stage} · "
                f"{f.tenant} (pair {f.pair}) · {f.store}"
                + (f" · `{f.evidence.value}`" if f.evidence.value else "")
                for found in findings
                for f in (found.finding,)
            ]
            lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def findings_by_configuration(document: ExperimentDocument) -> dict[str, list[RunFinding]]:
    """Every leak and every residue, each on its own, by configuration."""
    found: dict[str, list[RunFinding]] = {label: [] for label in document.experiment.configurations}
    for artifact in document.runs:
        for failure in artifact.failures:
            if failure.reason in (*LEAK_REASONS, *RESIDUE_REASONS):
                found.setdefault(configuration_label(artifact), []).append(
                    RunFinding(failure, artifact.meta.repetition)
                )
    return found


def comparison_html(document: ExperimentDocument) -> str:
    meta = document.experiment
    labels, rows = comparison_rows(document)
    head = "".join(f"<th>{html.escape(label)}</th>" for label in labels)

    def cell(value: str) -> str:
        state = "fail" if value == "FAIL" else "pass" if value == "pass" else ""
        return f'<td class="{state}">{html.escape(value)}</td>'

    body = "".join(
        "<tr><th>"
        + html.escape(row[0])
        + "</th>"
        + "".join(cell(value) for value in row[1:])
        + "</tr>"
        for row in rows
    )
    runs = "".join(
        f"<li><code>{html.escape(a.meta.run_id)}</code> · "
        f"{html.escape(str(a.meta.configuration))} #{a.meta.repetition} · "
        f"{a.summary.cases_passed}/{a.summary.cases} cases</li>"
        for a in document.runs
    )
    leaks = "".join(
        f"<details><summary>{html.escape(label)}: {len(found)} leak(s) and residue(s)"
        "</summary><table class=list><thead><tr><th>#</th><th>check</th><th>stage</th>"
        "<th>tenant</th><th>store</th><th>value</th></tr></thead><tbody>"
        + "".join(
            f"<tr><td>{item.repetition}</td><td>{f.invariant} {f.reason}</td>"
            f"<td>{html.escape(f.stage)}</td><td>pair {f.pair} · "
            f"{html.escape(f.tenant)}</td><td>{html.escape(f.store)}"
            f"</td><td><code>{html.escape(f.evidence.value or '')}</code></td></tr>"
            for item in found
            for f in (item.finding,)
        )
        + "</tbody></table></details>"
        for label, found in findings_by_configuration(document).items()
        if found
    )
    if leaks:
        leaks = "<h2>Every leak and residue</h2>" + leaks
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>memlife experiment {html.escape(meta.id)}
</title><style>{STYLE}</style></head><body>
<h1>memlife experiment · {html.escape(meta.scenario)}</h1>
<p class=meta>experiment <code>{html.escape(meta.id)}</code> · {len(labels)} configuration(s)
× {meta.repetitions} repetition(s) · clock {html.escape(meta.clock)}</p>
<p class=muted>Same tenants, values and questions for every configuration of a repetition.
Rates pooled over checks, 95% bootstrap intervals over pairs; missing recall and leakage
are counted apart.</p>
<table class="matrix comparison"><thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody>
</table>{leaks}<h2>Runs</h2><ul>{runs}</ul><p class=muted>Each run's own report:
<code>memlife report RUN --format html</code>.</p></body></html>
"""


def render_experiment(
    document: ExperimentDocument,
    fmt: str,
    *,
    redacted: bool = True,
    lists: Mapping[str, Lists] | None = None,
) -> str:
    """The whole rendering as one string (`render_experiment_chunks`)."""
    return "".join(render_experiment_chunks(document, fmt, redacted=redacted, lists=lists))


def render_experiment_chunks(
    document: ExperimentDocument,
    fmt: str,
    *,
    redacted: bool = True,
    lists: Mapping[str, Lists] | None = None,
) -> Iterator[str]:
    """The experiment in a report format, piece by piece: the comparison (json, md, html),
    or every run's checks with one JUnit suite per configuration × invariant. `lists`: each
    run's tenants and cases by run id, for runs that come as digests
    (recorder.report_experiment); without it the runs are whole artifacts."""
    if lists is None:
        lists = {run.meta.run_id: ArtifactLists(run) for run in document.runs}
    if redacted:
        redactors = {
            run.meta.run_id: Redactor(lists[run.meta.run_id].tenants()) for run in document.runs
        }
        document = document.model_copy(
            update={"runs": [redact(run, redactors[run.meta.run_id]) for run in document.runs]}
        )
        lists = {
            run_id: RedactedLists(lists[run_id], redactor) for run_id, redactor in redactors.items()
        }
    if fmt == "json":
        shown = document.model_dump(mode="json", exclude={"runs"})
        shown["runs"] = [run.meta.run_id for run in document.runs]
        yield json.dumps(shown, indent=2, ensure_ascii=False) + "\n"
    elif fmt == "md":
        yield comparison_markdown(document)
    elif fmt == "html":
        yield comparison_html(document)
    else:
        yield from junit_runs_chunks(
            f"memlife experiment {document.experiment.id}",
            (
                (
                    f"{run.meta.configuration}#{run.meta.repetition}",
                    scorecard(run, lists=lists[run.meta.run_id], drawn=False),
                    lists[run.meta.run_id].cases(),
                )
                for run in document.runs
            ),
        )
