"""Client commands of the comparisons between runs: `ragmeta pairwise A B` and `ragmeta systems 1,2,3`
(a short text table on the terminal, or the JSON/CSV of the API with -o)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from app.cli_common import UsageError, output_format, plain, readable, report_import, writable, write_output
from app.sdk import Client

FORMATS = {".json": "json", ".csv": "csv", ".txt": "text", ".svg": "svg"}


def _f(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _ci(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f" [{low:.2f}, {high:.2f}]"


def pairwise_text(r: dict[str, Any]) -> str:
    a, b = r["run_a"], r["run_b"]
    lines = [
        f"Pairwise preference: run {b['id']} ({b['name']}) vs run {a['id']} ({a['name']}), "
        f"{r['n_pairs']} pairs",
        f"  humans prefer B {r['human_prefers_b']}, A {r['human_prefers_a']}, tie {r['n_human_ties']}",
        f"  preference: {r['source_detail']}",
        *(f"  note: {n}" for n in r["notes"]),
        *(f"  warning ({w['scope']}): {w['message']}" for w in r["warnings"]),
        f"  {'metric':<34} {'n':>3}  {'Pearson r [CI]':<22} {'Kendall τ-b [CI]':<22} sign agreement",
    ]
    for m in r["metrics"]:
        p, k, s = m["pearson"], m["kendall"], m["sign_agreement"]
        star = "*" if m["metric"] == r["best"] else " "
        r_text = _f(p["estimate"]) + _ci(p["ci_low"], p["ci_high"])
        tau_text = _f(k["estimate"]) + _ci(k["ci_low"], k["ci_high"])
        lines.append(
            f" {star}{m['metric']:<34} {m['n_pairs']:>3}  {r_text:<22} {tau_text:<22} "
            f"{s['correct']}/{s['total']} = {_f(s['estimate'])}{_ci(s['ci_low'], s['ci_high'])}"
        )
    for nc in r["not_computed"]:
        lines.append(f"  not computed: {nc['metric']}: {nc['reason']}")
    lines.append(f"  {r['ties_rule']}")
    return "\n".join(lines) + "\n"


def systems_text(r: dict[str, Any]) -> str:
    names = {x["id"]: x["name"] for x in r["runs"]}
    lines = [f"System level over {len(r['runs'])} runs, {r['n_questions']} questions rated in every run"]
    lines += [f"  note: {n}" for n in r["notes"]]
    lines += [f"  warning ({w['scope']}): {w['message']}" for w in r["warnings"]]
    for h in r["human"]:
        mean = _f(h["mean"]) + _ci(h["ci_low"], h["ci_high"])
        lines.append(f"  human mean run {h['run_id']} ({names[h['run_id']]}): {mean}")
    for p in r["human_pairs"]:
        lines.append(
            f"  human {p['run_b']} - {p['run_a']}: {_f(p['difference'])}{_ci(p['ci_low'], p['ci_high'])}, "
            f"Holm p {_f(p['holm_p'], 3)}"
        )
    lines.append(f"  {'metric':<34} {'Kendall τ-b [bootstrap CI]':<28} pairs ordered as humans")
    for m in r["metrics"]:
        k = m["kendall"]
        lines.append(
            f"  {m['metric']:<34} {_f(k['estimate']) + _ci(k['ci_low'], k['ci_high']):<28} "
            f"{m['pairwise_correct']}/{m['pairwise_total']}"
        )
    for nc in r["not_computed"]:
        lines.append(f"  not computed: {nc['metric']}: {nc['reason']}")
    return "\n".join(lines) + "\n"


def _write(args: argparse.Namespace, content: str) -> None:
    write_output(args.output, content)


def _fmt(args: argparse.Namespace) -> str:
    fmt: str | None = args.format
    if args.output and fmt is None:
        fmt = output_format(writable(args.output), FORMATS, "a comparison")
    return fmt or "text"


def _emit(args: argparse.Namespace, fmt: str, sent: Any, read: Any, text: Any) -> None:
    """The analysis as CSV (written as is), JSON (the service's, pretty) or a terminal table (``text`` of the
    answer); ``sent(format)`` is the answer as the service wrote it, ``read()`` the typed one."""
    if fmt == "csv":
        _write(args, sent("csv"))
    elif fmt == "json":
        _write(args, json.dumps(json.loads(sent("json")), indent=2, ensure_ascii=False) + "\n")
    else:
        _write(args, text(plain(read())))


def cmd_pairwise(c: Client, args: argparse.Namespace) -> None:
    fmt = _fmt(args)
    q: dict[str, Any] = {"run_a": args.run_a, "run_b": args.run_b, "source": args.source, "k": args.k}
    if fmt == "svg":
        _write(args, c.pairwise_svg(q).decode("utf-8"))
    else:
        _emit(args, fmt, lambda f: c.pairwise_report_text(q, f), lambda: c.pairwise_report(q), pairwise_text)


def cmd_systems(c: Client, args: argparse.Namespace) -> None:
    fmt = _fmt(args)
    if fmt == "svg":
        raise UsageError("the system level has no figure: write .json, .csv or .txt")
    sent = lambda f: c.systems_report_text(args.runs, f, k=args.k)  # noqa: E731
    _emit(args, fmt, sent, lambda: c.systems_report(args.runs, k=args.k), systems_text)


def cmd_prefer(c: Client, args: argparse.Namespace) -> None:
    # The bytes go as they are: the service reads the sheet (encoding, separator) and registers its raters.
    readable(args.file)
    imported = c.import_preferences(
        args.run_a, args.run_b, file=args.file, register_raters=args.register_raters
    )
    report_import("preferences", plain(imported))


def add_commands(sub: Any, url: argparse.ArgumentParser) -> None:
    """`ragmeta prefer`, `ragmeta pairwise` and `ragmeta systems` on the `ragmeta` parser."""
    help_text = (
        "import preference ratings between two runs' answers (CSV: question_id, rater, preference[, rubric, "
        "comment]; default scale -2..2, positive = run B better)"
    )
    p = sub.add_parser("prefer", help=help_text, description=help_text, parents=[url])
    p.set_defaults(client=cmd_prefer)
    p.add_argument("run_a", type=int, help="run A id")
    p.add_argument("run_b", type=int, help="run B id (the high end of the preference scale)")
    p.add_argument("file", type=Path, help="CSV file of preferences (as the spreadsheet saved it)")
    p.add_argument(
        "--no-register-raters",
        dest="register_raters",
        action="store_false",
        help="refuse raters not registered yet (default: the service registers the raters the file names)",
    )
    help_text = "can each metric tell which of two runs' answers the raters prefer? (pairwise preference)"
    p = sub.add_parser("pairwise", help=help_text, description=help_text, parents=[url])
    p.set_defaults(client=cmd_pairwise)
    p.add_argument("run_a", type=int, help="run A (baseline) id")
    p.add_argument("run_b", type=int, help="run B id (compared with A)")
    p.add_argument(
        "--source",
        default="auto",
        choices=["auto", "preference", "absolute"],
        help="preference ratings of a pairwise task, or the absolute ratings' difference (default auto)",
    )
    p.add_argument("--k", type=int, default=5, help="k of the retrieval metrics (default 5)")
    p.add_argument("--format", choices=["text", "json", "csv", "svg"], help="default: from -o, else text")
    p.add_argument("-o", "--output", type=Path, help="file to write (.txt, .json, .csv, .svg)")
    help_text = "does each metric rank three or more runs as the raters do? (system level)"
    p = sub.add_parser("systems", help=help_text, description=help_text, parents=[url])
    p.set_defaults(client=cmd_systems)
    p.add_argument("runs", help="comma-separated run ids of one dataset (3 or more)")
    p.add_argument("--k", type=int, default=5, help="k of the retrieval metrics (default 5)")
    p.add_argument("--format", choices=["text", "json", "csv"], help="default: from -o, else text")
    p.add_argument("-o", "--output", type=Path, help="file to write (.txt, .json, .csv)")
