"""Reports of a run (`memlife report`): JSON scorecard, Markdown, self-contained HTML and
JUnit XML, all from the result artifact. Pure.

Phone numbers and tenant ids are redacted by default: each becomes a stable label naming
its pair and role (`phone[p3a]`, `tenant[p3a]`), everywhere in the document.
"""

from __future__ import annotations

import copy
import html
import json
import math
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from xml.etree import ElementTree

from memlife.lifecycle import INVARIANTS
from memlife.statistics import bootstrap_rate

FORMATS = ("json", "md", "html", "junit")
RATES = {"recall": "recall", "update": "U1", "deletion": "I4", "response isolation": "I3"}
LEAK_REASONS = ("leaked", "overreach")
RESIDUE_REASONS = ("residue", "resurrected")
COLORS = {"pass": "#2e9d5b", "fail": "#d64545", "inconclusive": "#e0a526", "none": "#aab4c3"}


# -- redaction -----------------------------------------------------------------------------


def redact(artifact: dict[str, Any]) -> dict[str, Any]:
    """A copy with every run tenant's phone number and tenant id replaced by a label."""
    replacements: dict[str, str] = {}
    for tenant in artifact.get("tenants", []):
        label = f"p{tenant['pair']}{tenant['role']}"
        if tenant.get("phone"):
            replacements[str(tenant["phone"])] = f"phone[{label}]"
        if tenant.get("user_id"):
            replacements[str(tenant["user_id"])] = f"tenant[{label}]"
    ordered = sorted(replacements.items(), key=lambda item: -len(item[0]))

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            for secret, label in ordered:
                if secret in value:
                    value = value.replace(secret, label)
            return value
        if isinstance(value, list):
            return [scrub(item) for item in value]
        if isinstance(value, dict):
            return {key: scrub(item) for key, item in value.items()}
        return value

    redacted = scrub(copy.deepcopy(artifact))
    redacted.setdefault("meta", {})["redacted"] = True
    return redacted


# -- the scorecard -------------------------------------------------------------------------


def _rate_inputs(pairs: list[dict[str, Any]], invariant: str) -> list[tuple[int, int]]:
    inputs = []
    for pair in pairs:
        tally = pair.get("by_invariant", {}).get(invariant)
        if tally:
            decided = tally["checked"] - tally["inconclusive"]
            inputs.append((decided - tally["failed"], decided))
    return inputs


def _adjudicated_inputs(pairs: list[dict[str, Any]], adjudications: list[dict[str, Any]],
                        invariant: str) -> list[tuple[int, int]]:
    """The exact-match units, with each reviewed check's outcome replaced by the
    reviewer's: a pass the reviewer overturned counts as a failure, and the reverse."""
    shift: dict[int, int] = {}
    for entry in adjudications:
        exact, decided = entry["exact"].get(invariant), entry["adjudicated"].get(invariant)
        if exact is None or decided is None or exact == decided:
            continue
        shift[entry["pair"]] = shift.get(entry["pair"], 0) + (1 if decided == "pass" else -1)
    inputs = []
    for pair in pairs:
        tally = pair.get("by_invariant", {}).get(invariant)
        if tally:
            decided_total = tally["checked"] - tally["inconclusive"]
            passed = decided_total - tally["failed"] + shift.get(pair["pair"], 0)
            inputs.append((passed, decided_total))
    return inputs


