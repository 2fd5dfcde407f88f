"""The two drawings of the HTML report, as inline SVG: each pair's steps over scenario
time, coloured by verdict; and the probe latencies against the budget."""

from __future__ import annotations

import html
import math
from collections.abc import Iterator
from datetime import datetime

from memlife.recorder.artifact import TimelineStep
from memlife.reports.lists import MAX_DRAWN_PAIRS
from memlife.reports.scorecard import Scorecard

COLORS = {"pass": "#2e9d5b", "fail": "#d64545", "inconclusive": "#e0a526", "none": "#aab4c3"}


def _parse(moment: str | None) -> datetime | None:
    return datetime.fromisoformat(moment.replace("Z", "+00:00")) if moment else None


_TICKS = [
    1,
    5,
    10,
    30,
    60,
    300,
    900,
    1800,
    3600,
    3 * 3600,
    6 * 3600,
    12 * 3600,
    86400,
    2 * 86400,
    7 * 86400,
]


def _tick_label(seconds: float) -> str:
    if seconds >= 86400:
        days, rest = divmod(int(seconds), 86400)
        return f"+{days}d" + (f" {rest // 3600}h" if rest >= 3600 else "")
    if seconds >= 3600:
        return f"+{seconds / 3600:g}h"
    if seconds >= 60:
        return f"+{seconds / 60:g}m"
    return f"+{seconds:g}s"


def _step_state(step: TimelineStep) -> str:
    outcomes = step.outcomes
    return (
        "fail"
        if outcomes.get("fail")
        else "inconclusive"
        if outcomes.get("inconclusive")
        else "pass"
        if outcomes.get("pass")
        else "none"
    )


