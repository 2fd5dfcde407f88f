"""Signed documents: erasure receipts and run artifacts an auditor can verify offline.

A signed document is the document itself plus a `signature` block (docs/signing.md). Every
hash in it is HMAC-SHA256 keyed with a random `salt`, so a hash cannot be used to confirm a
guessed value, nor be matched across documents. The block holds:

- `sections`: a hash of each top-level part of the document (meta, summary, cases, ...);
- a hash chain over the evidence, entry by entry in order (the artifact's `observations`, a
  receipt's `stores`): link i hashes link i-1 and entry i, so a changed, added, removed or
  reordered entry breaks the chain from there on. The block keeps the last link (`head`)
  and every `checkpoint_every`-th link (`checkpoints`), at most 2,048 of them: every link
  of a receipt or a small run, one in a thousand of a 10,000-pair run's;
- `value`: the Ed25519 signature over the canonical JSON of the block itself.

So a document of any size is signed and verified a part at a time, as it is written or
read (`signed_chunks`, `verify_file`): neither holds more than one entry of it. Documents
signed before this format (format 1: every link kept, the signature over the whole
document) still verify.

Verification names what does not match: a section, the first evidence entry (or the span
of entries between two checkpoints) whose link no longer holds, or the signature block
itself. The crypto is `cryptography`'s Ed25519 and the standard library's HMAC; nothing
here is hand-written crypto.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from memlife.recorder.artifact import json_chunks

ALGORITHM = "Ed25519"
SIGNATURE_KEY = "signature"
FORMAT = 2
# What each kind of document chains: the evidence behind its verdicts.
EVIDENCE = {"artifact": "observations", "receipt": "stores"}
# The most links a block keeps between its first and its head: past this the signer keeps
# every other one, so a block stays small (about 140 KB) at any size. Even, so halving
# keeps the links at multiples of the doubled interval.
MOST_CHECKPOINTS = 2048


class SignatureError(ValueError):
    """A key or document that cannot be used at all (not one that fails verification)."""


def canonical(value: Any) -> bytes:
    """One byte string per JSON value: keys sorted, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def generate_key_pair() -> tuple[bytes, bytes]:
    """(private key PEM, public key PEM), a fresh Ed25519 pair."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.generate()
    private_pem = private.private_bytes(serialization.Encoding.PEM,
                                        serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption())
    public_pem = private.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo)
    return private_pem, public_pem


def _private_key(pem: bytes) -> Any:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as error:
        raise SignatureError(f"not an unencrypted PEM private key ({error})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SignatureError("not an Ed25519 private key (memlife keygen writes one)")
    return key


def check_private_key(pem: bytes) -> None:
    """Raise SignatureError unless `pem` is an unencrypted Ed25519 private key."""
    _private_key(pem)


def _public_key(pem: bytes) -> Any:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        key = load_pem_public_key(pem)
    except (ValueError, TypeError) as error:
        raise SignatureError(f"not a PEM public key ({error})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise SignatureError("not an Ed25519 public key (memlife keygen writes one)")
    return key


def key_id(public_pem: bytes) -> str:
    """A short name of a public key: the first 16 hex digits of its SHA-256."""
    return _key_id(_public_key(public_pem))


def _key_id(key: Any) -> str:
    return hashlib.sha256(_raw_public(key)).hexdigest()[:16]


def _raw_public(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def _mac(salt: bytes, *parts: bytes) -> str:
    digest = hmac.new(salt, digestmod=hashlib.sha256)
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))  # unambiguous concatenation
        digest.update(part)
    return digest.hexdigest()


def kind_of(document: dict[str, Any]) -> str:
    if "observations" in document and "meta" in document:
        return "artifact"
    if "check_id" in document and "stores" in document:
        return "receipt"
    raise SignatureError("neither a run artifact nor an erasure receipt")


class _SectionHash:
    """HMAC(salt, name's length, name, canonical JSON of the value), the value fed whole or
    a list entry at a time: a list's canonical JSON is its entries' joined by commas in
    brackets, so both ways give the same hash."""

    def __init__(self, salt: bytes, name: str) -> None:
        self._digest = hmac.new(salt, digestmod=hashlib.sha256)
        encoded = name.encode()
        self._digest.update(len(encoded).to_bytes(8, "big"))
        self._digest.update(encoded)
        self._entries = 0

    def whole(self, value: Any) -> str:
        self._digest.update(canonical(value))
        return self._digest.hexdigest()

    def begin(self) -> None:
        self._digest.update(b"[")

    def entry(self, value: Any) -> None:
        self._digest.update(b"," if self._entries else b"")
        self._digest.update(canonical(value))
        self._entries += 1

    def end(self) -> str:
        self._digest.update(b"]")
        return self._digest.hexdigest()


class _Chain:
    """The evidence's hash chain, keeping every `every`-th link and the last."""

    def __init__(self, salt: bytes, every: int = 1) -> None:
        self._salt, self.every = salt, every
        self.head, self.count = "", 0
        self.kept: list[str] = []

    def add(self, entry: Any) -> str:
        self.head = _mac(self._salt, self.head.encode(), canonical(entry))
        self.count += 1
        return self.head

    def keep(self) -> None:
        """Keep the link just added when it falls on the interval; past the most, every
        other one at twice the interval."""
        if self.count % self.every:
            return
        self.kept.append(self.head)
        if len(self.kept) > MOST_CHECKPOINTS:
            self.kept, self.every = self.kept[1::2], self.every * 2


class Signer:
    """Signs a document given a top-level field at a time, its lists an entry at a time as
    they are written; `block` is its signature block once every field has passed."""

    def __init__(self, private_pem: bytes, kind: str) -> None:
        if kind not in EVIDENCE:
            raise SignatureError(f"cannot sign a {kind!r} (only {', '.join(EVIDENCE)})")
        self._key, self.kind = _private_key(private_pem), kind
        self._salt = secrets.token_bytes(32)
        self._sections: dict[str, str] = {}
        self._chain = _Chain(self._salt)

    def field(self, name: str, value: Any) -> None:
        """A top-level field given whole."""
        if name == EVIDENCE[self.kind]:
            for _ in self.entries(name, value):
                pass
        else:
            self._sections[name] = _SectionHash(self._salt, name).whole(value)

    def entries(self, name: str, entries: Iterable[Any]) -> Iterator[Any]:
        """A top-level list's entries, each hashed as it passes on to be written."""
        if name == EVIDENCE[self.kind]:
            for entry in entries:
                self._chain.add(entry)
                self._chain.keep()
                yield entry
            return
        section = _SectionHash(self._salt, name)
        section.begin()
        for entry in entries:
            section.entry(entry)
            yield entry
        self._sections[name] = section.end()

    def block(self, signed_at: datetime) -> dict[str, Any]:
        block: dict[str, Any] = {
            "format": FORMAT, "algorithm": ALGORITHM, "kind": self.kind,
            "key_id": _key_id(self._key.public_key()),
            "signed_at": signed_at.isoformat(), "salt": self._salt.hex(),
            "sections": self._sections, "evidence": EVIDENCE[self.kind],
            "entries": self._chain.count, "checkpoint_every": self._chain.every,
            "checkpoints": self._chain.kept, "head": self._chain.head}
        block["value"] = base64.b64encode(self._key.sign(canonical(block))).decode("ascii")
        return block


def sign(document: dict[str, Any], private_pem: bytes, signed_at: datetime) -> dict[str, Any]:
    """The document with its signature block (any earlier one replaced)."""
    signer = Signer(private_pem, kind_of(document))
    body = {k: v for k, v in document.items() if k != SIGNATURE_KEY}
    for name, value in body.items():
        signer.field(name, value)
    return {**body, SIGNATURE_KEY: signer.block(signed_at)}


def signed_chunks(head: dict[str, Any], lists: Iterable[tuple[str, Iterable[Any]]],
                  private_pem: bytes, kind: str,
                  clock: Callable[[], datetime]) -> Iterator[str]:
    """What `json_chunks(head, lists)` writes, signed as it is written: the signature block
    comes last, made (at `clock()`) once every entry has passed."""
    signer = Signer(private_pem, kind)
    for name, value in head.items():
        signer.field(name, value)
    hashed = [(name, signer.entries(name, entries)) for name, entries in lists]
    return json_chunks(head, hashed, tail=lambda: {SIGNATURE_KEY: signer.block(clock())})


class _Verifier:
    """Checks a format-2 document given a top-level field at a time, its lists an entry at
    a time; `problems` once every field has passed."""

    def __init__(self, block: dict[str, Any], public_pem: bytes) -> None:
        self._key = _public_key(public_pem)
        try:
            self.kind = str(block["kind"])
            self._salt = bytes.fromhex(str(block["salt"]))
            self._stored = {str(k): str(v) for k, v in dict(block["sections"]).items()}
            self._checkpoints = [str(link) for link in block["checkpoints"]]
            self._signed_entries, self._head = int(block["entries"]), str(block["head"])
            every = int(block["checkpoint_every"])
            self._value = base64.b64decode(str(block["value"]), validate=True)
            if self.kind not in EVIDENCE or block.get("algorithm") != ALGORITHM or every < 1:
                raise ValueError(f"kind {self.kind!r}, algorithm {block.get('algorithm')!r}, "
                                 f"checkpoint_every {every}")
        except (KeyError, ValueError, TypeError) as error:
            raise SignatureError(f"the signature block is malformed ({error})") from None
        self._block, self.evidence = block, EVIDENCE[self.kind]
        self._chain = _Chain(self._salt, every)
        self._sections: dict[str, str] = {}
        self._problems: list[str] = []
        self._seen: set[str] = set()
        self._section: _SectionHash | None = None
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
            self._sections[name] = _SectionHash(self._salt, name).whole(value)

    def begin(self, name: str) -> None:
        self._first_time(name)
        if name not in (self.evidence, SIGNATURE_KEY):
            self._section = _SectionHash(self._salt, name)
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
        if ((index + 1) % every == 0 and position < len(self._checkpoints)
                and link != self._checkpoints[position]):
            self._broken = True
            self._problems.append(self._breaks(index + 1 - every, index))

    def _breaks(self, first: int, last: int) -> str:
        if first == last:
            return (f"{self.evidence} entry {first} ({self._window_end}) changed, moved or "
                    "was replaced after signing: the hash chain breaks there")
        return (f"{self.evidence} entries {first:,} to {last:,} (the first: "
                f"{self._window_start}; the last: {self._window_end}): one of them "
                "changed, moved or was replaced after signing; the hash chain breaks there "
                f"(the signature keeps one link in {self._chain.every:,})")

    def problems(self) -> list[str]:
        """Every way the document does not match its signature; empty when it verifies."""
        problems = []
        other_key = self._block.get("key_id") != _key_id(self._key)
        if other_key:
            problems.append(f"signed with key {self._block.get('key_id')}, not the given "
                            f"public key ({_key_id(self._key)})")
        problems += _section_problems(self._sections, self._stored) + self._problems
        chain, signed = self._chain, self._signed_entries
        if not self._broken:
            if chain.count != signed:
                problems.append(f"{self.evidence}: {signed} entries were signed, the "
                                f"document has {chain.count}")
            elif chain.head != self._head:  # past the last checkpoint
                problems.append(self._breaks(len(self._checkpoints) * chain.every,
                                             chain.count - 1))
        unsigned = {k: v for k, v in self._block.items() if k != "value"}
        from cryptography.exceptions import InvalidSignature

        try:
            self._key.verify(self._value, canonical(unsigned))
        except InvalidSignature:
            if not other_key:  # the same key: the block itself was altered
                problems.append("the signature does not match: the signature block was "
                                "altered (its hashes, time, key id or size)")
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


def verify_file(path: Path, public_pem: bytes) -> tuple[list[str], dict[str, Any]]:
    """Every way the JSON document at `path` does not match its signature (empty when it
    verifies), and its signature block. A format-2 document is read twice as a stream
    (its block, then the rest), never held whole; a format-1 one is read whole, as it was
    signed. Raises ValueError where the file is not JSON, SignatureError where it is not
    signed or its block cannot be used."""
    import ijson

    with open(path, "rb") as stream:
        block = next(ijson.items(stream, SIGNATURE_KEY, use_float=True), None)
    if not isinstance(block, dict):
        raise SignatureError("the document is not signed (it has no signature block)")
    if block.get("format") != FORMAT:
        document = json.loads(path.read_text(encoding="utf-8"))
        return verify(document, public_pem), signature_block(document)
    verifier = _Verifier(block, public_pem)
    with open(path, "rb") as stream:
        _feed(ijson.parse(stream, use_float=True), verifier)
    return verifier.problems(), block


_OPENS, _CLOSES = ("start_map", "start_array"), ("end_map", "end_array")


def _feed(events: Iterable[tuple[str, str, Any]], verifier: _Verifier) -> None:
    """Give a parsed document's events to the verifier as top-level fields, each list an
    entry at a time: nothing bigger than one entry (or one non-list field) is built."""
    import ijson

    events = iter(events)
    _, event, _ = next(events)
    if event != "start_map":
        raise SignatureError("neither a run artifact nor an erasure receipt (not an object)")
    for _, event, name in events:
        if event == "end_map":
            return
        _, event, value = next(events)
        if event != "start_array":
            verifier.field(name, _built(event, value, events, ijson.ObjectBuilder))
            continue
        verifier.begin(name)
        for _, event, value in events:
            if event == "end_array":
                break
            verifier.entry(name, _built(event, value, events, ijson.ObjectBuilder))
        verifier.end(name)


def _built(event: str, value: Any, events: Iterator[tuple[str, str, Any]],
           builder_type: Callable[[], Any]) -> Any:
    """The value that starts with this event, built from the events that follow."""
    if event not in _OPENS:
        return value
    builder, depth = builder_type(), 1
    builder.event(event, value)
    for _, event, value in events:
        builder.event(event, value)
        depth += (event in _OPENS) - (event in _CLOSES)
        if depth == 0:
            return builder.value
    raise ValueError("the document ends inside a value")


def _verify_format_1(document: dict[str, Any], public_pem: bytes) -> list[str]:
    """A document signed before format 2: every link in `chain`, the signature over the
    canonical JSON of the whole document."""
    key = _public_key(public_pem)
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
    if block.get("key_id") != _key_id(key):
        problems.append(f"signed with key {block.get('key_id')}, not the given public key "
                        f"({_key_id(key)})")
    evidence = EVIDENCE[kind]
    body = {k: v for k, v in document.items() if k != SIGNATURE_KEY}
    sections = {name: _mac(salt, name.encode(), canonical(value))
                for name, value in body.items() if name != evidence}
    chain: list[str] = []
    previous = b""
    for entry in body.get(evidence) or []:
        link = _mac(salt, previous, canonical(entry))
        chain.append(link)
        previous = link.encode()
    problems += _section_problems(sections, stored_sections)
    first_broken = next((i for i, (a, b) in enumerate(zip(chain, stored_chain, strict=False))
                         if a != b), None)
    if first_broken is not None:
        where = describe(body, evidence, first_broken)
        problems.append(f"{evidence} entry {first_broken} ({where}) changed, moved or was "
                        "replaced after signing: the hash chain breaks there")
    elif len(chain) != len(stored_chain):
        problems.append(f"{evidence}: {len(stored_chain)} entries were signed, the document "
                        f"has {len(chain)}")
    unsigned = {**document, SIGNATURE_KEY: {k: v for k, v in block.items() if k != "value"}}
    from cryptography.exceptions import InvalidSignature

    try:
        key.verify(value, canonical(unsigned))
    except InvalidSignature:
        if not problems:  # the content matches its hashes: the block itself was altered
            problems.append("the signature does not match: the signature block was altered "
                            "(its hashes, time or key id) or signed by another key")
    return problems


def describe(body: dict[str, Any], evidence: str, index: int) -> str:
    """Which entry, in words a person can find in the document."""
    entries = body.get(evidence) or []
    if index >= len(entries):
        return f"entry {index}"
    return describe_entry(evidence, entries[index], index)


def describe_entry(evidence: str, entry: Any, index: int | None = None) -> str:
    """An evidence entry in words a person can find in the document."""
    if not isinstance(entry, dict):
        return "not an object" if index is None else f"entry {index}"
    if evidence == "observations":
        return (f"pair {entry.get('pair')}, step {entry.get('step')}, seq {entry.get('seq')}, "
                f"{entry.get('kind')}")
    return f"store {entry.get('store')!r}"