def scorecard(artifact: dict[str, Any]) -> dict[str, Any]:
    """What every format shows: verdict, rates with 95% intervals over pairs, the matrix,
    every leak and every residue on its own, latency and the timeline."""
    failures = artifact.get("failures", [])
    rates = {name: {"invariant": invariant,
                    **bootstrap_rate(_rate_inputs(artifact.get("pairs", []),
                                                  invariant)).as_dict()}
             for name, invariant in RATES.items()}
    latencies = [o["latency_ms"] for o in artifact.get("observations", [])
                 if o["kind"] == "probe" and o["status"] == "ok" and o["latency_ms"] is not None]
    adjudications = artifact.get("adjudications", [])
    adjudicated_rates = {
        name: {"invariant": invariant, **bootstrap_rate(_adjudicated_inputs(
            artifact.get("pairs", []), adjudications, invariant)).as_dict()}
        for name, invariant in RATES.items()} if adjudications else {}
    return {
        "report_version": 1,
        "meta": artifact["meta"],
        "summary": artifact["summary"],
        "rates": rates,
        "adjudicated_rates": adjudicated_rates,
        "adjudications": adjudications,
        "stages": artifact.get("stages", []),
        "matrix": artifact.get("matrix", {}),
        "latency_ms": {**artifact.get("latency_ms", {}), "samples": latencies},
        "deletions": artifact.get("deletions", []),
        "leaks": [f for f in failures if f["reason"] in LEAK_REASONS],
        "residues": [f for f in failures if f["reason"] in RESIDUE_REASONS],
        "other_failures": [f for f in failures
                           if f["reason"] not in LEAK_REASONS + RESIDUE_REASONS],
        "inconclusive": artifact.get("inconclusive", []),
        "timeline": artifact.get("timeline", []),
        "tenants": [{k: t.get(k) for k in ("pair", "role", "alias", "phone", "user_id")}
                    for t in artifact.get("tenants", [])],
        "cases": artifact.get("cases", []),
    }


def render(artifact: dict[str, Any], fmt: str, *, redacted: bool = True) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    card = scorecard(redact(artifact) if redacted else artifact)
    if fmt == "json":
        shown = {k: v for k, v in card.items() if k != "cases"}
        shown["latency_ms"] = {k: v for k, v in card["latency_ms"].items() if k != "samples"}
        return json.dumps(shown, indent=2, ensure_ascii=False) + "\n"
    return {"md": markdown, "html": html_page, "junit": junit}[fmt](card)


# -- shared bits ---------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _interval(rate: dict[str, Any]) -> str:
    if rate["rate"] is None:
        return "not checked"
    text = f"{_pct(rate['rate'])} [{_pct(rate['ci95_low'])}, {_pct(rate['ci95_high'])}]"
    return f"{text} ({rate['successes']}/{rate['trials']} over {rate['pairs']} pair(s))"


def _verdict_word(card: dict[str, Any]) -> str:
    return "PASS" if card["summary"]["passed"] else "FAIL"


def _invariant_order(matrix: dict[str, Any]) -> list[str]:
    order = {name: index for index, name in enumerate(INVARIANTS)}
    return sorted(matrix, key=lambda name: order.get(name, 99))


def _cell_state(cell: dict[str, int]) -> str:
    return "fail" if cell["failed"] else "inconclusive" if cell["inconclusive"] else "pass"


def matrix_rows(card: dict[str, Any], stages: list[str]) -> Iterator[
        tuple[str, str, list[dict[str, int] | None]]]:
    """(invariant, store, the cell of each stage or None), invariants in their order."""
    for invariant in _invariant_order(card["matrix"]):
        for store, cells in sorted(card["matrix"][invariant].items()):
            yield invariant, store, [cells.get(stage) for stage in stages]


def _ratio(cell: dict[str, int]) -> str:
    """passed/checked"""
    return f"{cell['checked'] - cell['failed'] - cell['inconclusive']}/{cell['checked']}"


def _used_stages(card: dict[str, Any]) -> list[str]:
    matrix = card["matrix"]
    return [stage for stage in card["stages"]
            if any(stage in cells for stores in matrix.values() for cells in stores.values())]


def _finding_line(f: dict[str, Any]) -> str:
    value = f["evidence"].get("value")
    return (f"{f['invariant']} {f['reason']} · stage {f['stage']} · {f['tenant']} (pair "
            f"{f['pair']}) · {f['store']}" + (f" · value `{value}`" if value else "")
            + (f" — {f['evidence']['detail']}" if f["evidence"].get("detail") else ""))


# -- Markdown ------------------------------------------------------------------------------


