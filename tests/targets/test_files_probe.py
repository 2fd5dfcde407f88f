"""The files probe's byte scan: values found as written, as normalized and in the encodings
asked for, across chunk boundaries; unreadable directories are errors, never absence; and
a real SQLite database keeps a deleted row's bytes on disk unless it overwrites them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memlife.targets import files
from memlife.targets.files import FilesProbeError, data_directory, scan
from memlife.targets.http import MissingSecret

VALUE = "Ñandú Azul 7Q"


def test_finds_each_value_as_written_and_normalized(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_bytes(b"xx " + VALUE.encode() + b" yy")
    (tmp_path / "index.bin").write_bytes(b"\x00\x01nandu azul 7q\x00")
    (tmp_path / "other.txt").write_bytes(b"nothing here")
    records, total, _ = scan(tmp_path, ["*"], [VALUE, "absent value"], ["utf-8"], 10)
    assert total == 2
    assert {(r["file"], r["needle"]) for r in records} == {("log.txt", 0), ("index.bin", 0)}
    by_file = {r["file"]: r for r in records}
    assert by_file["log.txt"]["offset"] == 3 and by_file["log.txt"]["id"] == "log.txt@3"
    assert VALUE in by_file["log.txt"]["content"]
    assert "nandu azul 7q" in by_file["index.bin"]["content"]
    assert "\x00" not in by_file["index.bin"]["content"]  # control bytes blanked


def test_other_encodings_only_when_asked(tmp_path: Path) -> None:
    (tmp_path / "page.dat").write_bytes(b"\xff" + VALUE.encode("utf-16-le") + b"\x00\x00")
    assert scan(tmp_path, ["*"], [VALUE], ["utf-8"], 10)[1] == 0
    records, total, _ = scan(tmp_path, ["*"], [VALUE], ["utf-8", "utf-16-le"], 10)
    assert total == 1 and VALUE in records[0]["content"]


def test_a_value_straddling_two_chunks_is_found_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "CHUNK_BYTES", 1000)
    data = bytearray(b"." * 5000)
    for start in (995, 2000, 4990 - len(VALUE.encode())):
        data[start : start + len(VALUE.encode())] = VALUE.encode()
    (tmp_path / "big.log").write_bytes(bytes(data))
    records, total, _ = scan(tmp_path, ["*"], [VALUE], ["utf-8"], 10)
    assert total == 3
    assert sorted(r["offset"] for r in records) == [995, 2000, 4990 - len(VALUE.encode())]


def test_include_patterns_and_the_hit_cap(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("a.db", "a.db-wal", "sub/b.db", "notes.txt"):
        (tmp_path / name).write_bytes(((VALUE + " ") * 3).encode())
    records, total, _ = scan(tmp_path, ["*.db", "*.db-wal"], [VALUE], ["utf-8"], 4)
    assert total == 9 and len(records) == 4  # counted beyond what is returned
    assert {r["file"] for r in scan(tmp_path, ["*.db"], [VALUE], ["utf-8"], 50)[0]} == {
        "a.db",
        "sub/b.db",
    }


def test_an_unreadable_store_is_an_error_never_absence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(FilesProbeError, match="does not exist"):
        data_directory(str(tmp_path / "missing"), None)
    monkeypatch.delenv("MEMLIFE_TEST_DATA_DIR", raising=False)
    with pytest.raises(MissingSecret, match="MEMLIFE_TEST_DATA_DIR"):
        data_directory(None, "MEMLIFE_TEST_DATA_DIR")
    monkeypatch.setenv("MEMLIFE_TEST_DATA_DIR", str(tmp_path))
    assert data_directory(None, "MEMLIFE_TEST_DATA_DIR") == tmp_path
    # A file that cannot be opened (here a directory where a file was listed) is an error.
    (tmp_path / "odd.db").mkdir()
    monkeypatch.setattr(files, "_files", lambda root, include: [root / "odd.db"])
    with pytest.raises(FilesProbeError, match="cannot read odd.db"):
        scan(tmp_path, ["*"], [VALUE], ["utf-8"], 10)


def test_a_file_removed_since_the_listing_is_skipped_and_the_rest_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's rollback journal lives for one transaction: listed, then gone. Its bytes
    are no longer in the directory; every file still there is read."""
    (tmp_path / "store.db").write_bytes(b"..." + VALUE.encode() + b"...")
    listed = [tmp_path / "store.db-journal", tmp_path / "store.db"]
    monkeypatch.setattr(files, "_files", lambda root, include: listed)
    records, total, _ = scan(tmp_path, ["*"], [VALUE], ["utf-8"], 10)
    assert total == 1 and records[0]["file"] == "store.db"
    assert files.inventory(tmp_path, ["*"]) == (1, (tmp_path / "store.db").stat().st_size)


@pytest.mark.parametrize("secure_delete", [False, True])
def test_sqlite_keeps_deleted_bytes_unless_it_overwrites_them(
    tmp_path: Path, secure_delete: bool
) -> None:
    database = sqlite3.connect(tmp_path / "memory.db")
    database.execute("PRAGMA journal_mode=WAL")
    database.execute(f"PRAGMA secure_delete={'ON' if secure_delete else 'OFF'}")
    database.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, text TEXT)")
    database.executemany(
        "INSERT INTO memories(text) VALUES (?)", [(f"filler memory {n} " * 20,) for n in range(50)]
    )
    database.execute("INSERT INTO memories(text) VALUES (?)", (f"my pet is {VALUE}",))
    database.commit()
    database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    database.execute("DELETE FROM memories WHERE text LIKE 'my pet%'")
    database.commit()
    database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert database.execute(
        "SELECT count(*) FROM memories WHERE text LIKE ?", (f"%{VALUE}%",)
    ).fetchone() == (0,)  # logically gone
    database.close()
    _, total, _ = scan(tmp_path, ["*"], [VALUE], ["utf-8"], 10)
    assert (total == 0) is secure_delete


def test_a_value_a_writer_reworded_is_found_in_its_other_forms(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes(
        "a: C/ Arriaga, nº 1.234 · b: ARRIAGA-QUISPE, Inés · c: C/ Arriaga 12345\n"
        "d: Avda. Olmedo y Zamora 77".encode()
    )
    needles = [
        "calle Arriaga 1234",
        "Inés Arriaga Quispe",
        "avenida Olmedo Zamora 77",
        "calle Olmedo 1234",
    ]
    records, total, _ = scan(tmp_path, ["*"], needles, ["utf-8"], 10)
    assert total == 3  # not "C/ Arriaga 12345" (another number), not the absent value
    contents = [r["content"] for r in records]
    assert [r["needle"] for r in records] == [None, None, None]  # none as written
    assert any("C/ Arriaga, nº 1.234" in c for c in contents)
    assert any("ARRIAGA-QUISPE, Inés" in c for c in contents)
    assert any("Avda. Olmedo y Zamora 77" in c for c in contents)
    # Read as UTF-16 only, the scan looks for values as written.
    assert scan(tmp_path, ["*"], needles, ["utf-16-le"], 10)[1] == 0


def test_a_reworded_value_straddling_two_chunks_is_found_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "CHUNK_BYTES", 1000)
    written = "C/ Arriaga, nº 1.234".encode()
    data = bytearray(b"." * 5000)
    for start in (990, 3000):
        data[start : start + len(written)] = written
    (tmp_path / "big.log").write_bytes(bytes(data))
    records, total, _ = scan(tmp_path, ["*"], ["calle Arriaga 1234"], ["utf-8"], 10)
    assert total == 2 and sorted(r["offset"] for r in records) == [990, 3000]