def timeline_svg(card: Scorecard) -> str:
    """One lane per pair drawn (lists.py), below one that sums every pair when a run has
    more pairs than a page draws."""
    steps = [
        s for s in (*card.every_pair, *card.timeline) if s.scenario_started and s.scenario_finished
    ]
    if not steps:
        return "<p class=muted>This artifact carries no timeline.</p>"
    origin = min(_parse(s.scenario_started) for s in steps)  # type: ignore[type-var]
    end = max(_parse(s.scenario_finished) for s in steps)  # type: ignore[type-var]
    assert origin is not None and end is not None
    span = max((end - origin).total_seconds(), 1.0)
    shown = sorted({s.pair for s in steps})
    aliases: dict[int, list[str]] = {-1: [f"all {card.meta.pairs} pairs"]}
    for tenant in card.tenants:
        aliases.setdefault(tenant.pair, []).append(tenant.alias)
    left, width, row, top = 150, 1000, 20, 28
    plot = width - left - 10
    height = top + row * len(shown) + 10
    tick = next((t for t in _TICKS if span / t <= 10), _TICKS[-1])
    parts = [
        f'<svg class="timeline" viewBox="0 0 {width} {height}" width="100%" '
        f'role="img" aria-label="per-pair timeline" xmlns="http://www.w3.org/2000/svg">'
    ]
    for k in range(int(span // tick) + 1):
        x = left + plot * (k * tick) / span
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{height - 6}" class="grid"/>'
        )
        parts.append(
            f'<text x="{x:.1f}" y="{top - 10}" class="tick">{_tick_label(k * tick)}</text>'
        )
    for position, pair in enumerate(shown):
        y = top + row * position
        label = (
            aliases[pair][0] if pair < 0 else f"pair {pair}: " + " / ".join(aliases.get(pair, []))
        )
        parts.append(f'<text x="4" y="{y + 14}" class="label">{html.escape(label)}</text>')
        parts.append(
            f'<line x1="{left}" y1="{y + 10}" x2="{left + plot}" y2="{y + 10}" class="lane"/>'
        )
        # Waits first, then by severity: a failing step is never hidden under a passing
        # one at the same scenario time.
        severity = {"wait": 0, "none": 1, "pass": 2, "inconclusive": 3, "fail": 4}
        for step in sorted(
            (s for s in steps if s.pair == pair),
            key=lambda s: severity["wait" if s.kind == "wait" else _step_state(s)],
        ):
            start = (_parse(step.scenario_started) - origin).total_seconds()  # type: ignore[operator]
            finish = (_parse(step.scenario_finished) - origin).total_seconds()  # type: ignore[operator]
            state = _step_state(step)
            x = left + plot * start / span
            w = max(plot * (finish - start) / span, 5.0)
            if step.kind == "wait":
                parts.append(
                    f'<rect x="{x:.1f}" y="{y + 8}" width="{w:.1f}" height="4" '
                    f'class="wait"><title>{html.escape(step.stage)} (wait)</title>'
                    "</rect>"
                )
                continue
            counts = ", ".join(f"{n} {k}" for k, n in step.outcomes.items() if n) or "no checks"
            who = "all pairs" if pair < 0 else f"pair {pair}"
            title = (
                f"{who} · step {step.step} {step.kind} · "
                f"{step.stage} · {_tick_label(round(start))} · {counts}"
            )
            parts.append(
                f'<rect x="{x:.1f}" y="{y + 2}" width="{w:.1f}" height="16" rx="3" '
                f'fill="{COLORS[state]}" class="step {state}">'
                f"<title>{html.escape(title)}</title></rect>"
            )
    parts.append("</svg>")
    note = ""
    if card.every_pair:
        flagged = len(
            {
                f.pair
                for f in (*card.leaks, *card.residues, *card.other_failures, *card.inconclusive)
            }
        )
        note = (
            f"<p class=muted>{card.meta.pairs} pairs: the first lane sums them all, step "
            f"by step. Below it, {len(shown) - 1} of them one by one: every pair with a "
            f"finding ({flagged}) up to {MAX_DRAWN_PAIRS}, then the first others. "
            "<code>memlife report --format json</code> lists every step of every pair."
            "</p>"
        )
    return "".join(parts) + note


def histogram_svg(card: Scorecard, bins: int = 30) -> str:
    """Probe latencies on a logarithmic axis that always reaches the budget: fast targets
    answer in a few ms against a budget of hundreds, and both must be readable. The budget
    is a red line; bars past it are red too."""

    # Read in passes, never copied: 600,000 latencies at 10,000 pairs are 4.8 MB as the
    # samples' array and 19 MB as a list of Python floats.
    def positive() -> Iterator[float]:
        return (value for value in card.samples if value > 0)

    smallest = min(positive(), default=None)
    if smallest is None:
        return "<p class=muted>No probe latencies.</p>"
    budget = card.latency_ms.target_ms or None
    low = 10 ** math.floor(math.log10(smallest))
    high = 10 ** math.ceil(math.log10(max(max(positive()), budget or 0) * 1.05))
    span = math.log10(high) - math.log10(low)

    def position(value: float) -> float:  # 0 … 1 along the axis
        return (math.log10(value) - math.log10(low)) / span

    counts = [0] * bins
    for value in positive():
        counts[min(int(position(value) * bins), bins - 1)] += 1
    width, height, left, right, top, bottom = 640, 240, 44, 24, 26, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max(counts)
    bar = plot_w / bins
    parts = [
        f'<svg class="histogram" viewBox="0 0 {width} {height}" width="{width}" '
        'role="img" aria-label="probe latency histogram, log scale, against the budget" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        'class="lane"/>',
    ]
    for index, count in enumerate(counts):
        if not count:
            continue
        h = max(plot_h * count / peak, 1.5)
        x = left + bar * index
        edge_low = 10 ** (math.log10(low) + span * index / bins)
        edge_high = 10 ** (math.log10(low) + span * (index + 1) / bins)
        over = budget is not None and edge_low >= budget
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{top + plot_h - h:.1f}" width="{bar - 2:.1f}" '
            f'height="{h:.1f}" class="bar{" over" if over else ""}"><title>'
            f"{edge_low:.3g}–{edge_high:.3g} ms: {count} probe(s)</title></rect>"
        )
    decade = low
    while decade <= high * 1.0001:
        x = left + plot_w * position(decade)
        anchor = "start" if decade == low else "end" if decade >= high else "middle"
        parts.append(
            f'<line x1="{x:.1f}" y1="{top + plot_h}" x2="{x:.1f}" '
            f'y2="{top + plot_h + 4}" class="lane"/><text x="{x:.1f}" '
            f'y="{top + plot_h + 17}" text-anchor="{anchor}" class="tick">'
            f"{decade:g} ms</text>"
        )
        decade *= 10
    parts.append(
        f'<text x="{left - 6}" y="{top + 8}" text-anchor="end" class="tick">'
        f'{peak}</text><text x="{left - 6}" y="{top + plot_h}" text-anchor="end" '
        'class="tick">0</text>'
    )
    if budget is not None:
        x = left + plot_w * position(budget)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{top + plot_h}" '
            f'class="budget"/><text x="{x - 4:.1f}" y="{top - 10}" text-anchor="end" '
            f'class="tick budget-label">budget {budget:g} ms</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle" '
        'class="tick">probe latency (log scale)</text></svg>'
    )
    return "".join(parts)
