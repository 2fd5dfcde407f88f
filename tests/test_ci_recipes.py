"""The CI recipes in docs/ci/ are valid where they would run: each checked against its
platform's published schema (the copies check-jsonschema ships, read offline), and every
memlife command in them parsed by memlife's own command line."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from memlife.cli import build_parser

REPO = Path(__file__).resolve().parent.parent
RECIPES = {
    "github-nightly.yml": "vendor.github-workflows",
    "gitlab-nightly.yml": "vendor.gitlab-ci",
}
CHECK = [sys.executable, "-m", "check_jsonschema"]


def _validate(path: Path, schema: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CHECK, "--builtin-schema", schema, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_each_recipe_is_valid_against_its_platforms_schema(name: str, tmp_path: Path) -> None:
    result = _validate(REPO / "docs" / "ci" / name, RECIPES[name])
    assert result.returncode == 0, result.stdout + result.stderr
    # The check bites: the same recipe with a job broken is refused.
    document = yaml.safe_load((REPO / "docs" / "ci" / name).read_text())
    job = document["jobs"]["lifecycle"] if "jobs" in document else document["memlife-nightly"]
    job["timeout-minutes" if "jobs" in document else "timeout"] = {"not": "a duration"}
    broken = tmp_path / name
    broken.write_text(yaml.safe_dump(document))
    assert _validate(broken, RECIPES[name]).returncode != 0


def _commands(document: Any) -> list[str]:
    """Every `memlife ...` command line in a recipe's run and script entries."""
    found: list[str] = []
    if isinstance(document, dict):
        for key, value in document.items():
            if key in ("run", "script", "after_script"):
                lines = value if isinstance(value, list) else str(value).splitlines()
                found += [
                    " ".join(str(line).split())
                    for line in lines
                    if str(line).strip().startswith("memlife ")
                ]
            else:
                found += _commands(value)
    elif isinstance(document, list):
        for item in document:
            found += _commands(item)
    return found


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_every_memlife_command_in_a_recipe_is_one_memlife_takes(name: str) -> None:
    document = yaml.safe_load((REPO / "docs" / "ci" / name).read_text())
    commands = _commands(document)
    assert {c.split()[1] for c in commands} == {"target", "run", "report"}, commands
    parser = build_parser()
    for command in commands:
        words = shlex.split(command.split("#")[0].replace("${{ github.run_id }}", "1"))
        parser.parse_args(words[1:])  # exits (SystemExit) on an unknown option
