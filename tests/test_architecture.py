"""The architecture holds: one installed top-level package whose wheel works on its own,
small modules, and import contracts that catch a change breaking a layer
(docs/architecture.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
# Lines as `ruff format` writes them (a call that does not fit takes an argument a line):
# about the 500 lines of the denser style this limit was first set in.
MAX_MODULE_LINES = 700

# The tests that read the wheel share a worker, so that it is built once (about 2 CPU-s).
WHEEL = pytest.mark.xdist_group("wheel")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout (offline: the test set's setuptools), from a copy
    of its sources: setuptools builds in the source tree's build/, which two builds at once
    (parallel test workers) would share."""
    sources = tmp_path_factory.mktemp("sources")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, sources / name)
    for room in ("memlife", "workflows", "activities"):
        shutil.copytree(
            REPO / room, sources / room, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-q",
            "-w",
            str(out),
            str(sources),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    [path] = out.glob("memlife-*.whl")
    return path


@WHEEL
def test_the_wheel_installs_memlife_as_its_only_top_level_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        requires = [
            line.removeprefix("Requires-Dist: ")
            for line in archive.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist: ")
        ]
        entry_points = archive.read(
            next(n for n in names if n.endswith("entry_points.txt"))
        ).decode()
    tops = {
        name.split("/", 1)[0] for name in names if not name.split("/", 1)[0].endswith(".dist-info")
    }
    assert tops == {"memlife"}
    assert {
        "memlife/workflows/suite.py",
        "memlife/activities/record.py",
        "memlife/stack/worker.py",
        "memlife/bundled/reference/target.yaml",
    } <= set(names)
    assert "memlife = memlife.cli:entry" in entry_points
    # What `pip install memlife` brings: the runtime set, nothing of the tests' or the
    # realstack target's (those are extras).
    always = [r for r in requires if "extra ==" not in r]
    assert not [
        r
        for r in always
        if r.split(">")[0].split("=")[0].split("<")[0]
        in ("torch", "chromadb", "mem0ai", "pytest", "langgraph", "qdrant-client")
    ], always


@pytest.mark.slow
@WHEEL
def test_the_installed_wheel_runs_a_lifecycle_on_its_own(wheel: Path, tmp_path: Path) -> None:
    """The package as installed from the wheel (workflows and activities inside it) runs
    the seed scenario end to end, imported from its install, not from this checkout."""
    site = tmp_path / "site"
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--disable-pip-version-check",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    work = tmp_path / "work"
    work.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "COLUMNS": "200",
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("MEMLIFE_DB_URL", None)
    where = subprocess.run(
        [sys.executable, "-c", "import memlife.workflows.suite as m; print(m.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert where.stdout.strip().startswith(str(site)), where.stdout + where.stderr
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "memlife",
            "run",
            str(REPO / "scenarios" / "seed-six-case.yaml"),
            "--clock",
            "skip",
            "--enforce",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASS: 6/6 cases passed" in run.stdout


def test_no_module_is_over_the_line_limit() -> None:
    long = {
        str(path.relative_to(REPO)): count
        for room in ("memlife", "workflows", "activities")
        for path in (REPO / room).rglob("*.py")
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, long


def _tree(tmp_path: Path) -> Path:
    """The package laid out as it installs, from links into this checkout (what
    scripts/lint-imports checks)."""
    tree = tmp_path / "tree"
    package = tree / "memlife"
    package.mkdir(parents=True)
    for entry in (REPO / "memlife").iterdir():
        (package / entry.name).symlink_to(entry)
    (package / "workflows").symlink_to(REPO / "workflows")
    (package / "activities").symlink_to(REPO / "activities")
    (tree / "bench").symlink_to(REPO / "bench")
    return tree


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(VENV_BIN / "lint-imports"), str(REPO / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_import_contracts_hold_and_catch_a_broken_layer(tmp_path: Path) -> None:
    kept = _lint(_tree(tmp_path / "as-is"))
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "4 kept, 0 broken" in kept.stdout
    # A pure rule that reaches for the network, and a rule that imports a workflow: the
    # contracts name both.
    broken = _tree(tmp_path / "broken")
    rules = broken / "memlife" / "rules"
    rules.unlink()
    rules.mkdir()
    for entry in (REPO / "memlife" / "rules").iterdir():
        (rules / entry.name).symlink_to(entry)
    (rules / "shortcut.py").write_text("import httpx\n\nfrom memlife.workflows import suite\n")
    caught = _lint(broken)
    assert caught.returncode == 1, caught.stdout
    assert "The rules are pure" in caught.stdout and "BROKEN" in caught.stdout
    assert "memlife.rules.shortcut -> memlife.workflows.suite" in caught.stdout