def markdown(card: dict[str, Any]) -> str:
    meta, summary = card["meta"], card["summary"]
    lines = [
        f"## memlife · {meta.get('scenario_name')} against {meta.get('target_name')}: "
        f"**{_verdict_word(card)}**", "",
        f"{summary['cases_passed']}/{summary['cases']} cases passed · "
        f"{len(card['leaks'])} leak(s) · {len(card['residues'])} residue(s) · "
        f"{len(card['other_failures'])} other failure(s) · "
        f"{len(card['inconclusive'])} inconclusive · run `{meta.get('run_id')}` · "
        f"clock {meta.get('clock')} · {meta.get('pairs')} pair(s)", "",
        "| invariant | checked | failed | inconclusive |", "|---|---:|---:|---:|",
    ]
    for name, tally in summary["by_invariant"].items():
        if tally["checked"]:
            mark = " ❌" if tally["failed"] else " ⚠️" if tally["inconclusive"] else ""
            lines.append(f"| {name}{mark} | {tally['checked']} | {tally['failed']} | "
                         f"{tally['inconclusive']} |")
    lines += ["", "**Rates** (95% bootstrap interval over pairs)", "",
              "| rate | estimate |", "|---|---|"]
    for name, rate in card["rates"].items():
        lines.append(f"| {name} ({rate['invariant']}) | {_interval(rate)} |")
    if card["adjudicated_rates"]:
        lines += ["", f"**Adjudicated** ({len(card['adjudications'])} reply(ies) reviewed "
                  "blind; exact match above)", "", "| rate | adjudicated |", "|---|---|"]
        for name, rate in card["adjudicated_rates"].items():
            lines.append(f"| {name} ({rate['invariant']}) | {_interval(rate)} |")
        lines += ["", "| case | stage | reviewer | stated | exact → adjudicated |",
                  "|---|---|---|---|---|"]
        for entry in card["adjudications"]:
            changes = _changes(entry)
            stated = ("abstains" if entry["abstains"] else
                      ", ".join(f"`{v}`" for v in entry["stated"]) or "nothing")
            lines.append(f"| {entry['case']} (pair {entry['pair']}) | {entry['stage']} | "
                         f"{entry['reviewer']} | {stated} | {changes} |")
    stages = _used_stages(card)
    if stages:
        lines += ["", "**Invariant × store × stage** (passed/checked)", "",
                  "| invariant | store | " + " | ".join(stages) + " |",
                  "|---|---|" + "---|" * len(stages)]
        for invariant, store, cells in matrix_rows(card, stages):
            row = ["" if cell is None else f"**{_ratio(cell)}** ❌" if cell["failed"]
                   else _ratio(cell) for cell in cells]
            lines.append(f"| {invariant} | {store} | " + " | ".join(row) + " |")
    latency = card["latency_ms"]
    if latency.get("count"):
        lines += ["", f"**Latency** (ms): mean {latency['mean']:.1f} · median "
                  f"{latency['median']:.1f} · p95 {latency['p95']:.1f} · max "
                  f"{latency['max']:.1f} · {latency['share_within_target'] * 100:.0f}% within "
                  f"{latency['target_ms']:g} ms"]
    for title, entries in (("Leaks", card["leaks"]), ("Residues", card["residues"]),
                           ("Other failures", card["other_failures"])):
        if entries:
            lines += ["", f"<details open><summary><b>{title} ({len(entries)})</b></summary>",
                      ""]
            lines += [f"- {_finding_line(f)}" for f in entries]
            lines += ["", "</details>"]
    if card["inconclusive"]:
        lines += ["", f"<details><summary><b>Inconclusive ({len(card['inconclusive'])})</b>"
                  "</summary>", ""]
        lines += [f"- {_finding_line(f)}" for f in card["inconclusive"]]
        lines += ["", "</details>"]
    if meta.get("redacted"):
        lines += ["", "_Phone numbers and tenant ids are redacted (`--no-redact` keeps them)._"]
    return "\n".join(lines) + "\n"


