"""`memlife target check`: every operation and probe exercised once with a throwaway
tenant; a misconfigured target file gets the operation, status or JSON path that is wrong."""

from __future__ import annotations

from pathlib import Path

from memlife.bundled.reference.target_file import TARGET_FILE
from memlife.stack import embedded
from tests.e2e.test_memlife_run import memlife

REFERENCE_FILE = TARGET_FILE


def test_a_working_target_file_checks_out_operation_by_operation(tmp_path: Path) -> None:
    with embedded.reference_target(tmp_path / "target") as target:
        good = tmp_path / "good.yaml"
        good.write_text(
            REFERENCE_FILE.read_text().replace("http://127.0.0.1:8080", target.base_url)
        )
        result = memlife("target", "check", str(good), cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
        for operation in (
            "register",
            "say (statement)",
            "say (question)",
            "recall",
            "probe memory (scope)",
            "probe cache (needle)",
            "forget",
            "delete_tenant",
            "deletion_status",
        ):
            assert operation in result.stdout, operation
        assert "ok: every operation and probe works" in result.stdout

        broken = tmp_path / "broken.yaml"
        broken.write_text(
            good.read_text()
            .replace("extract: {reply: /reply,", "extract: {reply: /answer,")
            .replace("path: /admin/stores/graph/records", "path: /admin/graph/records")
        )
        result = memlife("target", "check", str(broken), cwd=tmp_path)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "'reply' at '/answer'" in result.stdout
        assert "HTTP 404" in result.stdout and "probe graph (scope)" in result.stdout
        assert "Traceback" not in result.stderr

    result = memlife("target", "check", str(good), cwd=tmp_path)  # the target is gone now
    assert result.returncode == 2 and "cannot reach" in result.stderr


def test_a_files_probe_is_checked_by_scanning_its_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with embedded.reference_target(tmp_path / "target", db_path=data / "ref.db") as target:
        text = REFERENCE_FILE.read_text().replace("http://127.0.0.1:8080", target.base_url)
        disk = '\n  - name: disk\n    probe: {kind: files, path: "' + str(data) + '", grace: 7d}\n'
        good = tmp_path / "good.yaml"
        good.write_text(text + disk)
        result = memlife("target", "check", str(good), cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "probe disk (files)" in result.stdout
        assert "the value just stated is on disk in" in result.stdout

        missing = tmp_path / "missing.yaml"
        missing.write_text(text + disk.replace(str(data), str(tmp_path / "nowhere")))
        result = memlife("target", "check", str(missing), cwd=tmp_path)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "FilesProbeError" in result.stdout and "nowhere" in result.stdout
        assert "Traceback" not in result.stderr
