"""Coverage and width of the prediction-powered estimate of a run's mean human score (services/ppi.py).

Simulated runs on the tied data of STATS.md section 2: a latent quality z ~ N(0, 1) per output; two raters
each give a 1-5 rating cut from z + N(0, 0.6^2) at -1, -0.3, 0.4, 1.1, and the human score is their mean; the
metric's latent zm = rho z + sqrt(1 - rho^2) e becomes clip((e^{0.8 zm} - e^{0.8 q20}) / (e^{0.8 q90} -
e^{0.8 q20}), 0, 1) rounded to 0.01 (about 21 % zeros and 10 % ones). A run has N outputs; a random 10, 25
or 50 % of them are rated; the metric is on all of them.

Truth: the expected human score E[H] (exact: both raters' expected rating, 1 + sum_j P(z + e > cut_j)), and
also the run's own mean of H over its N outputs. Each cell prints coverage over the replicates with its
binomial Monte Carlo SE (target band 93.5-96.5 %) and the mean interval width relative to the rated-only t
interval on the same replicates. Methods:

  tuned-t     the service: PPI++ lambda (not clipped), t(n - 2), ddof-1 variances
  tuned-z     the same lambda with ppi_py's normal quantile and ddof-0 variances
  clipped-z   ppi_py's ppi_mean_ci(lam=None) exactly (lambda clipped to [0, 1])
  plain-t     plain PPI (lambda = 1), t(n - 1)
  rated-t     rated-only t interval (the reference of the width ratios)
  rated-z     rated-only normal interval (ppi_py's classical_mean_ci)

"lower" rows use 1 - metric (a lower-is-better metric): the clipped lambda falls to 0 there.

Usage: python bench/ppi.py [--replicates 1000] [--sizes 100,500] [--rhos 0.3,0.6,0.85] [--seed 0]
       python bench/ppi.py --against-ppi-py   # services.ppi vs ppi_py itself, where ppi-python is installed
                                              # (not a dependency: it imports numba at import time)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy import stats as sps
from scipy.special import ndtri

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services import ppi

Array = NDArray[np.float64]
CUTS = np.array([-1.0, -0.3, 0.4, 1.1])
RATER_SD = 0.6
Q20, Q90 = float(ndtri(0.2)), float(ndtri(0.9))
FRACTIONS = (0.10, 0.25, 0.50)
BAND = (0.935, 0.965)
METHODS = ("tuned-t", "tuned-z", "clipped-z", "plain-t", "rated-t", "rated-z")


def true_mean() -> float:
    """E[H]: each rater's expected rating, 1 + sum_j P(z + e > cut_j), z + e ~ N(0, 1 + 0.6^2)."""
    sd = math.sqrt(1 + RATER_SD**2)
    return 1.0 + float(sps.norm.sf(CUTS / sd).sum())


def simulate(rng: np.random.Generator, n: int, rho: float) -> tuple[Array, Array]:
    z = rng.standard_normal(n)
    ratings = [1 + np.searchsorted(CUTS, z + RATER_SD * rng.standard_normal(n)) for _ in range(2)]
    human = (ratings[0] + ratings[1]) / 2.0
    zm = rho * z + math.sqrt(1 - rho * rho) * rng.standard_normal(n)
    lo, hi = math.exp(0.8 * Q20), math.exp(0.8 * Q90)
    metric = np.round(np.clip((np.exp(0.8 * zm) - lo) / (hi - lo), 0.0, 1.0), 2)
    return human.astype(np.float64), metric


def clipped_z(y: Array, f: Array, fu: Array) -> ppi.MeanInterval:
    """ppi_py 0.2.3's ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=0.05) written out (lambda clipped)."""
    lam = min(max(ppi.tuned_lambda(y, f, fu), 0.0), 1.0)
    return ppi.ppi_mean(y, f, fu, lam=lam, quantile="z")


def intervals(y: Array, f: Array, fu: Array) -> dict[str, ppi.MeanInterval]:
    return {
        "tuned-t": ppi.ppi_mean(y, f, fu),
        "tuned-z": ppi.ppi_mean(y, f, fu, quantile="z"),
        "clipped-z": clipped_z(y, f, fu),
        "plain-t": ppi.ppi_mean(y, f, fu, lam=1.0),
        "rated-t": ppi.rated_mean(y),
        "rated-z": ppi.rated_mean(y, quantile="z"),
    }


def cell(
    rng: np.random.Generator, size: int, frac: float, rho: float, lower: bool, reps: int
) -> dict[str, Array]:
    truth = true_mean()
    n = max(ppi.MIN_RATED, round(frac * size))
    hits = {m: np.zeros(reps) for m in METHODS}
    hits_run = {m: np.zeros(reps) for m in METHODS}
    widths = {m: np.zeros(reps) for m in METHODS}
    lams = np.zeros(reps)
    for i in range(reps):
        h, m = simulate(rng, size, rho)
        if lower:
            m = 1.0 - m
        rated = rng.permutation(size)[:n]
        mask = np.zeros(size, dtype=bool)
        mask[rated] = True
        res = intervals(h[mask], m[mask], m[~mask])
        run_mean = float(h.mean())
        for name, r in res.items():
            hits[name][i] = r.ci_low <= truth <= r.ci_high
            hits_run[name][i] = r.ci_low <= run_mean <= r.ci_high
            widths[name][i] = r.width
        lams[i] = res["tuned-t"].lam
    out: dict[str, Array] = {}
    for name in METHODS:
        out[f"cov:{name}"] = hits[name]
        out[f"covrun:{name}"] = hits_run[name]
        out[f"width:{name}"] = widths[name]
    out["lam"] = lams
    return out


