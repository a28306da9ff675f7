"""What the trust analysis adds to a report of a 10k-output run: its statistics timed beside the report's own.

Synthetic run: 10,000 outputs (one per question), 3 raters on a 1-5 rubric, 20 metrics (0-1, 0.01 steps).
"report": the correlation intervals the report computes for every metric (BCa, 2,000 paired resamples,
Pearson and Spearman, services.stats.bootstrap_ci_many) and the pass/fail figures (pass_fail_many).
"trust": what services/reports/trust.py adds per metric: cross-fitted calibration (maps fixed beyond
REFIT_MAX_QUESTIONS questions), the Alternative Annotator Test with rho's jackknife, the MAE
non-inferiority test, the gating decision rates and their tests, plus the human baseline once. No database:
the gathering of the items is the report's and is shared. Prints both times and their ratio (goal: trust
adds < 1 s).

Usage: python bench/trust_perf.py [--items 10000] [--metrics 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

# The repository root in place of bench/ on the path: bench/coverage.py must not shadow the coverage
# package, which numba imports.
sys.path[0] = str(Path(__file__).resolve().parents[1])

from services import stats  # noqa: E402
from services.reports.trust import mae_test  # noqa: E402
from services.stats.uses import decision_rates, non_inferiority, paired_leave_out  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--metrics", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = args.items
    z = rng.normal(size=n)
    ratings = np.clip(np.round(3 + 1.1 * z[:, None] + rng.normal(0, 0.6, (n, 3))), 1, 5)
    human = ratings.mean(axis=1)
    metrics = {
        f"m{j}": np.round(1 / (1 + np.exp(-(z * (0.3 + j / args.metrics) + rng.normal(size=n)))), 2)
        for j in range(args.metrics)
    }
    question_ids = [f"q{i}" for i in range(n)]
    stats.warm_up()

    t0 = time.perf_counter()
    for method in ("pearson", "spearman"):
        stats.bootstrap_ci_many(metrics, human, method, n_resamples=2000)  # type: ignore[arg-type]
    stats.pass_fail_many(metrics, human, 4.0)
    report = time.perf_counter() - t0

    t0 = time.perf_counter()
    questions = stats.QuestionIndex.of(question_ids)  # once, as services/reports/trust.py does
    hb = stats.human_baseline(ratings, questions, ["a", "b", "c"])
    for x in metrics.values():
        cal = stats.calibrate(x, human, questions, (1, 5))
        pred = np.array(cal.calibrated)
        stats.alt_test(pred, ratings, ["a", "b", "c"], questions=questions)
        mae_test(cal, hb, 0.2)
        rates = decision_rates(pred, human, ratings, questions, 4.0)
        for h, m in ((rates.human_tpr, rates.tpr), (rates.human_tnr, rates.tnr)):
            if h.estimate is not None and m.estimate is not None:
                non_inferiority(*paired_leave_out(h.estimate, h.leave_out, m.estimate, m.leave_out), 0.2)
    trust = time.perf_counter() - t0
    print(f"{n} outputs, {args.metrics} metrics, 3 raters")
    print(f"report statistics (correlation BCa x2, pass/fail): {report:6.2f} s")
    print(f"trust analysis added:                              {trust:6.2f} s  (goal < 1 s)")
    print(f"ratio trust / report:                              {trust / report:6.2f}")


if __name__ == "__main__":
    main()
