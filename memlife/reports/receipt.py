"""The erasure receipt as a document a person reads (and attaches to the request)."""

from __future__ import annotations

from datetime import datetime

from memlife.rules.erasure import ErasureReceipt


def receipt_markdown(receipt: ErasureReceipt) -> str:
    """The receipt as a document a person reads (and attaches to the request)."""

    def when(moment: datetime | None) -> str:
        return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "—"

    def took(seconds: float | None) -> str:
        if seconds is None:
            return "—"
        minutes, secs = divmod(int(seconds), 60)
        hours, minutes = divmod(minutes, 60)
        return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"

    mark = {
        "pass": "PASS — every store is clean",
        "fail": "FAIL — residue remains",
        "inconclusive": "INCONCLUSIVE — not every store could be read",
        "running": "RUNNING",
    }[receipt.verdict]
    lines = [
        f"# Erasure receipt `{receipt.check_id}`",
        "",
        f"**{mark}**",
        "",
        "| | |",
        "|---|---|",
        f"| tenant | `{receipt.tenant}` |",
        f"| target | {receipt.target_name} at {receipt.target_base_url} |",
        f"| values searched | {', '.join(receipt.values) or 'none (scope reads only)'} |",
        f"| deletion requested | {when(receipt.requested_at)}"
        + (f" (answer: {receipt.request_status})" if receipt.request_status else "")
        + " |",
        f"| deletion id | {receipt.deletion_id or '—'} |",
        f"| confirmed by the target | {when(receipt.confirmed_at)} |",
        f"| check | {when(receipt.started_at)} → {when(receipt.finished_at)}, "
        f"{receipt.rounds} round(s), every {took(receipt.poll_s)}, deadline "
        f"{when(receipt.deadline_at)} |",
        "",
        "## Stores",
        "",
        "| store | retention | status | clean since | time-to-forget | rounds | found |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in receipt.stores:
        found = "<br>".join(s.found) if s.found else "—"
        lines.append(
            f"| {s.store} | {s.retention or '—'} | **{s.status}** | "
            f"{when(s.clean_since)} | {took(s.time_to_forget_s)} | {s.rounds} | "
            f"{found} |"
        )
    lines += ["", "## Queries", ""]
    for s in receipt.stores:
        for query in s.queries:
            lines.append(f"- **{s.store}** — {query}")
    if receipt.reasons:
        lines += ["", "## Why not a pass", ""] + [f"- {reason}" for reason in receipt.reasons]
    return "\n".join(lines) + "\n"
