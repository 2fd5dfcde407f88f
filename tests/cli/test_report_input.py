"""`memlife report FILE` given a file that is not an artifact: one line naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlife.cli.report import read_artifact_file
from memlife.errors import InputError


@pytest.mark.parametrize(("content", "reason"), [
    ("[" * 100_000 + "]" * 100_000, "not a JSON artifact (nested too deeply)"),
    ('{"meta": ', "not a JSON artifact (Expecting value"),
    ('{"a": 1}', "not a memlife artifact (no meta/summary)"),
])
def test_a_file_that_is_not_an_artifact_is_one_line(tmp_path: Path, content: str,
                                                    reason: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(content)
    with pytest.raises(InputError) as caught:
        read_artifact_file(path)
    assert str(caught.value).startswith(f"{path}: {reason}"), str(caught.value)
    assert len(str(caught.value).splitlines()) == 1
