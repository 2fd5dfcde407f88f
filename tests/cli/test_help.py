"""Every command's --help says what it does, and every option has a description (with its
default where it has one); every command is in docs/cli.md."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from memlife.cli import build_parser

REPO = Path(__file__).resolve().parents[2]


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _commands(sub, (*path, name))


def test_every_command_and_option_is_described() -> None:
    commands = list(_commands(build_parser()))
    assert len(commands) >= 20
    for path, parser in commands:
        assert parser.description and len(parser.description) > 20, path
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            assert action.help, (path, action.dest)
            help_text = parser.formatter_class(prog="x")._get_help_string(action) or ""
            meaningful = action.default not in (None, False, [], argparse.SUPPRESS)
            if action.option_strings and meaningful:
                assert "default" in help_text, (path, action.dest)


def test_every_top_level_command_is_in_the_cli_page() -> None:
    page = (REPO / "docs" / "cli.md").read_text()
    for path, _ in _commands(build_parser()):
        if len(path) == 1:
            assert f"`memlife {path[0]}" in page, path


def test_check_deletion_help_says_what_it_does_and_describes_every_option() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "memlife", "check-deletion", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "The result is an erasure receipt" in text
    for described in (
        "--target FILE the target file",
        "--deadline DURATION how long the tenant has to disappear (default: 24h)",
        "--poll DURATION how often everything is read again (default: 15m)",
        "--out FILE write the receipt here",
        "--task-queue QUEUE the task queue the check goes to",
    ):
        assert described in text, described
