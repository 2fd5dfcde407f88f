"""Reports of a run (`memlife report`): the JSON scorecard, Markdown, self-contained HTML
and JUnit XML, all drawn from the result artifact (scorecard.py). Pure. Phone numbers and
tenant ids are redacted by default: each becomes a stable label naming its pair and role
(`phone[p3a]`, `tenant[p3a]`), everywhere in the document.

A report is written piece by piece (`render_chunks`): the run's long lists (its timeline,
tenants and cases) are read as they are written, from the artifact or from the recorder
(lists.py), so a report of any number of pairs holds only what a page draws."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from memlife.recorder.artifact import (
    Artifact,
    TenantEntry,
    TimelineStep,
    as_written,
    json_chunks,
)
from memlife.reports.html import html_page
from memlife.reports.lists import ArtifactLists, Lists
from memlife.reports.scorecard import RedactedLists, Redactor, Scorecard, redact, scorecard
from memlife.reports.text import junit_chunks, markdown

FORMATS = ("json", "md", "html", "junit")
# What the JSON report writes from the lists rather than from the scorecard it holds.
_STREAMED = {"timeline", "tenants", "cases", "samples", "every_pair", "tenant_count"}


def render(
    artifact: Artifact,
    fmt: str,
    *,
    redacted: bool = True,
    web_ui: str | None = None,
    samples: Sequence[float] | None = None,
    lists: Lists | None = None,
) -> str:
    """The whole report as one string (`render_chunks`)."""
    return "".join(
        render_chunks(artifact, fmt, redacted=redacted, web_ui=web_ui, samples=samples, lists=lists)
    )


def render_chunks(
    artifact: Artifact,
    fmt: str,
    *,
    redacted: bool = True,
    web_ui: str | None = None,
    samples: Sequence[float] | None = None,
    lists: Lists | None = None,
) -> Iterator[str]:
    """The report, piece by piece. `web_ui`: the Temporal Web UI findings link to, instead
    of the run's own; `samples`: the probes' latencies, and `lists`: the tenants, timeline
    and cases, of an artifact that comes without them (recorder.report_artifact)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    if web_ui:
        artifact = artifact.model_copy(
            update={"meta": artifact.meta.model_copy(update={"web_ui": web_ui})}
        )
    if lists is None:
        artifact = redact(artifact) if redacted else artifact
        lists = ArtifactLists(artifact)
    elif redacted:
        redactor = Redactor(lists.tenants())
        artifact, lists = redact(artifact, redactor), RedactedLists(lists, redactor)
    card = scorecard(artifact, samples, lists=lists, drawn=fmt == "html")
    if fmt == "json":
        yield from json_chunks(
            card.model_dump(mode="json", exclude=_STREAMED),
            [
                ("timeline", as_written(TimelineStep, lists.timeline())),
                ("tenants", as_written(TenantEntry, lists.tenants())),
            ],
        )
        yield "\n"
    elif fmt == "junit":
        yield from junit_chunks(card, lists.cases())
    else:
        yield {"md": markdown, "html": html_page}[fmt](card)


__all__ = ["FORMATS", "Lists", "Scorecard", "redact", "render", "render_chunks", "scorecard"]
