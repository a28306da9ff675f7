"""Latency of a report.

Study-sized (default): 96 outputs, 2 raters, 25 metrics (SQLite), analytic intervals, against the same
statistics computed without the service (the obvious alternative: scipy calls per metric).

    python bench/report_latency.py [--outputs 96] [--metrics 25] [--repeat 5]

Team-sized (--team): the run of bench/imports.py (10,000 outputs x 5 chunks, 2 raters, 5 external scores,
imported through the service) on SQLite and, with --pg-url, PostgreSQL; its report timed with this tree's
code and, side by side in the same run, with the code of an earlier revision (--baseline, a commit of
this repository, extracted with git archive; its database schema must be this tree's). Each side runs in
fresh processes: "warm" is the median of --repeat reports after the process has warmed up as a report
worker does when it starts (services.reports.pool: imports and compiled kernels loaded); "warm-up" is that
start alone; "first in a fresh process" is a report with no warm-up before it (both costs). Both sides'
reports must be equal.

    python bench/report_latency.py --team --baseline REV [--pg-url postgresql+psycopg://...] [--repeat 3]
        [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# The repository root in place of bench/ (the script's directory) on the path: bench/coverage.py must
# not shadow the coverage package, which numba imports.
sys.path[0] = str(ROOT)

from bench.baseline import extract  # noqa: E402


def build_team_run(url: str, n: int) -> int:
    """bench/imports.py's run, imported through the service: n outputs x 5 chunks, 2 raters, 5 metrics."""
    from sqlalchemy import text

    from bench.imports import team_data  # the same rows as bench/imports.py
    from services.datasets import service as datasets
    from services.datasets.schemas import DatasetCreate
    from services.db import make_engine, make_session_factory, run_transaction, upgrade
    from services.ingest import Row
    from services.models import Base
    from services.ratings import service as ratings
    from services.runs import service as runs
    from services.runs.schemas import RunCreate
    from services.scores import service as scores

    engine = make_engine(url)
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            # Everything, procrastinate's types and functions included (a drop_all leaves them).
            conn.execute(text("DROP SCHEMA public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
        else:
            Base.metadata.drop_all(conn)
            conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
    upgrade(url)
    factory = make_session_factory(engine)
    data = team_data(n)

    def setup(s: Any) -> int:
        ds = datasets.create_dataset(s, DatasetCreate(name="bench", language="fr")).id
        datasets.import_documents(s, ds, [Row(i, None, d) for i, d in enumerate(data.docs)])
        datasets.import_questions(s, ds, [Row(i, None, q) for i, q in enumerate(data.questions)])
        return runs.create_run(s, ds, RunCreate(name="r")).id

    run_id = run_transaction(factory, setup)
    outputs, raters, rating_rows, score_rows = data.outputs, data.raters, data.rating_rows, data.score_rows
    run_transaction(factory, runs.import_outputs, run_id, [Row(i, None, o) for i, o in enumerate(outputs)])
    run_transaction(factory, ratings.create_raters, [Row(i, None, r) for i, r in enumerate(raters)])
    run_transaction(
        factory, ratings.import_ratings, run_id, [Row(i, None, r) for i, r in enumerate(rating_rows)]
    )
    run_transaction(
        factory, scores.import_external_scores, run_id, [Row(i, None, r) for i, r in enumerate(score_rows)]
    )
    engine.dispose()
    return run_id


def time_reports(root: str, url: str, run_id: int, repeat: int, warm: bool) -> dict[str, Any]:
    """In this (fresh) process, with the code under ``root``: warm up as a report worker does (or not),
    then time ``repeat`` reports in read sessions. Returns the timings and the last report."""
    sys.path[0] = root
    t0 = time.perf_counter()
    from services.config import Settings
    from services.db import make_engine, make_session_factory, session_scope
    from services.reports.service import build_report

    settings = Settings(database_url=url, data_dir=Path(tempfile.mkdtemp()), report_processes=0)
    factory = make_session_factory(make_engine(url), write=False)
    warm_up_s = None
    if warm:
        from services import stats

        stats.warm_up()
        warm_up_s = time.perf_counter() - t0
    times = []
    report = None
    for _ in range(repeat):
        t = time.perf_counter()
        with session_scope(factory) as session:
            report = build_report(session, settings, [run_id])
        times.append(time.perf_counter() - t)
    assert report is not None
    return {"warm_up": warm_up_s, "times": times, "report": report.model_dump(mode="json")}


def _in_fresh_process(root: str, url: str, run_id: int, repeat: int, warm: bool) -> dict[str, Any]:
    args = [sys.executable, __file__, "--time-reports", json.dumps([root, url, run_id, repeat, warm])]
    env = {**os.environ, "PYTHONPATH": root}
    out = subprocess.run(args, cwd=root, env=env, check=True, capture_output=True, text=True).stdout
    result: dict[str, Any] = json.loads(out.splitlines()[-1])
    return result


def team(args: argparse.Namespace) -> None:
    base = extract(args.baseline)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    sides = {
        f"this tree ({head}{', modified' if dirty else ''})": str(ROOT),
        f"baseline {args.baseline}": str(base),
    }
    for root in sides.values():
        # As `make run` and the image do: each side's bytecode written ahead, so that "first" measures a
        # report, not the compilation of the side's sources (the environment's is written at install).
        subprocess.run([sys.executable, "-m", "compileall", "-q", "app", "services"], cwd=root, check=True)
    urls = {"sqlite": f"sqlite:///{tempfile.mkdtemp()}/bench.db"}
    if args.pg_url:
        urls["postgres"] = args.pg_url
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} CPUs)")
    runs = {db: build_team_run(url, args.outputs) for db, url in urls.items()}
    for db, url in urls.items():
        for root in sides.values():
            # Each side's compiled kernels are cached on its first warm-up: load them once untimed.
            _in_fresh_process(root, url, runs[db], 1, True)
    print(
        f"report of {args.outputs:,} outputs x 2 raters x 5 metrics (bench/imports.py's run), "
        f"seconds; warm = median of {args.repeat}; sides alternate, run by run"
    )
    header = f"{'':<44}{'run':>4}" + "".join(
        f"{db + ' warm':>15}{'(max)':>8}{'warm-up':>9}{'first':>8}" for db in urls
    )
    print(header + "   load average")
    rows: dict[str, list[dict[str, dict[str, float]]]] = {}
    reports: dict[str, list[Any]] = {db: [] for db in urls}
    for i in range(args.runs):
        for label, root in sides.items():
            load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
            row: dict[str, dict[str, float]] = {}
            for db, url in urls.items():
                warm = _in_fresh_process(root, url, runs[db], args.repeat, True)
                first = _in_fresh_process(root, url, runs[db], 1, False)
                reports[db].append(warm["report"])
                row[db] = {
                    "warm": statistics.median(warm["times"]),
                    "warm_max": max(warm["times"]),
                    "warm_up": warm["warm_up"],
                    "first": first["times"][0],
                }
            rows.setdefault(label, []).append(row)
            line = f"{label:<44}{i + 1:>4}"
            for db in urls:
                r = row[db]
                line += f"{r['warm']:>15.2f}{r['warm_max']:>8.2f}{r['warm_up']:>9.2f}{r['first']:>8.2f}"
            print(line + "   " + load)
    labels = list(sides)
    for db in urls:
        # Both sides compute the same report on the same data, every run.
        assert all(r == reports[db][0] for r in reports[db]), f"{db}: the two sides give different reports"
        new = [r[db] for r in rows[labels[0]]]
        old = [r[db] for r in rows[labels[1]]]
        for what in ("warm", "first"):
            ratios = ", ".join(f"{o[what] / n[what]:.2f}x" for n, o in zip(new, old, strict=True))
            print(f"{db}: baseline / this tree, {what}: {ratios}; reports equal")
    print("warm-up: a report worker's start (imports, compiled kernels loaded from numba's cache)")
    print(
        "first: a report in a fresh process with no warm-up before it (imports and kernel loading included)"
    )
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--outputs", type=int, help="96 (study), 10,000 with --team")
    ap.add_argument("--metrics", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--runs", type=int, default=2, help="with --team: runs of each side, alternating")
    ap.add_argument("--team", action="store_true", help="the 10k-output report, this tree vs --baseline")
    ap.add_argument("--baseline", default="main", help="with --team: the revision to compare with")
    ap.add_argument("--pg-url", default=os.environ.get("RAGMETA_BENCH_PG_URL"))
    ap.add_argument("--time-reports", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.time_reports:
        root, url, run_id, repeat, warm = json.loads(args.time_reports)
        print(json.dumps(time_reports(root, url, run_id, repeat, warm)))
        return
    if args.team:
        args.outputs = args.outputs or 10_000
        team(args)
        return
    args.outputs = args.outputs or 96

    from scipy import stats as sps

    from services.config import Settings
    from services.db import make_engine, make_session_factory, upgrade
    from services.models import Dataset, MetricScore, Output, Question, Rater, Rating, Run
    from services.ratings.service import ensure_default_rubric
    from services.reports.service import build_report

    tmp = Path(tempfile.mkdtemp())
    url = f"sqlite:///{tmp / 'bench.db'}"
    upgrade(url)
    factory = make_session_factory(make_engine(url))
    settings = Settings(database_url=url, data_dir=tmp)
    rng = np.random.default_rng(0)
    human = rng.integers(1, 6, size=(2, args.outputs))
    metric_values = rng.normal(size=(args.metrics, args.outputs)) + human.mean(axis=0) * 0.3
    with factory.begin() as s:
        rubric = ensure_default_rubric(s)
        ds = Dataset(name="bench", language="en", chunking={})
        s.add(ds)
        s.flush()
        run = Run(dataset_id=ds.id, name="r", system={})
        raters = [Rater(name="a"), Rater(name="b")]
        s.add_all([run, *raters])
        s.flush()
        for i in range(args.outputs):
            q = Question(
                dataset_id=ds.id,
                external_id=f"q{i}",
                question="q",
                reference_answer="r",
                types=["factual" if i % 2 else "list"],
            )
            s.add(q)
            s.flush()
            o = Output(run_id=run.id, question_id=q.id, answer="a", generator={})
            s.add(o)
            s.flush()
            for j, rater in enumerate(raters):
                s.add(Rating(output_id=o.id, rater_id=rater.id, rubric_id=rubric.id, score=int(human[j, i])))
            for m in range(args.metrics):
                s.add(
                    MetricScore(
                        output_id=o.id,
                        metric=f"external.m{m:02d}",
                        config_key="external",
                        value=float(metric_values[m, i]),
                    )
                )
        run_id = run.id

    with factory() as s:
        build_report(s, settings, [run_id])  # warm imports (scipy, krippendorff)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            build_report(s, settings, [run_id])
            times.append(time.perf_counter() - t0)
    ref = human.mean(axis=0)
    t0 = time.perf_counter()
    for _ in range(args.repeat):
        for m in range(args.metrics):
            x = metric_values[m]
            sps.pearsonr(x, ref)
            sps.spearmanr(x, ref)
            sps.kendalltau(x, ref)
    bare = (time.perf_counter() - t0) / args.repeat
    med = statistics.median(times)
    print(
        f"report for {args.outputs} outputs x 2 raters x {args.metrics} metrics (analytic CIs, SQLite), "
        f"{args.repeat} runs"
    )
    print(
        f"  service report (DB read, agreement with 1000-resample alpha CI, 3 analyses, comparisons,"
        f" per-type breakdown): median {med * 1000:.0f} ms, max {max(times) * 1000:.0f} ms"
    )
    print(f"  bare scipy pearson+spearman+kendall per metric (no CIs, agreement or DB): {bare * 1000:.0f} ms")
    print(f"  ratio service / bare scipy: {med / bare:.1f}")


if __name__ == "__main__":
    main()