# -- JUnit ---------------------------------------------------------------------------------


def junit(card: dict[str, Any]) -> str:
    """One test suite per invariant, one test case per check: CI systems list each."""
    return junit_document(f"memlife {card['meta'].get('run_id')}", [("", card)])


def junit_document(name: str, cards: list[tuple[str, dict[str, Any]]]) -> str:
    """Several runs in one JUnit file; each run's suites named with its label first."""
    root = ElementTree.Element("testsuites", name=name)
    for label, card in cards:
        _junit_suites(root, card, f"{label} " if label else "")
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(
        root, encoding="unicode") + "\n"


def _junit_suites(root: ElementTree.Element, card: dict[str, Any], prefix: str) -> None:
    findings: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for entry in (*card["leaks"], *card["residues"], *card["other_failures"],
                  *card["inconclusive"]):
        findings.setdefault((entry["case"], entry["invariant"], entry["store"]), []).append(entry)
    suites: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for case in card["cases"]:
        for check in case["checks"]:
            suites.setdefault(check["invariant"], []).append((case, check))
    order = {name: index for index, name in enumerate(INVARIANTS)}
    for invariant in sorted(suites, key=lambda name: order.get(name, 99)):
        items = suites[invariant]
        failed = sum(1 for _, check in items if check["outcome"] == "fail")
        errors = sum(1 for _, check in items if check["outcome"] == "inconclusive")
        suite = ElementTree.SubElement(root, "testsuite", name=f"{prefix}{invariant}",
                                       tests=str(len(items)), failures=str(failed),
                                       errors=str(errors), skipped="0")
        for case, check in items:
            store = check.get("store", "response")
            testcase = ElementTree.SubElement(
                suite, "testcase", classname=f"memlife.{invariant}.{case['stage']}",
                name=f"{case['case']} [{store}] pair {case['pair']} {case['tenant']}")
            if check["outcome"] == "pass":
                continue
            related = findings.get((case["case"], invariant, store), [])
            text = "\n".join(_finding_line(f) for f in related) or check["outcome"]
            tag = "failure" if check["outcome"] == "fail" else "error"
            element = ElementTree.SubElement(
                testcase, tag, message=(related[0]["reason"] if related else check["outcome"]),
                type=invariant)
            element.text = text


# -- HTML ----------------------------------------------------------------------------------


def _parse(moment: str | None) -> datetime | None:
    return datetime.fromisoformat(moment.replace("Z", "+00:00")) if moment else None


_TICKS = [1, 5, 10, 30, 60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400,
          2 * 86400, 7 * 86400]


def _tick_label(seconds: float) -> str:
    if seconds >= 86400:
        days, rest = divmod(int(seconds), 86400)
        return f"+{days}d" + (f" {rest // 3600}h" if rest >= 3600 else "")
    if seconds >= 3600:
        return f"+{seconds / 3600:g}h"
    if seconds >= 60:
        return f"+{seconds / 60:g}m"
    return f"+{seconds:g}s"


MAX_TIMELINE_PAIRS = 200


def _step_state(step: dict[str, Any]) -> str:
    outcomes = step.get("outcomes") or {}
    return ("fail" if outcomes.get("fail") else "inconclusive" if outcomes.get("inconclusive")
            else "pass" if outcomes.get("pass") else "none")


