"""The bundled reference target's own target file (target.yaml beside this module), at the
address it is served on."""

from __future__ import annotations

from pathlib import Path

from memlife.rules.documents import load_yaml_file
from memlife.rules.target import Target, parse_target

TARGET_FILE = Path(__file__).resolve().parent / "target.yaml"


def reference_target(base_url: str) -> Target:
    """The bundled reference target's description, at the given address."""
    data = load_yaml_file(TARGET_FILE)
    data["base_url"] = base_url
    return parse_target(data, str(TARGET_FILE))
