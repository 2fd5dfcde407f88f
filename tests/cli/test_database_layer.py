"""Commands that record nothing leave the recorder's database layer (SQLModel, SQLAlchemy)
unloaded: it is a third of a second of a command's start (memlife/recorder/__init__.py).
Each command runs in an interpreter of its own, as a user's does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# Runs the command as `memlife ARGS` does, then says what it loaded.
RUN_AND_LIST = """
import json, sys
from memlife.cli import main
sys.argv = ["memlife", *json.loads(sys.argv[1])]
try:
    code = main()
except SystemExit as exit:
    code = exit.code
loaded = sorted({name.split(".")[0] for name in sys.modules} & {"sqlalchemy", "sqlmodel"})
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


def _run(args: list[str]) -> tuple[dict[str, object], str]:
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return json.loads(done.stderr.strip().splitlines()[-1]), done.stdout


def test_a_report_from_an_artifact_file_does_not_load_it() -> None:
    outcome, report = _run(["report", str(FIXTURES / "artifact-seed-leak.json")])
    assert outcome == {"code": 0, "loaded": []}
    assert "FAIL" in report


def test_a_target_check_does_not_load_it(tmp_path: Path, unused_tcp_port: int) -> None:
    target = tmp_path / "target.yaml"
    reference = Path(__file__).resolve().parents[2] / "scenarios" / "targets" / "reference.yaml"
    text = reference.read_text().replace("127.0.0.1:8080", f"127.0.0.1:{unused_tcp_port}")
    target.write_text(text)
    outcome, _ = _run(["target", "check", str(target)])
    # Nothing listens there: the check ends at the target's address, past what it sets up.
    assert outcome == {"code": 2, "loaded": []}


def test_a_report_from_the_recorder_loads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the checks above look for is there when a command does use the layer."""
    monkeypatch.setenv("MEMLIFE_DB_URL", f"sqlite:///{tmp_path / 'empty.db'}")
    outcome, _ = _run(["report", "latest"])  # no runs recorded: exit 2
    assert outcome == {"code": 2, "loaded": ["sqlalchemy", "sqlmodel"]}
