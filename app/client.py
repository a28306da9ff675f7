"""The `ragmeta` client commands: the service's operations against a running server, with progress bars.

ragmeta --url http://127.0.0.1:8000 import-dataset demo --language fr --documents d.jsonl --questions q.jsonl
ragmeta index 1                         ragmeta create-run 1 hybrid --retriever hybrid --generator extractive
ragmeta generate 3                      ragmeta import-outputs 3 outputs.json
ragmeta rate 3 ratings.csv              ragmeta score 3 --metrics classic.bleu,ref.word_recall
ragmeta report 3 [--runs 3,4]           ragmeta figure 3 -o report.png
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx

DEFAULT_URL = "http://127.0.0.1:8000"


class ClientError(Exception):
    pass


def _check(resp: httpx.Response) -> Any:
    if resp.status_code >= 400:
        try:
            body = resp.json()
            items = "".join(
                f"\n  - {i.get('field')}"
                + (f" (row {i['index']})" if i.get("index") is not None else "")
                + (f" (line {i['line']})" if i.get("line") is not None else "")
                + f": {i.get('reason')}"
                for i in body.get("items", [])[:20]
            )
            raise ClientError(f"{resp.status_code} {body.get('error')}: {body.get('detail')}{items}")
        except (ValueError, AttributeError):
            raise ClientError(f"{resp.status_code}: {resp.text[:500]}") from None
    ctype = resp.headers.get("content-type", "")
    return resp.json() if ctype.startswith("application/json") else resp


def _upload(c: httpx.Client, path: str, file: Path) -> Any:
    with file.open("rb") as f:
        return _check(c.post(path, files={"file": (file.name, f, "application/octet-stream")}))


def _report_import(what: str, r: dict[str, Any]) -> None:
    print(
        f"{what}: {r['received']} received, {r['created']} created, {r['updated']} updated, "
        f"{r['unchanged']} unchanged"
    )


def wait(c: httpx.Client, job: dict[str, Any], label: str) -> dict[str, Any]:
    """Follow a job with a progress bar until it ends."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    total = job["total"]
    if total == 0:
        print(f"{label}: nothing to do ({json.dumps(job.get('summary', {}), ensure_ascii=False)[:200]})")
        return job
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()
    ) as p:
        task = p.add_task(label, total=total)
        while True:
            job = _check(c.get(f"/jobs/{job['id']}"))
            p.update(task, completed=job["done"] + job["failed"])
            if job["status"] in ("done", "failed", "cancelled"):
                break
            time.sleep(0.5)
    if job["failed"]:
        print(f"{job['failed']} item(s) failed: {job['errors_by_cause']}")
        for e in job["errors"][:5]:
            print(f"  {e['item']}: {e['error'][:200]}")
    print(f"{label}: {job['status']}")
    return job


def render_report(report: dict[str, Any]) -> str:
    """The report for a terminal, worded like the HTML page (services.reports.text)."""
    from services.reports.schemas import ReportRead
    from services.reports.text import render_text

    return render_text(ReportRead.model_validate(report))


