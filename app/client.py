"""The `ragmeta` client commands: the service's operations from a terminal, against a running server.

The service is found at `--url URL` (accepted anywhere on the line), else `$RAGMETA_URL`, else
http://127.0.0.1:8000. Commands that start a job follow it with a progress bar; Ctrl-C stops following, not
the job, and says how to follow or cancel it again. Errors are one line (no traceback) and the exit code says
what happened (see EXIT_CODES).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from app.cli_common import (
    INTERRUPTED,
    JOB_FAILED,
    OK,
    SERVICE_ERROR,
    UNREACHABLE,
    USAGE,
    ClientError,
    JobEnded,
    UsageError,
    api_key,
    output_format,
    plain,
    print_issued,
    readable,
    report_import,
    say,
    service_url,
    writable,
)
from app.sdk import Client, ServiceUnreachable

FIGURE_FORMATS = ("svg", "png", "pdf")
REPORT_FORMATS = {".json": "json", ".csv": "csv", ".md": "md", ".txt": "text", ".html": "html"}


@contextlib.contextmanager
def _no_sigint() -> Iterator[None]:
    """SIGINT blocked for this thread (threads started inside inherit it); delivered when the block ends."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def wait(c: Client, job: dict[str, Any], label: str) -> dict[str, Any]:
    """Follow a job with a progress bar until it ends. Ctrl-C stops following; the job goes on."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    job_id = job["id"]
    if job["total"] == 0:
        print(f"{label}: nothing to do ({json.dumps(job.get('summary', {}), ensure_ascii=False)[:200]})")
        return job
    try:
        # Inside the try: Ctrl-C right after this line is printed must still get the message below.
        say(f"following job {job_id} ({label}); Ctrl-C stops following, the job goes on")
        p = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        # Ctrl-C is held back while the bar starts and stops its refresh thread and redirects stderr: an
        # interrupt inside either left a half-started bar whose thread the message below waited on forever.
        with _no_sigint():
            p.start()
        try:
            task = p.add_task(label, total=job["total"])
            ended = c.wait_job(
                job_id,
                poll_s=0.5,
                progress=lambda j: p.update(task, completed=j.done + j.failed),
                raise_on_failure=False,
            )
            job = plain(ended)
        finally:
            with _no_sigint():
                p.stop()
    except KeyboardInterrupt:
        say(
            f"\nstopped following job {job_id}; it goes on in the service.\n"
            f"  follow it again: ragmeta wait {job_id}\n  cancel it:       ragmeta cancel {job_id}"
        )
        raise
    if job["failed"]:
        print(f"{job['failed']} item(s) failed: {job['errors_by_cause']}")
        for e in job["errors"][:5]:
            print(f"  {e['item']}: {e['error'][:200]}")
    print(f"{label}: {job['status']} (job {job_id})")
    if job["status"] != "done":
        raise JobEnded(f"job {job_id} ended {job['status']}")
    return job


def _start(c: Client, args: argparse.Namespace, job: dict[str, Any], label: str) -> None:
    if getattr(args, "no_wait", False):
        print(f"{label}: job {job['id']} {job['status']} ({job['total']} items); ragmeta wait {job['id']}")
        return
    wait(c, job, label)


def render_report(report: Any) -> str:
    """The report for a terminal, worded like the HTML page (services.reports.presentation.text)."""
    from services.reports.presentation.text import render_text
    from services.reports.schemas import ReportRead

    return render_text(ReportRead.model_validate(report))


def _run_ids(args: argparse.Namespace) -> list[int]:
    """RUN and --runs together: every run named is pooled; none is dropped."""
    ids: list[int] = [args.run] if args.run is not None else []
    if args.runs:
        try:
            ids += [int(x) for x in args.runs.split(",") if x.strip()]
        except ValueError:
            raise UsageError(f"--runs must be comma-separated run ids, not {args.runs!r}") from None
    ids = list(dict.fromkeys(ids))
    if not ids:
        raise UsageError("give a run id, or --runs 3,4 to pool several runs")
    if args.run is not None and args.runs:
        say(f"pooling runs {', '.join(map(str, ids))}")
    return ids


# ------------------------------------------------------------------------------------------------ commands


def cmd_import_dataset(c: Client, args: argparse.Namespace) -> None:
    readable(args.documents)
    readable(args.questions)
    existing = [d for d in c.all(c.list_datasets) if d.name == args.name]
    ds = existing[0] if existing else c.create_dataset({"name": args.name, "language": args.language})
    print(f"dataset {ds.name!r}: id {ds.id}")
    if args.documents:
        report_import("documents", plain(c.import_documents(ds.id, file=args.documents)))
    if args.questions:
        report_import("questions", plain(c.import_questions(ds.id, file=args.questions)))


def cmd_import_study(c: Client, args: argparse.Namespace) -> None:
    for f in [*args.file, args.corpus, args.passages, *(args.ratings or []), *(args.preferences or [])]:
        readable(f)
    data = {
        "dataset": args.dataset,
        "language": args.language,
        "run": args.run,
        "format": args.format,
        "columns": args.columns,
        "fuzzy_threshold": args.fuzzy_threshold,
        "fuzzy_word_changes": args.fuzzy_word_changes,
        "ratings_columns": args.ratings_columns,
        "ratings_join": args.ratings_join,
        "preferences_columns": args.preferences_columns,
    }
    r = plain(
        c.import_study(
            args.file,
            corpus=args.corpus,
            passages=args.passages,
            ratings=args.ratings or (),
            preferences=args.preferences or (),
            **data,
        )
    )
    ds, run, q = r["dataset"], r["run"], r["questions"]
    print(f"dataset {ds['name']!r}: id {ds['id']} ({'created' if ds['created'] else 'added to'})")
    for run in r["runs"]:
        print(f"run {run['name']!r}: id {run['id']}, {run['outputs']} outputs")
    print(
        f"{r['format']} file, {r['file']['rows']} rows; questions: {q['created']} created, {q['updated']} "
        f"updated, {q['unchanged']} unchanged, {q['with_gold_passages']} with gold passages"
    )
    for what in ("passages", "chunks"):
        located = r[what]
        if located["total"]:
            found = ", ".join(
                f"{located[k]} {k}" for k in ("given", "exact", "normalized", "fuzzy", "unlocated")
            )
            low = located["lowest_fuzzy_score"]
            print(f"{what}: {found}" + (f" (lowest fuzzy score {low:.1f})" if low is not None else ""))
    for lp in r["located_passages"]:
        score = f" {lp['match_score']:g}" if lp["match_score"] is not None else ""
        changes = ", ".join(
            f"{w['given'] or '(none)'!r} -> {w['corpus'] or '(none)'!r}" for w in lp["word_changes"]
        )
        print(
            f"  question {lp['question_id']!r} passage {lp['passage']}: {lp['location']}{score} in "
            f"{lp['document_id']!r}" + (f"; words differ: {changes}" if changes else "")
        )
    if r["scores"]["metrics"]:
        print(f"scores: {r['scores']['created']} for {', '.join(r['scores']['metrics'])}")
    if r["ratings"] is not None:
        per_run = ", ".join(f"{n} for {name!r}" for name, n in r["ratings"]["by_run"].items())
        print(f"ratings: {r['ratings']['created']} created ({per_run})")
    if r.get("preferences") is not None:
        pairs = ", ".join(
            f"{x['created']} for {x['run_a']!r} vs {x['run_b']!r}" for x in r["preferences"]["pairs"]
        )
        print(f"preferences: {r['preferences']['created']} created ({pairs})")
    for note in r["notes"]:
        print(f"note: {note}")


def cmd_index(c: Client, args: argparse.Namespace) -> None:
    body = {"force": True} if args.force else None
    _start(c, args, plain(c.index_dataset(args.dataset, body)), "index")


def cmd_create_run(c: Client, args: argparse.Namespace) -> None:
    # Only what the user said: a run of imported outputs must not claim the service's retriever or k.
    system = {
        "retriever": args.retriever,
        "k": args.k,
        "generator": args.generator,
        "model": args.model,
        "prompt": args.prompt,
    }
    body = {"name": args.name, "system": {k: v for k, v in system.items() if v is not None}}
    run = c.create_run(args.dataset, body)
    print(f"run {run.name!r}: id {run.id}")


def cmd_generate(c: Client, args: argparse.Namespace) -> None:
    body = {"regenerate": True} if args.regenerate else None
    _start(c, args, plain(c.generate(args.run, body)), "generate")


def cmd_import_outputs(c: Client, args: argparse.Namespace) -> None:
    readable(args.file)
    report_import("outputs", plain(c.import_outputs(args.run, file=args.file, format=args.format)))


def cmd_rate(c: Client, args: argparse.Namespace) -> None:
    # The bytes go as they are: the service reads the sheet (encoding, separator) and registers its raters.
    readable(args.file)
    imported = c.import_ratings(args.run, file=args.file, register_raters=args.register_raters)
    report_import("ratings", plain(imported))


def cmd_score(c: Client, args: argparse.Namespace) -> None:
    body: dict[str, Any] = {"k": args.k, "recompute": args.recompute, "word_rule": args.word_rule}
    if args.metrics:
        body["metrics"] = [m.strip() for m in args.metrics.split(",") if m.strip()]
    _start(c, args, plain(c.create_scoring(args.run, body)), "score")


def cmd_pair_judge(c: Client, args: argparse.Namespace) -> None:
    body = {"run_b": args.run_b, "recompute": args.recompute}
    _start(c, args, plain(c.create_pair_judging(args.run, body)), "pair-judge")


def cmd_jobs(c: Client, args: argparse.Namespace) -> None:
    jobs = plain(c.all(c.list_jobs, status=args.status))
    if not jobs:
        print("no jobs")
    else:
        print(f"{'id':>5}  {'kind':<9} {'status':<9} {'done/total':<11} {'failed':>6}  of")
    for j in jobs:
        what = ", ".join(
            f"{k} {v}" for k, v in (j.get("params") or {}).items() if k in ("run_id", "dataset_id")
        )
        print(
            f"{j['id']:>5}  {j['kind']:<9} {j['status']:<9} {j['done'] + j['failed']:>5}/{j['total']:<5}"
            f" {j['failed']:>6}  {what}"
        )


def cmd_wait(c: Client, args: argparse.Namespace) -> None:
    job = plain(c.get_job(args.job))
    if job["status"] in ("done", "failed", "cancelled"):
        # The same last line as following it to its end: a job that ended before `wait` reads alike.
        print(f"{job['kind']}: {job['status']} (job {job['id']}; {job['done']} done, {job['failed']} failed)")
        if job["status"] != "done":
            raise JobEnded(f"job {job['id']} ended {job['status']}")
        return
    wait(c, job, job["kind"])


def cmd_cancel(c: Client, args: argparse.Namespace) -> None:
    job = plain(c.cancel_job(args.job))
    print(f"job {job['id']}: {job['status']} ({job['done']} done, {job['failed']} failed)")


def cmd_scores(c: Client, args: argparse.Namespace) -> None:
    fmt = "csv"
    if args.output:
        fmt = output_format(writable(args.output), {".csv": "csv", ".json": "json"}, "scores")
    if fmt == "json":
        content = (
            json.dumps(json.loads(c.get_scores_text(args.run, "json")), indent=2, ensure_ascii=False) + "\n"
        )
    else:
        content = c.get_scores_text(args.run, "csv")
    if args.output:
        args.output.write_text(content, encoding="utf-8")
        print(f"wrote {args.output}")
    else:
        print(content, end="")


def cmd_report(c: Client, args: argparse.Namespace) -> None:
    ids = _run_ids(args)
    fmt = args.format
    if args.output and fmt is None:
        fmt = output_format(writable(args.output), REPORT_FORMATS, "a report")
    fmt = fmt or "text"
    # The report of the data as it is now: a command run after an import reads its import, whatever other
    # clients are computing (never the last report computed, said stale).
    run, opts = ids[0], {"ci": args.ci, "k": args.k, "fresh": True}
    pooled = len(ids) > 1
    if fmt in ("json", "csv", "md"):
        table: Literal["json", "csv", "md"] = "json" if fmt == "json" else "csv" if fmt == "csv" else "md"
        content = (
            c.pooled_report_text(ids, table, **opts) if pooled else c.run_report_text(run, table, **opts)
        )
        if fmt == "json":
            content = json.dumps(json.loads(content), indent=2, ensure_ascii=False) + "\n"
    elif fmt == "html":
        content = c.pooled_html(ids, **opts) if pooled else c.report_html(run, **opts)
    else:
        content = render_report(c.pooled_report(ids, **opts) if pooled else c.run_report(run, **opts))
    if args.output:
        writable(args.output).write_text(content, encoding="utf-8")
        print(f"wrote {args.output}")
    else:
        print(content, end="")


def cmd_figure(c: Client, args: argparse.Namespace) -> None:
    ids = _run_ids(args)
    fmt = output_format(writable(args.output), {f".{f}": f for f in FIGURE_FORMATS}, "the figure")
    opts = {"ci": args.ci, "k": args.k, "fresh": True}
    if len(ids) > 1:
        pooled = {"svg": c.pooled_svg, "png": c.pooled_png, "pdf": c.pooled_pdf}[fmt]
        figure = pooled(ids, **opts)
    else:
        single = {"svg": c.report_svg, "png": c.report_png, "pdf": c.report_pdf}[fmt]
        figure = single(ids[0], **opts)
    args.output.write_bytes(figure)
    print(f"wrote {args.output}")


# ------------------------------------------------------------------------------------------------- parser


_Add = Callable[[str, Any, str], argparse.ArgumentParser]


def add_commands(sub: Any, url: argparse.ArgumentParser) -> None:
    """Register the client commands on the `ragmeta` parser; ``url`` carries the --url option."""

    def add(name: str, func: Any, help_text: str) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(
            name, help=help_text, description=help_text, parents=[url]
        )
        p.set_defaults(client=func)
        return p

    # In this order: it is the order `ragmeta --help` lists the commands in.
    _add_import_commands(add)
    _add_run_commands(add)
    _add_job_commands(add)
    _add_result_commands(add)


def _no_wait(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-wait", action="store_true", help="start the job and return (ragmeta wait JOB later)")


def _add_import_commands(add: _Add) -> None:
    """import-dataset and import-study: a dataset and what comes with it."""
    p = add(
        "import-dataset", cmd_import_dataset, "create (or reuse) a dataset and import documents and questions"
    )
    p.add_argument("name", help="dataset name (reused when it exists)")
    p.add_argument("--language", default="en", help="language code of the texts, e.g. fr or en (default en)")
    p.add_argument(
        "--documents", type=Path, help="JSON or JSONL file of {external_id, title, text, metadata}"
    )
    p.add_argument("--questions", type=Path, help="JSON or JSONL file of questions with reference passages")
    p = add(
        "import-study",
        cmd_import_study,
        "import a Ragas, RAGChecker, DeepEval or plain file in one step: dataset, questions, gold passages, "
        "a run and its outputs (passages and chunks given as text are located in the corpus)",
    )
    p.add_argument("dataset", help="dataset name (created, or added to when it exists)")
    p.add_argument(
        "file",
        type=Path,
        nargs="+",
        help="the study file (JSON, JSONL or CSV); several files are several runs of the same questions",
    )
    p.add_argument("--corpus", type=Path, help="documents JSON/JSONL, or a .zip/.tar.gz of text files")
    p.add_argument("--passages", type=Path, help="gold passages beside the file: {question_id, text} rows")
    p.add_argument("--run", help="name of the new run (default: the file name)")
    p.add_argument("--language", default="en", help="language of a new dataset (default en)")
    p.add_argument(
        "--format",
        default="auto",
        choices=["auto", "ragas", "ragchecker", "deepeval", "mapped"],
        help="default: detected",
    )
    p.add_argument(
        "--columns", help='plain files: JSON object field -> column, e.g. \'{"question": "Frage"}\''
    )
    p.add_argument(
        "--fuzzy-threshold",
        type=float,
        help="minimum fuzzy match score of a located text, 0-100 (default 90)",
    )
    p.add_argument(
        "--fuzzy-word-changes",
        choices=["error", "warn"],
        help="a gold passage found by a fuzzy match that changes a word: refuse the import naming it "
        "(error), or import it with a note the reports repeat (warn, the default)",
    )
    p.add_argument(
        "--ratings",
        type=Path,
        action="append",
        help="human ratings of the runs' outputs (repeatable): question_id or question, rater, score, "
        "and run when there are several runs; raters are registered as needed",
    )
    p.add_argument(
        "--ratings-columns",
        help='ratings files: JSON object field -> column, e.g. \'{"question_id": "ID", "score": "Note"}\'',
    )
    p.add_argument(
        "--ratings-join",
        choices=["auto", "order"],
        help="auto (default): by question_id, else by question text; order: rows naming neither match "
        "the run's questions by position",
    )
    p.add_argument(
        "--preferences",
        type=Path,
        action="append",
        help="pairwise preferences between two runs' answers (repeatable): question_id or question, rater, "
        "preference (on -2..2 by default, positive = run B better), and run_a, run_b naming the runs (with "
        "two runs: the first file's is A, the second's B); raters are registered as needed",
    )
    p.add_argument(
        "--preferences-columns",
        help='preference files: JSON object field -> column, e.g. \'{"preference": "Choix"}\'',
    )


def _add_run_commands(add: _Add) -> None:
    """index, create-run, generate, import-outputs, rate and score: a run from its index to its scores."""
    p = add("index", cmd_index, "build a dataset's retrieval index (chunks, BM25, dense) as a job")
    p.add_argument("dataset", type=int, help="dataset id")
    p.add_argument("--force", action="store_true", help="rebuild even when the index is up to date")
    _no_wait(p)
    p = add(
        "create-run", cmd_create_run, "record a system version (a run); only the options given are recorded"
    )
    p.add_argument("dataset", type=int, help="dataset id")
    p.add_argument("name", help="run name")
    p.add_argument("--retriever", help="hybrid, bm25, dense, or the name of your own retriever")
    p.add_argument("--k", type=int, help="chunks retrieved per question")
    p.add_argument("--generator", help="llm or extractive for `ragmeta generate`, or your own system's name")
    p.add_argument("--model", help="generator model")
    p.add_argument("--prompt", help="prompt name or version")
    p = add(
        "generate", cmd_generate, "answer every question of the run's dataset with the service's RAG system"
    )
    p.add_argument("run", type=int, help="run id")
    p.add_argument("--regenerate", action="store_true", help="answer again questions already answered")
    _no_wait(p)
    p = add(
        "import-outputs",
        cmd_import_outputs,
        "import the outputs of any RAG system (native, Ragas, RAGChecker)",
    )
    p.add_argument("run", type=int, help="run id")
    p.add_argument("file", type=Path, help="JSON, JSONL or CSV file of outputs")
    p.add_argument(
        "--format",
        default="auto",
        choices=["auto", "native", "ragas", "ragchecker"],
        help="default: detected",
    )
    p = add("rate", cmd_rate, "import human ratings (CSV: question_id, rater, score[, rubric, comment])")
    p.add_argument("run", type=int, help="run id")
    p.add_argument(
        "file", type=Path, help="CSV file of ratings (as the spreadsheet saved it: the service reads it)"
    )
    p.add_argument(
        "--no-register-raters",
        dest="register_raters",
        action="store_false",
        help="refuse raters not registered yet (default: the service registers the raters the file names; "
        "a rater's own key posts their own ratings only)",
    )
    p = add("score", cmd_score, "score a run's outputs with every available metric (or --metrics) as a job")
    p.add_argument("run", type=int, help="run id")
    p.add_argument("--metrics", help="comma-separated metric names (default: every metric available here)")
    p.add_argument("--k", type=int, default=5, help="top k retrieved chunks the metrics read (default 5)")
    p.add_argument("--recompute", action="store_true", help="compute again scores already stored")
    p.add_argument(
        "--word-rule",
        choices=["joined", "w_runs"],
        default="joined",
        help="words of ref.word_recall/word_precision: joined across ' and - (default) or every \\w+ run",
    )
    _no_wait(p)
    p = add(
        "pair-judge",
        cmd_pair_judge,
        "judge two runs' answers side by side in both orders (position and length probes) as a job",
    )
    p.add_argument("run", type=int, help="run id")
    p.add_argument("run_b", type=int, help="the other run id, of the same dataset")
    p.add_argument("--recompute", action="store_true", help="judge again pairs already judged")
    _no_wait(p)


def _add_job_commands(add: _Add) -> None:
    """keys, jobs, wait and cancel: accounts and the jobs the other commands start."""
    add_keys_command(add("keys", cmd_keys, "API keys and accounts (admins): create, list, revoke"))
    p = add("jobs", cmd_jobs, "list recent jobs with their progress")
    p.add_argument(
        "--status", choices=["queued", "running", "done", "failed", "cancelled"], help="only these"
    )
    p = add("wait", cmd_wait, "follow a job until it ends (Ctrl-C stops following, not the job)")
    p.add_argument("job", type=int, help="job id")
    p = add("cancel", cmd_cancel, "cancel a queued or running job")
    p.add_argument("job", type=int, help="job id")


def _add_result_commands(add: _Add) -> None:
    """scores, report and figure: what a run's scores say."""
    p = add("scores", cmd_scores, "download a run's scores (one row per output, one column per metric)")
    p.add_argument("run", type=int, help="run id")
    p.add_argument("-o", "--output", type=Path, help="file to write, .csv or .json (default: CSV on stdout)")
    for name, func, help_text in (
        ("report", cmd_report, "print or save the correlation report (text, JSON, CSV, Markdown, HTML)"),
        ("figure", cmd_figure, "save the report figure (.svg, .png or .pdf, from the file name)"),
    ):
        p = add(name, func, help_text)
        p.add_argument("run", type=int, nargs="?", help="run id (or use --runs)")
        p.add_argument("--runs", help="pool several runs of one dataset: comma-separated ids (RUN included)")
        p.add_argument(
            "--ci",
            default="fisher",
            choices=["fisher", "bca", "auto"],
            help="interval method (default fisher)",
        )
        p.add_argument("--k", type=int, default=5, help="k of the retrieval metrics (default 5)")
        if name == "report":
            p.add_argument(
                "--format",
                choices=["text", "json", "csv", "md", "html"],
                help="default: from the -o extension, else text",
            )
            p.add_argument("-o", "--output", type=Path, help="file to write (.txt, .json, .csv, .md, .html)")
        else:
            p.add_argument(
                "-o", "--output", type=Path, required=True, help="file to write: .svg, .png or .pdf"
            )


