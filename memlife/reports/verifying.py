"""Verifying signed documents (`memlife verify`), whole or read from a file as a stream.

Verification names what does not match: a section, the first evidence entry (or the span
of entries between two kept links) whose link no longer holds, a field the file repeats,
or the signature block itself. A format-2 document (signing.py) is checked a field and an
entry at a time, so a file of any size is read in bounded memory; a format-1 document
(every link kept, the signature over the whole document: memlife before 2026-12-04) is
read whole, as it was signed.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlife.recorder.files import visit_fields
from memlife.reports.signing import (
    ALGORITHM,
    EVIDENCE,
    FORMAT,
    SIGNATURE_KEY,
    Chain,
    SectionHash,
    SignatureError,
    canonical,
    describe,
    describe_entry,
    key_id_of,
    mac,
    public_key,
)


class _Verifier:
    """Checks a format-2 document given a top-level field at a time, its lists an entry at
    a time; `problems` once every field has passed."""

    def __init__(self, block: dict[str, Any], public_pem: bytes) -> None:
        self._key = public_key(public_pem)
        try:
            self.kind = str(block["kind"])
            self._salt = bytes.fromhex(str(block["salt"]))
            self._stored = {str(k): str(v) for k, v in dict(block["sections"]).items()}
            self._checkpoints = [str(link) for link in block["checkpoints"]]
            self._signed_entries, self._head = int(block["entries"]), str(block["head"])
            every = int(block["checkpoint_every"])
            self._value = base64.b64decode(str(block["value"]), validate=True)
            if self.kind not in EVIDENCE or block.get("algorithm") != ALGORITHM or every < 1:
                raise ValueError(
                    f"kind {self.kind!r}, algorithm {block.get('algorithm')!r}, "
                    f"checkpoint_every {every}"
                )
        except (KeyError, ValueError, TypeError) as error:
            raise SignatureError(f"the signature block is malformed ({error})") from None
        self._block, self.evidence = block, EVIDENCE[self.kind]
        self._chain = Chain(self._salt, every)
        self._sections: dict[str, str] = {}
        self._problems: list[str] = []
        self._seen: set[str] = set()
        self._section: SectionHash | None = None
        self._broken = False
        # The entries that open the span since the last checkpoint and that end it.
        self._window_start = self._window_end = ""

    def _first_time(self, name: str) -> None:
        if name in self._seen:
            self._problems.append(f"field {name!r} appears twice in the document")
        self._seen.add(name)

    def field(self, name: str, value: Any) -> None:
        """A top-level field that is not a list, or a list given whole."""
        if isinstance(value, list):
            self.begin(name)
            for entry in value:
                self.entry(name, entry)
            self.end(name)
            return
        self._first_time(name)
        if name == self.evidence:
            self._problems.append(f"{name} is not a list of entries")
        elif name != SIGNATURE_KEY:
            self._sections[name] = SectionHash(self._salt, name).whole(value)

    def begin(self, name: str) -> None:
        self._first_time(name)
        if name not in (self.evidence, SIGNATURE_KEY):
            self._section = SectionHash(self._salt, name)
            self._section.begin()

    def entry(self, name: str, value: Any) -> None:
        if name == self.evidence:
            self._link(value)
        elif self._section is not None:
            self._section.entry(value)

    def end(self, name: str) -> None:
        if self._section is not None:
            self._sections[name] = self._section.end()
            self._section = None

    def _link(self, entry: Any) -> None:
        every, index = self._chain.every, self._chain.count
        if self._broken:
            return
        if index % every == 0:
            self._window_start = describe_entry(self.evidence, entry)
        self._window_end = describe_entry(self.evidence, entry)
        link = self._chain.add(entry)
        position = (index + 1) // every - 1
        if (
            (index + 1) % every == 0
            and position < len(self._checkpoints)
            and link != self._checkpoints[position]
        ):
            self._broken = True
            self._problems.append(self._breaks(index + 1 - every, index))

    def _breaks(self, first: int, last: int) -> str:
        if first == last:
            return (
                f"{self.evidence} entry {first} ({self._window_end}) changed, moved or "
                "was replaced after signing: the hash chain breaks there"
            )
        return (
            f"{self.evidence} entries {first:,} to {last:,} (the first: "
            f"{self._window_start}; the last: {self._window_end}): one of them "
            "changed, moved or was replaced after signing; the hash chain breaks there "
            f"(the signature keeps one link in {self._chain.every:,})"
        )

    def problems(self) -> list[str]:
        """Every way the document does not match its signature; empty when it verifies."""
        problems = []
        other_key = self._block.get("key_id") != key_id_of(self._key)
        if other_key:
            problems.append(
                f"signed with key {self._block.get('key_id')}, not the given "
                f"public key ({key_id_of(self._key)})"
            )
        problems += _section_problems(self._sections, self._stored) + self._problems
        chain, signed = self._chain, self._signed_entries
        if not self._broken:
            if chain.count != signed:
                problems.append(
                    f"{self.evidence}: {signed} entries were signed, the document has {chain.count}"
                )
            elif chain.head != self._head:  # past the last checkpoint
                problems.append(self._breaks(len(self._checkpoints) * chain.every, chain.count - 1))
        unsigned = {k: v for k, v in self._block.items() if k != "value"}
        from cryptography.exceptions import InvalidSignature

        try:
            self._key.verify(self._value, canonical(unsigned))
        except InvalidSignature:
            if not other_key:  # the same key: the block itself was altered
                problems.append(
                    "the signature does not match: the signature block was "
                    "altered (its hashes, time, key id or size)"
                )
        return problems


def _section_problems(sections: dict[str, str], stored: dict[str, str]) -> list[str]:
    problems = []
    for name in sorted(set(sections) | set(stored)):
        if name not in stored:
            problems.append(f"section {name!r} was added after signing")
        elif name not in sections:
            problems.append(f"section {name!r} was removed after signing")
        elif sections[name] != stored[name]:
            problems.append(f"section {name!r} changed after signing")
    return problems


def signature_block(document: dict[str, Any]) -> dict[str, Any]:
    block = document.get(SIGNATURE_KEY)
    if not isinstance(block, dict):
        raise SignatureError("the document is not signed (it has no signature block)")
    return block


def chained_entries(block: dict[str, Any]) -> int:
    """How many evidence entries a (well-formed) signature block chained."""
    return int(block["entries"]) if block.get("format") == FORMAT else len(block["chain"])


def verify(document: dict[str, Any], public_pem: bytes) -> list[str]:
    """Every way the document does not match its signature; empty when it verifies."""
    block = signature_block(document)
    if block.get("format") != FORMAT:
        return _verify_format_1(document, public_pem)
    verifier = _Verifier(block, public_pem)
    for name, value in document.items():
        verifier.field(name, value)
    return verifier.problems()


def verify_file(
    path: Path,
    public_pem: bytes,
    progress: Callable[[str], None] | None = None,
    every_s: float = 10.0,
) -> tuple[list[str], dict[str, Any]]:
    """Every way the JSON document at `path` does not match its signature (empty when it
    verifies), and its signature block. A format-2 document is read twice as a stream
    (its block, then the rest), never held whole; a format-1 one is read whole, as it was
    signed. Every `every_s` seconds `progress` hears how far the reading is. Raises
    ValueError (or ijson's JSONError) where the file is not JSON, SignatureError where it
    is not signed or its block cannot be used."""
    import ijson

    size = path.stat().st_size
    with _Reading(path, "finding the signature block", size, progress, every_s) as stream:
        block = next(ijson.items(stream, SIGNATURE_KEY, use_float=True), None)
    if not isinstance(block, dict):
        raise SignatureError("the document is not signed (it has no signature block)")
    if block.get("format") != FORMAT:
        document = json.loads(path.read_text(encoding="utf-8"))
        return verify(document, public_pem), signature_block(document)
    verifier = _Verifier(block, public_pem)
    with _Reading(path, "checking", size, progress, every_s) as stream:
        visit_fields(ijson.basic_parse(stream, use_float=True), verifier)
    return verifier.problems(), block


class _Reading:
    """A file read as a stream, telling `progress` how far it is every `every_s` seconds."""

    def __init__(
        self,
        path: Path,
        doing: str,
        size: int,
        progress: Callable[[str], None] | None,
        every_s: float,
    ) -> None:
        self._stream = open(path, "rb")  # noqa: SIM115 (closed by __exit__)
        self._path, self._doing, self._size = path, doing, size
        self._progress, self._every_s = progress, every_s
        self._read = 0
        self._started = self._last = time.monotonic()

    def __enter__(self) -> _Reading:
        return self

    def __exit__(self, *_: object) -> None:
        self._stream.close()

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self._read += len(data)
        now = time.monotonic()
        if self._progress is not None and now - self._last >= self._every_s:
            self._last = now
            self._progress(
                f"verifying {self._path}: {self._doing}, "
                f"{self._read / max(self._size, 1):.0%} read "
                f"({now - self._started:.0f} s)"
            )
        return data


def _verify_format_1(document: dict[str, Any], public_pem: bytes) -> list[str]:
    """A document signed before format 2: every link in `chain`, the signature over the
    canonical JSON of the whole document."""
    key = public_key(public_pem)
    block = signature_block(document)
    problems: list[str] = []
    try:
        kind = str(block["kind"])
        salt = bytes.fromhex(str(block["salt"]))
        stored_sections = dict(block["sections"])
        stored_chain = list(block["chain"])
        value = base64.b64decode(str(block["value"]), validate=True)
        if kind not in EVIDENCE or block.get("algorithm") != ALGORITHM:
            raise ValueError(f"kind {kind!r}, algorithm {block.get('algorithm')!r}")
    except (KeyError, ValueError, TypeError) as error:
        raise SignatureError(f"the signature block is malformed ({error})") from None
    if block.get("key_id") != key_id_of(key):
        problems.append(
            f"signed with key {block.get('key_id')}, not the given public key ({key_id_of(key)})"
        )
    evidence = EVIDENCE[kind]
    body = {k: v for k, v in document.items() if k != SIGNATURE_KEY}
    sections = {
        name: mac(salt, name.encode(), canonical(value))
        for name, value in body.items()
        if name != evidence
    }
    chain: list[str] = []
    previous = b""
    for entry in body.get(evidence) or []:
        link = mac(salt, previous, canonical(entry))
        chain.append(link)
        previous = link.encode()
    problems += _section_problems(sections, stored_sections)
    first_broken = next(
        (i for i, (a, b) in enumerate(zip(chain, stored_chain, strict=False)) if a != b), None
    )
    if first_broken is not None:
        where = describe(body, evidence, first_broken)
        problems.append(
            f"{evidence} entry {first_broken} ({where}) changed, moved or was "
            "replaced after signing: the hash chain breaks there"
        )
    elif len(chain) != len(stored_chain):
        problems.append(
            f"{evidence}: {len(stored_chain)} entries were signed, the document has {len(chain)}"
        )
    unsigned = {**document, SIGNATURE_KEY: {k: v for k, v in block.items() if k != "value"}}
    from cryptography.exceptions import InvalidSignature

    try:
        key.verify(value, canonical(unsigned))
    except InvalidSignature:
        if not problems:  # the content matches its hashes: the block itself was altered
            problems.append(
                "the signature does not match: the signature block was altered "
                "(its hashes, time or key id) or signed by another key"
            )
    return problems
