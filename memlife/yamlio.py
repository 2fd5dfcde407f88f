"""Strict YAML loading: duplicate keys are errors, and errors carry line and column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from memlife.errors import InputError, Problem


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (PyYAML silently keeps the last)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key: let the base constructor report it
            duplicate = False
        if duplicate:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (line {mark.line + 1})", mark
            )
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping
)


def load_yaml_file(path: str | Path) -> Any:
    """Read and parse one YAML document, turning every failure into an InputError."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError([Problem(name, "", "file not found")]) from None
    except IsADirectoryError:
        raise InputError([Problem(name, "", "is a directory, expected a YAML file")]) from None
    except UnicodeDecodeError as exc:
        raise InputError([Problem(name, "", f"not UTF-8 text ({exc.reason})")]) from None
    except OSError as exc:
        raise InputError([Problem(name, "", f"cannot read: {exc.strerror}")]) from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow
        reason = f"invalid YAML: character #x{exc.character:04x} is not allowed ({exc.reason})" \
            if isinstance(exc.character, int) else f"invalid YAML: {exc.reason}"
        raise InputError([Problem(name, f"character {exc.position + 1}", reason)]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        reason = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
        raise InputError([Problem(name, where, reason)]) from None
