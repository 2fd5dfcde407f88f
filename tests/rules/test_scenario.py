"""Scenario validation: every problem as `file: field.path: reason`."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from memlife.errors import InputError
from memlife.rules.documents import MAX_FILE_BYTES
from memlife.rules.scenario_file import load_scenario, parse_scenario

REPO = Path(__file__).resolve().parents[2]


def seed_data() -> dict[str, Any]:
    return yaml.safe_load((REPO / "scenarios" / "seed-six-case.yaml").read_text())


def problems_of(data: Any) -> list[str]:
    with pytest.raises(InputError) as caught:
        parse_scenario(data, "s.yaml")
    return [str(p) for p in caught.value.problems]


def test_seed_scenario_is_valid_and_as_the_seed_describes() -> None:
    scenario = load_scenario(REPO / "scenarios" / "seed-six-case.yaml")
    pair = scenario.pairs[0]
    assert (pair.a.name, pair.b.name) == ("Ana", "Bruno")
    assert scenario.language == "es"
    assert set(scenario.domains) == {"color", "allergy", "employer"}
    assert [s.step for s in scenario.timeline] == ["write", "wait", "probe"]
    assert scenario.timeline[1].duration.total_seconds() == 0.150
    assert scenario.latency_budget.total_seconds() == 0.7
    questions = sum(len(d.templates["es"].question) for d in scenario.domains.values())
    assert questions * 2 == 6  # six cases


def test_unknown_field_names_its_path() -> None:
    data = seed_data()
    data["pairs"][0]["a"]["nickname"] = "Anita"
    assert problems_of(data) == ["s.yaml: pairs.0.a.nickname: unknown field"]


def test_wrong_type_and_zero_duration() -> None:
    data = seed_data()
    data["timeline"][1]["duration"] = "0ms"
    data["pairs"] = "two"
    found = problems_of(data)
    assert any(
        p.startswith("s.yaml: timeline.1.duration:") and "greater than zero" in p for p in found
    )
    assert any(p.startswith("s.yaml: pairs:") for p in found)


def test_bad_duration_says_how_to_write_one() -> None:
    data = seed_data()
    data["timeline"][1]["duration"] = "soon"
    (problem,) = problems_of(data)
    assert problem.startswith("s.yaml: timeline.1.duration: 'soon' is not a duration")


def test_unknown_step_kind() -> None:
    data = seed_data()
    data["timeline"].append({"step": "teleport"})
    (problem,) = problems_of(data)
    assert problem.startswith("s.yaml: timeline.3:") and "unknown step kind" in problem


def test_non_exclusive_pair_is_rejected_after_normalization() -> None:
    data = seed_data()
    data["pairs"][0]["b"]["facts"]["color"] = "AZÚL  oscuro"  # contains ana's 'azul'
    (problem,) = problems_of(data)
    assert problem.startswith(
        "s.yaml: pairs.0.b.facts.color: value 'AZÚL  oscuro' is not "
        "mutually exclusive with tenant a's color value 'azul'"
    )
    assert "a leak could not be seen" in problem


def test_non_exclusive_across_domains_is_rejected_too() -> None:
    data = seed_data()
    data["pairs"][0]["b"]["facts"]["employer"] = "Penicilina S.A."
    (problem,) = problems_of(data)
    assert "pairs.0.b.facts.employer" in problem and "allergy value 'penicilina'" in problem


def test_duplicate_tenant_alias() -> None:
    data = seed_data()
    data["pairs"].append(copy.deepcopy(data["pairs"][0]))
    found = problems_of(data)
    assert "s.yaml: pairs.1.a.alias: duplicate tenant alias 'ana' (also at pairs.0.a)" in found
    assert "s.yaml: pairs.1.b.alias: duplicate tenant alias 'bruno' (also at pairs.0.b)" in found


def test_unknown_domain_and_missing_language() -> None:
    data = seed_data()
    data["pairs"][0]["a"]["facts"]["pet"] = "gato"
    data["pairs"][0]["b"]["facts"]["pet"] = "perro"
    data["pairs"][0]["b"]["language"] = "en"
    found = problems_of(data)
    assert any(p.startswith("s.yaml: pairs.0.a.facts.pet: unknown domain 'pet'") for p in found)
    assert any(
        p.startswith(
            "s.yaml: pairs.0.b.facts.color: domain 'color' has no templates in language 'en'"
        )
        for p in found
    )


def test_a_key_with_a_line_break_is_named_on_one_line() -> None:
    # Found by tests/reliability/test_validation_fuzz.py: the key is the file's own text.
    data = seed_data()
    data["pairs"][0]["a"]["facts"]["\n"] = "gato"
    found = problems_of(data)
    assert (
        "s.yaml: pairs.0.a.facts.\\n: unknown domain '\\n'; "
        "declared domains: color, allergy, employer"
    ) in found
    assert all("\n" not in p for p in found)


def test_template_placeholders_are_checked() -> None:
    data = seed_data()
    data["domains"]["color"]["templates"]["es"]["statement"] = ["Mi color favorito es {valor}."]
    data["domains"]["color"]["templates"]["es"]["question"] = ["¿Es {value}?"]
    found = problems_of(data)
    assert any(
        p.startswith(
            "s.yaml: domains.color.templates.es.statement.0: must contain the placeholder {value}"
        )
        for p in found
    )
    assert any(p.startswith("s.yaml: domains.color.templates.es.question.0:") for p in found)


def test_value_inside_a_question_is_rejected() -> None:
    data = seed_data()
    data["domains"]["color"]["templates"]["es"]["question"] = ["¿Mi color es azul o rojo?"]
    found = problems_of(data)
    assert any("pairs.0.a.facts.color: value 'azul' appears in the question" in p for p in found)


def test_a_facts_own_values_must_differ_after_normalization() -> None:
    data = seed_data()
    # "Azúl marino" folds to "azul marino", which holds the old value "azul".
    data["pairs"][0]["a"]["facts"]["color"] = {"value": "azul", "updates": ["Azúl marino"]}
    data["pairs"][0]["b"]["facts"]["color"] = {"value": "rojo", "any_of": ["  "]}
    found = problems_of(data)
    assert any(
        p.startswith("s.yaml: pairs.0.a.facts.color: 'azul' and 'Azúl marino' overlap after")
        for p in found
    ), found
    assert "s.yaml: pairs.0.b.facts.color: value is empty after normalization" in found


def test_timeline_must_probe_something() -> None:
    data = seed_data()
    data["timeline"] = [{"step": "write"}]
    assert problems_of(data) == [
        "s.yaml: timeline: has no probe or inspect step: nothing would be checked"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: [unclosed", "s.yaml: line 1, column"),
        ("name: a\nname: b\n", "duplicate key 'name'"),
        ("", "expected a mapping at the top level, got empty"),
        ("- a\n- b\n", "expected a mapping at the top level, got list"),
        (
            "a: " + "[" * 50_000 + "]" * 50_000,
            "s.yaml: line 1, column 67: invalid YAML: nested deeper than 64 levels",
        ),
        (
            "name: !!python/object/apply:os.system ['true']\n",
            "s.yaml: line 1, column 7: invalid YAML: the YAML tag "
            "'tag:yaml.org,2002:python/object/apply:os.system' is not allowed",
        ),
        ("name: !!binary aGVsbG8=\n", "the YAML tag 'tag:yaml.org,2002:binary' is not allowed"),
        (
            "? ? \n",
            "s.yaml: line 1, column 3: invalid YAML: a key must be plain text, not a dict (line 1)",
        ),
        # A "billion laughs": nine levels of ten aliases each.
        (
            "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 10)
            ),
            "invalid YAML: its aliases expand to more than 1,000,000 values",
        ),
    ],
)
def test_yaml_level_problems(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    assert expected.replace("s.yaml", str(path)) in str(caught.value)


def test_a_file_over_the_cap_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    assert str(caught.value) == f"{path}: larger than 8 MiB, the most a memlife file may be"


def test_a_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    os.mkfifo(path)
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    assert str(caught.value) == (
        f"{path}: not a regular file (a pipe, socket or device); give memlife a file"
    )


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_scenario(tmp_path / "nope.yaml")
    assert str(caught.value) == f"{tmp_path / 'nope.yaml'}: file not found"


def test_scenario_round_trips_through_json() -> None:
    """The workflow receives the scenario through the pydantic data converter."""
    scenario = load_scenario(REPO / "scenarios" / "seed-six-case.yaml")
    again = type(scenario).model_validate_json(scenario.model_dump_json())
    assert again == scenario
    assert again.digest() == scenario.digest()


def test_a_question_too_short_to_avoid_is_one_clear_problem_not_a_crash() -> None:
    # Canary values must not hold a question's text; a one-letter question is in them all.
    nightly = REPO / "scenarios" / "lifecycle-nightly.yaml"
    document = yaml.safe_load(nightly.read_text(encoding="utf-8"))
    document["domains"]["address"]["templates"]["es"]["question"][0] = "A"
    with pytest.raises(InputError) as raised:
        parse_scenario(document, "n.yaml")
    assert [str(p).split(":")[:2] for p in raised.value.problems] == [["n.yaml", " generate"]]
    assert "'address'" in str(raised.value)
