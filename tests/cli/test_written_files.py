"""Files memlife writes piece by piece (an artifact, a report): whole or not at all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memlife.cli.render import write_chunks, write_immutable


def failing() -> Iterator[str]:
    yield '{"a": '
    raise RuntimeError("the recorder went away")


def test_an_artifact_is_written_whole_and_read_only_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "out" / "artifact.json"
    with pytest.raises(RuntimeError):
        write_immutable(target, failing())
    assert list(target.parent.iterdir()) == []  # no half file, no temporary left
    write_immutable(target, iter(['{"a": ', "1}"]))
    assert target.read_text() == '{"a": 1}\n'
    assert target.stat().st_mode & 0o222 == 0


def test_a_report_that_fails_midway_leaves_the_previous_one(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    write_chunks(target, iter(["<p>", "before</p>"]))
    with pytest.raises(RuntimeError):
        write_chunks(target, failing())
    assert target.read_text() == "<p>before</p>"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