def against_ppi_py(cases: int = 300, seed: int = 0) -> None:
    """services.ppi with lambda clipped and the normal quantile against ppi_py.ppi_mean_ci(alpha=0.05), and
    its default (unclipped) point estimate against ppi_mean_pointestimate(lam=None) where lambda is in
    (0, 1)."""
    # bench/coverage.py would shadow the coverage package numba imports.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    import ppi_py

    rng = np.random.default_rng(seed)
    worst_ci = worst_est = 0.0
    inside = 0
    for i in range(cases):
        h, m = simulate(rng, 100, 0.3 + 0.6 * float(rng.random()))
        if i % 2:
            m = np.clip(m * 5, 0, 5)  # on the rubric's scale: lambda often inside (0, 1)
        n = int(rng.integers(10, 60))
        idx = rng.permutation(100)
        r, u = idx[:n], idx[n:]
        lo, hi = ppi_py.ppi_mean_ci(h[r], m[r], m[u], alpha=0.05)
        lam = ppi.tuned_lambda(h[r], m[r], m[u])
        mine = ppi.ppi_mean(h[r], m[r], m[u], lam=min(max(lam, 0.0), 1.0), quantile="z")
        worst_ci = max(
            worst_ci, abs(float(np.ravel(lo)[0]) - mine.ci_low), abs(float(np.ravel(hi)[0]) - mine.ci_high)
        )
        if 0 < lam < 1:
            inside += 1
            est = float(np.ravel(ppi_py.ppi_mean_pointestimate(h[r], m[r], m[u]))[0])
            worst_est = max(worst_est, abs(est - ppi.ppi_mean(h[r], m[r], m[u]).estimate))
    print(
        f"{cases} cases: max |ppi_py.ppi_mean_ci - services.ppi (lambda clipped, z)| = {worst_ci:.2e}; "
        f"{inside} cases with lambda in (0, 1): max |ppi_mean_pointestimate - services.ppi| = {worst_est:.2e}"
    )


def flag(c: float, se: float) -> str:
    if c < BAND[0] - 2 * se:
        return " LOW"
    if c > BAND[1] + 2 * se:
        return " HIGH"
    return ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--sizes", default="100,500")
    ap.add_argument("--rhos", default="0.3,0.6,0.85")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-lower", action="store_true", help="skip the lower-is-better rows")
    ap.add_argument(
        "--against-ppi-py", action="store_true", help="compare with ppi_py (if installed) and exit"
    )
    args = ap.parse_args()
    if args.against_ppi_py:
        against_ppi_py(seed=args.seed)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    rhos = [float(r) for r in args.rhos.split(",")]
    reps = args.replicates
    rng = np.random.default_rng(args.seed)
    print(f"E[H] = {true_mean():.6f}; {reps} replicates per cell; band {BAND[0]:.3f}-{BAND[1]:.3f}")
    print("coverage of E[H] (MC SE in brackets); width = mean width / mean rated-only t width")
    head = (
        f"{'N':>4} {'rated':>6} {'rho':>5} {'dir':>6} {'lam':>6} | "
        + " | ".join(f"{m:>9}" for m in METHODS)
        + " || "
        + " ".join(f"{'w ' + m:>11}" for m in METHODS if m != "rated-t")
        + " || run-mean cov tuned-t"
    )
    print(head)
    start = time.perf_counter()
    for size in sizes:
        for frac in FRACTIONS:
            for rho in rhos:
                for lower in (False, True) if not args.skip_lower else (False,):
                    res = cell(rng, size, frac, rho, lower, reps)
                    n = max(ppi.MIN_RATED, round(frac * size))
                    covs = []
                    for name in METHODS:
                        c = float(res[f"cov:{name}"].mean())
                        se = math.sqrt(c * (1 - c) / reps)
                        covs.append(f"{c:.3f}{flag(c, se) or '    '}"[:9].rjust(9))
                    ref = float(res["width:rated-t"].mean())
                    ratios = " ".join(
                        f"{float(res[f'width:{m}'].mean()) / ref:>11.3f}" for m in METHODS if m != "rated-t"
                    )
                    runcov = float(res["covrun:tuned-t"].mean())
                    print(
                        f"{size:>4} {n:>3}={frac:>3.0%} {rho:>4.2f} {'lower' if lower else 'higher':>6} "
                        f"{float(res['lam'].mean()):>6.2f} | "
                        + " | ".join(covs)
                        + f" || {ratios} || {runcov:.3f}",
                        flush=True,
                    )
    se_note = math.sqrt(0.95 * 0.05 / reps)
    print(
        f"MC SE at 0.95: {se_note:.4f}; LOW/HIGH = more than 2 SE outside the band. "
        f"{time.perf_counter() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
