"""bench/workdir.py: a finished bench removes its working directory and says how much."""

from __future__ import annotations

from pathlib import Path

from bench.workdir import remove_work_directory


def test_the_working_directory_is_removed_with_its_size_said(tmp_path: Path) -> None:
    work = tmp_path / "memlife-bench-x"
    (work / "temporal").mkdir(parents=True)
    (work / "memlife-100-1.db").write_bytes(b"\0" * 3 * 2**20)
    (work / "temporal" / "temporal.db").write_bytes(b"\0" * 2**20)
    said = remove_work_directory(work)
    assert not work.exists()
    assert said == f"removed the working directory {work} (4 MB)"