def timeline_svg(card: dict[str, Any]) -> str:
    steps = [s for s in card["timeline"] if s.get("scenario_started")]
    if not steps:
        return "<p class=muted>This artifact carries no timeline.</p>"
    origin = min(_parse(s["scenario_started"]) for s in steps)  # type: ignore[type-var]
    end = max(_parse(s["scenario_finished"]) for s in steps)  # type: ignore[type-var]
    assert origin is not None and end is not None
    span = max((end - origin).total_seconds(), 1.0)
    pairs = sorted({s["pair"] for s in steps})
    shown = pairs[:MAX_TIMELINE_PAIRS]
    aliases: dict[int, list[str]] = {}
    for tenant in card.get("tenants", []):
        aliases.setdefault(tenant["pair"], []).append(tenant["alias"])
    left, width, row, top = 150, 1000, 20, 28
    plot = width - left - 10
    height = top + row * len(shown) + 10
    tick = next((t for t in _TICKS if span / t <= 10), _TICKS[-1])
    parts = [f'<svg class="timeline" viewBox="0 0 {width} {height}" width="100%" '
             f'role="img" aria-label="per-pair timeline" xmlns="http://www.w3.org/2000/svg">']
    for k in range(int(span // tick) + 1):
        x = left + plot * (k * tick) / span
        parts.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{height - 6}" '
                     'class="grid"/>')
        parts.append(f'<text x="{x:.1f}" y="{top - 10}" class="tick">'
                     f'{_tick_label(k * tick)}</text>')
    for position, pair in enumerate(shown):
        y = top + row * position
        label = f"pair {pair}: " + " / ".join(aliases.get(pair, []))
        parts.append(f'<text x="4" y="{y + 14}" class="label">{html.escape(label)}</text>')
        parts.append(f'<line x1="{left}" y1="{y + 10}" x2="{left + plot}" y2="{y + 10}" '
                     'class="lane"/>')
        # Waits first, then by severity: a failing step is never hidden under a passing
        # one at the same scenario time.
        severity = {"wait": 0, "none": 1, "pass": 2, "inconclusive": 3, "fail": 4}
        for step in sorted((s for s in steps if s["pair"] == pair),
                           key=lambda s: severity["wait" if s["kind"] == "wait"
                                                  else _step_state(s)]):
            start = (_parse(step["scenario_started"]) - origin).total_seconds()  # type: ignore[operator]
            finish = (_parse(step["scenario_finished"]) - origin).total_seconds()  # type: ignore[operator]
            outcomes = step.get("outcomes") or {}
            state = _step_state(step)
            x = left + plot * start / span
            w = max(plot * (finish - start) / span, 5.0)
            if step["kind"] == "wait":
                parts.append(f'<rect x="{x:.1f}" y="{y + 8}" width="{w:.1f}" height="4" '
                             f'class="wait"><title>{html.escape(step["stage"])} (wait)</title>'
                             '</rect>')
                continue
            counts = ", ".join(f"{n} {k}" for k, n in outcomes.items() if n) or "no checks"
            title = (f"pair {pair} · step {step['step']} {step['kind']} · "
                     f"{step['stage']} · {_tick_label(round(start))} · {counts}")
            parts.append(f'<rect x="{x:.1f}" y="{y + 2}" width="{w:.1f}" height="16" rx="3" '
                         f'fill="{COLORS[state]}" class="step {state}">'
                         f'<title>{html.escape(title)}</title></rect>')
    parts.append("</svg>")
    more = len(pairs) - len(shown)
    note = f'<p class=muted>… and {more} more pair(s), not drawn.</p>' if more > 0 else ""
    return "".join(parts) + note


def histogram_svg(card: dict[str, Any], bins: int = 30) -> str:
    """Probe latencies on a logarithmic axis that always reaches the budget: fast targets
    answer in a few ms against a budget of hundreds, and both must be readable. The budget
    is a red line; bars past it are red too."""
    samples = [value for value in card["latency_ms"].get("samples") or [] if value > 0]
    if not samples:
        return "<p class=muted>No probe latencies.</p>"
    budget = card["latency_ms"].get("target_ms") or None
    low = 10 ** math.floor(math.log10(min(samples)))
    high = 10 ** math.ceil(math.log10(max(max(samples), budget or 0) * 1.05))
    span = math.log10(high) - math.log10(low)

    def position(value: float) -> float:  # 0 … 1 along the axis
        return (math.log10(value) - math.log10(low)) / span

    counts = [0] * bins
    for value in samples:
        counts[min(int(position(value) * bins), bins - 1)] += 1
    width, height, left, right, top, bottom = 640, 240, 44, 24, 26, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max(counts)
    bar = plot_w / bins
    parts = [f'<svg class="histogram" viewBox="0 0 {width} {height}" width="{width}" '
             'role="img" aria-label="probe latency histogram, log scale, against the budget" '
             'xmlns="http://www.w3.org/2000/svg">',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
             'class="lane"/>']
    for index, count in enumerate(counts):
        if not count:
            continue
        h = max(plot_h * count / peak, 1.5)
        x = left + bar * index
        edge_low = 10 ** (math.log10(low) + span * index / bins)
        edge_high = 10 ** (math.log10(low) + span * (index + 1) / bins)
        over = budget is not None and edge_low >= budget
        parts.append(f'<rect x="{x + 1:.1f}" y="{top + plot_h - h:.1f}" width="{bar - 2:.1f}" '
                     f'height="{h:.1f}" class="bar{" over" if over else ""}"><title>'
                     f'{edge_low:.3g}–{edge_high:.3g} ms: {count} probe(s)</title></rect>')
    decade = low
    while decade <= high * 1.0001:
        x = left + plot_w * position(decade)
        anchor = "start" if decade == low else "end" if decade >= high else "middle"
        parts.append(f'<line x1="{x:.1f}" y1="{top + plot_h}" x2="{x:.1f}" '
                     f'y2="{top + plot_h + 4}" class="lane"/><text x="{x:.1f}" '
                     f'y="{top + plot_h + 17}" text-anchor="{anchor}" class="tick">'
                     f'{decade:g} ms</text>')
        decade *= 10
    parts.append(f'<text x="{left - 6}" y="{top + 8}" text-anchor="end" class="tick">'
                 f'{peak}</text><text x="{left - 6}" y="{top + plot_h}" text-anchor="end" '
                 'class="tick">0</text>')
    if budget is not None:
        x = left + plot_w * position(budget)
        parts.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{top + plot_h}" '
                     f'class="budget"/><text x="{x - 4:.1f}" y="{top - 10}" text-anchor="end" '
                     f'class="tick budget-label">budget {budget:g} ms</text>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle" '
                 'class="tick">probe latency (log scale)</text></svg>')
    return "".join(parts)


