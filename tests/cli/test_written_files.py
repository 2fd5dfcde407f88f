"""Files memlife writes piece by piece (an artifact, a report): whole or not at all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memlife.cli.render import file_size, write_chunks, write_immutable


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


def test_a_long_write_says_how_far_it_got_and_what_it_wrote(tmp_path: Path) -> None:
    heard: list[str] = []
    target = tmp_path / "artifact.json"
    written = write_immutable(target, iter(["ñ" * 1000, "a" * 5000]), progress=heard.append)
    assert written == target.stat().st_size == 2000 + 5000 + 1  # bytes, not characters
    assert heard == []  # written in less than the interval: nothing to say

    heard.clear()
    write_chunks(
        tmp_path / "report.html", iter(["x" * 10, "y" * 10, "z"]), progress=heard.append, every_s=0
    )
    assert len(heard) == 3
    assert all(line.startswith(f"writing {tmp_path / 'report.html'}: ") for line in heard)
    assert all(line.endswith(" so far (0 s)") for line in heard)


def test_file_sizes_read_as_a_person_would_say_them() -> None:
    assert file_size(812) == "812 bytes"
    assert file_size(12 * 1024) == "12.0 KB"
    assert file_size(int(215.3 * 2**20)) == "215.3 MB"
    assert file_size(int(2.7 * 2**30)) == "2.7 GB"
