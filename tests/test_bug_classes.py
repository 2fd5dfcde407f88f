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
    **{f"scenarios/{name}": table
       for name, table in test_detection_matrix_scenarios.DETECTION.items()},
}
_CODE = re.compile(r"`([^`]+)`")


def rows() -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(bug class, scenario, fault, cell) of every row of the catalogue's table."""
    found = []
    for line in CATALOGUE.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[2].startswith("`scenarios/"):
            continue
        scenario, fault, caught = (_CODE.findall(cell)[0] for cell in cells[2:])
        found.append((cells[0], scenario, fault,
                      tuple(part.strip() for part in caught.split("·"))))
    return found


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
