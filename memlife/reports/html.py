"""The HTML report: one self-contained page (no scripts, nothing fetched) with the verdict,
the rates, the timeline, the invariant × store × stage matrix, the latency histogram and
every finding."""

from __future__ import annotations

import html

from memlife.recorder.artifact import FindingEntry, Meta
from memlife.reports.charts import COLORS, histogram_svg, timeline_svg
from memlife.reports.scorecard import (
    Scorecard,
    cell_state,
    changes,
    interval,
    latency_line,
    matrix_rows,
    pair_link,
    pct,
    ratio,
    used_stages,
    verdict_word,
)


def _matrix_html(card: Scorecard) -> str:
    stages = used_stages(card)
    if not stages:
        return "<p class=muted>No checks.</p>"
    head = "".join(f"<th>{html.escape(stage)}</th>" for stage in stages)
    rows = []
    for invariant, store, cells in matrix_rows(card, stages):
        row = [f"<th>{html.escape(invariant)}</th><th>{html.escape(store)}</th>"]
        row += [
            "<td></td>" if cell is None else f'<td class="{cell_state(cell)}">{ratio(cell)}</td>'
            for cell in cells
        ]
        rows.append("<tr>" + "".join(row) + "</tr>")
    return (
        f'<table class="matrix"><thead><tr><th>invariant</th><th>store</th>{head}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _tenant_cell(meta: Meta, f: FindingEntry) -> str:
    """The pair and tenant, linked to the pair's workflow in the Temporal Web UI."""
    text = f"pair {f.pair} · {html.escape(f.tenant)}"
    link = pair_link(meta, f.pair)
    if link is None:
        return text
    return (
        f'<a href="{html.escape(link)}" title="the pair\'s workflow in the Temporal '
        f'Web UI">{text}</a>'
    )


def _findings_html(title: str, entries: list[FindingEntry], meta: Meta, open_: bool = True) -> str:
    if not entries:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(f.invariant)}</td><td>{html.escape(f.reason)}</td>"
        f"<td>{html.escape(f.stage)}</td><td>{_tenant_cell(meta, f)}</td>"
        f"<td>{html.escape(f.store)}</td>"
        f"<td><code>{html.escape(f.evidence.value or '')}</code>"
        + (
            f"<br><small>found as <code>{html.escape(f.evidence.form)}</code></small>"
            if f.evidence.form
            else ""
        )
        + "</td>"
        f"<td>{html.escape(f.evidence.detail)}</td>"
        f"<td><code class=trace>{html.escape(f.trace_id or '')}</code></td></tr>"
        for f in entries
    )
    return (
        f"<details{' open' if open_ else ''}><summary>{html.escape(title)} "
        f"({len(entries)})</summary><table class=list><thead><tr><th>check</th>"
        "<th>reason</th><th>stage</th><th>tenant</th><th>store</th><th>value</th>"
        '<th>detail</th><th title="the W3C trace id of the request behind it: search '
        'your tracing tool for it">trace</th></tr></thead><tbody>'
        f"{rows}</tbody></table></details>"
    )


def _adjudication_html(card: Scorecard) -> str:
    if not card.adjudications:
        return ""
    rates = "".join(
        f"<tr><th>{html.escape(name)} ({rate.invariant})</th>"
        f"<td>{interval(card.rates[name])}</td><td>{interval(rate)}</td></tr>"
        for name, rate in card.adjudicated_rates.items()
    )
    rows = "".join(
        f"<tr><td>{html.escape(e.case)} (pair {e.pair})</td>"
        f"<td>{html.escape(e.stage)}</td><td>{html.escape(e.reviewer)}</td>"
        f"<td>{'abstains' if e.abstains else html.escape(', '.join(e.stated) or '—')}"
        f"</td><td>{html.escape(changes(e))}</td></tr>"
        for e in card.adjudications
    )
    return (
        f"<h2>Adjudicated</h2><p class=muted>{len(card.adjudications)} reply(ies) "
        "reviewed blind (question, reply and candidate values only).</p><table><thead>"
        "<tr><th>rate</th><th>exact match</th><th>adjudicated</th></tr></thead><tbody>"
        f"{rates}</tbody></table><details><summary>Who decided what</summary><table "
        "class=list><thead><tr><th>case</th><th>stage</th><th>reviewer</th><th>stated"
        f"</th><th>checks</th></tr></thead><tbody>{rows}</tbody></table></details>"
    )