def cmd_keys(c: Client, args: argparse.Namespace) -> None:
    if args.keys_command == "create":
        new = {"name": args.name, "role": args.role, "label": args.label}
        print_issued(plain(c.create_key(new)))
    elif args.keys_command == "list":
        keys = plain(c.all(c.list_keys))
        width = max([len("prefix")] + [len(k["prefix"]) for k in keys])
        print(f"{'id':>4}  {'prefix':<{width}}  {'user':<20} {'role':<7} {'state':<6}  label")
        for k in keys:
            state = f"revoked {k['revoked_at']}" if k["revoked_at"] else "active"
            print(
                f"{k['id']:>4}  {k['prefix']:<{width}}  {k['user']:<20} {k['role']:<7} {state:<6}  "
                f"{k['label'] or ''}"
            )
    else:
        k = c.revoke_key(args.id)
        print(f"key {k.id} of {k.user} revoked")


def add_keys_command(p: argparse.ArgumentParser) -> None:
    ks = p.add_subparsers(dest="keys_command", required=True, metavar="ACTION", help="create, list or revoke")
    c = ks.add_parser("create", help="issue a key, creating the account with --role when it does not exist")
    c.add_argument("--name", required=True, help="the account's name")
    c.add_argument("--role", choices=["admin", "editor", "rater", "viewer"], help="for a new account")
    c.add_argument("--label", default=None, help="what the key is for")
    c.add_argument(
        "--local",
        action="store_true",
        help="write into the configured database instead of calling the service (the first admin key)",
    )
    ks.add_parser("list", help="every key's prefix, account and state (never the keys)")
    ks.add_parser("revoke", help="revoke a key by id").add_argument("id", type=int, help="key id")