def _matrix_html(card: dict[str, Any]) -> str:
    stages = _used_stages(card)
    if not stages:
        return "<p class=muted>No checks.</p>"
    head = "".join(f"<th>{html.escape(stage)}</th>" for stage in stages)
    rows = []
    for invariant, store, cells in matrix_rows(card, stages):
        row = [f"<th>{html.escape(invariant)}</th><th>{html.escape(store)}</th>"]
        row += ["<td></td>" if cell is None else
                f'<td class="{_cell_state(cell)}">{_ratio(cell)}</td>' for cell in cells]
        rows.append("<tr>" + "".join(row) + "</tr>")
    return (f'<table class="matrix"><thead><tr><th>invariant</th><th>store</th>{head}</tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table>')


def _findings_html(title: str, entries: list[dict[str, Any]], open_: bool = True) -> str:
    if not entries:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(f['invariant'])}</td><td>{html.escape(f['reason'])}</td>"
        f"<td>{html.escape(str(f['stage']))}</td><td>pair {f['pair']} · "
        f"{html.escape(str(f['tenant']))}</td><td>{html.escape(str(f['store']))}</td>"
        f"<td><code>{html.escape(str(f['evidence'].get('value') or ''))}</code></td>"
        f"<td>{html.escape(str(f['evidence'].get('detail') or ''))}</td></tr>"
        for f in entries)
    return (f"<details{' open' if open_ else ''}><summary>{html.escape(title)} "
            f"({len(entries)})</summary><table class=list><thead><tr><th>check</th>"
            "<th>reason</th><th>stage</th><th>tenant</th><th>store</th><th>value</th>"
            f"<th>detail</th></tr></thead><tbody>{rows}</tbody></table></details>")


def _changes(entry: dict[str, Any]) -> str:
    return ", ".join(f"{check}: {entry['exact'].get(check)} → {outcome}"
                     for check, outcome in entry["adjudicated"].items())


