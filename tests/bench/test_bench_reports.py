"""The reports section of BENCHMARKS.md: each format's cost beside the smallest run's."""

from __future__ import annotations

from bench.reports import render_lines


def row(fmt: str, pairs: int, seconds: float, rss: float) -> dict:
    return {"run_id": f"r{pairs}", "format": fmt, "pairs": pairs, "cases": pairs * 145,
            "not_passed": 0, "seconds": seconds, "peak_rss_mb": rss, "output_bytes": 10**6,
            "command": "./scripts/bench reports r100 r400", "measured_at": "now"}


def test_each_format_is_shown_beside_its_smallest_run() -> None:
    lines = render_lines([row("html", 400, 8.0, 99.0), row("json", 100, 2.0, 80.0),
                          row("json", 400, 6.0, 88.0), row("html", 100, 2.0, 90.0)])
    table = [line for line in lines if line.startswith("| json") or line.startswith("| html")]
    assert table == [
        "| json | 100 | 14,500 (0) | 2.0 s | 80 MB | 1.0 MB | 1.00 | 1.00 |",
        "| json | 400 | 58,000 (0) | 6.0 s | 88 MB | 1.0 MB | 3.00 | 1.10 |",
        "| html | 100 | 14,500 (0) | 2.0 s | 90 MB | 1.0 MB | 1.00 | 1.00 |",
        "| html | 400 | 58,000 (0) | 8.0 s | 99 MB | 1.0 MB | 4.00 | 1.10 |"]
    assert any("`./scripts/bench reports r100 r400`" in line for line in lines)
    assert render_lines([]) == []
