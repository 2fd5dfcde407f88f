"""What every command shares: exit codes, the one error-line format, option help that shows
defaults, durations given on the command line, and the checks a scenario and a target file
get together before anything starts. Light to import: commands import what they run
inside their handlers, so `memlife --help` starts fast."""

from __future__ import annotations

import argparse
import sys
from typing import Any

# The checks every command shares with the Python API (memlife/api/checks.py), and where
# memlife keeps its local state (memlife/stack), for the commands to import from here.
from memlife.api.checks import check_target_reachable as check_target_reachable
from memlife.api.checks import duration_option as duration_option
from memlife.api.checks import ensure_runtime_extras as ensure_runtime_extras
from memlife.api.checks import scenario_target_problems as scenario_target_problems
from memlife.api.checks import unknown_faults as unknown_faults
from memlife.errors import Problem
from memlife.stack import STATE_DIR as STATE_DIR

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def err(message: str) -> None:
    print(message, file=sys.stderr)


def not_json_reason(error: BaseException) -> str:
    """A JSON parser's complaint in one line: ijson's C parser draws an arrow under the
    input on lines of their own."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def problems_exit(problems: list[Problem]) -> int:
    """Print each problem on its own line (`where: what: why`) and return exit 2."""
    for problem in problems:
        err(str(problem))
    return EXIT_USAGE


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions wrapped paragraph by paragraph (lines that start with spaces kept as
    written: lists, examples), and every option's default shown where it says something."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        paragraphs = []
        for paragraph in text.split("\n\n"):
            lines = paragraph.split("\n")
            kept = [line for line in lines if line.startswith(" ")]
            if kept:  # a list: its head line wrapped, its items as written
                head = [line for line in lines if not line.startswith(" ")]
                paragraphs.append(
                    "\n".join(
                        [
                            textwrap.fill(
                                " ".join(head),
                                width,
                                initial_indent=indent,
                                subsequent_indent=indent,
                            )
                        ]
                        * bool(head)
                        + [indent + line for line in kept]
                    )
                )
            else:
                paragraphs.append(
                    textwrap.fill(
                        " ".join(lines), width, initial_indent=indent, subsequent_indent=indent
                    )
                )
        return "\n\n".join(paragraphs)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "%(default)" in text or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        if action.option_strings or action.nargs in ("?", "*"):
            text += " (default: %(default)s)"
        return text


def add_command(
    commands: Any, name: str, summary: str, description: str, **options: Any
) -> argparse.ArgumentParser:
    """A subcommand whose `--help` says what it does (`description`) and lists it in the
    parent's help under `summary`."""
    return commands.add_parser(
        name, help=summary, description=description, formatter_class=HelpFormatter, **options
    )
