"""Monte Carlo coverage of the judge-stability intervals (services.stats.stability).

Data: a latent quality z ~ N(0, 1) per output; the judge's true score of an output is
t = rho z + sqrt(1 - rho^2) u (u ~ N(0, 1): what the judge measures besides quality), and each of its k
repeats is t + N(0, sigma^2); two raters rate z + N(0, tau^2). Population figures: ICC(A,1) of the repeats
1 / (1 + sigma^2), the within-output SD sigma, the raw r rho / sqrt((1 + sigma^2 / k)(1 + tau^2 / 2)), the
corrected (disattenuated) r rho. One output per question, and a clustered design (``clustered``: two
outputs per question sharing part of their true score, same population ICC) where the question is the
resampling unit. Beside the service's intervals (ICC and SD jackknife-t by question, raw and corrected r
BCa by question read at the small-sample expanded level) the table shows the McGraw & Wong F interval of
ICC(A,1) (pingouin's CI95%, which treats outputs as independent), the percentile bootstrap by question the
service used for ICC(A,1) before, and the plain BCa (nominal level) the service used for r before.

    PYTHONPATH=. python bench/stability_coverage.py [--reps 500] [--resamples 1000] [--design both]
        [--n 50 100] [--k 2 3]
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

_ = icc_a1_value  # the ICC of one matrix; ``icc_a1_many`` is the same on a stack of them

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


def icc_a1_many(x: np.ndarray) -> np.ndarray:
    """ICC(A,1) of each matrix of a stack (resamples x outputs x repeats), as ``icc_a1_value`` (NaN where
    undefined)."""
    n, k = x.shape[-2], x.shape[-1]
    grand = x.mean(axis=(-2, -1), keepdims=True)
    ssr = k * ((x.mean(axis=-1, keepdims=True) - grand) ** 2).sum(axis=(-2, -1))
    ssc = n * ((x.mean(axis=-2, keepdims=True) - grand) ** 2).sum(axis=(-2, -1))
    sse = ((x - grand) ** 2).sum(axis=(-2, -1)) - ssr - ssc
    msr, msc, mse = ssr / (n - 1), ssc / (k - 1), sse / ((n - 1) * (k - 1))
    den = msr + (k - 1) * mse + k * (msc - mse) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (msr - mse) / den, np.nan)


def covers(low: float | None, high: float | None, truth: float) -> bool:
    return low is not None and high is not None and low <= truth <= high


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--design", choices=["single", "clustered", "both"], default="both")
    parser.add_argument("--n", type=int, nargs="+", default=[50, 100])
    parser.add_argument("--k", type=int, nargs="+", default=[2, 3])
    args = parser.parse_args()
    icc_true = 1 / (1 + SIGMA**2)
    print(
        f"population: ICC(A,1) {icc_true:.3f}, within SD {SIGMA}, corrected r {RHO}; {args.reps} data sets "
        f"per cell, {args.resamples} bootstrap resamples; goal 0.935-0.965 (Monte Carlo SE ~"
        f"{math.sqrt(0.95 * 0.05 / args.reps):.3f})"
    )
    print(
        f"{'design':<10}{'n':>4}{'k':>3} | {'ICC jk-t':>8}{'ICC M&W F':>10}{'ICC pct':>8} | {'SD jk-t':>8} | "
        f"{'raw r BCa-x':>11}{'(plain)':>8}{'corr r BCa-x':>13}{'(plain)':>8}{'defined':>8} | {'s':>4}"
    )
    designs = {"single": (False,), "clustered": (True,), "both": (False, True)}[args.design]
    for clustered in designs:
        for n in args.n:
            for k in args.k:
                raw_true = RHO / math.sqrt((1 + SIGMA**2 / k) * (1 + TAU**2 / 2))
                rng = np.random.default_rng(1000 * n + k + clustered)
                hits = dict.fromkeys(["icc", "mw", "pct", "sd", "raw", "raw0", "corr", "corr0"], 0)
                defined = defined0 = 0
                t0 = time.perf_counter()
                for rep in range(args.reps):
                    x, h, groups = replicate(rng, n, k, clustered)
                    rt = retest(x, groups)
                    hits["icc"] += covers(rt.icc_a1.ci_low, rt.icc_a1.ci_high, icc_true)
                    hits["sd"] += covers(rt.within_sd.ci_low, rt.within_sd.ci_high, SIGMA)
                    mw = icc_results(x.T, [f"r{j}" for j in range(k)])[0]["ICC(A,1)"]
                    hits["mw"] += covers(mw.ci_low, mw.ci_high, icc_true)
                    resampled = np.stack(question_resamples(groups, args.resamples, rep))
                    draws = icc_a1_many(x[resampled])
                    lo, hi = np.quantile(draws[np.isfinite(draws)], [0.025, 0.975])
                    hits["pct"] += covers(float(lo), float(hi), icc_true)
                    ca = corrected_agreement(x, h, groups, args.resamples, seed=rep)
                    plain = corrected_agreement(x, h, groups, args.resamples, seed=rep, expand=False)
                    hits["raw"] += covers(ca.raw_r.ci_low, ca.raw_r.ci_high, raw_true)
                    hits["raw0"] += covers(plain.raw_r.ci_low, plain.raw_r.ci_high, raw_true)
                    if ca.corrected_r.ci_low is not None:
                        defined += 1
                        hits["corr"] += covers(ca.corrected_r.ci_low, ca.corrected_r.ci_high, RHO)
                    if plain.corrected_r.ci_low is not None:
                        defined0 += 1
                        hits["corr0"] += covers(plain.corrected_r.ci_low, plain.corrected_r.ci_high, RHO)
                design = "clustered" if clustered else "single"
                f = {key: v / args.reps for key, v in hits.items()}
                f["corr"] = hits["corr"] / max(defined, 1)
                f["corr0"] = hits["corr0"] / max(defined0, 1)
                print(
                    f"{design:<10}{n:>4}{k:>3} | {f['icc']:>8.3f}{f['mw']:>10.3f}{f['pct']:>8.3f} | "
                    f"{f['sd']:>8.3f} | {f['raw']:>11.3f}{f['raw0']:>8.3f}{f['corr']:>13.3f}"
                    f"{f['corr0']:>8.3f}{defined:>8} | "
                    f"{time.perf_counter() - t0:>4.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
