"""Experiments (seed §9–§10): several configurations of one system — e.g. the reference
target answering from the thread, vector memory or the graph alone, or all three with the
seed's precedence — run with the same tenants, values and questions, over repetitions with
fresh ones. Pure: builds the comparison from the runs' artifacts.

Missing recall and leakage stay separate (recall vs I3); rates are pooled over checks and
bootstrapped over pairs, where the pairs of different repetitions are different units.
"""

from __future__ import annotations

from pathlib import Path
from statistics import median
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memlife.reports import redact
from memlife.scoring import percentile_upper_rank
from memlife.statistics import bootstrap_rate

EXPERIMENT_VERSION = 1
# Probe families and the checks that measure them: missing recall and leakage apart.
FAMILIES = {"recall": "recall", "stale (U1)": "U1", "abstain": "abstain",
            "leakage-free (I3)": "I3", "deletion (I4)": "I4", "scoped deletion (D2)": "D2"}


class MatrixEntry(BaseModel):
    """One configuration: a target file, or the bundled reference target in a retrieval
    mode with its own faults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_./+-]{0,62}$")
    target: str | None = None  # a target file, relative to the matrix file
    retrieval: str | None = None
    faults: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_kind(self) -> MatrixEntry:
        if self.target is not None and (self.retrieval or self.faults):
            raise ValueError("a target file configuration takes no retrieval or faults (those "
                             "are the bundled reference target's)")
        return self


class MatrixFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    configurations: list[MatrixEntry] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> MatrixFile:
        names = [entry.name for entry in self.configurations]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"configuration names must be unique: {', '.join(repeated)}")
        return self


def load_matrix(path: str | Path) -> MatrixFile:
    """Raises InputError with one `file: field: reason` per problem."""
    from memlife.errors import Problem
    from memlife.reference.store import FAULTS, RETRIEVAL_MODES
    from memlife.validation import parse_document
    from memlife.yamlio import load_yaml_file

    def semantic(matrix: MatrixFile, file: str) -> list[Problem]:
        problems = []
        for index, entry in enumerate(matrix.configurations):
            where = f"configurations.{index}"
            if entry.retrieval is not None and entry.retrieval not in RETRIEVAL_MODES:
                problems.append(Problem(file, f"{where}.retrieval", f"unknown mode "
                                        f"{entry.retrieval!r}; one of "
                                        f"{', '.join(RETRIEVAL_MODES)}"))
            for position, fault in enumerate(entry.faults):
                if fault not in FAULTS:
                    problems.append(Problem(file, f"{where}.faults.{position}",
                                            f"unknown fault {fault!r}"))
            if entry.target is not None and not (Path(file).parent / entry.target).exists():
                problems.append(Problem(file, f"{where}.target", f"no such file "
                                        f"{entry.target!r} (relative to the matrix file)"))
        return problems

    return parse_document(MatrixFile, load_yaml_file(path), str(path), semantic)


def experiment_document(experiment: str, artifacts: list[dict[str, Any]]) -> dict[str, Any]:
    configurations: list[str] = []
    for artifact in artifacts:
        label = artifact["meta"].get("configuration") or artifact["meta"]["target_name"]
        if label not in configurations:
            configurations.append(label)
    return {
        "experiment_version": EXPERIMENT_VERSION,
        "experiment": {"id": experiment, "configurations": configurations,
                       "repetitions": max((a["meta"].get("repetition") or 1)
                                          for a in artifacts),
                       "scenario": artifacts[0]["meta"]["scenario_name"],
                       "clock": artifacts[0]["meta"]["clock"]},
        "comparison": compare(artifacts, configurations),
        "runs": artifacts,
    }


def _label(artifact: dict[str, Any]) -> str:
    return artifact["meta"].get("configuration") or artifact["meta"]["target_name"]


def _units(artifacts: list[dict[str, Any]], invariant: str) -> list[tuple[int, int]]:
    units = []
    for artifact in artifacts:
        for pair in artifact.get("pairs", []):
            tally = pair.get("by_invariant", {}).get(invariant)
            if tally:
                decided = tally["checked"] - tally["inconclusive"]
                units.append((decided - tally["failed"], decided))
    return units


def _spread(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"count": 0, "mean": None, "median": None, "p95": None, "max": None}
    return {"count": len(values), "mean": round(sum(values) / len(values), 3),
            "median": round(median(values), 3),
            "p95": round(percentile_upper_rank(values, 0.95), 3), "max": round(max(values), 3)}


def compare(artifacts: list[dict[str, Any]], configurations: list[str]) -> dict[str, Any]:
    """Per configuration: rates with intervals, per invariant tallies, leaks and residues,
    end-to-end and per-stage latency, cost."""
    result: dict[str, Any] = {}
    for label in configurations:
        runs = [a for a in artifacts if _label(a) == label]
        invariants: dict[str, dict[str, int]] = {}
        for artifact in runs:
            for name, tally in artifact["summary"]["by_invariant"].items():
                into = invariants.setdefault(name, {"checked": 0, "failed": 0,
                                                    "inconclusive": 0})
                for key in into:
                    into[key] += tally[key]
        probes = [o for a in runs for o in a["observations"]
                  if o["kind"] == "probe" and o["status"] == "ok" and o["latency_ms"] is not None]
        stages: dict[str, list[float]] = {}
        for observation in probes:
            for stage, value in (observation.get("stages") or {}).items():
                stages.setdefault(stage, []).append(value)
        costs = [o["cost"] for o in probes if o.get("cost") is not None]
        failures = [f for a in runs for f in a["failures"]]
        result[label] = {
            "runs": [a["meta"]["run_id"] for a in runs],
            "passed": all(a["summary"]["passed"] for a in runs),
            "pairs": sum(len(a.get("pairs", [])) for a in runs),
            "families": {name: bootstrap_rate(_units(runs, invariant)).as_dict()
                         for name, invariant in FAMILIES.items()},
            "by_invariant": invariants,
            "leaks": sum(1 for f in failures if f["reason"] in ("leaked", "overreach")),
            "missing": sum(1 for f in failures if f["reason"] == "missing"),
            "residues": sum(1 for f in failures if f["reason"] in ("residue", "resurrected")),
            "inconclusive": sum(len(a["inconclusive"]) for a in runs),
            "latency_ms": _spread([o["latency_ms"] for o in probes]),
            "stages_ms": {stage: _spread(values) for stage, values in sorted(stages.items())},
            "cost_per_probe": round(sum(costs) / len(costs), 9) if costs else None,
        }
    return result


def redact_document(document: dict[str, Any]) -> dict[str, Any]:
    return {**document, "runs": [redact(artifact) for artifact in document["runs"]]}


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _rate_text(rate: dict[str, Any]) -> str:
    if rate["rate"] is None:
        return "—"
    return (f"{_pct(rate['rate'])} [{_pct(rate['ci95_low'])}, {_pct(rate['ci95_high'])}]")


def comparison_rows(document: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(configurations, rows): the side-by-side table every format shows."""
    comparison = document["comparison"]
    labels = document["experiment"]["configurations"]
    rows: list[list[str]] = []
    for family in FAMILIES:
        if any(comparison[c]["families"][family]["rate"] is not None for c in labels):
            rows.append([family] + [_rate_text(comparison[c]["families"][family])
                                    for c in labels])
    for key, name in (("missing", "missing recall (count)"), ("leaks", "leaks (count)"),
                      ("residues", "residues (count)"), ("inconclusive", "inconclusive")):
        rows.append([name] + [str(comparison[c][key]) for c in labels])
    rows.append(["latency p50 / p95 (ms)"] + [
        f"{comparison[c]['latency_ms']['median'] or 0:.1f} / "
        f"{comparison[c]['latency_ms']['p95'] or 0:.1f}" for c in labels])
    stages = sorted({stage for c in labels for stage in comparison[c]["stages_ms"]})
    for stage in stages:
        rows.append([f"  {stage} p50 / p95 (ms)"] + [
            (f"{comparison[c]['stages_ms'][stage]['median']:.2f} / "
             f"{comparison[c]['stages_ms'][stage]['p95']:.2f}")
            if stage in comparison[c]["stages_ms"] else "—" for c in labels])
    if any(comparison[c]["cost_per_probe"] is not None for c in labels):
        rows.append(["cost per probe"] + [
            f"{comparison[c]['cost_per_probe']:.2e}" if comparison[c]["cost_per_probe"]
            is not None else "—" for c in labels])
    rows.append(["verdict"] + ["pass" if comparison[c]["passed"] else "FAIL" for c in labels])
    return labels, rows


