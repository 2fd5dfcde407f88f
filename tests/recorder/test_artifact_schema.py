"""The artifact's JSON Schema, as published in docs/, is the one the models give: a change
to the artifact changes the published schema in the same commit."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import jsonschema

from memlife.recorder.artifact import schema

REPO = Path(__file__).resolve().parents[2]
PUBLISHED = REPO / "docs" / "artifact.schema.json"


def test_the_published_schema_is_the_models_schema() -> None:
    assert json.loads(PUBLISHED.read_text()) == schema(), (
        "regenerate it: python -m memlife.recorder.artifact > docs/artifact.schema.json"
    )


def test_recorded_artifacts_of_earlier_versions_validate_and_broken_ones_do_not() -> None:
    validator = jsonschema.Draft202012Validator(schema())
    fixtures = REPO / "tests" / "fixtures"
    nightly = json.loads(
        gzip.decompress(
            (fixtures / "artifact-nightly-2pairs-resurrection-stale.json.gz").read_bytes()
        )
    )
    validator.validate(nightly)
    validator.validate(json.loads((fixtures / "artifact-seed-leak.json").read_text()))
    # Signed, an artifact has one more field, the signature block.
    validator.validate(json.loads((fixtures / "signed-format-1" / "artifact.json").read_text()))
    broken = {**nightly, "summary": {**nightly["summary"], "cases": "many"}}
    assert [e.path for e in validator.iter_errors(broken)]
