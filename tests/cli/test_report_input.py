"""`memlife report FILE` given a file that is not an artifact: one line naming the file;
given a signed artifact, the artifact's report."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlife.cli.report import read_artifact_file
from memlife.errors import InputError
from memlife.recorder.artifact import Artifact
from memlife.reports.signing import generate_key_pair, sign

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


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


def test_a_signed_artifact_is_reported_as_the_artifact(tmp_path: Path) -> None:
    document = json.loads((FIXTURES / "artifact-seed-leak.json").read_text())
    signed = tmp_path / "signed.json"
    signed.write_text(json.dumps(sign(document, generate_key_pair()[0],
                                      datetime(2026, 12, 4, tzinfo=UTC))))
    assert read_artifact_file(signed) == Artifact.model_validate(document)