def comparison_markdown(document: dict[str, Any]) -> str:
    meta = document["experiment"]
    labels, rows = comparison_rows(document)
    lines = [f"## memlife experiment `{meta['id']}` · {meta['scenario']}", "",
             f"{len(labels)} configuration(s) × {meta['repetitions']} repetition(s), same "
             f"tenants and values per repetition · clock {meta['clock']} · rates with 95% "
             "bootstrap intervals over pairs", "",
             "| | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    for label, findings in findings_by_configuration(document).items():
        if findings:
            lines += ["", f"<details><summary><b>{label}: {len(findings)} leak(s) and "
                      "residue(s)</b></summary>", ""]
            lines += [f"- #{f['repetition']} {f['invariant']} {f['reason']} · stage "
                      f"{f['stage']} · {f['tenant']} (pair {f['pair']}) · {f['store']}"
                      + (f" · `{f['value']}`" if f["value"] else "") for f in findings]
            lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def findings_by_configuration(document: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every leak and every residue, each on its own, by configuration."""
    found: dict[str, list[dict[str, Any]]] = {
        label: [] for label in document["experiment"]["configurations"]}
    for artifact in document["runs"]:
        for failure in artifact["failures"]:
            if failure["reason"] in ("leaked", "overreach", "residue", "resurrected"):
                found.setdefault(_label(artifact), []).append({
                    **failure, "value": failure["evidence"].get("value"),
                    "repetition": artifact["meta"].get("repetition")})
    return found


def comparison_html(document: dict[str, Any]) -> str:
    import html

    from memlife.reports import _STYLE

    meta = document["experiment"]
    labels, rows = comparison_rows(document)
    head = "".join(f"<th>{html.escape(label)}</th>" for label in labels)

    def cell(row: list[str], value: str) -> str:
        state = ("fail" if value == "FAIL" else "pass" if value == "pass" else "")
        return f'<td class="{state}">{html.escape(value)}</td>'

    body = "".join("<tr><th>" + html.escape(row[0]) + "</th>"
                   + "".join(cell(row, value) for value in row[1:]) + "</tr>" for row in rows)
    runs = "".join(
        f"<li><code>{html.escape(a['meta']['run_id'])}</code> · "
        f"{html.escape(str(a['meta'].get('configuration')))} #{a['meta'].get('repetition')} · "
        f"{a['summary']['cases_passed']}/{a['summary']['cases']} cases</li>"
        for a in document["runs"])
    leaks = "".join(
        f"<details><summary>{html.escape(label)}: {len(found)} leak(s) and residue(s)"
        "</summary><table class=list><thead><tr><th>#</th><th>check</th><th>stage</th>"
        "<th>tenant</th><th>store</th><th>value</th></tr></thead><tbody>"
        + "".join(f"<tr><td>{f['repetition']}</td><td>{f['invariant']} {f['reason']}</td>"
                  f"<td>{html.escape(str(f['stage']))}</td><td>pair {f['pair']} · "
                  f"{html.escape(str(f['tenant']))}</td><td>{html.escape(str(f['store']))}"
                  f"</td><td><code>{html.escape(str(f['value'] or ''))}</code></td></tr>"
                  for f in found)
        + "</tbody></table></details>"
        for label, found in findings_by_configuration(document).items() if found)
    if leaks:
        leaks = "<h2>Every leak and residue</h2>" + leaks
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>memlife experiment {html.escape(meta['id'])}
</title><style>{_STYLE}</style></head><body>
<h1>memlife experiment · {html.escape(meta['scenario'])}</h1>
<p class=meta>experiment <code>{html.escape(meta['id'])}</code> · {len(labels)} configuration(s)
× {meta['repetitions']} repetition(s) · clock {html.escape(meta['clock'])}</p>
<p class=muted>Same tenants, values and questions for every configuration of a repetition.
Rates pooled over checks, 95% bootstrap intervals over pairs; missing recall and leakage
are counted apart.</p>
<table class="matrix comparison"><thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody>
</table>{leaks}<h2>Runs</h2><ul>{runs}</ul><p class=muted>Each run's own report:
<code>memlife report RUN --format html</code>.</p></body></html>
"""




def render_experiment(document: dict[str, Any], fmt: str, *, redacted: bool = True) -> str:
    """The experiment in a report format: the comparison (json, md, html), or every run's
    checks with one JUnit suite per configuration × invariant."""
    import json

    from memlife.reports import junit_document, scorecard

    if redacted:
        document = redact_document(document)
    if fmt == "json":
        shown = {k: v for k, v in document.items() if k != "runs"}
        shown["runs"] = [a["meta"]["run_id"] for a in document["runs"]]
        return json.dumps(shown, indent=2, ensure_ascii=False) + "\n"
    if fmt == "md":
        return comparison_markdown(document)
    if fmt == "html":
        return comparison_html(document)
    return junit_document(
        f"memlife experiment {document['experiment']['id']}",
        [(f"{a['meta'].get('configuration')}#{a['meta'].get('repetition')}", scorecard(a))
         for a in document["runs"]])
