"""Headless Chromium for the page tests, from the project's own script
(scripts/ensure-chromium installs Debian's package where it is missing)."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# What the browser needs on a machine without a display or a network beyond loopback:
# no sandbox (root), no GPU, and none of the background fetches a closed network refuses.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


@functools.cache
def chromium() -> str:
    """The browser's path, installing it first when the machine has none."""
    found = subprocess.run(
        [str(REPO / "scripts" / "ensure-chromium")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert found.returncode == 0, found.stderr
    return found.stdout.strip().splitlines()[-1]


def screenshot(
    url: str,
    out: Path,
    profile: Path,
    width: int = 1200,
    height: int = 900,
    virtual_time_ms: int | None = None,
) -> None:
    """A PNG of `url` as Chromium renders it (a fresh profile in `profile`; a single-page
    app such as the Temporal Web UI: after `virtual_time_ms` of its scripts). Headless
    Chromium now and then never exits on a loaded machine (seen once in a full suite run,
    after 120 s): it is stopped, its whole process group by its PID, and started once more
    with a fresh profile."""
    errors = ""
    for attempt in (1, 2):
        command = [
            chromium(),
            *FLAGS,
            f"--user-data-dir={profile}-{attempt}",
            f"--window-size={width},{height}",
            *([f"--virtual-time-budget={virtual_time_ms}"] if virtual_time_ms else []),
            f"--screenshot={out}",
            url,
        ]
        with subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ) as browser:
            try:
                _, errors = browser.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(browser.pid, signal.SIGKILL)
                browser.communicate()
                continue
        assert browser.returncode == 0 and out.exists(), errors[-2000:]
        return
    raise AssertionError(f"Chromium did not finish a screenshot of {url} twice in a row")


def rendered_text_rows(url: str, profile: Path) -> list[str]:
    """The text of each table row of `url` once its scripts have run (a single-page app
    such as the Temporal Web UI), tags stripped and white space folded."""
    import html
    import re

    result = subprocess.run(
        [
            chromium(),
            *FLAGS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=20000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = re.findall(r"<tr[^>]*>.*?</tr>", result.stdout, re.S)
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", row)).split()) for row in rows]
