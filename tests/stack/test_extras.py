"""Extras install on first use: with one line saying so, into the Python that runs memlife,
and with a clear error (and the log) when they cannot. Run in a fresh virtual environment
with a small wheel built here, so nothing is fetched and the test set is left alone."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from memlife.stack import extras

REPO = Path(__file__).resolve().parents[2]


def _wheel(directory: Path) -> Path:
    """memlife_demo_extra 0.1: one module, as a wheel."""
    files = {
        "memlife_demo_extra/__init__.py": b"VALUE = 'installed'\n",
        "memlife_demo_extra-0.1.dist-info/METADATA": (
            b"Metadata-Version: 2.1\nName: memlife-demo-extra\nVersion: 0.1\n"
        ),
        "memlife_demo_extra-0.1.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = (
        "".join(
            f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"  # noqa: E501
            for name, data in files.items()
        )
        + "memlife_demo_extra-0.1.dist-info/RECORD,,\n"
    )
    path = directory / "memlife_demo_extra-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("memlife_demo_extra-0.1.dist-info/RECORD", record)
    return path


SCRIPT = """
import sys
from memlife.errors import MemlifeError
from memlife.stack import extras
extra, module = sys.argv[3], sys.argv[4]
extras.MODULES[extra] = (module,)
extras.requirements = lambda extra: [sys.argv[1]]
try:
    extras.ensure(extra, "a test", log_dir=__import__("pathlib").Path(sys.argv[2]))
except MemlifeError as error:
    print(error)
    raise SystemExit(2)
print(__import__(module).VALUE, extras.missing(extra))
"""


@pytest.mark.slow
def test_a_missing_extra_is_installed_once_with_one_line(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # An environment with pip, as a user's is: uv seeds it from its cache where the test
    # tools have uv (0.5 s; `python -m venv` runs ensurepip, 3 CPU-s).
    uv = shutil.which("uv", path=str(Path(sys.executable).parent))
    subprocess.run(
        [uv, "venv", "--seed", "-q", "--python", sys.executable, str(venv)]
        if uv
        else [sys.executable, "-m", "venv", str(venv)],
        check=True,
        timeout=300,
    )
    python = venv / "bin" / "python"
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}

    def ensure(
        requirement: str, extra: str = "demo", module: str = "memlife_demo_extra"
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python), "-c", SCRIPT, requirement, str(tmp_path / "logs"), extra, module],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            check=False,
        )

    wheel = _wheel(tmp_path)
    first = ensure(str(wheel))
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.split() == ["installed", "[]"]
    said = first.stderr.strip().splitlines()
    assert len(said) == 1 and said[0].startswith(
        "memlife: installing the demo extra for a test, once"
    )
    again = ensure(str(wheel))  # present now: nothing said, nothing installed
    assert again.returncode == 0 and again.stderr == "", again.stderr

    # What cannot be installed is one clear error naming the log and the way by hand.
    broken = ensure(str(tmp_path / "no-such.whl"), "broken", "memlife_never_installed")
    assert broken.returncode == 2 and "Traceback" not in broken.stderr
    log = tmp_path / "logs" / "install-broken.log"
    assert broken.stdout.startswith(f"broken extra: installing it failed (see {log})")
    assert "pip install 'memlife[broken]'" in broken.stdout and log.read_text()


def test_an_extra_names_what_pyproject_lists() -> None:
    realstack = extras.requirements("realstack")
    assert any(r.startswith("torch==") for r in realstack)
    assert any(r.startswith("mem0ai") for r in realstack)
    assert extras.requirements("test") and any(  # memlife[realstack] inside it, expanded
        r.startswith("mem0ai") for r in extras.requirements("test")
    )
    probe = type("Probe", (), {"kind": "qdrant"})()
    store = type("Store", (), {"name": "vectors", "probe": probe})()
    target = type("Target", (), {"stores": [store]})()
    assert extras.for_target(target) == [("qdrant", "the qdrant probe of store 'vectors'")]
