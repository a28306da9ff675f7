"""Monte Carlo coverage of the judge-stability intervals (services.stats.stability).

Data: a latent quality z ~ N(0, 1) per output; the judge's true score of an output is
t = rho z + sqrt(1 - rho^2) u (u ~ N(0, 1): what the judge measures besides quality), and each of its k
repeats is t + N(0, sigma^2); two raters rate z + N(0, tau^2). Population figures: ICC(A,1) of the repeats
1 / (1 + sigma^2), the corrected (disattenuated) correlation rho. One output per question; the intervals
are the percentile bootstrap by question.

    PYTHONPATH=. python bench/stability_coverage.py [--reps 300] [--resamples 500]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from services.stats.stability import corrected_agreement, retest

RHO, SIGMA, TAU = 0.6, 0.8, 0.7


def replicate(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    z = rng.normal(size=n)
    true = RHO * z + np.sqrt(1 - RHO**2) * rng.normal(size=n)
    scores = true[:, None] + rng.normal(scale=SIGMA, size=(n, k))
    ratings = np.vstack([z + rng.normal(scale=TAU, size=n) for _ in range(2)])
    return scores, ratings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--resamples", type=int, default=500)
    args = parser.parse_args()
    icc_true = 1 / (1 + SIGMA**2)
    print(f"population: ICC(A,1) {icc_true:.3f}, corrected r {RHO}; {args.reps} replicates, "
          f"{args.resamples} resamples")  # fmt: skip
    for n in (50, 100):
        for k in (2, 3):
            rng = np.random.default_rng(1000 * n + k)
            hit_icc = hit_corr = defined = 0
            t0 = time.perf_counter()
            for rep in range(args.reps):
                x, h = replicate(rng, n, k)
                groups = list(range(n))
                rt = retest(x, groups, args.resamples, seed=rep)
                ca = corrected_agreement(x, h, groups, args.resamples, seed=rep)
                lo, hi = rt.icc_a1.ci_low, rt.icc_a1.ci_high
                hit_icc += lo is not None and hi is not None and lo <= icc_true <= hi
                clo, chi = ca.corrected_r.ci_low, ca.corrected_r.ci_high
                if clo is not None and chi is not None:
                    defined += 1
                    hit_corr += clo <= RHO <= chi
            print(
                f"n={n:>3} k={k}: ICC(A,1) coverage {hit_icc / args.reps:.3f}; corrected r coverage "
                f"{hit_corr / max(defined, 1):.3f} ({defined} intervals defined); "
                f"{time.perf_counter() - t0:.0f} s"
            )


if __name__ == "__main__":
    main()
