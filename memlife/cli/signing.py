"""`memlife keygen` and `memlife verify`, and the `--sign KEYFILE` that `run`, `check-deletion`
and `receipt` take: signed, verifiable artifacts and erasure receipts (docs/signing.md).

The private key is read by the command that signs, on the machine where it runs, from the
file named on its command line: it never reaches a workflow's history, the recorder or a log.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from memlife.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    add_command,
    err,
    not_json_reason,
    problems_exit,
)
from memlife.errors import InputError, Problem

PRIVATE_FILE = "memlife-signing.key"
PUBLIC_FILE = "memlife-signing.pub"


def add_parsers(commands: Any) -> None:
    keygen = add_command(
        commands,
        "keygen",
        "write an Ed25519 key pair for signing receipts and artifacts",
        f"Write a new Ed25519 key pair into DIR: {PRIVATE_FILE} (the private key, readable "
        f"by you alone: keep it on the machine that signs) and {PUBLIC_FILE} (give it to "
        "whoever verifies). Existing keys are never overwritten.",
    )
    keygen.add_argument("--out", required=True, metavar="DIR", help="where to write the keys")
    keygen.set_defaults(handler=cmd_keygen, temporal=False)
    verify = add_command(
        commands,
        "verify",
        "check a signed receipt or artifact (offline)",
        "Check a signed erasure receipt or run artifact against a public key, offline: the "
        "Ed25519 signature and the hash chain over its evidence. Exits 0 when both hold, 1 "
        "naming every part that does not match (a section, the first changed evidence "
        "entry or, in a large artifact, the span of entries it is in), 2 when the file or "
        "the key cannot be used. The file is read as a stream: an artifact of any size "
        "verifies in bounded memory.",
    )
    verify.add_argument("file", metavar="FILE", help="the signed JSON document")
    verify.add_argument(
        "--public-key",
        required=True,
        metavar="PUBFILE",
        help=f"the signer's public key ({PUBLIC_FILE})",
    )
    verify.set_defaults(handler=cmd_verify, temporal=False)


def cmd_keygen(args: argparse.Namespace) -> int:
    from memlife.reports.signing import generate_key_pair, key_id

    ensure_signing_extra()
    folder = Path(args.out)
    private, public = folder / PRIVATE_FILE, folder / PUBLIC_FILE
    existing = [str(path) for path in (private, public) if path.exists()]
    if existing:
        return problems_exit(
            [
                Problem(
                    "command line",
                    "--out",
                    f"{', '.join(existing)} already exist(s); memlife never overwrites a key",
                )
            ]
        )
    folder.mkdir(parents=True, exist_ok=True)
    private_pem, public_pem = generate_key_pair()
    # Created readable by its owner alone, before a byte is written.
    descriptor = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(private_pem)
    public.write_bytes(public_pem)
    print(
        f"private key: {private} (keep it here; sign with --sign {private})\n"
        f"public key:  {public} (key id {key_id(public_pem)}; give it to verifiers)"
    )
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    from memlife.reports.signing import SignatureError, key_id
    from memlife.reports.verifying import chained_entries, verify_file

    ensure_signing_extra()
    public_pem = _read(args.public_key, "--public-key")
    import ijson

    try:
        problems, block = verify_file(Path(args.file), public_pem, progress=err)
    except SignatureError as error:
        raise InputError([Problem(args.file, "signature", str(error))]) from None
    except OSError as error:
        raise InputError([Problem(args.file, "", f"cannot read: {error.strerror}")]) from None
    except (ValueError, RecursionError, ijson.JSONError) as error:
        raise InputError([Problem(args.file, "", f"not JSON ({not_json_reason(error)})")]) from None
    if problems:
        for problem in problems:
            print(f"{args.file}: {problem}")
        print(f"NOT VERIFIED: {len(problems)} mismatch(es)")
        return EXIT_FAILED
    print(
        f"VERIFIED: {block['kind']} signed by key {key_id(public_pem)} at "
        f"{block['signed_at']}; {chained_entries(block)} {block['evidence']} entries "
        "chained"
    )
    return EXIT_OK


def check_sign_option(args: argparse.Namespace, needs: str) -> list[Problem]:
    """`--sign KEYFILE` is usable: a readable Ed25519 private key, and `needs` holds."""
    if not getattr(args, "sign", None):
        return []
    problems = []
    if not getattr(args, "out", None):
        problems.append(Problem("command line", "--sign", f"signs what --out writes: {needs}"))
    if not Path(args.sign).is_file():
        problems.append(
            Problem(
                "command line",
                "--sign",
                f"no key file {args.sign!r} (memlife keygen --out DIR writes one)",
            )
        )
    return problems


def load_private_key(path: str) -> bytes:
    """The private key at `path`, checked to be an Ed25519 key memlife can sign with."""
    from memlife.reports.signing import SignatureError, check_private_key

    ensure_signing_extra()
    pem = _read(path, "--sign")
    try:
        check_private_key(pem)
    except SignatureError as error:
        raise InputError([Problem(path, "", str(error))]) from None
    return pem


def ensure_signing_extra() -> None:
    from memlife.stack import extras

    extras.ensure("sign", "signing and verifying")


def _read(path: str, option: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise InputError(
            [Problem("command line", option, f"cannot read {path!r}: {error.strerror}")]
        ) from None
