"""bench/materialize.py: both ways of drawing a run's pairs write the same rows, so that
their memory is compared for the same work."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from bench.materialize import main, measure
from memlife import recorder


def _rows(url: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with recorder.engine_for(url).connect() as db:
        pairs = db.execute(
            text("SELECT pair_index, pair_json FROM run_pairs ORDER BY pair_index")
        ).all()
        values = db.execute(
            text("SELECT id, pair_index, alias, domain, text FROM run_values ORDER BY id")
        ).all()
    return [tuple(row) for row in pairs], [tuple(row) for row in values]


def test_chunked_and_whole_draw_the_same_pairs_and_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = {}
    for mode in ("chunked", "whole"):
        url = f"sqlite:///{tmp_path / mode}.db"
        monkeypatch.setenv("MEMLIFE_DB_URL", url)
        figures = measure(mode, 7)
        assert figures["pairs"] == 7 and figures["peak_mb"] >= figures["rss_before_mb"]
        written[mode] = _rows(url)
    assert len(written["chunked"][0]) == 7
    assert written["chunked"] == written["whole"]


def test_the_command_reports_both_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--pairs", "5"]) == 0
    out = capsys.readouterr().out
    assert "chunked: 5 pairs in" in out and "whole: 5 pairs in" in out
    assert "peak growth, chunked / whole: " in out