def _tenants_html(card: Scorecard) -> str:
    tenants = card.tenants
    if not tenants:
        return "<p class=muted>No tenants recorded.</p>"
    rows = "".join(
        f"<tr><td>{t.pair}</td><td>{t.role}</td><td>{html.escape(t.alias)}</td>"
        f"<td><code>{html.escape(t.phone)}</code></td>"
        f"<td><code>{html.escape(t.user_id or '')}</code></td></tr>"
        for t in tenants
    )
    shown = (
        f"{card.tenant_count}; the {len(tenants)} of the pairs drawn above, "
        "<code>--format json</code> lists all"
        if card.tenant_count > len(tenants)
        else str(len(tenants))
    )
    return (
        "<details><summary>Synthetic tenants of this run "
        f"({shown})</summary><table class=list><thead><tr><th>pair</th>"
        "<th>role</th><th>alias</th><th>phone</th><th>tenant id</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></details>"
    )


STYLE = """
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
code.trace{font-size:11px;color:#57606a;word-break:break-all}
"""


def html_page(card: Scorecard) -> str:
    meta, summary = card.meta, card.summary
    verdict = verdict_word(card)
    rate_cards = "".join(
        f"<div class=card>{html.escape(name)} <span class=muted>({rate.invariant})</span>"
        f"<b>{pct(rate.rate)}</b><span class=muted>95% CI "
        f"{pct(rate.ci95_low)}–{pct(rate.ci95_high)} · {rate.successes}/"
        f"{rate.trials} · {rate.pairs} pair(s)</span></div>"
        for name, rate in card.rates.items()
        if rate.rate is not None
    )
    invariant_rows = "".join(
        f"<tr><th>{html.escape(name)}</th><td>{t.checked}</td><td>{t.failed}</td>"
        f'<td>{t.inconclusive}</td><td class="{cell_state(t)}">{cell_state(t)}</td></tr>'
        for name, t in summary.by_invariant.items()
        if t.checked
    )
    latency = card.latency_ms
    latency_text = latency_line(latency) if latency.count else ""
    legend = "".join(
        f'<span><i style="background:{COLORS[k]}"></i>{label}</span>'
        for k, label in (
            ("pass", "all checks passed"),
            ("fail", "a check failed"),
            ("inconclusive", "inconclusive"),
            ("none", "no checks"),
        )
    )
    any_findings = any((card.leaks, card.residues, card.other_failures, card.inconclusive))
    redacted = (
        "<p class=muted>Phone numbers and tenant ids are redacted.</p>" if meta.redacted else ""
    )
    if meta.paraphrase_candidates is not None:
        redacted += (
            f"<p>{meta.paraphrase_candidates} answer(s) closer in meaning to the "
            "partner's facts than to the tenant's own were queued for review as "
            "paraphrase candidates (not judged).</p>"
        )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>memlife · {html.escape(meta.scenario_name)} · {verdict}</title>
<style>{STYLE}</style></head><body>
<h1>memlife · {html.escape(meta.scenario_name)} against
{html.escape(meta.target_name)}
<span class="badge {verdict.lower()}">{verdict}</span></h1>
<p class=meta>run <code>{html.escape(meta.run_id)}</code> ·
{meta.pairs} pair(s) · clock {html.escape(meta.clock)} ·
started {html.escape(str(meta.started_at))} · status
{html.escape(meta.status)} · memlife
{html.escape(meta.memlife_version)}</p>
<p>{summary.cases_passed}/{summary.cases} cases passed · <b>{len(card.leaks)}</b> leak(s) ·
<b>{len(card.residues)}</b> residue(s) · {len(card.other_failures)} other failure(s) ·
{len(card.inconclusive)} inconclusive</p>{redacted}
<h2>Rates</h2><div class=cards>{rate_cards or "<p class=muted>No rates.</p>"}</div>
{_adjudication_html(card)}
<h2>Timeline</h2><p class="legend">{legend}</p>
<p class=muted>Each row is a pair; each mark a step over scenario time (waits are grey bars).</p>
<div id="timeline">{timeline_svg(card)}</div>
<h2>Invariants</h2><table><thead><tr><th>invariant</th><th>checked</th><th>failed</th>
<th>inconclusive</th><th>verdict</th></tr></thead><tbody>{invariant_rows}</tbody></table>
<h2>Invariant × store × stage</h2><p class=muted>passed/checked</p>{_matrix_html(card)}
<h2>Latency</h2><p>{latency_text}</p>{histogram_svg(card)}
<h2>Findings</h2>
{_findings_html("Leaks", card.leaks, card.meta)}
{_findings_html("Residues", card.residues, card.meta)}
{_findings_html("Other failures", card.other_failures, card.meta)}
{_findings_html("Inconclusive", card.inconclusive, card.meta, open_=False)}
{"" if any_findings else "<p>No failures.</p>"}
<h2>Tenants</h2>{_tenants_html(card)}
</body></html>
"""
