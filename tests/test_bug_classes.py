"""docs/bug-classes.md agrees with the detection matrix: every reference fault has a row,
and every row's cell is one a detection test proves on the scenario the row names (those
tests also prove the scenario clean on the clean target)."""

from __future__ import annotations

import re
from pathlib import Path

from memlife.bundled.reference.faults import FAULTS
from tests.workflows import (
    test_colliding_identities,
    test_detection_matrix,
    test_detection_matrix_scenarios,
)

REPO = Path(__file__).resolve().parents[1]
CATALOGUE = REPO / "docs" / "bug-classes.md"

# What each detection test proves, by the scenario it runs.
PROVEN = {
    "scenarios/lifecycle-nightly.yaml": test_detection_matrix.DETECTION,
    "scenarios/colliding-identities.yaml": test_colliding_identities.DETECTION,
    **{
        f"scenarios/{name}": table
        for name, table in test_detection_matrix_scenarios.DETECTION.items()
    },
}
_CODE = re.compile(r"`([^`]+)`")


def _table() -> list[list[str]]:
    """The cells of every row of the catalogue's table."""
    found = []
    for line in CATALOGUE.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and cells[2].startswith("`scenarios/"):
            found.append(cells)
    return found


def rows() -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(bug class, scenario, fault, cell) of every row of the catalogue's table."""
    found = []
    for cells in _table():
        scenario, fault, caught = (_CODE.findall(cell)[0] for cell in cells[2:5])
        found.append((cells[0], scenario, fault, tuple(part.strip() for part in caught.split("·"))))
    return found


def test_every_row_says_where_real_code_shows_it_and_the_files_exist() -> None:
    """The sixth column: a library and version, and the test or bench script whose direct
    read shows the rows; or a dash where no real library has shown the class yet."""
    table = _table()
    assert all(len(cells) == 6 for cells in table)
    shown = [cells for cells in table if cells[5] != "—"]
    assert shown, "no row is reproduced in real code"
    for cells in shown:
        files = [code for code in _CODE.findall(cells[5]) if code.startswith(("tests/", "bench/"))]
        assert files, f"{cells[0]}: no test or bench script named"
        for name in files:
            assert (REPO / name).is_file(), f"{cells[0]}: {name} does not exist"
        assert re.search(r"\d+\.\d+", cells[5]), f"{cells[0]}: no version named"


def test_every_reference_fault_has_a_row() -> None:
    assert len(rows()) >= len(FAULTS)
    assert {fault for _, _, fault, _ in rows()} == set(FAULTS)


def test_every_row_is_a_cell_the_detection_matrix_proves() -> None:
    for bug_class, scenario, fault, cell in rows():
        assert (REPO / scenario).is_file(), scenario
        assert scenario in PROVEN, f"{bug_class}: no detection test runs {scenario}"
        assert fault in PROVEN[scenario], f"{bug_class}: {scenario} is not run with {fault}"
        must, _ = PROVEN[scenario][fault]
        assert cell in must, f"{bug_class}: {cell} is not among {must}"
