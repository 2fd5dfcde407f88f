"""`--cpu-per-test N`: the N tests that cost the most CPU, with every process each started.

The suite is bound by CPU, not by waiting (docs/contributing.md): `--durations` says which
tests take long, not which take the cores. Each test runs in a control group of its own,
inside pytest's (Linux cgroups: v1's cpuacct or v2's cpu.stat), which the processes it
starts inherit, so a test's figure is its own process's CPU during the test and all of its
children's, even those that outlive it. A server a fixture shares (a session's, a
module's) is charged to the test that started it, and so is a fork server's every child
(tests/forked.py).

Needs root (or a delegated cgroup tree). The groups are removed at the end; a process still
running then is named (it outlived the tests, or, under -n0, it is the fork server, which
ends with pytest) and moved back to where pytest runs."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

DIR_VARIABLE = "MEMLIFE_CPU_PER_TEST_DIR"  # where workers list their groups, from the controller
V1 = Path("/sys/fs/cgroup/cpuacct")
V2 = Path("/sys/fs/cgroup")
EXIT_GRACE_S = 5.0  # for the last processes of the workers to end before groups are read


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("memlife").addoption(
        "--cpu-per-test",
        type=int,
        default=0,
        metavar="N",
        help="list the N tests that used the most CPU, counting the processes each started "
        "(Linux cgroups, as root: tests/cpu_per_test.py)",
    )


@dataclass(frozen=True)
class Hierarchy:
    """Where this machine's cgroups count CPU, and how to read a group's count."""

    root: Path
    usage_file: str

    def usage_s(self, group: Path) -> float:
        text = (group / self.usage_file).read_text()
        if self.usage_file == "cpuacct.usage":  # v1: nanoseconds
            return int(text) / 1e9
        stats = dict(line.split() for line in text.splitlines())  # v2: cpu.stat, microseconds
        return int(stats["usage_usec"]) / 1e6


def find_hierarchy() -> Hierarchy | None:
    """The writable CPU-counting hierarchy, or None."""
    if (V1 / "cpuacct.usage").exists():
        hierarchy = Hierarchy(V1, "cpuacct.usage")
    elif (V2 / "cgroup.controllers").exists():
        hierarchy = Hierarchy(V2, "cpu.stat")
    else:
        return None
    return hierarchy if os.access(hierarchy.root, os.W_OK) else None


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("cpu_per_test"):
        return
    hierarchy = find_hierarchy()
    if hierarchy is None:
        raise pytest.UsageError(
            "--cpu-per-test needs a writable cgroup hierarchy (Linux, as root): none under "
            "/sys/fs/cgroup. Run without it, or as root."
        )
    if not hasattr(config, "workerinput"):  # the controller, or a run without workers
        os.environ[DIR_VARIABLE] = tempfile.mkdtemp(prefix="memlife-cpu-per-test-")
    config.pluginmanager.register(CpuPerTest(hierarchy, Path(os.environ[DIR_VARIABLE])))


class CpuPerTest:
    def __init__(self, hierarchy: Hierarchy, listing: Path) -> None:
        self.hierarchy = hierarchy
        self.listing = listing
        self.name = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.groups: list[tuple[str, str]] = []  # (test, group)
        # Where this process was, to go back to before its groups are removed.
        self.home = _current_group(hierarchy)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        # Inside this process's own group, so that whatever counts or limits that one
        # (a CI job's container, scripts/test run under another measurement) still does.
        group = self.home / f"memlife-tests-{os.getpid()}-{len(self.groups)}"
        group.mkdir()
        (group / "cgroup.procs").write_text(str(os.getpid()))
        self.groups.append((item.nodeid, str(group)))
        yield

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        (self.home / "cgroup.procs").write_text(str(os.getpid()))
        (self.listing / f"{self.name}.json").write_text(json.dumps(self.groups))

    def pytest_terminal_summary(
        self, terminalreporter: pytest.TerminalReporter, config: pytest.Config
    ) -> None:
        if hasattr(config, "workerinput"):
            return
        counted: list[tuple[float, str]] = []
        running: list[str] = []
        listings = sorted(self.listing.glob("*.json"))
        # A worker's fork server ends a moment after the worker does.
        workers = any(listing.stem != "main" for listing in listings)
        deadline = time.monotonic() + (EXIT_GRACE_S if workers else 0)
        for listing in listings:
            for test, name in json.loads(listing.read_text()):
                group = Path(name)
                while (group / "cgroup.procs").read_text() and time.monotonic() < deadline:
                    time.sleep(0.1)
                counted.append((self.hierarchy.usage_s(group), test))
                # Still running (under -n0, the fork server lives as long as pytest): counted
                # so far, named, and moved out so that the group can go.
                for pid in (group / "cgroup.procs").read_text().split():
                    running.append(f"{_command(pid)} (pid {pid}), started by {test}")
                    with contextlib.suppress(OSError):  # it ended meanwhile
                        (self.home / "cgroup.procs").write_text(pid)
                with contextlib.suppress(OSError):
                    group.rmdir()
        counted.sort(reverse=True)
        total = sum(cpu for cpu, _ in counted)
        write = terminalreporter.write_line
        terminalreporter.section("CPU per test, with the processes each started")
        write(f"{total:.1f} CPU-s in {len(counted)} tests")
        for cpu, test in counted[: config.getoption("cpu_per_test")]:
            write(f"{cpu:7.1f} s  {test}")
        for process in running:
            write(f"still running at the end: {process}")
        shutil.rmtree(self.listing, ignore_errors=True)


def _current_group(hierarchy: Hierarchy) -> Path:
    """This process's group in `hierarchy`, from /proc/self/cgroup."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        mine = "cpuacct" in controllers.split(",") if hierarchy.root == V1 else controllers == ""
        if mine:
            return hierarchy.root / path.lstrip("/")
    return hierarchy.root


def _command(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except OSError:
        return "a process that has ended"