def _print_report(report: dict[str, Any]) -> None:
    print(render_report(report), end="")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ragmeta client")
    parser.add_argument("--url", default=DEFAULT_URL, help=f"service URL (default {DEFAULT_URL})")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "import-dataset", help="create (or reuse) a dataset and import documents and questions"
    )
    p.add_argument("name")
    p.add_argument("--language", default="en")
    p.add_argument("--documents", type=Path)
    p.add_argument("--questions", type=Path)
    sub.add_parser("index", help="build a dataset's retrieval index").add_argument("dataset", type=int)
    p = sub.add_parser("create-run", help="record a system configuration")
    p.add_argument("dataset", type=int)
    p.add_argument("name")
    p.add_argument("--retriever", default="hybrid")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--generator", default=None, help="llm or extractive (default: llm when configured)")
    p.add_argument("--model", default=None)
    sub.add_parser("generate", help="answer every question of a run's dataset").add_argument("run", type=int)
    p = sub.add_parser("import-outputs", help="outputs of any RAG system (native, Ragas or RAGChecker)")
    p.add_argument("run", type=int)
    p.add_argument("file", type=Path)
    p.add_argument("--format", default="auto", choices=["auto", "native", "ragas", "ragchecker"])
    p = sub.add_parser(
        "rate", help="import ratings from a CSV (question_id, rater, score[, rubric, comment])"
    )
    p.add_argument("run", type=int)
    p.add_argument("file", type=Path)
    p = sub.add_parser("score", help="score a run's outputs")
    p.add_argument("run", type=int)
    p.add_argument("--metrics", default=None, help="comma-separated; default: every available metric")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--recompute", action="store_true")
    p = sub.add_parser("report", help="print the correlation report")
    p.add_argument("run", type=int)
    p.add_argument("--runs", default=None, help="pool several runs: comma-separated ids")
    p.add_argument("--format", default="text", choices=["text", "json", "csv"])
    p.add_argument("--ci", default="fisher", choices=["fisher", "bca"])
    p.add_argument("--k", type=int, default=5)
    p = sub.add_parser("figure", help="download the report figure")
    p.add_argument("run", type=int)
    p.add_argument("-o", "--output", type=Path, default=Path("report.png"))
    args = parser.parse_args(argv)

    with httpx.Client(base_url=args.url, timeout=600) as c:
        try:
            return _dispatch(c, args)
        except httpx.TransportError as exc:
            print(
                f"cannot reach the service at {args.url}: {exc}. Is it running (make run)?", file=sys.stderr
            )
        except ClientError as exc:
            print(f"error: {exc}", file=sys.stderr)
    return 1


def _dispatch(c: httpx.Client, args: argparse.Namespace) -> int:
    cmd = args.command
    if cmd == "import-dataset":
        existing = [d for d in _check(c.get("/datasets")) if d["name"] == args.name]
        ds = (
            existing[0]
            if existing
            else _check(c.post("/datasets", json={"name": args.name, "language": args.language}))
        )
        print(f"dataset {ds['name']!r}: id {ds['id']}")
        if args.documents:
            _report_import("documents", _upload(c, f"/datasets/{ds['id']}/documents", args.documents))
        if args.questions:
            _report_import("questions", _upload(c, f"/datasets/{ds['id']}/questions", args.questions))
    elif cmd == "index":
        wait(c, _check(c.post(f"/datasets/{args.dataset}/index")), "index")
    elif cmd == "create-run":
        system = {"retriever": args.retriever, "k": args.k, "generator": args.generator, "model": args.model}
        run = _check(
            c.post(
                f"/datasets/{args.dataset}/runs",
                json={"name": args.name, "system": {k: v for k, v in system.items() if v is not None}},
            )
        )
        print(f"run {run['name']!r}: id {run['id']}")
    elif cmd == "generate":
        wait(c, _check(c.post(f"/runs/{args.run}/generate")), "generate")
    elif cmd == "import-outputs":
        with args.file.open("rb") as f:
            r = _check(
                c.post(
                    f"/runs/{args.run}/outputs",
                    params={"format": args.format},
                    files={"file": (args.file.name, f, "application/octet-stream")},
                )
            )
        _report_import("outputs", r)
    elif cmd == "rate":
        raw = args.file.read_bytes()
        raters = sorted(
            {row["rater"] for row in csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))) if row.get("rater")}
        )
        _check(c.post("/raters", json=[{"name": r} for r in raters]))
        _report_import("ratings", _upload(c, f"/runs/{args.run}/ratings", args.file))
    elif cmd == "score":
        body: dict[str, Any] = {"k": args.k, "recompute": args.recompute}
        if args.metrics:
            body["metrics"] = [m.strip() for m in args.metrics.split(",") if m.strip()]
        wait(c, _check(c.post(f"/runs/{args.run}/scoring-jobs", json=body)), "score")
    elif cmd == "report":
        params: dict[str, Any] = {"ci": args.ci, "k": args.k}
        path = f"/runs/{args.run}/report"
        if args.runs:
            path, params["runs"] = "/report", args.runs
        if args.format == "csv":
            params["format"] = "csv"
            print(_check(c.get(path, params=params)).text, end="")
        elif args.format == "json":
            print(json.dumps(_check(c.get(path, params=params)), indent=2, ensure_ascii=False))
        else:
            _print_report(_check(c.get(path, params=params)))
    elif cmd == "figure":
        suffix = "svg" if args.output.suffix == ".svg" else "png"
        args.output.write_bytes(_check(c.get(f"/runs/{args.run}/report.{suffix}")).content)
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
