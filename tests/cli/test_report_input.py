"""`memlife report FILE`: a run's artifact file read as a stream gives the very report the
whole artifact gives, signed or not; an experiment's document is read whole; a file that
is not an artifact is one line naming the file, an entry that does not fit names it."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlife.cli.report import read_artifact_file
from memlife.errors import InputError
from memlife.recorder.artifact import Artifact, ExperimentDocument
from memlife.recorder.experiment import experiment_document
from memlife.reports import FORMATS, render, render_chunks
from memlife.reports.scorecard import RATES
from memlife.reports.signing import generate_key_pair, sign

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("[" * 100_000 + "]" * 100_000, "not a JSON artifact (nested too deeply)"),
        ('{"meta": ', "not a JSON artifact (parse error: premature EOF)"),
        ('{"meta": {}, "summary": {}, "runs": [', "not a JSON artifact (Expecting value"),
        ('{"a": 1}', "not a memlife artifact (no meta/summary)"),
    ],
    # Short ids: a test's id reaches every process it starts (PYTEST_CURRENT_TEST), and
    # the 200,000 brackets of the first passed the kernel's limit for a process's
    # environment when a server was started during it ("Argument list too long": pg_ctl).
    ids=["nested-too-deeply", "premature-eof", "truncated-list", "no-meta"],
)
def test_a_file_that_is_not_an_artifact_is_one_line(
    tmp_path: Path, content: str, reason: str
) -> None:
    path = tmp_path / "r.json"
    path.write_text(content)
    with pytest.raises(InputError) as caught:
        read_artifact_file(path)
    assert str(caught.value).startswith(f"{path}: {reason}"), str(caught.value)
    assert len(str(caught.value).splitlines()) == 1


@pytest.mark.parametrize(
    "fixture", ["artifact-seed-leak.json", "artifact-nightly-2pairs-resurrection-stale.json.gz"]
)
def test_an_artifact_file_read_as_a_stream_gives_the_whole_artifacts_report(
    tmp_path: Path, fixture: str
) -> None:
    data = (FIXTURES / fixture).read_bytes()
    document = json.loads(gzip.decompress(data) if fixture.endswith(".gz") else data)
    whole = Artifact.model_validate(document)
    assert whole.observations and whole.cases and whole.timeline and whole.tenants
    plain, signed = tmp_path / "plain.json", tmp_path / "signed.json"
    plain.write_text(json.dumps(document, indent=2))
    # Signed: the block is for `memlife verify`, the report is of the artifact.
    signed.write_text(
        json.dumps(sign(document, generate_key_pair()[0], datetime(2026, 12, 4, tzinfo=UTC)))
    )
    expected = {
        (fmt, redacted): render(whole, fmt, redacted=redacted)
        for fmt in FORMATS
        for redacted in (True, False)
    }
    for path in (plain, signed):
        digest, samples, lists = read_artifact_file(path)
        assert isinstance(digest, Artifact) and lists is not None and samples is not None
        assert digest.cases == digest.observations == digest.tenants == []  # not held
        # Of each pair's tallies, those the rates are drawn from.
        assert [p.pair for p in digest.pairs] == [p.pair for p in whole.pairs]
        assert (
            set(digest.pairs[0].by_invariant)
            == set(whole.pairs[0].by_invariant) & set(RATES.values())
            != set(whole.pairs[0].by_invariant)
        )
        for (fmt, redacted), report in expected.items():
            assert (
                "".join(render_chunks(digest, fmt, samples=samples, lists=lists, redacted=redacted))
                == report
            ), (path.name, fmt)


def test_an_entry_that_does_not_fit_is_named_and_an_experiment_is_read_whole(
    tmp_path: Path,
) -> None:
    document = json.loads((FIXTURES / "artifact-seed-leak.json").read_text())
    document["cases"][3]["outcome"] = 5
    del document["observations"][1]["seq"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError) as caught:
        read_artifact_file(path)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith(f"{path}: cases.3.outcome: ") and len(lines) == 2
    assert lines[1] == f"{path}: observations.1.seq: Field required"
    experiment = json.loads((FIXTURES / "artifact-seed-leak.json").read_text())
    (tmp_path / "e.json").write_text(
        json.dumps(
            experiment_document("exp-1", [Artifact.model_validate(experiment)]).model_dump(
                mode="json"
            )
        )
    )
    read, samples, lists = read_artifact_file(tmp_path / "e.json")
    assert isinstance(read, ExperimentDocument) and read.runs[0].observations
    assert samples is None and lists is None
