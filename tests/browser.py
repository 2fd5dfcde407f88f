"""Headless Chromium for the page tests, from the project's own script
(scripts/ensure-chromium installs Debian's package where it is missing)."""

from __future__ import annotations

import functools
import html
import os
import re
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


def render(
    url: str,
    profile: Path,
    *,
    screenshot: Path | None = None,
    width: int = 1200,
    height: int = 900,
    virtual_time_ms: int | None = None,
) -> str:
    """The DOM of `url` as Chromium renders it (a fresh profile in `profile`; a single-page
    app such as the Temporal Web UI: after `virtual_time_ms` of its scripts), and with
    `screenshot` a PNG of the same page, from one browser: loading the Web UI costs about
    3 CPU-s of a page test's 4, its scripts more than the browser's start. Headless
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
            *([f"--screenshot={screenshot}"] if screenshot else []),
            "--dump-dom",
            url,
        ]
        with subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ) as browser:
            try:
                dom, errors = browser.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(browser.pid, signal.SIGKILL)
                browser.communicate()
                continue
        assert browser.returncode == 0, errors[-2000:]
        assert screenshot is None or screenshot.exists(), errors[-2000:]
        return dom
    raise AssertionError(f"Chromium did not finish rendering {url} twice in a row")


def text_of(dom: str) -> str:
    """A page's text: scripts and styles left out, tags stripped, white space folded."""
    dom = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", dom, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", dom)).split())


def rendered_text_rows(url: str, profile: Path) -> list[str]:
    """The text of each table row of `url` once its scripts have run (a single-page app
    such as the Temporal Web UI), tags stripped and white space folded."""
    dom = render(url, profile, virtual_time_ms=20000)
    return [text_of(row) for row in re.findall(r"<tr[^>]*>.*?</tr>", dom, re.S)]
