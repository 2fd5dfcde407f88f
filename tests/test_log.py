from __future__ import annotations

from temporalio import activity
from temporalio.testing import ActivityEnvironment

from memlife import log


def test_workflow_ids_name_the_run_pair_and_check() -> None:
    assert log.ids_from_workflow_id("memlife/lifecycle-nightly/20261130T0200Z-ab12cd/pair-7") == {
        "scenario": "lifecycle-nightly", "run": "20261130T0200Z-ab12cd", "pair": 7}
    assert log.ids_from_workflow_id("memlife/seed-six-case/r1") == {
        "scenario": "seed-six-case", "run": "r1"}
    assert log.ids_from_workflow_id("memlife/deletion-check/gdpr-1") == {"check": "gdpr-1"}
    assert log.ids_from_workflow_id("someone-elses-workflow") == {}


async def test_inside_an_activity_every_line_carries_its_context() -> None:
    @activity.defn(name="memlife.example")
    async def example() -> dict[str, object]:
        return log.add_activity_context(None, "info", {"event": "hello"})

    environment = ActivityEnvironment()
    environment.info = environment.info.__class__(**{
        **environment.info.__dict__,
        "workflow_id": "memlife/lifecycle-nightly/r9/pair-3", "activity_type": "memlife.example"})
    event = await environment.run(example)
    assert (event["run"], event["pair"], event["activity"]) == ("r9", 3, "memlife.example")
    assert log.add_activity_context(None, "info", {"event": "x"}) == {"event": "x"}


def test_json_lines_when_not_at_a_terminal(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("MEMLIFE_LOG_FORMAT", raising=False)
    assert log.log_format() == "json"  # pytest captures stderr: not a terminal
    monkeypatch.setenv("MEMLIFE_LOG_FORMAT", "console")
    assert log.log_format() == "console"


def test_lines_go_to_stderr_as_it_is_now_not_as_it_was(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Configured while something else held stderr (pytest's capture of an earlier test),
    logging still writes, to the stderr of now."""
    import io
    import logging
    import sys

    import structlog

    monkeypatch.setenv("MEMLIFE_LOG_FORMAT", "json")
    earlier, now = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", earlier)
    log.configure(level="INFO")
    try:
        earlier.close()
        monkeypatch.setattr(sys, "stderr", now)
        structlog.get_logger("memlife.test").info("still heard", where="now")
        logging.getLogger("someone.else").error("also heard")
    finally:
        log.configure(level="WARNING", sdk_level="ERROR")  # what a command sets up
    assert '"event": "still heard"' in now.getvalue() and "also heard" in now.getvalue()
