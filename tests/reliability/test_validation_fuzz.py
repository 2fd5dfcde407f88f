"""Validation is fed generated scenario, target and matrix files, and the loader generated
YAML text, and never fails with anything but one InputError of `file: path: reason` lines
(the CLI turns that into exit 2)."""

from __future__ import annotations

import copy
import functools
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlife.bundled.reference.faults import FAULTS, RETRIEVAL_MODES
from memlife.errors import InputError
from memlife.rules.documents import load_yaml_file
from memlife.rules.matrix import parse_matrix
from memlife.rules.scenario_file import parse_scenario
from memlife.rules.target import parse_target

REPO = Path(__file__).resolve().parents[2]
SEED = yaml.safe_load((REPO / "scenarios" / "seed-six-case.yaml").read_text())
NIGHTLY = yaml.safe_load((REPO / "scenarios" / "lifecycle-nightly.yaml").read_text())
TARGET = yaml.safe_load((REPO / "scenarios" / "targets" / "reference.yaml").read_text())
MATRIX_FILE = REPO / "scenarios" / "experiments" / "retrieval-ablation.yaml"
MATRIX = yaml.safe_load(MATRIX_FILE.read_text())
# Target files named in a matrix are looked up beside it: parsed as if it were that file.
parse_matrix_file = functools.partial(parse_matrix, faults=FAULTS, retrieval_modes=RETRIEVAL_MODES)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True),
    st.text(max_size=30),
    st.sampled_from(
        [
            "0ms",
            "-1s",
            "3d",
            "150ms",
            "1h30m",
            "abc",
            "{value}",
            "",
            "all",
            "write",
            "probe",
            "recall",
            "stale",
            "a",
            "b",
            "employer",
            "pet",
        ]
    ),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, child in node.items():
            found += paths(child, (*prefix, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found += paths(child, (*prefix, index))
    return found


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """A valid document with a few of its nodes replaced, deleted or extended."""
    document = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        locations = paths(document)
        location = draw(st.sampled_from(locations))
        if not location:
            return draw(values)
        parent = document
        for part in location[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            parent[location[-1]] = draw(values)
        elif action == "delete":
            del parent[location[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=10))] = draw(values)
        if not isinstance(document, dict):
            return document
    return document


def check(parse: Any, document: Any) -> None:
    try:
        parse(document, "f.yaml")
    except InputError as error:
        assert error.problems
        for problem in error.problems:
            text = str(problem)
            assert text.startswith("f.yaml: ") and "\n" not in text, text


fuzz = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fuzz
@given(mutated(SEED))
def test_mutated_seed_scenarios(document: Any) -> None:
    check(parse_scenario, document)


@fuzz
@given(mutated(NIGHTLY))
def test_mutated_nightly_scenarios(document: Any) -> None:
    check(parse_scenario, document)


@fuzz
@given(mutated(TARGET))
def test_mutated_target_files(document: Any) -> None:
    check(parse_target, document)


@fuzz
@given(mutated(MATRIX))
def test_mutated_matrix_files(document: Any) -> None:
    check(parse_matrix_file, document)


@settings(max_examples=200, deadline=None)
@given(values)
def test_arbitrary_documents(document: Any) -> None:
    check(parse_scenario, document)
    check(parse_target, document)
    check(parse_matrix_file, document)


# YAML text as a careless or hostile hand writes it: indicators, tags, anchors, aliases,
# flow collections, control characters, among plain words.
yaml_pieces = st.sampled_from(
    [
        "a",
        "name",
        ":",
        ": ",
        "- ",
        "\n",
        "  ",
        "[",
        "]",
        "{",
        "}",
        ",",
        "&x ",
        "*x",
        "!!set ",
        "!!python/object:os.system ",
        "!tag ",
        "!!binary ",
        "'",
        '"',
        "#",
        "|",
        ">",
        "---",
        "...",
        "? ",
        "\t",
        "\r",
        "\x00",
        "\x85",
        "\ufeff",
        "%YAML 1.1\n",
        "<<: *x",
        "~",
        "1e9",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(yaml_pieces, max_size=40).map("".join))
def test_the_loader_reports_every_broken_text_as_one_line(tmp_path_factory: Any, text: str) -> None:
    path = tmp_path_factory.mktemp("yaml") / "f.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        document = load_yaml_file(path)
    except InputError as error:
        for problem in error.problems:
            assert str(problem).startswith(f"{path}: ") and "\n" not in str(problem)
        return
    check(parse_scenario, document)


raw_files = st.binary(max_size=200) | st.text(max_size=200).map(str.encode)


# A few commands, each given several files: one process start costs more than the checks.
@settings(max_examples=4, deadline=None)
@given(st.lists(raw_files, min_size=4, max_size=6))
def test_cli_validate_never_shows_a_traceback(tmp_path_factory: Any, raws: list[bytes]) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    files = [folder / f"s{index}.yaml" for index in range(len(raws))]
    for path, raw in zip(files, raws, strict=True):
        path.write_bytes(raw)
    result = subprocess.run(
        [sys.executable, "-m", "memlife", "validate", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=False,
    )
    assert result.returncode in (0, 2), result.stderr
    assert "Traceback" not in result.stderr
    # Each problem is one line naming its file; exit 2 exactly when there is one.
    lines = result.stderr.splitlines()
    assert (result.returncode == 2) == bool(lines), result.stderr
    assert all(any(line.startswith(f"{path}: ") for path in files) for line in lines), result.stderr
