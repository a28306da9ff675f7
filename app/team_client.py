"""Client commands of a team's workflow: raters, rating tasks (an editor's create, list, dashboard, export; a
rater's queue and rating), the questions export (the ids a ratings sheet names) and undo (the DELETE routes).

Raters rate with their own key (`RAGMETA_API_KEY`, or --key): `ragmeta task queue TASK` lists their items,
`ragmeta task rate TASK POSITION SCORE` rates one as served (its answer's version is sent back, so a score
given on an answer that changed meanwhile is kept apart, as on the rating page)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from app.cli_common import UsageError, as_json, output_format, plain, writable, write_output
from app.sdk import Client

QUESTION_FORMATS = MappingProxyType({".json": "json", ".jsonl": "jsonl", ".csv": "csv"})
EXPORT_FORMATS = MappingProxyType({".json": "json", ".csv": "csv"})


def _names(value: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise UsageError("--raters must name at least one rater: --raters alice,bob")
    return names


def _est(e: dict[str, Any] | None) -> str:
    if e is None or e.get("estimate") is None:
        return "-"
    low, high = e.get("ci_low"), e.get("ci_high")
    ci = f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else ""
    return f"{e['estimate']:.2f}{ci}"


# ------------------------------------------------------------------------------------------------- raters


def cmd_raters(c: Client, args: argparse.Namespace) -> None:
    if args.raters_command == "add":
        r = c.create_raters([{"name": n} for n in args.names])
        print(f"raters: {r.created} registered, {r.unchanged} already registered")
        return
    raters = plain(c.all(c.list_raters))
    print(f"{'id':>5}  name")
    for r in raters:
        print(f"{r['id']:>5}  {r['name']}")


# -------------------------------------------------------------------------------------------------- tasks


def _task_line(t: dict[str, Any]) -> str:
    runs = f"{t['run_id']}" + (f" vs {t['run_b_id']}" if t["run_b_id"] else "")
    done = sum(r["rated"] for r in t["raters"])
    assigned = sum(r["assigned"] for r in t["raters"])
    per = t["per_output"] or "all"
    return (
        f"{t['id']:>5}  {t['name'][:24]:<24} {t['mode']:<9} {runs:<9} {t['n_outputs']:>7} {per!s:>10}  "
        f"{done}/{assigned}"
    )


TASK_HEADER = f"{'id':>5}  {'name':<24} {'mode':<9} {'run':<9} {'outputs':>7} {'per output':>10}  rated"


def _progress(t: dict[str, Any]) -> list[str]:
    lines = [f"  {'rater':<20} {'assigned':>8} {'rated':>6} {'skipped':>7} {'flagged':>7} {'pending':>7}"]
    for r in t["raters"]:
        lines.append(
            f"  {r['name']:<20} {r['assigned']:>8} {r['rated']:>6} {r['skipped']:>7} {r['flagged']:>7} "
            f"{r['pending']:>7}"
        )
    return lines


def cmd_task_create(c: Client, args: argparse.Namespace) -> None:
    body: dict[str, Any] = {
        "name": args.name or f"run {args.run}",
        "run_id": args.run,
        "raters": _names(args.raters),
        "show_reference": args.show_reference,
        "show_contexts": not args.hide_contexts,
    }
    if args.run_b is not None:
        body |= {"mode": "pairwise", "run_b_id": args.run_b}
    for key, value in (("per_output", args.per_output), ("rubric", args.rubric), ("seed", args.seed)):
        if value is not None:
            body[key] = value
    if args.active is not None:
        if args.budget is None:
            raise UsageError("--active needs --budget: the expected number of outputs to rate")
        policy: dict[str, Any] = {"metric": args.active, "budget": args.budget}
        for key, value in (
            ("floor", args.floor),
            ("refit_every", args.refit_every),
            ("target_width", args.target_width),
            ("lease_minutes", args.lease_minutes),
        ):
            if value is not None:
                policy[key] = value
        body |= {"policy": "active", "active": policy}
    elif any(
        v is not None
        for v in (args.budget, args.floor, args.refit_every, args.target_width, args.lease_minutes)
    ):
        raise UsageError(
            "--budget, --floor, --refit-every, --target-width and --lease-minutes go with --active METRIC"
        )
    t = plain(c.create_task(body))
    print(
        f"task {t['id']} {t['name']!r}: {t['mode']} on run {t['run_id']}"
        + (f" vs {t['run_b_id']}" if t["run_b_id"] else "")
        + f", {t['n_outputs']} outputs, rubric {t['rubric']['name']!r}, "
        f"{t['per_output'] or 'every'} rater(s) per output, seed {t['seed']}"
    )
    if t.get("active"):
        a = t["active"]
        print(
            f"active policy on {a['metric']}: about {a['budget']} outputs drawn, floor {a['floor']} x the "
            f"uniform rate, refit every {a['refit_every']} ratings, items left unrated released after "
            f"{a.get('lease_minutes', 30)} min"
            + (f", stops at width {a['target_width']:g}" if a.get("target_width") else "")
        )
    print("\n".join(_progress(t)))
    for w in t.get("warnings") or []:
        print(f"warning: {w['message'] if isinstance(w, dict) else w}")


def estimate_text(e: dict[str, Any]) -> str:
    lines = [
        f"task {e['task_id']} (run {e['run_id']}, metric {e['metric']}, seed {e['seed']}): {e['n_rated']} "
        f"rated of {e['n_drawn']} drawn, {e['n_decided']} of {e['n_outputs']} outputs decided, "
        f"{e['n_refits']} refit(s)"
    ]
    if e["active"] is None:
        lines.append(f"no estimate yet: {e['undefined_reason']}")
    else:
        a, u = e["active"], e["uniform_same_n"]
        lines.append(
            f"mean human score {a['estimate']:.3f} [{a['ci_low']:.3f}, {a['ci_high']:.3f}] "
            f"(width {a['width']:.3f}, {e['confidence']:.0%}); design: {a['design']}"
        )
        lines.append(
            f"uniform sampling of {u['n_rated']} outputs would give width {u['width']:.3f} ({u['design']})"
        )
    lines += correlation_lines(e.get("correlation"))
    if e["target_width"] is not None:
        more = e["more_ratings"]
        lines.append(
            f"target width {e['target_width']:g}: "
            + (
                "reached"
                if e["reached"]
                else "not reachable"
                if more is None
                else f"about {more} more ratings"
            )
        )
    if e["closed_at"]:
        lines.append(f"closed at {e['closed_at']}")
    return "\n".join(lines) + "\n"


def correlation_lines(c: dict[str, Any] | None) -> list[str]:
    """The metric-human correlation of an active estimate, beside the uniform width of as many ratings."""
    if c is None:
        return []
    if c["active"] is None:
        return [f"correlation of {c['metric']} with the human score: undefined ({c['undefined_reason']})"]
    a, u = c["active"], c["uniform_same_n"]
    lines = [
        f"correlation of {c['metric']} with the human score: r = {a['estimate']:.3f} "
        f"[{a['ci_low']:.3f}, {a['ci_high']:.3f}] (width {a['width']:.3f}); method: {a['method']}"
    ]
    if u is not None:
        lines.append(
            f"uniform sampling of {u['n_rated']} outputs would give width {u['width']:.3f} ({u['design']})"
        )
    return lines


def cmd_task_estimate(c: Client, args: argparse.Namespace) -> None:
    e = plain(c.active_estimate(args.task))
    write_output(None, as_json(e) if args.format == "json" else estimate_text(e))


def cmd_task_next(c: Client, args: argparse.Namespace) -> None:
    n = c.next_item(args.task)
    print(n.position if n.position is not None else f"nothing left: {n.reason}")


def cmd_task_list(c: Client, args: argparse.Namespace) -> None:
    tasks = plain(c.all(c.my_tasks if args.mine else c.list_tasks))
    if not tasks:
        print("no tasks")
        return
    print(TASK_HEADER)
    for t in tasks:
        print(_task_line(t))


def dashboard_text(d: dict[str, Any]) -> str:
    t, a = d["task"], d["agreement"]
    lines = [TASK_HEADER, _task_line(t), *_progress(t)]
    lines.append(
        f"agreement over {a['n_items_used']} of {a['n_items']} items: Krippendorff alpha ordinal "
        f"{_est(a['alpha_ordinal'])}, interval {_est(a['alpha_interval'])}; ICC(A,1) {_est(a['icc_a1'])}, "
        f"ICC(A,k) {_est(a['icc_ak'])}" + (f" ({a['undefined_reason']})" if a["undefined_reason"] else "")
    )
    if d["disagreements"]:
        lines.append(f"outputs whose scores spread by {d['threshold']} or more:")
        lines.append(f"  {'question_id':<20} {'spread':>6}  scores")
        for x in d["disagreements"]:
            scores = ", ".join(f"{k} {v}" for k, v in x["scores"].items())
            lines.append(f"  {x['question_id']:<20} {x['spread']:>6}  {scores}")
    for f in d["flagged"]:
        lines.append(f"flagged by {f['rater']}: {f['question_id']}: {f['reason'] or '(no reason)'}")
    for w in d.get("warnings") or []:
        lines.append(f"warning: {w['message'] if isinstance(w, dict) else w}")
    return "\n".join(lines) + "\n"


def cmd_task_dashboard(c: Client, args: argparse.Namespace) -> None:
    d = plain(c.dashboard(args.task, threshold=args.threshold))
    write_output(None, as_json(d) if args.format == "json" else dashboard_text(d))


def cmd_task_export(c: Client, args: argparse.Namespace) -> None:
    fmt = output_format(writable(args.output), EXPORT_FORMATS, "the ratings") if args.output else "csv"
    write_output(
        args.output,
        c.export_text(args.task, "csv")
        if fmt == "csv"
        else as_json(json.loads(c.export_text(args.task, "json"))),
    )


def cmd_task_queue(c: Client, args: argparse.Namespace) -> None:
    q = plain(c.my_queue(args.task))
    print(f"task {q['task_id']} {q['task']!r} for {q['rater']}: {q['done']} of {q['total']} done")
    print(f"{'position':>8}  {'status':<8} {'score':>5}  {'question_id':<20} question")
    for e in q["entries"]:
        score = "-" if e["score"] is None else str(e["score"])
        print(f"{e['position']:>8}  {e['status']:<8} {score:>5}  {e['question_id']:<20} {e['question']}")


def cmd_task_show(c: Client, args: argparse.Namespace) -> None:
    item = plain(c.my_item(args.task, args.position))
    r = item["rubric"]
    print(f"[{item['position']}/{item['total']}] {item['question_id']}: {item['question']}")
    if item["reference_answer"] is not None:
        print(f"reference: {item['reference_answer']}")
    for a in item["answers"]:
        print(f"answer{'' if a['side'] == 'single' else ' ' + a['side']}: {a['answer']}")
        for ctx in a["contexts"] or []:
            print(f"  context {ctx['rank']}: {ctx['text']}")
    print(f"rubric {r['name']!r}: {r['min']} to {r['max']}")


def cmd_task_rate(c: Client, args: argparse.Namespace) -> None:
    item = plain(c.my_item(args.task, args.position))
    body: dict[str, Any] = {"action": "rate", "score": args.score, "comment": args.comment}
    versions = {a["side"]: a["version"] for a in item["answers"]}
    if "single" in versions:
        body["version"] = versions["single"]
    else:
        body |= {"left_version": versions.get("left"), "right_version": versions.get("right")}
    r = plain(c.act(args.task, args.position, body))
    after = f"next: {r['next_position']}" if r["next_position"] is not None else "queue done"
    stale = " (the answer changed meanwhile: kept apart, rate it again)" if r["stale"] else ""
    print(f"position {r['position']} ({item['question_id']}): {r['status']} {args.score}{stale}; {after}")


# ------------------------------------------------------------------------------------------------ questions


def cmd_questions(c: Client, args: argparse.Namespace) -> None:
    fmt = output_format(writable(args.output), QUESTION_FORMATS, "questions") if args.output else "jsonl"
    if fmt == "json":
        sent = c.export_questions_text(args.dataset, "json", include_text=args.include_text)
        content = as_json(json.loads(sent))
    else:
        lines: Literal["csv", "jsonl"] = "csv" if fmt == "csv" else "jsonl"
        content = c.export_questions_text(args.dataset, lines, include_text=args.include_text)
    write_output(args.output, content)


# ---------------------------------------------------------------------------------------------------- undo


def cmd_delete(c: Client, args: argparse.Namespace) -> None:
    what = args.delete_command
    cascade = bool(getattr(args, "cascade", False))
    if what == "dataset":
        report = c.delete_dataset(args.id, cascade=cascade)
    elif what == "run":
        report = c.delete_run(args.id, cascade=cascade)
    elif what == "ratings":
        report = c.delete_ratings(args.id, args.rater)
    elif what == "scores":
        report = c.delete_scores(args.id, args.metric)
    else:
        report = c.delete_job_results(args.id, cascade=cascade)
    r = plain(report)
    rows = ", ".join(f"{k} {n}" for k, n in r["rows"].items() if n) or "nothing"
    print(f"deleted {r['deleted']}: {rows}")
    for note in r["notes"]:
        print(f"note: {note}")


# -------------------------------------------------------------------------------------------------- parser


_Group = Callable[[str, Any, str, str], Any]
_Action = Callable[..., argparse.ArgumentParser]


def add_commands(sub: Any, url: argparse.ArgumentParser) -> None:
    """`ragmeta raters`, `ragmeta task`, `ragmeta questions` and `ragmeta delete` on the `ragmeta` parser."""

    def group(name: str, func: Any, help_text: str, dest: str) -> Any:
        p = sub.add_parser(name, help=help_text, description=help_text, parents=[url])
        p.set_defaults(client=func)
        return p.add_subparsers(dest=dest, required=True, metavar="ACTION", help="one of these")

    def action(actions: Any, name: str, help_text: str, func: Any | None = None) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = actions.add_parser(
            name, help=help_text, description=help_text, parents=[url]
        )
        if func is not None:
            p.set_defaults(client=func)
        return p

    # In this order: it is the order `ragmeta --help` lists the commands in.
    _add_rater_commands(group, action)
    _add_task_commands(group, action)
    _add_questions_command(sub, url)
    _add_delete_commands(group, action)


def _add_rater_commands(group: _Group, action: _Action) -> None:
    rs = group("raters", cmd_raters, "raters of imported ratings: list or register them", "raters_command")
    action(rs, "list", "every registered rater (id, name)")
    action(rs, "add", "register raters by name (names already registered are left as they are)").add_argument(
        "names", nargs="+", help="rater names"
    )


def _add_task_commands(group: _Group, action: _Action) -> None:
    ts = group(
        "task",
        cmd_task_list,
        "rating tasks: create, list, dashboard, export; a rater's queue and rating",
        "task_command",
    )
    p = action(
        ts,
        "create",
        "a rating task on a run (editors): every rater rates every output, or --per-output",
        cmd_task_create,
    )
    p.add_argument("run", type=int, help="the run whose outputs are rated (run A of a pairwise task)")
    p.add_argument("--raters", required=True, help="comma-separated account names of the raters")
    p.add_argument("--name", help="the task's name (default: run RUN)")
    p.add_argument("--per-output", type=int, help="raters per output, balanced at random (default: all)")
    p.add_argument("--run-b", type=int, help="a pairwise task: the other run, side by side")
    p.add_argument("--rubric", help="rubric name (default: the study's 1-5 scale)")
    p.add_argument("--show-reference", action="store_true", help="show raters the reference answer")
    p.add_argument("--hide-contexts", action="store_true", help="do not show raters the retrieved contexts")
    p.add_argument("--seed", type=int, help="the seed of the raters' orders (recorded; default random)")
    p.add_argument(
        "--active",
        metavar="METRIC",
        help="the active policy: draw outputs where METRIC leaves the human score most uncertain",
    )
    p.add_argument("--budget", type=int, help="--active: expected number of outputs to rate")
    p.add_argument("--floor", type=float, help="--active: least probability, share of the uniform rate")
    p.add_argument("--refit-every", type=int, help="--active: refit after this many new ratings (10)")
    p.add_argument("--target-width", type=float, help="--active: close the task at this interval width")
    p.add_argument(
        "--lease-minutes", type=int, help="--active: release an item served and left unrated this long (30)"
    )
    p = action(ts, "list", "the rating tasks with their progress", cmd_task_list)
    p.add_argument("--mine", action="store_true", help="only the tasks the caller rates in")
    p = action(
        ts,
        "dashboard",
        "a task's progress per rater, disagreements, flags and agreement so far",
        cmd_task_dashboard,
    )
    p.add_argument("task", type=int, help="task id")
    p.add_argument(
        "--threshold", type=int, default=2, help="list outputs whose scores spread this much (default 2)"
    )
    p.add_argument("--format", choices=["text", "json"], default="text", help="output (default text)")
    p = action(
        ts, "export", "a task's ratings in the form `ragmeta rate` imports (CSV, or .json)", cmd_task_export
    )
    p.add_argument("task", type=int, help="task id")
    p.add_argument("-o", "--output", type=Path, help="file to write, .csv or .json (default: CSV on stdout)")
    p = action(
        ts,
        "queue",
        "a rater's own queue in their order: position, status, own score, question",
        cmd_task_queue,
    )
    p.add_argument("task", type=int, help="task id")
    p = action(
        ts,
        "estimate",
        "an active task's estimate of the run mean, its design, and the ratings left to the target width",
        cmd_task_estimate,
    )
    p.add_argument("task", type=int, help="task id")
    p.add_argument("--format", choices=["text", "json"], default="text", help="output (default text)")
    p = action(
        ts, "next", "the position to rate next (an active task draws one for the caller)", cmd_task_next
    )
    p.add_argument("task", type=int, help="task id")
    p = action(ts, "show", "one item of the rater's queue: question, answer, contexts, rubric", cmd_task_show)
    p.add_argument("task", type=int, help="task id")
    p.add_argument("position", type=int, help="position in the queue (from `ragmeta task queue`)")
    p = action(
        ts, "rate", "rate one item of the rater's queue (on the answer's version as served)", cmd_task_rate
    )
    p.add_argument("task", type=int, help="task id")
    p.add_argument("position", type=int, help="position in the queue (from `ragmeta task queue`)")
    p.add_argument("score", type=int, help="a level of the task's rubric")
    p.add_argument("--comment", help="a comment kept with the score")


def _add_questions_command(sub: Any, url: argparse.ArgumentParser) -> None:
    help_text = "export a dataset's questions: .json/.jsonl (the import form) or .csv (a sheet of the ids)"
    p = sub.add_parser("questions", help=help_text, description=help_text, parents=[url])
    p.set_defaults(client=cmd_questions)
    p.add_argument("dataset", type=int, help="dataset id")
    p.add_argument(
        "-o", "--output", type=Path, help="file to write: .json, .jsonl or .csv (default: JSONL on stdout)"
    )
    p.add_argument("--include-text", action="store_true", help="JSON/JSONL: add each passage's text")


def _add_delete_commands(group: _Group, action: _Action) -> None:
    ds = group(
        "delete",
        cmd_delete,
        "undo an import or a job (refused, dependants listed, unless --cascade)",
        "delete_command",
    )
    for name, help_text, cascade in (
        ("dataset", "a dataset (--cascade: its documents, questions, runs and all under them)", True),
        ("run", "a run (--cascade: its outputs, their ratings and scores, its jobs)", True),
        (
            "job-results",
            "what a job produced (--cascade: also the ratings and scores of generated outputs)",
            True,
        ),
    ):
        p = action(ds, name, help_text)
        p.add_argument("id", type=int, help=f"{name.split('-')[0]} id")
        if cascade:
            p.add_argument("--cascade", action="store_true", help="also delete what depends on it")
    p = action(ds, "ratings", "one rater's ratings on a run (the rater stays registered)")
    p.add_argument("id", type=int, help="run id")
    p.add_argument("--rater", required=True, help="the rater's name")
    p = action(ds, "scores", "an imported metric's scores on a run")
    p.add_argument("id", type=int, help="run id")
    p.add_argument("metric", help="the metric, e.g. external.ragas.faithfulness")
