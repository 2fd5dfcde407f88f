"""`memlife report RUN`: a run's report as JSON (the scorecard), Markdown, self-contained
HTML or JUnit XML, from the recorder (a run id, `latest`, an experiment id) or from an
artifact file `memlife run --out` wrote."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlife.cli.common import EXIT_OK, add_command, err, not_json_reason, problems_exit
from memlife.errors import InputError, Problem

if TYPE_CHECKING:
    from memlife.recorder.artifact import Artifact, ExperimentDocument
    from memlife.reports.lists import Lists

FORMATS = ("json", "md", "html", "junit")


def add_parsers(commands: Any) -> None:
    report = add_command(
        commands,
        "report",
        "a run's report: json | md | html | junit",
        "A run's report: the verdict; recall, update (U1), deletion (I4) and "
        "response-isolation (I3) rates with bootstrap 95% intervals over pairs; the "
        "invariant × store × stage matrix; every leak and every residue on its own. html is "
        "one self-contained page (a per-pair timeline, the matrix, a latency histogram "
        "against the budget); junit has one test case per check, for CI. Phone numbers and "
        "tenant ids are redacted unless --no-redact.",
    )
    report.add_argument(
        "run", metavar="RUN", help="a run id, `latest`, an experiment id, or an artifact file"
    )
    report.add_argument("--format", choices=FORMATS, default="md", help="the report's format")
    report.add_argument(
        "--out", default=None, metavar="FILE", help="write it here (default: standard output)"
    )
    report.add_argument(
        "--no-redact", action="store_true", help="keep phone numbers and tenant ids"
    )
    report.add_argument(
        "--web-ui",
        default=None,
        metavar="URL",
        help="the Temporal Web UI each finding links to (its pair's workflow); "
        "default: the run's own, else memlife dev's (http://127.0.0.1:8233)",
    )
    report.set_defaults(handler=cmd_report, temporal=False)


def load_artifact(
    reference: str,
) -> tuple[
    Artifact | ExperimentDocument, Sequence[float] | None, Lists | Mapping[str, Lists] | None
]:
    """A run id (or `latest`) from the recorder, an experiment id, or an artifact file
    written by `run`. A run from the recorder comes without its lists and observations,
    with the probes' latencies and its lists to read as the report is written
    (recorder.report_artifact); an experiment's runs come as digests, with each run's lists
    by run id (recorder.report_experiment)."""
    path = Path(reference)
    if path.suffix == ".json" or path.exists():
        return read_artifact_file(path)
    # The recorder's database layer (SQLModel, SQLAlchemy) is a fifth of this command's
    # start: a report from a file does without it.
    from sqlmodel import select

    from memlife import recorder
    from memlife.reports.scorecard import RATES

    run_id = reference
    if reference == "latest":
        with recorder.session() as db:
            latest = db.exec(
                select(recorder.RunRow).order_by(recorder.RunRow.started_at.desc()).limit(1)
            ).first()  # type: ignore[attr-defined]
            if latest is None:
                raise InputError(
                    [
                        Problem(
                            "command line", "RUN", f"no runs recorded in {recorder.database_url()}"
                        )
                    ]
                )
            run_id = latest.id
    # Of each pair's tallies, a report reads those its rates are drawn from.
    reported = recorder.report_artifact(run_id, invariants=set(RATES.values()))
    if reported is None:
        experiment = recorder.report_experiment(run_id)
        if experiment is not None:
            return experiment[0], None, experiment[1]
        raise InputError(
            [
                Problem(
                    "command line",
                    "RUN",
                    f"no run {run_id!r} in "
                    f"{recorder.database_url()}; give a run id, an experiment "
                    "id, `latest`, or an artifact file",
                )
            ]
        )
    return reported


def read_artifact_file(
    path: Path,
) -> tuple[Artifact | ExperimentDocument, Sequence[float] | None, Lists | None]:
    """An artifact file, validated against its model: every problem names its field. A
    run's artifact is read as a stream (recorder/files.py): its digest and its probes'
    latencies held, its lists read again as the report is written, so a file of any size
    is reported in bounded memory. An experiment's document is read whole."""
    import ijson

    from memlife.recorder.files import NotARunArtifact, read_run_file

    if not path.exists():
        raise InputError([Problem(str(path), "", "no such file")])
    from memlife.reports.scorecard import RATES

    try:  # of each pair's tallies, those the report's rates are drawn from
        return read_run_file(path, invariants=set(RATES.values()))
    except NotARunArtifact:
        pass  # below, whole, with the reason it is not an artifact
    except OSError as error:
        raise InputError([Problem(str(path), "", f"not a JSON artifact ({error})")]) from None
    except (ValueError, ijson.JSONError) as error:
        raise InputError(
            [Problem(str(path), "", f"not a JSON artifact ({not_json_reason(error)})")]
        ) from None
    return _read_whole(path), None, None


def _read_whole(path: Path) -> Artifact | ExperimentDocument:
    from pydantic import ValidationError

    from memlife.recorder.artifact import Artifact, ExperimentDocument
    from memlife.rules.documents import pydantic_problems

    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError([Problem(str(path), "", f"not a JSON artifact ({error})")]) from None
    except RecursionError:  # json nests recursively: no artifact is nested this deep
        raise InputError(
            [Problem(str(path), "", "not a JSON artifact (nested too deeply)")]
        ) from None
    if not isinstance(document, dict) or not (
        {"summary", "meta"} <= set(document) or {"experiment", "runs"} <= set(document)
    ):
        raise InputError([Problem(str(path), "", "not a memlife artifact (no meta/summary)")])
    model = ExperimentDocument if "runs" in document else Artifact
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise InputError(pydantic_problems(error, str(path))) from None


def cmd_report(args: argparse.Namespace) -> int:
    from memlife.cli.render import file_size, write_chunks
    from memlife.recorder.artifact import ExperimentDocument
    from memlife.reports import render_chunks
    from memlife.reports.experiment import render_experiment_chunks

    if args.web_ui and not re.match(r"^https?://[^\s/]+", args.web_ui):
        return problems_exit(
            [
                Problem(
                    "command line",
                    "--web-ui",
                    f"{args.web_ui!r} is not an http(s) address, e.g. http://127.0.0.1:8233",
                )
            ]
        )
    artifact, samples, lists = load_artifact(args.run)
    if isinstance(artifact, ExperimentDocument):
        assert lists is None or isinstance(lists, Mapping)
        chunks = render_experiment_chunks(
            artifact, args.format, redacted=not args.no_redact, lists=lists
        )
    else:
        assert not isinstance(lists, Mapping)
        chunks = render_chunks(
            artifact,
            args.format,
            redacted=not args.no_redact,
            web_ui=args.web_ui,
            samples=samples,
            lists=lists,
        )
    if args.out:
        size = write_chunks(Path(args.out), chunks, progress=err)
        print(f"report ({args.format}): {args.out} ({file_size(size)})")
    else:
        for chunk in chunks:
            sys.stdout.write(chunk)
    return EXIT_OK