def _adjudication_html(card: dict[str, Any]) -> str:
    if not card["adjudications"]:
        return ""
    rates = "".join(
        f"<tr><th>{html.escape(name)} ({rate['invariant']})</th>"
        f"<td>{_interval(card['rates'][name])}</td><td>{_interval(rate)}</td></tr>"
        for name, rate in card["adjudicated_rates"].items())
    rows = "".join(
        f"<tr><td>{html.escape(e['case'])} (pair {e['pair']})</td>"
        f"<td>{html.escape(e['stage'])}</td><td>{html.escape(e['reviewer'])}</td>"
        f"<td>{'abstains' if e['abstains'] else html.escape(', '.join(e['stated']) or '—')}"
        f"</td><td>{html.escape(_changes(e))}</td></tr>"
        for e in card["adjudications"])
    return (f"<h2>Adjudicated</h2><p class=muted>{len(card['adjudications'])} reply(ies) "
            "reviewed blind (question, reply and candidate values only).</p><table><thead>"
            "<tr><th>rate</th><th>exact match</th><th>adjudicated</th></tr></thead><tbody>"
            f"{rates}</tbody></table><details><summary>Who decided what</summary><table "
            "class=list><thead><tr><th>case</th><th>stage</th><th>reviewer</th><th>stated"
            f"</th><th>checks</th></tr></thead><tbody>{rows}</tbody></table></details>")


def _tenants_html(card: dict[str, Any]) -> str:
    tenants = card.get("tenants", [])
    if not tenants:
        return "<p class=muted>No tenants recorded.</p>"
    rows = "".join(
        f"<tr><td>{t['pair']}</td><td>{t['role']}</td><td>{html.escape(str(t['alias']))}</td>"
        f"<td><code>{html.escape(str(t.get('phone') or ''))}</code></td>"
        f"<td><code>{html.escape(str(t.get('user_id') or ''))}</code></td></tr>"
        for t in tenants[:MAX_TIMELINE_PAIRS * 2])
    return ("<details><summary>Synthetic tenants of this run "
            f"({len(tenants)})</summary><table class=list><thead><tr><th>pair</th>"
            "<th>role</th><th>alias</th><th>phone</th><th>tenant id</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></details>")


