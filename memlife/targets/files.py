"""Physical residue: a byte-level scan of a store's data directory for a run's values.

A store can be logically clean — no query returns a deleted tenant's rows — while its files
still hold the bytes: SQLite free pages and WAL frames, PostgreSQL dead tuples, append-only
logs, segment files awaiting compaction. This reads every file under the directory (read
only, in chunks, never memory-mapped: a file may shrink while it is read) and reports each
place a value occurs, in UTF-8 as written and as memlife normalizes it (what search columns
often store), and in any other encoding the probe names.

A directory or file that cannot be read is an error: the read is inconclusive, never
"absent".
"""

from __future__ import annotations

import functools
import os
import re
import time
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from memlife.rules.scoring import normalize
from memlife.rules.variants import CANONICAL_WORD, forms
from memlife.targets.http import TargetError, required_env

CHUNK_BYTES = 8 * 1024 * 1024
EXCERPT_BYTES = 48  # on each side of a hit


class FilesProbeError(TargetError):
    """The data directory (or a file in it) could not be read; the read is inconclusive."""


def data_directory(path: str | None, path_env: str | None) -> Path:
    """The directory a files probe scans: written in the target file, or named by an
    environment variable read here, on the worker."""
    if path_env is not None:
        path = required_env(path_env, "a files probe's data directory")
    assert path is not None
    root = Path(path).expanduser()
    if not root.is_dir():
        raise FilesProbeError(f"data directory {root} does not exist or is not a directory")
    return root


def _files(root: Path, include: list[str]) -> list[Path]:
    found = []
    for directory, _, names in os.walk(root, onerror=_raise):
        for name in names:
            path = Path(directory) / name
            relative = path.relative_to(root).as_posix()
            if any(fnmatch(relative, pattern) or fnmatch(name, pattern) for pattern in include):
                found.append(path)
    return sorted(found)


def inventory(root: Path, include: list[str]) -> tuple[int, int]:
    """How many files a scan reads, and how many bytes."""
    count = size = 0
    for path in _files(root, include):
        try:
            size += path.stat().st_size
        except FileNotFoundError:
            continue  # removed since the listing
        except OSError as error:
            raise FilesProbeError(f"cannot read {error.filename}: {error.strerror}") from None
        count += 1
    return count, size


def _raise(error: OSError) -> None:
    raise FilesProbeError(f"cannot list {error.filename}: {error.strerror}")


def _patterns(needles: list[str], encodings: list[str]) -> dict[bytes, int]:
    """Every byte pattern that betrays a needle, and which needle it is."""
    patterns: dict[bytes, int] = {}
    for index, needle in enumerate(needles):
        for form in dict.fromkeys((needle, normalize(needle))):
            if not form.strip():
                continue
            for encoding in encodings:
                patterns.setdefault(form.encode(encoding), index)
    return patterns


# Bytes that are not part of a word, in UTF-8: what may stand between a form's words.
_NOT_WORD = rb"[^0-9A-Za-z\x80-\xff]"
# What a writer may put between a form's words and the canonical text leaves out: a mark
# before a number (nº, No., núm.) or a joining word (y, and).
_BETWEEN = (
    rb"(?:" + _NOT_WORD + rb"{1,4}(?:(?:n\.?\xc2\xba|\xc2\xba|n\xc3\xbam|numero|"
    rb"n\xc3\xbamero|number|nro|nr|no|num|y|and)\.?" + _NOT_WORD + rb"{0,3})?)"
)


@functools.lru_cache(maxsize=1)
def _letters() -> dict[str, bytes]:
    """Each ASCII letter as a byte pattern for every Latin letter that folds to it, either
    case (`a`: a, A, á, Á, à, ä, …), as memlife normalizes (unidecode)."""
    from unidecode import unidecode

    ways: dict[str, set[str]] = {}
    for code in range(0xC0, 0x250):
        char = chr(code)
        folded = unidecode(char).lower()
        if len(folded) == 1 and folded.isalpha():
            ways.setdefault(folded, set()).add(char)
    return {
        letter: rb"(?:"
        + b"|".join(
            sorted(re.escape(c.encode()) for c in {letter, letter.upper(), *ways.get(letter, ())})
        )
        + rb")"
        for letter in "abcdefghijklmnopqrstuvwxyz"
    }


def _form_pattern(form: str) -> bytes:
    """A byte pattern for a form (rules/variants.py): each word in any of its ways (accents,
    case, abbreviations), digits with any grouping, anything not a word between them."""
    letters = _letters()
    words = []
    for word in form.split():
        if word.isdigit():
            words.append(rb"[\s.,\-/()]{0,2}".join(d.encode() for d in word))
            continue
        ways = [word, *(w for w, canonical in CANONICAL_WORD.items() if canonical == word)]
        words.append(
            rb"(?:"
            + b"|".join(
                b"".join(letters.get(ch, re.escape(ch.encode())) for ch in way)
                for way in sorted(ways, key=len, reverse=True)
            )
            + rb")"
        )
    return rb"(?<![0-9A-Za-z\x80-\xff])" + _BETWEEN.join(words) + rb"(?![0-9A-Za-z\x80-\xff])"


class _Reworded:
    """One form's byte pattern, and a word it cannot be written without (lowercase ASCII,
    as the value spells it): the scan looks for the pattern only around that word, so a
    form costs about what a value does (the pattern alone, everywhere, cost 40 times the
    whole literal scan)."""

    def __init__(self, pattern: bytes, anchor: bytes | None) -> None:
        self.pattern = re.compile(pattern)
        self.anchor = anchor

    def finditer(
        self, buffer: bytes, lowered: bytes, start: int, end: int
    ) -> list[re.Match[bytes]]:
        if self.anchor is None:
            return list(self.pattern.finditer(buffer, start, end + _WINDOW))
        found, at = {}, lowered.find(self.anchor, max(0, start - _WINDOW))
        while at != -1 and at < end + _WINDOW:
            for match in self.pattern.finditer(
                buffer, max(start, at - _WINDOW), min(len(buffer), at + _WINDOW)
            ):
                found.setdefault(match.start(), match)
            at = lowered.find(self.anchor, at + 1)
        return [found[key] for key in sorted(found)]


