"""Latency of a report for a study-sized run: 96 outputs, 2 raters, 25 metrics (SQLite), analytic intervals,
against the same statistics computed without the service (the obvious alternative: scipy calls per metric).

    python bench/report_latency.py [--outputs 96] [--metrics 25] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# The repository root in place of bench/ (the script's directory) on the path: bench/coverage.py must
# not shadow the coverage package, which numba imports.
sys.path[0] = str(ROOT)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--outputs", type=int, default=96)
    ap.add_argument("--metrics", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

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
        build_report(s, settings, [run_id])  # warm imports (scipy, pingouin, krippendorff)
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