_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;
max-width:1100px;color:#1d2430;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.badge{display:inline-block;padding:2px 10px;border-radius:12px;color:#fff;font-weight:600}
.badge.pass{background:#2e9d5b}.badge.fail{background:#d64545}
.muted{color:#687385}.meta{color:#4a5568}
table{border-collapse:collapse;margin:6px 0}th,td{padding:4px 8px;border:1px solid #e2e6ec;
text-align:left;vertical-align:top}thead th{background:#f4f6f9}
td.pass{background:#e3f4ea}td.fail{background:#fbe1e1;font-weight:600}
td.inconclusive{background:#fdf1d6}
.matrix td{text-align:center;min-width:64px}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{border:1px solid #e2e6ec;border-radius:8px;
padding:10px 14px;min-width:180px}.card b{font-size:20px;display:block}
svg .grid{stroke:#eef0f4}svg .lane{stroke:#e2e6ec}svg .tick{font-size:11px;fill:#687385}
svg .label{font-size:12px;fill:#1d2430}svg .wait{fill:#c9d1dc}svg .bar{fill:#5b7bd5}
svg .budget{stroke:#d64545;stroke-width:2;stroke-dasharray:5 3}svg .bar.over{fill:#d64545}
svg .budget-label{fill:#b03030;font-weight:600}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;
height:12px;border-radius:3px;margin-right:4px;vertical-align:-1px}
details{margin:8px 0}summary{cursor:pointer;font-weight:600}code{font-size:12px}
"""


def html_page(card: dict[str, Any]) -> str:
    meta, summary = card["meta"], card["summary"]
    verdict = _verdict_word(card)
    rate_cards = "".join(
        f'<div class=card>{html.escape(name)} <span class=muted>({rate["invariant"]})</span>'
        f'<b>{_pct(rate["rate"])}</b><span class=muted>95% CI '
        f'{_pct(rate["ci95_low"])}–{_pct(rate["ci95_high"])} · {rate["successes"]}/'
        f'{rate["trials"]} · {rate["pairs"]} pair(s)</span></div>'
        for name, rate in card["rates"].items() if rate["rate"] is not None)
    invariant_rows = "".join(
        f'<tr><th>{html.escape(name)}</th><td>{t["checked"]}</td><td>{t["failed"]}</td>'
        f'<td>{t["inconclusive"]}</td><td class="{"fail" if t["failed"] else "inconclusive" if t["inconclusive"] else "pass"}">'  # noqa: E501
        f'{"fail" if t["failed"] else "inconclusive" if t["inconclusive"] else "pass"}</td></tr>'
        for name, t in summary["by_invariant"].items() if t["checked"])
    latency = card["latency_ms"]
    latency_text = (f"mean {latency['mean']:.1f} · median {latency['median']:.1f} · p95 "
                    f"{latency['p95']:.1f} · max {latency['max']:.1f} ms · "
                    f"{latency['share_within_target'] * 100:.0f}% within "
                    f"{latency['target_ms']:g} ms" if latency.get("count") else "")
    legend = "".join(f'<span><i style="background:{COLORS[k]}"></i>{label}</span>'
                     for k, label in (("pass", "all checks passed"), ("fail", "a check failed"),
                                      ("inconclusive", "inconclusive"),
                                      ("none", "no checks")))
    any_findings = any(card[k] for k in ("leaks", "residues", "other_failures", "inconclusive"))
    redacted = ("<p class=muted>Phone numbers and tenant ids are redacted.</p>"
                if meta.get("redacted") else "")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>memlife · {html.escape(str(meta.get('scenario_name')))} · {verdict}</title>
<style>{_STYLE}</style></head><body>
<h1>memlife · {html.escape(str(meta.get('scenario_name')))} against
{html.escape(str(meta.get('target_name')))}
<span class="badge {verdict.lower()}">{verdict}</span></h1>
<p class=meta>run <code>{html.escape(str(meta.get('run_id')))}</code> ·
{meta.get('pairs')} pair(s) · clock {html.escape(str(meta.get('clock')))} ·
started {html.escape(str(meta.get('started_at')))} · status
{html.escape(str(meta.get('status')))} · memlife
{html.escape(str(meta.get('memlife_version')))}</p>
<p>{summary['cases_passed']}/{summary['cases']} cases passed · <b>{len(card['leaks'])}</b> leak(s) ·
<b>{len(card['residues'])}</b> residue(s) · {len(card['other_failures'])} other failure(s) ·
{len(card['inconclusive'])} inconclusive</p>{redacted}
<h2>Rates</h2><div class=cards>{rate_cards or '<p class=muted>No rates.</p>'}</div>
{_adjudication_html(card)}
<h2>Timeline</h2><p class="legend">{legend}</p>
<p class=muted>Each row is a pair; each mark a step over scenario time (waits are grey bars).</p>
<div id="timeline">{timeline_svg(card)}</div>
<h2>Invariants</h2><table><thead><tr><th>invariant</th><th>checked</th><th>failed</th>
<th>inconclusive</th><th>verdict</th></tr></thead><tbody>{invariant_rows}</tbody></table>
<h2>Invariant × store × stage</h2><p class=muted>passed/checked</p>{_matrix_html(card)}
<h2>Latency</h2><p>{latency_text}</p>{histogram_svg(card)}
<h2>Findings</h2>
{_findings_html('Leaks', card['leaks'])}
{_findings_html('Residues', card['residues'])}
{_findings_html('Other failures', card['other_failures'])}
{_findings_html('Inconclusive', card['inconclusive'], open_=False)}
{'' if any_findings else '<p>No failures.</p>'}
<h2>Tenants</h2>{_tenants_html(card)}
</body></html>
"""
