"""The benchmark refuses an --out it could not write before it measures anything (a full
run takes a quarter of an hour)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.__main__ import main, parse_args


async def test_an_out_in_a_missing_directory_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "missing" / "BENCH.md"
    assert await main(parse_args(["--out", str(out)])) == 2
    assert f"--out: directory {out.parent} does not exist" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_every_run_skips_time_unless_told_to_compress() -> None:
    assert parse_args([]).clock.mode == "skip"
    assert parse_args(["--clock", "compress=10000"]).clock.describe() == "compress=10000"


@pytest.mark.parametrize("clock", ["real", "compress=0", "fast"])
def test_a_clock_no_bench_can_use_is_refused(
    clock: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--clock", clock])
    assert exit_info.value.code == 2
    assert "--clock" in capsys.readouterr().err
