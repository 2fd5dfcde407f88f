from __future__ import annotations

from temporalio import activity
from temporalio.testing import ActivityEnvironment

from memlife import log


def test_workflow_ids_name_the_run_pair_and_check() -> None:
    assert log.ids_from_workflow_id("memlife/lifecycle-nightly/20261130T0200Z-ab12cd/pair-7") == {
        "scenario": "lifecycle-nightly",
        "run": "20261130T0200Z-ab12cd",
        "pair": 7,
    }
    assert log.ids_from_workflow_id("memlife/seed-six-case/r1") == {
        "scenario": "seed-six-case",
        "run": "r1",
    }
    assert log.ids_from_workflow_id("memlife/deletion-check/gdpr-1") == {"check": "gdpr-1"}
    assert log.ids_from_workflow_id("someone-elses-workflow") == {}


async def test_inside_an_activity_every_line_carries_its_context() -> None:
    @activity.defn(name="memlife.example")
    async def example() -> dict[str, object]:
        return log.add_activity_context(None, "info", {"event": "hello"})

    environment = ActivityEnvironment()
    environment.info = environment.info.__class__(
        **{
            **environment.info.__dict__,
            "workflow_id": "memlife/lifecycle-nightly/r9/pair-3",
            "activity_type": "memlife.example",
        }
    )
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


def test_a_failure_logged_inside_the_workflow_sandbox_is_one_json_line(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The SDK logs a failed workflow activation, with its exception, from the workflow
    sandbox, which refuses most imports. Rendering the line must import nothing (structlog's
    default JSON fallback did, and the line explaining the failure was lost) and keep the
    traceback as text."""
    import builtins
    import io
    import json
    import logging
    import sys

    monkeypatch.setenv("MEMLIFE_LOG_FORMAT", "json")
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    log.configure(level="INFO", sdk_level="INFO")
    real_import = builtins.__import__

    def sandboxed(name: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name.startswith("structlog"):  # what the sandbox refused (it re-imports them)
            raise ImportError(f"the sandbox refuses {name}")
        return real_import(name, *args, **kwargs)

    try:
        try:
            raise AttributeError("'StepRecord' object has no attribute 'x'")
        except AttributeError:
            monkeypatch.setattr(builtins, "__import__", sandboxed)
            logging.getLogger("temporalio.workflow").warning(
                "Failed activation on workflow %s",
                "Cohort",
                exc_info=True,
                extra={"unserializable": object()},
            )
            monkeypatch.setattr(builtins, "__import__", real_import)
    finally:
        monkeypatch.setattr(builtins, "__import__", real_import)
        log.configure(level="WARNING", sdk_level="ERROR")
    [line] = out.getvalue().splitlines()
    event = json.loads(line)
    assert event["event"] == "Failed activation on workflow Cohort"
    assert "AttributeError: 'StepRecord' object has no attribute 'x'" in event["exception"]
