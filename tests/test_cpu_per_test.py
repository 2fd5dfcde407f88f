"""`--cpu-per-test` (tests/cpu_per_test.py): a test is charged the CPU of the processes it
starts, an idle one next to nothing, and no control group is left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import cpu_per_test
from tests.test_pytest_plugin import OTHER_PLUGINS  # what the inner pytest need not load

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent


def test_a_tests_children_are_charged_to_it_and_the_groups_are_removed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    hierarchy = cpu_per_test.find_hierarchy()
    assert hierarchy is not None, "this machine's tests run as root on Linux"
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makepyfile(
        test_inner="""
            import pathlib, subprocess, sys, time

            from tests import cpu_per_test

            def test_the_group_it_runs_in():
                hierarchy = cpu_per_test.find_hierarchy()
                group = cpu_per_test._current_group(hierarchy)
                pathlib.Path("group").write_text(str(group))

            def test_a_busy_child():
                # About half a second of CPU, in a process of its own.
                busy = "import time\\nend = time.process_time() + 0.5\\n"
                busy += "while time.process_time() < end: pass"
                subprocess.run([sys.executable, "-c", busy], check=True)

            def test_idle():
                time.sleep(0.5)
        """
    )
    disabled = [option for name in OTHER_PLUGINS for option in ("-p", f"no:{name}")]
    result = pytester.runpytest_subprocess(
        *disabled, "-p", "tests.cpu_per_test", "--cpu-per-test", "3", timeout=60
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*CPU per test, with the processes each started*"])
    rows = {
        line.split("s  ", 1)[1]: float(line.split()[0])
        for line in result.stdout.lines
        if "s  test_inner.py::" in line
    }
    assert rows["test_inner.py::test_a_busy_child"] >= 0.45
    assert rows["test_inner.py::test_idle"] < 0.1
    group = Path((pytester.path / "group").read_text())
    assert group.name.startswith("memlife-tests-") and not group.exists()


def test_cpu_stat_is_read_in_seconds(tmp_path: Path) -> None:
    (tmp_path / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 2000000\n")
    assert cpu_per_test.Hierarchy(tmp_path, "cpu.stat").usage_s(tmp_path) == 2.5
    (tmp_path / "cpuacct.usage").write_text("1500000000\n")
    assert cpu_per_test.Hierarchy(tmp_path, "cpuacct.usage").usage_s(tmp_path) == 1.5


def test_without_a_cgroup_hierarchy_there_is_none_to_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cpu_per_test, "V1", tmp_path / "v1")
    monkeypatch.setattr(cpu_per_test, "V2", tmp_path / "v2")
    assert cpu_per_test.find_hierarchy() is None
