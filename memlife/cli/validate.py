"""`memlife validate FILE...`: check scenario and target files before anything runs."""

from __future__ import annotations

import argparse
import os
from typing import Any

from memlife.cli.common import EXIT_OK, EXIT_USAGE, add_command, err


def add_parsers(commands: Any) -> None:
    parser = add_command(
        commands,
        "validate",
        "check scenario and target files",
        "Check scenario and target files: their shape, and what only the whole file can "
        "tell (mutually exclusive values, known domains, a timeline whose every step can "
        "work). Prints one `ok` line per good file and one `file: field: reason` line per "
        "problem; exits 2 when any file has a problem.",
    )
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="scenario or target files (told apart by their fields)",
    )
    parser.set_defaults(handler=cmd_validate, temporal=False)


def _is_target_document(data: Any) -> bool:
    return isinstance(data, dict) and ("base_url" in data or "operations" in data)


def cmd_validate(args: argparse.Namespace) -> int:
    from memlife.errors import InputError
    from memlife.rules.documents import load_yaml_file
    from memlife.rules.scenario_file import parse_scenario
    from memlife.rules.target import parse_target

    status = EXIT_OK
    for file in args.files:
        try:
            data = load_yaml_file(file)
            if _is_target_document(data):
                target = parse_target(data, file)
                missing = [name for name in target.secret_names() if name not in os.environ]
                note = f" (secrets not set here: {', '.join(missing)})" if missing else ""
                print(
                    f"{file}: ok: target {target.name!r} at {target.base_url}, "
                    f"{len(target.stores)} store(s){note}"
                )
            else:
                scenario = parse_scenario(data, file)
                pairs = (
                    f"{scenario.generate.count} generated pair(s)"
                    if scenario.generate
                    else f"{len(scenario.pairs)} pair(s)"
                )
                if scenario.generate and scenario.generate.twins:
                    pairs += f" and {scenario.generate.twins} control twin(s)"
                print(
                    f"{file}: ok: scenario {scenario.name!r}, {pairs}, "
                    f"{len(scenario.domains)} domain(s), {len(scenario.timeline)} step(s)"
                )
        except InputError as error:
            for problem in error.problems:
                err(str(problem))
            status = EXIT_USAGE
    return status
