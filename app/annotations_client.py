"""``ragmeta import-annotations``: a Langfuse, Opik, Phoenix or MLflow export of human annotations and judge
scores onto a run whose outputs came in as OpenTelemetry traces."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from app.cli_common import UsageError, plain, readable


def _raters(pairs: list[str] | None) -> str | None:
    mapping: dict[str, str] = {}
    for pair in pairs or []:
        author, sep, rater = pair.partition("=")
        if not sep or not author.strip() or not rater.strip():
            raise UsageError(f"--rater {pair!r}: give AUTHOR=RATER")
        mapping[author.strip()] = rater.strip()
    return json.dumps(mapping) if mapping else None


def _print(r: dict[str, Any]) -> None:
    print(
        f"{r['platform']} export onto run {r['run_id']}: {r['received']} score(s), {r['matched_outputs']} "
        f"output(s) joined, {r['unmatched']} score(s) about other traces"
    )
    rubric = r["rubric"]
    if r["human"] is not None and rubric is not None:
        ratings = r["ratings"]
        print(
            f"ratings ({r['human']!r} on rubric {rubric['name']!r} {rubric['min']}..{rubric['max']}, "
            f"{rubric['source']}): {ratings['created']} created, {ratings['updated']} updated, "
            f"{ratings['unchanged']} unchanged; raters: {', '.join(r['raters'])}"
        )
    scores = r["scores"]
    for metric in r["metrics"]:
        print(f"metric {metric}")
    if r["metrics"]:
        counts = f"{scores['created']} created, {scores['updated']} updated, {scores['unchanged']} unchanged"
        print(f"scores: {counts}")
    for item in r["not_imported"]:
        print(f"not imported: {item}")
    for note in r["notes"]:
        print(f"note: {note}")


def _cmd_import_annotations(c: Any, args: argparse.Namespace) -> None:
    readable(args.file)
    readable(args.configs)
    r = plain(
        c.import_run_annotations(
            args.run,
            args.file,
            configs=args.configs,
            platform=args.platform,
            human=args.human,
            rubric=args.rubric,
            raters=_raters(args.rater),
            higher_is_better=args.higher_is_better,
            lower_is_better=args.lower_is_better,
        )
    )
    if args.format == "json":
        print(json.dumps(r, indent=2, ensure_ascii=False))
    else:
        _print(r)


def add_commands(sub: Any, url: argparse.ArgumentParser) -> None:
    help_text = (
        "import a Langfuse, Opik, Phoenix or MLflow export of human annotations (ratings) and judge scores "
        "(external.<platform>.<name>) onto a run fed by OpenTelemetry traces"
    )
    p = sub.add_parser("import-annotations", parents=[url], help=help_text, description=help_text)
    p.add_argument("run", type=int, help="run id (its outputs came in by POST /v1/traces)")
    p.add_argument("file", type=Path, help="the platform's export (JSON or JSON lines)")
    p.add_argument(
        "--platform",
        required=True,
        choices=("langfuse", "opik", "phoenix", "mlflow"),
        help="the platform that wrote the export",
    )
    p.add_argument("--configs", type=Path, help="the platform's score configurations (scales, label values)")
    p.add_argument("--human", help="the human score that becomes the ratings, when there are several")
    p.add_argument("--rubric", help="an existing rubric for the ratings (default: inferred from --configs)")
    p.add_argument(
        "--rater", action="append", metavar="AUTHOR=RATER", help="rename an author's ratings (repeatable)"
    )
    p.add_argument("--higher-is-better", help="comma-separated judge scores, higher is better")
    p.add_argument("--lower-is-better", help="comma-separated judge scores, lower is better")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output (default text)")
    p.set_defaults(client=_cmd_import_annotations)
