"""Monte Carlo coverage of the judge-stability intervals (services.stats.stability).

Data: a latent quality z ~ N(0, 1) per output; the judge's true score of an output is
t = rho z + sqrt(1 - rho^2) u (u ~ N(0, 1): what the judge measures besides quality), and each of its k
repeats is t + N(0, sigma^2); two raters rate z + N(0, tau^2). Population figures: ICC(A,1) of the repeats
1 / (1 + sigma^2), the within-output SD sigma, the raw r rho / sqrt((1 + sigma^2 / k)(1 + tau^2 / 2)), the
corrected (disattenuated) r rho. One output per question, and a clustered design (``clustered``: two
outputs per question sharing part of their true score, same population ICC) where the question is the
resampling unit. Beside the service's intervals (ICC and SD jackknife-t by question, r BCa by question)
the table shows the McGraw & Wong F interval of ICC(A,1) (pingouin's CI95%, which treats outputs as
independent) and the percentile bootstrap by question the service used for ICC(A,1) before.

    PYTHONPATH=. python bench/stability_coverage.py [--reps 500] [--resamples 1000] [--design both]
        [--n 50 100]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from services.stats.interrater import icc_results
from services.stats.stability import (
    corrected_agreement,
    icc_a1_value,
    question_resamples,
    retest,
)

RHO, SIGMA, TAU = 0.6, 0.8, 0.7


def replicate(
    rng: np.random.Generator, n: int, k: int, clustered: bool
) -> tuple[np.ndarray, np.ndarray, list[object]]:
    z = rng.normal(size=n)
    if clustered:  # two outputs per question: a shared question part of what the judge measures
        u = np.repeat(rng.normal(size=n // 2), 2) * math.sqrt(0.5) + rng.normal(size=n) * math.sqrt(0.5)
        groups: list[object] = [i // 2 for i in range(n)]
    else:
        u = rng.normal(size=n)
        groups = list(range(n))
    true = RHO * z + math.sqrt(1 - RHO**2) * u
    scores = true[:, None] + rng.normal(scale=SIGMA, size=(n, k))
    ratings = np.vstack([z + rng.normal(scale=TAU, size=n) for _ in range(2)])
    return scores, ratings, groups


def covers(low: float | None, high: float | None, truth: float) -> bool:
    return low is not None and high is not None and low <= truth <= high


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--design", choices=["single", "clustered", "both"], default="both")
    parser.add_argument("--n", type=int, nargs="+", default=[50, 100])
    args = parser.parse_args()
    icc_true = 1 / (1 + SIGMA**2)
    print(
        f"population: ICC(A,1) {icc_true:.3f}, within SD {SIGMA}, corrected r {RHO}; {args.reps} data sets "
        f"per cell, {args.resamples} bootstrap resamples; goal 0.935-0.965 (Monte Carlo SE ~"
        f"{math.sqrt(0.95 * 0.05 / args.reps):.3f})"
    )
    print(
        f"{'design':<10}{'n':>4}{'k':>3} | {'ICC jk-t':>8}{'ICC M&W F':>10}{'ICC pct':>8} | {'SD jk-t':>8} | "
        f"{'raw r BCa':>9}{'corr r BCa':>11}{'defined':>8} | {'s':>4}"
    )
    designs = {"single": (False,), "clustered": (True,), "both": (False, True)}[args.design]
    for clustered in designs:
        for n in args.n:
            for k in (2, 3):
                raw_true = RHO / math.sqrt((1 + SIGMA**2 / k) * (1 + TAU**2 / 2))
                rng = np.random.default_rng(1000 * n + k + clustered)
                hits = dict.fromkeys(["icc", "mw", "pct", "sd", "raw", "corr"], 0)
                defined = 0
                t0 = time.perf_counter()
                for rep in range(args.reps):
                    x, h, groups = replicate(rng, n, k, clustered)
                    rt = retest(x, groups)
                    hits["icc"] += covers(rt.icc_a1.ci_low, rt.icc_a1.ci_high, icc_true)
                    hits["sd"] += covers(rt.within_sd.ci_low, rt.within_sd.ci_high, SIGMA)
                    mw = icc_results(x.T, [f"r{j}" for j in range(k)])[0]["ICC(A,1)"]
                    hits["mw"] += covers(mw.ci_low, mw.ci_high, icc_true)
                    draws = [icc_a1_value(x[idx]) for idx in question_resamples(groups, args.resamples, rep)]
                    lo, hi = np.quantile([d for d in draws if d is not None], [0.025, 0.975])
                    hits["pct"] += covers(float(lo), float(hi), icc_true)
                    ca = corrected_agreement(x, h, groups, args.resamples, seed=rep)
                    hits["raw"] += covers(ca.raw_r.ci_low, ca.raw_r.ci_high, raw_true)
                    if ca.corrected_r.ci_low is not None:
                        defined += 1
                        hits["corr"] += covers(ca.corrected_r.ci_low, ca.corrected_r.ci_high, RHO)
                design = "clustered" if clustered else "single"
                f = {key: v / args.reps for key, v in hits.items()}
                f["corr"] = hits["corr"] / max(defined, 1)
                print(
                    f"{design:<10}{n:>4}{k:>3} | {f['icc']:>8.3f}{f['mw']:>10.3f}{f['pct']:>8.3f} | "
                    f"{f['sd']:>8.3f} | {f['raw']:>9.3f}{f['corr']:>11.3f}{defined:>8} | "
                    f"{time.perf_counter() - t0:>4.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
