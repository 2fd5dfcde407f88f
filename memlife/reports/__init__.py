"""Reports of a run (`memlife report`): the JSON scorecard, Markdown, self-contained HTML
and JUnit XML, all drawn from the result artifact (scorecard.py). Pure. Phone numbers and
tenant ids are redacted by default: each becomes a stable label naming its pair and role
(`phone[p3a]`, `tenant[p3a]`), everywhere in the document."""

from __future__ import annotations

import json

from memlife.recorder.artifact import Artifact
from memlife.reports.html import html_page
from memlife.reports.scorecard import Scorecard, redact, scorecard
from memlife.reports.text import junit, markdown

FORMATS = ("json", "md", "html", "junit")


def render(artifact: Artifact, fmt: str, *, redacted: bool = True,
           web_ui: str | None = None, samples: list[float] | None = None) -> str:
    """`web_ui`: the Temporal Web UI findings link to, instead of the run's own;
    `samples`: the probes' latencies of an artifact without observations."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    if web_ui:
        artifact = artifact.model_copy(update={
            "meta": artifact.meta.model_copy(update={"web_ui": web_ui})})
    card = scorecard(redact(artifact) if redacted else artifact, samples)
    if fmt == "json":
        shown = card.model_dump(mode="json", exclude={"cases", "samples"})
        return json.dumps(shown, indent=2, ensure_ascii=False) + "\n"
    return {"md": markdown, "html": html_page, "junit": junit}[fmt](card)


__all__ = ["FORMATS", "Scorecard", "redact", "render", "scorecard"]
