"""`memlife target init SOURCE`: a target file proposed from a service's OpenAPI document
(a URL or a file), written with comments saying what was guessed and what to confirm, then
checked as `memlife target check` checks it. The guessing is memlife/rules/openapi/'s;
fetching and writing are here."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlife.cli.common import EXIT_OK, EXIT_USAGE, add_command, err, problems_exit
from memlife.errors import Problem


def add_parser(target_commands: Any, check: Callable[[argparse.Namespace], int]) -> None:
    """`memlife target init`; `check` is `memlife target check`'s handler (cli/target.py),
    run on the written file."""
    init = add_command(
        target_commands,
        "init",
        "propose a target file from a service's OpenAPI document",
        "Read a service's OpenAPI 3 document (a URL such as http://127.0.0.1:8000/openapi.json, "
        "or a JSON or YAML file) and propose a target file: the operations that look like "
        "registering a user, adding a message (say), searching (ask), deleting a user, its "
        "deletion's status and forgetting a fact; the parameters that name the user; the "
        "security schemes as secrets read from environment variables. Every guess is written "
        "with a comment saying where it came from and what a person must confirm; guesses too "
        "weak to send are written commented out.\n\nThen the file is checked against the "
        "service as `memlife target check FILE` checks it (unless --no-check): exit 0 when "
        "every operation works, 2 when one does not (the rows say which: edit those fields "
        "and check again) or when the document cannot be read. Nothing is written when the "
        "document is not OpenAPI 3, has no operations, or none that takes a message.",
    )
    init.add_argument(
        "source", metavar="SOURCE", help="the OpenAPI document: an http(s) URL or a file"
    )
    init.add_argument(
        "-o",
        "--out",
        metavar="FILE",
        default=None,
        help="where to write the target file (default: NAME.yaml in this directory)",
    )
    init.add_argument(
        "--name", default=None, help="the target's name (default: from the document's title)"
    )
    init.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="the service's base URL (default: the document's first server, else the "
        "origin of the SOURCE URL)",
    )
    init.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="a header sent when fetching a SOURCE URL, for a service that guards its "
        'document (repeatable; e.g. -H "Authorization: Bearer $LETTA_API_KEY"); never written '
        "to the file",
    )
    init.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    init.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="write the file without checking it against the service",
    )
    init.set_defaults(handler=cmd_target_init, temporal=False, check_file=check)


def read_document(source: str, headers: list[str] | None = None) -> tuple[Any, str | None]:
    """The parsed document and, for a URL, the URL (relative server URLs resolve against
    it). Raises InputError naming the source and why it cannot be read."""
    import yaml

    from memlife.errors import InputError

    def problem(reason: str, field: str = "") -> InputError:
        return InputError([Problem(source, field, reason)])

    if source.startswith(("http://", "https://")):
        import httpx

        sent: dict[str, str] = {}
        for header in headers or []:
            name, colon, value = header.partition(":")
            if not colon or not name.strip():
                raise InputError(
                    [Problem("command line", "--header", f"{header!r} is not 'NAME: VALUE'")]
                )
            sent[name.strip()] = value.strip()
        try:
            response = httpx.get(source, timeout=15, follow_redirects=True, headers=sent)
        except httpx.HTTPError as error:
            raise problem(f"cannot fetch the document ({type(error).__name__}: {error})") from None
        if response.status_code != 200:
            guarded = (
                "; if the service guards it, send its key with --header"
                if response.status_code in (401, 403)
                else ""
            )
            raise problem(f"fetching the document answered HTTP {response.status_code}{guarded}")
        text, url = response.text, str(response.url)
    else:
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise problem("no such file") from None
        except (OSError, UnicodeDecodeError) as error:
            raise problem(f"cannot read it ({error})") from None
        url = None
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as error:
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise problem(f"neither JSON nor YAML ({first})") from None
    return document, url


def schemes_of(headers: list[str]) -> dict[str, str]:
    """What the document was fetched with, as the proposal may say it: each header's name
    and its value's scheme word (`Bearer `), never the secret."""
    found = {}
    for header in headers:
        name, _, value = header.partition(":")
        words = value.strip().split(" ", 1)
        found[name.strip()] = f"{words[0]} " if len(words) == 2 else ""
    return found


def cmd_target_init(args: argparse.Namespace) -> int:
    import yaml

    from memlife.errors import InputError, MemlifeError
    from memlife.rules.openapi import ProposalError, propose
    from memlife.rules.target import parse_target
    from memlife.stack.commands import command

    if args.out and Path(args.out).exists() and not args.force:
        return problems_exit(
            [Problem("command line", "--out", f"{args.out} exists; add --force to overwrite it")]
        )
    document, url = read_document(args.source, args.header)
    try:
        proposal = propose(
            document,
            args.source,
            name=args.name,
            base_url=args.base_url,
            document_url=url,
            fetched_with=schemes_of(args.header) if url else None,
        )
    except ProposalError as error:
        return problems_exit([Problem(args.source, error.field, str(error))])
    out = Path(args.out or f"{proposal.name}.yaml")
    if out.exists() and not args.force:
        return problems_exit(
            [Problem("command line", "--out", f"{out} exists; add --force to overwrite it")]
        )
    text = proposal.render(str(out))
    try:
        parse_target(yaml.safe_load(text), str(out))
    except InputError as error:  # a proposal memlife itself cannot load: a bug, said so
        for item in error.problems:
            err(str(item))
        err(f"{args.source}: memlife target init proposed a file it cannot load; nothing written")
        return EXIT_USAGE
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}: target {proposal.name!r} at {proposal.base_url}")
    for guess in proposal.operations:
        state = "" if guess.live else ", commented out"
        print(f"  {guess.role:<16} {guess.source} ({guess.confidence}{state})")
    for guess in proposal.header_guesses:
        print(f"  {'headers':<16} {guess.source}")
    for item in proposal.missing:
        print(f"  not found: {item}")
    confirm = proposal.to_confirm()
    print(f"{len(confirm)} guess(es) to confirm: the comments at the top of {out} list them")
    check_command = f"{command()} target check {out}"
    if not args.check:
        print(f"next: confirm the guesses, then {check_command}")
        return EXIT_OK
    print(f"checking {out} against {proposal.base_url} …", flush=True)
    try:
        code = args.check_file(argparse.Namespace(file=str(out)))
    except MemlifeError as error:
        err(str(error))
        code = EXIT_USAGE
    if code == EXIT_OK:
        print(f"next: confirm the guesses listed at the top of {out}; the file works as it is")
    else:
        print(
            f"next: edit {out} where the lines above say what is wrong (each guess's comment "
            f"says where it came from), then {check_command}"
        )
    return code
