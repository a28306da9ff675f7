"""Write and read paths at team scale, through the service functions (no HTTP), on SQLite and PostgreSQL:
10,000 outputs x 5 chunks, 20,000 ratings, 50,000 external scores, the scores CSV of that run and its
report (the report also on the numpy resample kernels the compiled ones replaced, as a ratio). Beside each
figure: the database's own floor for the same rows (one executemany of plain tuples
into the same table, no validation), so the ratio says what the service adds.

    python bench/imports.py [--outputs 10000] [--pg-url postgresql+psycopg://...]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The repository root in place of bench/ (the script's directory) on the path: bench/coverage.py must
# not shadow the coverage package, which numba imports.
sys.path[0] = str(ROOT)


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


@contextlib.contextmanager
def numpy_kernels() -> Iterator[None]:
    """Run the statistics on the numpy resample kernels (the reference of services.stats_kernels)."""
    from services.stats.corr_kernels import KendallKernel, SpearmanKernel
    from services.stats.passfail import PassFailKernel

    kernels = (PassFailKernel, SpearmanKernel, KendallKernel)
    saved = [k.resample for k in kernels]
    for k in kernels:
        k.resample = k.resample_numpy  # type: ignore[method-assign]
    try:
        yield
    finally:
        for k, fn in zip(kernels, saved, strict=True):
            k.resample = fn  # type: ignore[method-assign]


@dataclass(frozen=True)
class TeamData:
    """The rows of the bench run: 100 documents, n questions, n outputs x 5 chunks, 2 raters, 5 metrics."""

    docs: list[dict[str, Any]]
    questions: list[dict[str, Any]]
    outputs: list[dict[str, Any]]
    raters: list[dict[str, Any]]
    rating_rows: list[dict[str, Any]]
    score_rows: list[dict[str, Any]]


def team_data(n: int) -> TeamData:
    rng = random.Random(0)
    words = "le forfait coûte dix euros par mois sans engagement avec la fibre et la box".split()
    docs = [
        {"external_id": f"d{i}", "text": " ".join(rng.choice(words) for _ in range(3000))} for i in range(100)
    ]
    questions = [
        {"external_id": f"q{i}", "question": f"Question {i} ?", "reference_answer": "dix euros"}
        for i in range(n)
    ]
    outputs = [
        {
            "question_id": f"q{i}",
            "answer": f"Le forfait coûte dix euros ({i}).",
            "retrieved": [
                {
                    "document_id": f"d{(i + j) % 100}",
                    "start": 10 * j,
                    "end": 10 * j + 200,
                    "score": 1.0 / (j + 1),
                }
                for j in range(5)
            ],
        }
        for i in range(n)
    ]
    raters = [{"name": f"r{i}"} for i in range(2)]
    rating_rows = [
        {"question_id": f"q{i}", "rater": r["name"], "score": 1 + (i + k) % 5}
        for i in range(n)
        for k, r in enumerate(raters)
    ]
    score_rows = [
        {"question_id": f"q{i}", "metric": f"external.m{m}", "value": rng.random()}
        for i in range(n)
        for m in range(5)
    ]
    return TeamData(docs, questions, outputs, raters, rating_rows, score_rows)


def run(url: str, n: int) -> dict[str, tuple[float, float | None]]:
    from sqlalchemy import text

    import services.reports.service as report_service
    from services.config import Settings
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
        Base.metadata.drop_all(conn)
        conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
    upgrade(url)
    factory = make_session_factory(engine)
    settings = Settings(database_url=url, data_dir=Path(tempfile.mkdtemp()), report_processes=0)
    data = team_data(n)

    def setup(s: Any) -> tuple[int, int]:
        ds = datasets.create_dataset(s, DatasetCreate(name="bench", language="fr")).id
        datasets.import_documents(s, ds, [Row(i, None, d) for i, d in enumerate(data.docs)])
        datasets.import_questions(s, ds, [Row(i, None, q) for i, q in enumerate(data.questions)])
        run_id = runs.create_run(s, ds, RunCreate(name="r")).id
        return ds, run_id

    _, run_id = run_transaction(factory, setup)
    outputs, raters, rating_rows, score_rows = data.outputs, data.raters, data.rating_rows, data.score_rows
    res: dict[str, tuple[float, float | None]] = {}
    t, _ = timed(
        run_transaction,
        factory,
        runs.import_outputs,
        run_id,
        [Row(i, None, o) for i, o in enumerate(outputs)],
    )
    res[f"{n} outputs x 5 chunks"] = (t, None)
    run_transaction(factory, ratings.create_raters, [Row(i, None, r) for i, r in enumerate(raters)])
    t, _ = timed(
        run_transaction,
        factory,
        ratings.import_ratings,
        run_id,
        [Row(i, None, r) for i, r in enumerate(rating_rows)],
    )
    res[f"{len(rating_rows)} ratings"] = (t, None)
    t, _ = timed(
        run_transaction,
        factory,
        scores.import_external_scores,
        run_id,
        [Row(i, None, r) for i, r in enumerate(score_rows)],
    )
    res[f"{len(score_rows)} external scores"] = (t, None)

    def table_csv(s: Any) -> str:
        header, rows = scores.score_table(s, run_id)
        return scores.table_csv(header, rows)

    t, _ = timed(run_transaction, factory, table_csv)
    res["scores CSV"] = (t, None)

    def report(s: Any) -> Any:
        return report_service.build_report(s, settings, [run_id])

    # First in this process: imports the statistics libraries and loads the compiled kernels (a report
    # worker process does that once, when it starts: services.reports.pool calls stats.warm_up()).
    t, _ = timed(run_transaction, factory, report)
    res[f"report of {n} (first in process)"] = (t, None)
    t, fast = timed(run_transaction, factory, report)
    # The same report with the numpy resample kernels the compiled ones replaced: equal to the bit, and
    # the ratio of the two in this run.
    with numpy_kernels():
        t_numpy, slow = timed(run_transaction, factory, report)
    assert fast.model_dump() == slow.model_dump(), "compiled and numpy kernels give different reports"
    res[f"report of {n} outputs"] = (t, None)
    res[f"report of {n}, numpy kernels"] = (t_numpy, None)
    res["report: numpy / compiled"] = (t_numpy / t, None)

    # The floor: the same rows as plain tuples, one executemany per table, no validation or lookups.
    with engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TEMP TABLE floor_chunk (a INTEGER, b INTEGER, c INTEGER, d INTEGER, t TEXT, s FLOAT)"
            )
        )
        t0 = time.perf_counter()
        conn.execute(
            text("INSERT INTO floor_chunk VALUES (:a, :b, :c, :d, :t, :s)"),
            [
                {"a": i, "b": j, "c": 10 * j, "d": 10 * j + 200, "t": data.docs[0]["text"][:200], "s": 1.0}
                for i in range(n)
                for j in range(5)
            ],
        )
        chunk_floor = time.perf_counter() - t0
        conn.execute(text("CREATE TEMP TABLE floor_score (a INTEGER, m TEXT, v FLOAT)"))
        t0 = time.perf_counter()
        conn.execute(
            text("INSERT INTO floor_score VALUES (:a, :m, :v)"),
            [{"a": i, "m": r["metric"], "v": r["value"]} for i, r in enumerate(score_rows)],
        )
        score_floor = time.perf_counter() - t0
    res[f"{n} outputs x 5 chunks"] = (res[f"{n} outputs x 5 chunks"][0], chunk_floor)
    res[f"{len(score_rows)} external scores"] = (res[f"{len(score_rows)} external scores"][0], score_floor)
    engine.dispose()
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--outputs", type=int, default=10_000)
    ap.add_argument("--pg-url", default=os.environ.get("RAGMETA_BENCH_PG_URL"))
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} CPUs)")
    results = {"sqlite": run(f"sqlite:///{tempfile.mkdtemp()}/bench.db", args.outputs)}
    if args.pg_url:
        results["postgres"] = run(args.pg_url, args.outputs)
    print(f"{'operation':<36}" + "".join(f"{db + ' s':>14}{'x floor':>9}" for db in results))
    for op in results["sqlite"]:
        line = f"{op:<36}"
        for res in results.values():
            t, floor = res[op]
            line += f"{t:>14.2f}" + (f"{t / floor:>9.1f}" if floor else f"{'':>9}")
        print(line)
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
