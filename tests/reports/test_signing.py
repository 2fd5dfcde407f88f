"""Signed artifacts and receipts (memlife/reports/signing.py): what verifies, and that any
change to evidence, a verdict, a timestamp or the order of observations is named."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memlife.reports.signing import (
    SignatureError,
    canonical,
    generate_key_pair,
    sign,
    verify,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SIGNED_AT = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def keys() -> tuple[bytes, bytes]:
    return generate_key_pair()


@pytest.fixture(scope="module")
def artifact() -> dict[str, Any]:
    return json.loads((FIXTURES / "artifact-seed-leak.json").read_text())


def receipt() -> dict[str, Any]:
    return {"check_id": "c1", "tenant": "tenant[x]", "target_name": "reference",
            "target_base_url": "http://127.0.0.1:8080",
            "values": ["value #1 (sha256 5d41402abc4b2a76)"],
            "started_at": "2026-12-01T02:00:00Z", "deadline_at": "2026-12-02T02:00:00Z",
            "poll_s": 900.0, "verdict": "fail", "reasons": ["residue remains in graph"],
            "stores": [
                {"store": "memory", "status": "clean", "queries": ["needle value #1"],
                 "found": [], "clean_since": "2026-12-01T02:31:00Z", "rounds": 3},
                {"store": "graph", "status": "residue", "queries": ["needle value #1"],
                 "found": ["1 record holds value #1"], "rounds": 3}]}


def test_a_signed_artifact_and_receipt_verify(keys: tuple[bytes, bytes],
                                              artifact: dict[str, Any]) -> None:
    private, public = keys
    for document, evidence in ((artifact, "observations"), (receipt(), "stores")):
        signed = sign(document, private, SIGNED_AT)
        assert verify(signed, public) == []
        # Through a file and back, as an auditor gets it.
        assert verify(json.loads(json.dumps(signed, indent=2)), public) == []
        block = signed["signature"]
        assert block["algorithm"] == "Ed25519" and block["evidence"] == evidence
        assert len(block["chain"]) == len(document[evidence])
        assert {k: v for k, v in signed.items() if k != "signature"} == document


def _tampered(signed: dict[str, Any], change: Any) -> dict[str, Any]:
    copied = copy.deepcopy(signed)
    change(copied)
    return copied


def _swap(entries: list[Any]) -> None:
    entries[3], entries[4] = entries[4], entries[3]


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: d["observations"][9].update(reply=d["observations"][9]["reply"] + "."),
     "observations entry 9 (pair 0, step 2, seq 10, probe) changed"),
    (lambda d: _swap(d["observations"]), "observations entry 3 ("),
    (lambda d: d["observations"].pop(), "observations: 14 entries were signed, the document "
     "has 13"),
    (lambda d: d["summary"].update(passed=True), "section 'summary' changed after signing"),
    (lambda d: d["failures"][0].update(reason="slow"), "section 'failures' changed"),
    (lambda d: d["meta"].update(started_at="2026-11-30T03:25:38.000000Z"),
     "section 'meta' changed after signing"),
    (lambda d: d.update(note="added"), "section 'note' was added after signing"),
    (lambda d: d["signature"].update(signed_at="2027-01-01T00:00:00+00:00"),
     "the signature does not match: the signature block was altered"),
])
def test_every_change_is_named(keys: tuple[bytes, bytes], artifact: dict[str, Any],
                               change: Any, expected: str) -> None:
    private, public = keys
    signed = sign(artifact, private, SIGNED_AT)
    assert len(signed["observations"]) == 14
    problems = verify(_tampered(signed, change), public)
    assert problems and any(expected in problem for problem in problems), problems


def test_a_receipts_changed_evidence_or_verdict_is_named(keys: tuple[bytes, bytes]) -> None:
    private, public = keys
    signed = sign(receipt(), private, SIGNED_AT)
    evidence = verify(_tampered(signed, lambda d: d["stores"][1].update(found=[])), public)
    assert evidence == ["stores entry 1 (store 'graph') changed, moved or was replaced after "
                        "signing: the hash chain breaks there"]
    verdict = verify(_tampered(signed, lambda d: d.update(verdict="pass")), public)
    assert verdict == ["section 'verdict' changed after signing"]


def test_another_key_does_not_verify_and_bad_input_is_refused(
        keys: tuple[bytes, bytes]) -> None:
    private, _ = keys
    _, other_public = generate_key_pair()
    signed = sign(receipt(), private, SIGNED_AT)
    problems = verify(signed, other_public)
    assert problems and "not the given public key" in problems[0]
    with pytest.raises(SignatureError, match="not signed"):
        verify(receipt(), other_public)
    with pytest.raises(SignatureError, match="PEM public key"):
        verify(signed, b"-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n")
    with pytest.raises(SignatureError, match="neither a run artifact nor an erasure receipt"):
        sign({"a": 1}, private, SIGNED_AT)


def test_the_hashes_are_salted_so_they_confirm_no_guess(keys: tuple[bytes, bytes]) -> None:
    private, _ = keys
    first, second = (sign(receipt(), private, SIGNED_AT)["signature"] for _ in range(2))
    assert first["salt"] != second["salt"]
    assert set(first["chain"]).isdisjoint(second["chain"])
    assert set(first["sections"].values()).isdisjoint(second["sections"].values())
    # No hash is a plain digest of what it covers.
    import hashlib

    plain = {hashlib.sha256(canonical(entry)).hexdigest() for entry in receipt()["stores"]}
    assert plain.isdisjoint(first["chain"])
