"""Signed documents: erasure receipts and run artifacts an auditor can verify offline.

A signed document is the document itself plus a `signature` block (docs/signing.md). Every
hash in it is HMAC-SHA256 keyed with a random `salt`, so a hash cannot be used to confirm a
guessed value, nor be matched across documents. The block holds:

- `sections`: a hash of each top-level part of the document (meta, summary, cases, ...);
- a hash chain over the evidence, entry by entry in order (the artifact's `observations`, a
  receipt's `stores`): link i hashes link i-1 and entry i, so a changed, added, removed or
  reordered entry breaks the chain from there on. The block keeps the last link (`head`)
  and every `checkpoint_every`-th link (`checkpoints`), at most 2,048 of them: every link
  of a receipt or a small run, one in 2,048 of a 10,000-pair run's 2.1 million;
- `value`: the Ed25519 signature over the canonical JSON of the block itself.

So a document of any size is signed a part at a time as it is written (`signed_chunks`),
and verified a part at a time as it is read (verifying.py): neither holds more than one
entry of it. The crypto is `cryptography`'s Ed25519 and the standard library's HMAC;
nothing here is hand-written crypto.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
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
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def generate_key_pair() -> tuple[bytes, bytes]:
    """(private key PEM, public key PEM), a fresh Ed25519 pair."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.generate()
    private_pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public_pem = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
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


def public_key(pem: bytes) -> Any:
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
    return key_id_of(public_key(public_pem))


def key_id_of(key: Any) -> str:
    return hashlib.sha256(_raw_public(key)).hexdigest()[:16]


def _raw_public(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def mac(salt: bytes, *parts: bytes) -> str:
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


class SectionHash:
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


class Chain:
    """The evidence's hash chain, keeping every `every`-th link and the last."""

    def __init__(self, salt: bytes, every: int = 1) -> None:
        self._salt, self.every = salt, every
        self.head, self.count = "", 0
        self.kept: list[str] = []

    def add(self, entry: Any) -> str:
        self.head = mac(self._salt, self.head.encode(), canonical(entry))
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
        self._chain = Chain(self._salt)

    def field(self, name: str, value: Any) -> None:
        """A top-level field given whole."""
        if name == EVIDENCE[self.kind]:
            for _ in self.entries(name, value):
                pass
        else:
            self._sections[name] = SectionHash(self._salt, name).whole(value)

    def entries(self, name: str, entries: Iterable[Any]) -> Iterator[Any]:
        """A top-level list's entries, each hashed as it passes on to be written."""
        if name == EVIDENCE[self.kind]:
            for entry in entries:
                self._chain.add(entry)
                self._chain.keep()
                yield entry
            return
        section = SectionHash(self._salt, name)
        section.begin()
        for entry in entries:
            section.entry(entry)
            yield entry
        self._sections[name] = section.end()

    def block(self, signed_at: datetime) -> dict[str, Any]:
        block: dict[str, Any] = {
            "format": FORMAT,
            "algorithm": ALGORITHM,
            "kind": self.kind,
            "key_id": key_id_of(self._key.public_key()),
            "signed_at": signed_at.isoformat(),
            "salt": self._salt.hex(),
            "sections": self._sections,
            "evidence": EVIDENCE[self.kind],
            "entries": self._chain.count,
            "checkpoint_every": self._chain.every,
            "checkpoints": self._chain.kept,
            "head": self._chain.head,
        }
        block["value"] = base64.b64encode(self._key.sign(canonical(block))).decode("ascii")
        return block


def sign(document: dict[str, Any], private_pem: bytes, signed_at: datetime) -> dict[str, Any]:
    """The document with its signature block (any earlier one replaced)."""
    signer = Signer(private_pem, kind_of(document))
    body = {k: v for k, v in document.items() if k != SIGNATURE_KEY}
    for name, value in body.items():
        signer.field(name, value)
    return {**body, SIGNATURE_KEY: signer.block(signed_at)}


def signed_chunks(
    head: dict[str, Any],
    lists: Iterable[tuple[str, Iterable[Any]]],
    private_pem: bytes,
    kind: str,
    clock: Callable[[], datetime],
) -> Iterator[str]:
    """What `json_chunks(head, lists)` writes, signed as it is written: the signature block
    comes last, made (at `clock()`) once every entry has passed."""
    signer = Signer(private_pem, kind)
    for name, value in head.items():
        signer.field(name, value)
    hashed = [(name, signer.entries(name, entries)) for name, entries in lists]
    return json_chunks(head, hashed, tail=lambda: {SIGNATURE_KEY: signer.block(clock())})


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
        return (
            f"pair {entry.get('pair')}, step {entry.get('step')}, seq {entry.get('seq')}, "
            f"{entry.get('kind')}"
        )
    return f"store {entry.get('store')!r}"
