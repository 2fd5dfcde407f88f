"""Signing through the CLI: `memlife keygen`, `memlife run --sign`, `memlife verify`, and
bad input refused before anything starts (the receipt's turn is in test_operations.py)."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

from tests.e2e.test_memlife_run import SEED, memlife


def test_keygen_sign_a_run_verify_it_and_catch_an_edit(tmp_path: Path) -> None:
    made = memlife("keygen", "--out", "keys", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    private, public = tmp_path / "keys" / "memlife-signing.key", "keys/memlife-signing.pub"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    again = memlife("keygen", "--out", "keys", cwd=tmp_path)
    assert again.returncode == 2 and "never overwrites a key" in again.stderr
    # Refused before anything starts: no --out, a key that is not one.
    no_out = memlife("run", str(SEED), "--sign", str(private), cwd=tmp_path)
    assert no_out.returncode == 2 and "--sign: signs what --out writes" in no_out.stderr
    (tmp_path / "not-a-key").write_text("hello")
    bad = memlife("run", str(SEED), "--out", "r.json", "--sign", "not-a-key", cwd=tmp_path)
    assert bad.returncode == 2 and "not-a-key: not an unencrypted PEM private key" in bad.stderr
    assert not (tmp_path / ".memlife").exists() and "Traceback" not in bad.stderr

    # The skipped clock: what is signed is the artifact, whichever clock made it.
    run = memlife(
        "run",
        str(SEED),
        "--clock",
        "skip",
        "--out",
        "r.json",
        "--sign",
        str(private),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"artifact: r.json \(\d+(\.\d)? KB, signed; ", run.stdout), run.stdout
    verified = memlife("verify", "r.json", "--public-key", public, cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "VERIFIED: artifact signed by key" in verified.stdout
    # One character of one reply changed: named, exit 1.
    document = json.loads((tmp_path / "r.json").read_text())
    probe = next(i for i, o in enumerate(document["observations"]) if o["kind"] == "probe")
    document["observations"][probe]["reply"] += "!"
    (tmp_path / "edited.json").write_text(json.dumps(document))
    edited = memlife("verify", "edited.json", "--public-key", public, cwd=tmp_path)
    assert edited.returncode == 1
    assert f"observations entry {probe} (" in edited.stdout and "NOT VERIFIED" in edited.stdout
    # A document never signed, or a key that is not one: exit 2, one line.
    (tmp_path / "plain.json").write_text(
        json.dumps({k: v for k, v in document.items() if k != "signature"})
    )
    plain = memlife("verify", "plain.json", "--public-key", public, cwd=tmp_path)
    assert plain.returncode == 2 and "not signed" in plain.stderr
    assert len(plain.stderr.strip().splitlines()) == 1
    # A file cut short: not JSON, exit 2, one line, no traceback.
    text = (tmp_path / "r.json").read_text()
    (tmp_path / "cut.json").write_text(text[: len(text) // 2])
    cut = memlife("verify", "cut.json", "--public-key", public, cwd=tmp_path)
    assert cut.returncode == 2 and "cut.json: not JSON (" in cut.stderr, cut.stderr
    assert len(cut.stderr.strip().splitlines()) == 1 and "Traceback" not in cut.stderr
