"""Signed documents: erasure receipts and run artifacts an auditor can verify offline.

A signed document is the document itself plus a `signature` block (docs/signing.md):

- `salt`: 32 random bytes (hex). Every hash below is HMAC-SHA256 keyed with it, so a hash
  cannot be used to confirm a guessed value, nor be matched across documents.
- `sections`: a hash of each top-level part of the document (meta, summary, verdict, ...).
- `chain`: a hash chain over the evidence, entry by entry in order: the artifact's
  `observations`, a receipt's `stores`. Link i hashes link i-1 and entry i, so a changed,
  added, removed or reordered entry breaks the chain from there on.
- `value`: the Ed25519 signature over the canonical JSON of everything else, the block
  included. Any changed byte of the document, once parsed, fails it.

Verification names what does not match: a section, the first evidence entry whose link no
longer holds, or the signature block itself. The crypto is `cryptography`'s Ed25519 and
the standard library's HMAC; nothing here is hand-written crypto.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from datetime import datetime
from typing import Any

ALGORITHM = "Ed25519"
SIGNATURE_KEY = "signature"
# What each kind of document chains: the evidence behind its verdicts.
EVIDENCE = {"artifact": "observations", "receipt": "stores"}


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
    return hashlib.sha256(_raw_public(_public_key(public_pem))).hexdigest()[:16]


def _raw_public(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def _mac(salt: bytes, *parts: bytes) -> str:
    digest = hmac.new(salt, digestmod=hashlib.sha256)
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))  # unambiguous concatenation
        digest.update(part)
    return digest.hexdigest()


def _digests(document: dict[str, Any], kind: str,
             salt: bytes) -> tuple[dict[str, str], list[str]]:
    evidence_key = EVIDENCE[kind]
    sections = {key: _mac(salt, key.encode(), canonical(value))
                for key, value in document.items()
                if key not in (SIGNATURE_KEY, evidence_key)}
    chain: list[str] = []
    previous = b""
    for entry in document.get(evidence_key) or []:
        link = _mac(salt, previous, canonical(entry))
        chain.append(link)
        previous = link.encode()
    return sections, chain


def kind_of(document: dict[str, Any]) -> str:
    if "observations" in document and "meta" in document:
        return "artifact"
    if "check_id" in document and "stores" in document:
        return "receipt"
    raise SignatureError("neither a run artifact nor an erasure receipt")


def sign(document: dict[str, Any], private_pem: bytes, signed_at: datetime) -> dict[str, Any]:
    """The document with its signature block (any earlier one replaced)."""
    key = _private_key(private_pem)
    kind = kind_of(document)
    body = {k: v for k, v in document.items() if k != SIGNATURE_KEY}
    salt = secrets.token_bytes(32)
    sections, chain = _digests(body, kind, salt)
    public_raw = _raw_public(key.public_key())
    block = {"algorithm": ALGORITHM, "kind": kind,
             "key_id": hashlib.sha256(public_raw).hexdigest()[:16],
             "signed_at": signed_at.isoformat(), "salt": salt.hex(), "sections": sections,
             "evidence": EVIDENCE[kind], "chain": chain}
    signed = {**body, SIGNATURE_KEY: block}
    block["value"] = base64.b64encode(key.sign(canonical(signed))).decode("ascii")
    return signed


def verify(document: dict[str, Any], public_pem: bytes) -> list[str]:
    """Every way the document does not match its signature; empty when it verifies."""
    key = _public_key(public_pem)
    block = document.get(SIGNATURE_KEY)
    if not isinstance(block, dict):
        raise SignatureError("the document is not signed (it has no signature block)")
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
    if block.get("key_id") != hashlib.sha256(_raw_public(key)).hexdigest()[:16]:
        problems.append(f"signed with key {block.get('key_id')}, not the given public key "
                        f"({key_id(public_pem)})")
    body = {k: v for k, v in document.items() if k != SIGNATURE_KEY}
    sections, chain = _digests(body, kind, salt)
    for name in sorted(set(sections) | set(stored_sections)):
        if name not in stored_sections:
            problems.append(f"section {name!r} was added after signing")
        elif name not in sections:
            problems.append(f"section {name!r} was removed after signing")
        elif sections[name] != stored_sections[name]:
            problems.append(f"section {name!r} changed after signing")
    evidence = EVIDENCE[kind]
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
    if index >= len(entries) or not isinstance(entries[index], dict):
        return f"entry {index}"
    entry = entries[index]
    if evidence == "observations":
        return (f"pair {entry.get('pair')}, step {entry.get('step')}, seq {entry.get('seq')}, "
                f"{entry.get('kind')}")
    return f"store {entry.get('store')!r}"