# How far a reworded value may reach on either side of its anchor word, in bytes.
_WINDOW = 256


def _form_patterns(needles: list[str], encodings: list[str]) -> list[_Reworded]:
    """The needles' other forms as byte patterns, where the files are read as UTF-8 (or
    ASCII): a value a writer reworded before storing it is residue too."""
    if not any(e.replace("-", "").lower() in ("utf8", "ascii") for e in encodings):
        return []
    made: dict[bytes, _Reworded] = {}
    for needle in needles:
        # The value's own words that every writing keeps as they are (ASCII, no way to
        # abbreviate them), longest first: the rarest anchor.
        spelled = sorted(
            {
                word.lower()
                for word in re.findall(r"[A-Za-z]{4,}", needle)
                if word.lower() not in CANONICAL_WORD
                and word.lower() not in CANONICAL_WORD.values()
            },
            key=len,
            reverse=True,
        )
        for form in forms(needle):
            pattern = _form_pattern(form.text)
            if pattern not in made:
                anchor = next((w for w in spelled if w in form.text.split()), None)
                made[pattern] = _Reworded(pattern, anchor.encode() if anchor else None)
    return list(made.values())


def scan(
    root: Path, include: list[str], needles: list[str], encodings: list[str], max_hits: int
) -> tuple[list[dict[str, Any]], int, float]:
    """(the first max_hits hits as records, how many hits there were, latency in ms).

    A record per hit: `id` (file@offset), `file` (relative path), `offset`, `bytes` (the
    file's size) and `content` (the bytes around the hit, decoded). Blocking: run it in a
    thread.
    """
    started = time.perf_counter()
    patterns = _patterns(needles, encodings)
    if not patterns:
        return [], 0, 0.0
    reworded = _form_patterns(needles, encodings)
    # A hit that may run on past a chunk's end: the longest value, or a reworded one
    # around its anchor.
    longest = max(max(len(pattern) for pattern in patterns), 2 * _WINDOW if reworded else 0)
    # Longest first: where one pattern contains another, the longer hit is the one named.
    finder = re.compile(b"|".join(re.escape(p) for p in sorted(patterns, key=len, reverse=True)))
    records: list[dict[str, Any]] = []
    total = 0
    for path in _files(root, include):
        relative = path.relative_to(root).as_posix()
        try:
            with open(path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                offset = 0  # file offset of buffer[0]
                start_at = 0  # where hits not yet counted may start, in buffer
                buffer = b""
                while True:
                    chunk = handle.read(CHUNK_BYTES)
                    buffer += chunk
                    final = not chunk
                    # A hit that may still run on into the next chunk waits for it.
                    limit = len(buffer) if final else max(start_at, len(buffer) - longest + 1)
                    hits: dict[int, re.Match[bytes]] = {}
                    for match in finder.finditer(buffer, start_at):
                        if match.start() >= limit:
                            break
                        hits[match.start()] = match
                    # Then the other forms, where no value as written was found.
                    lowered = buffer.lower() if reworded else b""
                    for form in reworded:
                        for match in form.finditer(buffer, lowered, start_at, limit):
                            if start_at <= match.start() < limit and not any(
                                hit.start() <= match.start() < hit.end()
                                or match.start() <= hit.start() < match.end()
                                for hit in hits.values()
                            ):
                                hits[match.start()] = match
                    for start in sorted(hits):
                        total += 1
                        if len(records) < max_hits:
                            records.append(
                                _record(
                                    relative, size, offset, buffer, hits[start], patterns, encodings
                                )
                            )
                    if final:
                        break
                    # Keep what the next round needs: a hit's start, and its excerpt.
                    drop = max(0, min(limit, len(buffer) - (longest + EXCERPT_BYTES)))
                    buffer, offset, start_at = buffer[drop:], offset + drop, limit - drop
        except FileNotFoundError:
            # Removed since the listing (SQLite's rollback journal lives for one
            # transaction): its bytes are no longer in the directory. Not a failed read.
            continue
        except OSError as error:
            raise FilesProbeError(f"cannot read {relative}: {error.strerror or error}") from None
    return records, total, (time.perf_counter() - started) * 1000


def _record(
    relative: str,
    size: int,
    offset: int,
    buffer: bytes,
    match: re.Match[bytes],
    patterns: dict[bytes, int],
    encodings: list[str],
) -> dict[str, Any]:
    found = match.group(0)
    encoding = next((e for e in encodings if _decodes(found, e)), "utf-8")
    width = 2 if encoding.replace("-", "").lower().startswith("utf16") else 1
    before = min(match.start(), EXCERPT_BYTES) // width * width
    around = buffer[match.start() - before : match.end() + EXCERPT_BYTES]
    around = around[: len(around) // width * width]
    content = around.decode(encoding, errors="replace")
    # Control bytes of a binary file would only garble the excerpt.
    content = "".join(ch if ch.isprintable() else " " for ch in content)
    position = offset + match.start()
    # A reworded hit names no needle by its bytes: the reader matches its content
    # (activities/stores.py), forms included.
    return {
        "id": f"{relative}@{position}",
        "file": relative,
        "offset": position,
        "bytes": size,
        "needle": patterns.get(found),
        "content": content,
    }


def _decodes(data: bytes, encoding: str) -> bool:
    try:
        data.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True
