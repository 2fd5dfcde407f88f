"""The bundled reference target's own target file (target.yaml beside this module), at the
address it is served on."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from memlife.rules.documents import load_yaml_file
from memlife.rules.target import Target, parse_target

TARGET_FILE = Path(__file__).resolve().parent / "target.yaml"


@functools.cache
def _document() -> Any:
    """The file as parsed, once per process: it ships with memlife, and PyYAML's pure-Python
    loader took 18 ms a read, 1 ms with a copy of this (a run, a worker, each test's
    target: 5 CPU-s of the suite)."""
    return load_yaml_file(TARGET_FILE)


def reference_target(base_url: str) -> Target:
    """The bundled reference target's description, at the given address."""
    data = copy.deepcopy(_document())
    data["base_url"] = base_url
    return parse_target(data, str(TARGET_FILE))
