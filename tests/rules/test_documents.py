"""memlife/rules/documents.py: the YAML loader, parsed by libyaml where PyYAML has it, read
again in Python when a document is refused, so that an error is always worded alike."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from memlife.errors import InputError
from memlife.rules import documents
from memlife.rules.documents import load_yaml_file

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted(
    path
    for folder in ("scenarios", "deploy", "docs", "bench", "tests")
    for pattern in ("*.yaml", "*.yml")
    for path in (REPO / folder).rglob(pattern)
    if ".venv" not in path.parts
)


def test_this_pyyaml_parses_with_libyaml() -> None:
    # PyPI's wheels for these machines include it; the fast path is what runs here.
    assert [loader.__name__ for loader in documents._LOADERS] == [
        "_FastStrictLoader",
        "_StrictLoader",
    ]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: str(path.relative_to(REPO)))
def test_both_parsers_read_every_shipped_yaml_file_alike(path: Path) -> None:
    text = path.read_text()
    values = []
    for loader in documents._LOADERS:
        try:
            values.append(yaml.load(text, Loader=loader))  # noqa: S506 - safe constructor
        except yaml.YAMLError as error:
            values.append(type(error).__name__)
    assert values[0] == values[1]


@pytest.mark.parametrize(
    ("text", "pyyaml_words", "libyaml_words"),
    [
        ("a: b: c\n", "mapping values are not allowed here", "not allowed in this context"),
        ("name: [unclosed", "expected ',' or ']', but got '<stream end>'", "did not find"),
        ("\tname: x\n", "found character '\\t' that cannot start", "found character that"),
    ],
)
def test_a_refused_document_is_reported_in_pyyaml_s_words(
    tmp_path: Path, text: str, pyyaml_words: str, libyaml_words: str
) -> None:
    fast = documents._LOADERS[0]
    with pytest.raises(yaml.YAMLError, match=libyaml_words):
        yaml.load(text, Loader=fast)  # noqa: S506 - safe constructor
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_yaml_file(path)
    assert pyyaml_words in str(caught.value)
    assert libyaml_words not in str(caught.value)


def test_the_strict_composer_refuses_on_the_fast_path_too() -> None:
    for loader in documents._LOADERS:
        with pytest.raises(yaml.composer.ComposerError, match="is not allowed"):
            yaml.load("a: !!binary aGVsbG8=\n", Loader=loader)  # noqa: S506
        with pytest.raises(yaml.constructor.ConstructorError, match="duplicate key 'a'"):
            yaml.load("a: 1\na: 2\n", Loader=loader)  # noqa: S506
