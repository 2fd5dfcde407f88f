"""Signed artifacts and receipts (memlife/reports/signing.py, verifying.py): what verifies,
whole or read from a file as a stream, and that any change to evidence, a verdict, a
timestamp or the order of observations is named; documents signed in format 1 still
verify."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memlife.reports import signing
from memlife.reports.signing import SignatureError, canonical, generate_key_pair, sign
from memlife.reports.verifying import verify, verify_file

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SIGNED_AT = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def keys() -> tuple[bytes, bytes]:
    return generate_key_pair()


@pytest.fixture(scope="module")
def artifact() -> dict[str, Any]:
    return json.loads((FIXTURES / "artifact-seed-leak.json").read_text())


def receipt() -> dict[str, Any]:
    return {
        "check_id": "c1",
        "tenant": "tenant[x]",
        "target_name": "reference",
        "target_base_url": "http://127.0.0.1:8080",
        "values": ["value #1 (sha256 5d41402abc4b2a76)"],
        "started_at": "2026-12-01T02:00:00Z",
        "deadline_at": "2026-12-02T02:00:00Z",
        "poll_s": 900.0,
        "verdict": "fail",
        "reasons": ["residue remains in graph"],
        "stores": [
            {
                "store": "memory",
                "status": "clean",
                "queries": ["needle value #1"],
                "found": [],
                "clean_since": "2026-12-01T02:31:00Z",
                "rounds": 3,
            },
            {
                "store": "graph",
                "status": "residue",
                "queries": ["needle value #1"],
                "found": ["1 record holds value #1"],
                "rounds": 3,
            },
        ],
    }


def test_a_signed_artifact_and_receipt_verify(
    keys: tuple[bytes, bytes], artifact: dict[str, Any]
) -> None:
    private, public = keys
    for document, evidence in ((artifact, "observations"), (receipt(), "stores")):
        signed = sign(document, private, SIGNED_AT)
        assert verify(signed, public) == []
        # Through a file and back, as an auditor gets it.
        assert verify(json.loads(json.dumps(signed, indent=2)), public) == []
        block = signed["signature"]
        assert block["algorithm"] == "Ed25519" and block["evidence"] == evidence
        assert block["format"] == 2 and block["entries"] == len(document[evidence])
        # Few entries: every link is kept, so a change is named to the entry.
        assert block["checkpoint_every"] == 1
        assert len(block["checkpoints"]) == len(document[evidence])
        assert block["checkpoints"][-1] == block["head"]
        assert {k: v for k, v in signed.items() if k != "signature"} == document


def _tampered(signed: dict[str, Any], change: Any) -> dict[str, Any]:
    copied = copy.deepcopy(signed)
    change(copied)
    return copied


def _swap(entries: list[Any]) -> None:
    entries[3], entries[4] = entries[4], entries[3]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["observations"][9].update(reply=d["observations"][9]["reply"] + "."),
            "observations entry 9 (pair 0, step 2, seq 10, probe) changed",
        ),
        (lambda d: _swap(d["observations"]), "observations entry 3 ("),
        (
            lambda d: d["observations"].pop(),
            "observations: 14 entries were signed, the document has 13",
        ),
        (lambda d: d["summary"].update(passed=True), "section 'summary' changed after signing"),
        (lambda d: d["failures"][0].update(reason="slow"), "section 'failures' changed"),
        (
            lambda d: d["meta"].update(started_at="2026-11-30T03:25:38.000000Z"),
            "section 'meta' changed after signing",
        ),
        (lambda d: d.update(note="added"), "section 'note' was added after signing"),
        (
            lambda d: d["signature"].update(signed_at="2027-01-01T00:00:00+00:00"),
            "the signature does not match: the signature block was altered",
        ),
    ],
)
def test_every_change_is_named(
    keys: tuple[bytes, bytes], artifact: dict[str, Any], change: Any, expected: str, tmp_path: Path
) -> None:
    private, public = keys
    signed = sign(artifact, private, SIGNED_AT)
    assert len(signed["observations"]) == 14
    tampered = _tampered(signed, change)
    problems = verify(tampered, public)
    assert problems and any(expected in problem for problem in problems), problems
    # Read from a file as a stream, the same document gets the same words.
    assert _from_file(tampered, public, tmp_path) == problems


def _from_file(document: dict[str, Any], public: bytes, tmp_path: Path) -> list[str]:
    path = tmp_path / "document.json"
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False))
    return verify_file(path, public)[0]


def test_a_receipts_changed_evidence_or_verdict_is_named(keys: tuple[bytes, bytes]) -> None:
    private, public = keys
    signed = sign(receipt(), private, SIGNED_AT)
    evidence = verify(_tampered(signed, lambda d: d["stores"][1].update(found=[])), public)
    assert evidence == [
        "stores entry 1 (store 'graph') changed, moved or was replaced after "
        "signing: the hash chain breaks there"
    ]
    verdict = verify(_tampered(signed, lambda d: d.update(verdict="pass")), public)
    assert verdict == ["section 'verdict' changed after signing"]


def test_another_key_does_not_verify_and_bad_input_is_refused(keys: tuple[bytes, bytes]) -> None:
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
    assert set(first["checkpoints"]).isdisjoint(second["checkpoints"])
    assert set(first["sections"].values()).isdisjoint(second["sections"].values())
    # No hash is a plain digest of what it covers.
    import hashlib

    plain = {hashlib.sha256(canonical(entry)).hexdigest() for entry in receipt()["stores"]}
    assert plain.isdisjoint(first["checkpoints"])


def test_documents_signed_in_format_1_still_verify(tmp_path: Path) -> None:
    """Signed by memlife 8d731af, before format 2: every link in `chain`, the signature
    over the whole document."""
    folder = FIXTURES / "signed-format-1"
    public = (folder / "memlife-signing.pub").read_bytes()
    for name, evidence in (("artifact.json", "observations"), ("receipt.json", "stores")):
        problems, block = verify_file(folder / name, public)
        assert problems == [] and block["evidence"] == evidence and "format" not in block
        document = json.loads((folder / name).read_text())
        document[evidence][1]["changed"] = True
        assert (
            verify(document, public)
            == _from_file(document, public, tmp_path)
            == [
                f"{evidence} entry 1 ({signing.describe(document, evidence, 1)}) changed, moved "
                "or was replaced after signing: the hash chain breaks there"
            ]
        )


def _many_observations(artifact: dict[str, Any], count: int) -> dict[str, Any]:
    template = artifact["observations"][0]
    return {**artifact, "observations": [{**template, "seq": seq} for seq in range(count)]}


def test_a_long_chain_keeps_a_bounded_number_of_links_and_still_finds_a_change(
    keys: tuple[bytes, bytes],
    artifact: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    private, public = keys
    monkeypatch.setattr(signing, "MOST_CHECKPOINTS", 8)  # 8 links, not 2,048: a small test
    signed = sign(_many_observations(artifact, 100), private, SIGNED_AT)
    block = signed["signature"]
    # 100 entries over at most 8 links: every 16th (links 15, 31, ..., 95) and the head.
    assert block["checkpoint_every"] == 16 and len(block["checkpoints"]) == 6
    assert block["entries"] == 100 and verify(signed, public) == []

    def reply(index: int) -> Any:
        return lambda d: d["observations"][index].update(reply="changed")

    for change, expected in (
        (
            reply(40),
            "observations entries 32 to 47 (the first: pair 0, step -1, seq 32, "
            "register; the last: pair 0, step -1, seq 47, register): one of them changed",
        ),
        (reply(97), "observations entries 96 to 99 (the first: pair 0, step -1, seq 96, "),
        (
            lambda d: d["observations"].append(d["observations"][-1]),
            "observations: 100 entries were signed, the document has 101",
        ),
    ):
        tampered = _tampered(signed, change)
        problems = verify(tampered, public)
        assert len(problems) == 1 and problems[0].startswith(expected), problems
        assert _from_file(tampered, public, tmp_path) == problems


def test_a_file_that_repeats_a_field_or_is_not_whole_is_refused(
    keys: tuple[bytes, bytes], tmp_path: Path
) -> None:
    private, public = keys
    text = json.dumps(sign(receipt(), private, SIGNED_AT), indent=2)
    repeated = tmp_path / "repeated.json"
    # JSON keeps the last of two equal keys; a second verdict must not pass unseen.
    repeated.write_text(text.replace('"verdict": "fail"', '"verdict": "pass", "verdict": "fail"'))
    assert "field 'verdict' appears twice in the document" in verify_file(repeated, public)[0]
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(Exception, match="[Ii]ncomplete|premature"):
        verify_file(cut, public)
    never = tmp_path / "never.json"
    never.write_text(json.dumps(receipt()))
    with pytest.raises(SignatureError, match="not signed"):
        verify_file(never, public)


def test_a_long_verification_tells_how_far_it_has_read(
    keys: tuple[bytes, bytes], artifact: dict[str, Any], tmp_path: Path
) -> None:
    private, public = keys
    path = tmp_path / "signed.json"
    path.write_text(json.dumps(sign(artifact, private, SIGNED_AT), indent=2))
    heard: list[str] = []
    problems, _ = verify_file(path, public, progress=heard.append, every_s=0)
    assert problems == []
    assert heard[0].startswith(f"verifying {path}: finding the signature block, ")
    assert heard[-1].startswith(f"verifying {path}: checking, 100% read (")
