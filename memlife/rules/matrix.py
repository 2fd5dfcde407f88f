"""Matrix files: the configurations an experiment compares side by side (target files, or
the bundled reference target in a retrieval mode with its own faults). Pure."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memlife.errors import Problem
from memlife.rules.documents import load_yaml_file, parse_document


class MatrixEntry(BaseModel):
    """One configuration: a target file, or the bundled reference target in a retrieval
    mode with its own faults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_./+-]{0,62}$")
    target: str | None = None  # a target file, relative to the matrix file
    retrieval: str | None = None
    faults: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_kind(self) -> MatrixEntry:
        if self.target is not None and (self.retrieval or self.faults):
            raise ValueError(
                "a target file configuration takes no retrieval or faults (those "
                "are the bundled reference target's)"
            )
        return self


class MatrixFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    configurations: list[MatrixEntry] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> MatrixFile:
        names = [entry.name for entry in self.configurations]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"configuration names must be unique: {', '.join(repeated)}")
        return self


def parse_matrix(
    data: object, file: str, faults: Collection[str], retrieval_modes: Collection[str]
) -> MatrixFile:
    """A matrix document already read; target files are looked up beside `file`."""

    def semantic(matrix: MatrixFile, file: str) -> list[Problem]:
        problems = []
        for index, entry in enumerate(matrix.configurations):
            where = f"configurations.{index}"
            if entry.retrieval is not None and entry.retrieval not in retrieval_modes:
                problems.append(
                    Problem(
                        file,
                        f"{where}.retrieval",
                        f"unknown mode {entry.retrieval!r}; one of {', '.join(retrieval_modes)}",
                    )
                )
            for position, fault in enumerate(entry.faults):
                if fault not in faults:
                    problems.append(
                        Problem(file, f"{where}.faults.{position}", f"unknown fault {fault!r}")
                    )
            if entry.target is not None and not (Path(file).parent / entry.target).exists():
                problems.append(
                    Problem(
                        file,
                        f"{where}.target",
                        f"no such file {entry.target!r} (relative to the matrix file)",
                    )
                )
        return problems

    return parse_document(MatrixFile, data, file, semantic)


def load_matrix(
    path: str | Path, faults: Collection[str], retrieval_modes: Collection[str]
) -> MatrixFile:
    """Raises InputError with one `file: field: reason` per problem; `faults` and
    `retrieval_modes` are what the bundled reference target knows."""
    return parse_matrix(load_yaml_file(path), str(path), faults, retrieval_modes)