def run(args: argparse.Namespace) -> int:
    """Carry out a parsed client command; returns the exit code and prints errors as one line."""
    url = service_url(args)
    try:
        with Client(url, api_key=api_key(args), timeout=600) as c:
            # A command may end with its own exit code (a CI gate that did not pass); None is done.
            code = args.client(c, args)
        return code if isinstance(code, int) else OK
    except UsageError as exc:
        print(f"ragmeta: {exc}", file=sys.stderr)
        return USAGE
    except ClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return SERVICE_ERROR
    except JobEnded as exc:
        print(f"error: {exc}", file=sys.stderr)
        return JOB_FAILED
    except ServiceUnreachable as exc:
        print(
            f"cannot reach the service at {url}: {exc.reason}. Is it running (make run)? "
            "Set the URL with --url or RAGMETA_URL.",
            file=sys.stderr,
        )
        return UNREACHABLE
    except OSError as exc:
        print(f"ragmeta: {exc.strerror or exc}: {exc.filename}", file=sys.stderr)
        return USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return INTERRUPTED


def _dispatch(c: Any, args: argparse.Namespace) -> int:
    """Run a parsed command on a given client: the Python client, or an httpx client it wraps (tests pass an
    in-process one)."""
    code = args.client(c if isinstance(c, Client) else Client(http=c), args)
    return code if isinstance(code, int) else OK
