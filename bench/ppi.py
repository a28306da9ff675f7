"""Coverage and width of the prediction-powered estimate of a run's mean human score (services/ppi.py).

Simulated runs on the tied data of docs/statistics.md §2: a latent quality z ~ N(0, 1) per output; two raters
each give a 1-5 rating cut from z + N(0, 0.6^2) at -1, -0.3, 0.4, 1.1, and the human score is their mean; the
metric's latent zm = rho z + sqrt(1 - rho^2) e becomes clip((e^{0.8 zm} - e^{0.8 q20}) / (e^{0.8 q90} -
e^{0.8 q20}), 0, 1) rounded to 0.01 (about 21 % zeros and 10 % ones). A run has N outputs; a random 10, 25
or 50 % of them are rated; the metric is on all of them.

Truth: the expected human score E[H] (exact: both raters' expected rating, 1 + sum_j P(z + e > cut_j)), and
also the run's own mean of H over its N outputs. Each cell prints coverage over the replicates with its
binomial Monte Carlo SE (target band 93.5-96.5 %) and the mean interval width relative to the rated-only t
interval on the same replicates. All replicates of a cell are simulated at once and go through
services.ppi.ppi_intervals, the vectorised code ppi_mean itself calls. The first n outputs of a run are the
rated ones (the outputs are independent draws, so they are a random subset). Methods:

  old         the service's interval before: PPI++ lambda (not clipped), plug-in SE, t(n - 2)
  new         the service's interval now: the same estimate, two-sample delete-one jackknife SE (lambda
              re-tuned in each leave-one-out), t(n - 1)
  rated-t     rated-only t interval (the reference of the width ratios)
  jk-t(n-2)   the jackknife SE with t(n - 2)
  narrower    whichever of new and rated-t is narrower, chosen after seeing both
  plain-t     plain PPI (lambda = 1), t(n - 1)
  clipped-z   ppi_py 0.2.3's ppi_mean_ci(lam=None) (lambda clipped to [0, 1], normal quantile, ddof 0)

"lower" rows use 1 - metric (a lower-is-better metric): the clipped lambda falls to 0 there.

Usage: python bench/ppi.py [--replicates 1000] [--sizes 100,500] [--rhos 0.3,0.6,0.85] [--seed 0]
       python bench/ppi.py --selection        # the narrowest of five metrics' intervals, chosen after
                                              # seeing them, and with a Bonferroni choice
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
METHODS = ("old", "new", "rated-t", "jk-t(n-2)", "narrower", "plain-t", "clipped-z")


def true_mean() -> float:
    """E[H]: each rater's expected rating, 1 + sum_j P(z + e > cut_j), z + e ~ N(0, 1 + 0.6^2)."""
    sd = math.sqrt(1 + RATER_SD**2)
    return 1.0 + float(sps.norm.sf(CUTS / sd).sum())


def simulate(rng: np.random.Generator, reps: int, n: int, rho: float) -> tuple[Array, Array]:
    """``reps`` runs of ``n`` outputs at once: human scores and metric values, arrays of shape (reps, n)."""
    z = rng.standard_normal((reps, n))
    ratings = [1 + np.searchsorted(CUTS, z + RATER_SD * rng.standard_normal((reps, n))) for _ in range(2)]
    human = (ratings[0] + ratings[1]) / 2.0
    zm = rho * z + math.sqrt(1 - rho * rho) * rng.standard_normal((reps, n))
    lo, hi = math.exp(0.8 * Q20), math.exp(0.8 * Q90)
    metric = np.round(np.clip((np.exp(0.8 * zm) - lo) / (hi - lo), 0.0, 1.0), 2).astype(np.float64)
    return human.astype(np.float64), metric


def intervals(y: Array, f: Array, fu: Array) -> dict[str, tuple[Array, Array]]:
    """(ci_low, ci_high) of every method on every row."""
    out: dict[str, tuple[Array, Array]] = {}

    def put(name: str, r: ppi.Intervals) -> None:
        out[name] = (r.ci_low, r.ci_high)

    put("new", ppi.ppi_intervals(y, f, fu))
    put("old", ppi.ppi_intervals(y, f, fu, se_method="plug-in"))
    put("jk-t(n-2)", ppi.ppi_intervals(y, f, fu, df_spent=2))
    put("plain-t", ppi.ppi_intervals(y, f, fu, lam=1.0))
    lam = np.clip(ppi._tuned_lambdas(y, f, fu), 0.0, 1.0)  # ppi_py 0.2.3's ppi_mean_ci(lam=None)
    se = np.sqrt(
        np.var(lam[:, None] * fu, axis=1) / fu.shape[1] + np.var(y - lam[:, None] * f, axis=1) / y.shape[1]
    )
    est = lam * fu.mean(axis=1) + np.mean(y - lam[:, None] * f, axis=1)
    z = float(sps.norm.ppf(0.975))
    out["clipped-z"] = (est - z * se, est + z * se)
    n = y.shape[1]
    half = float(sps.t.ppf(0.975, n - 1)) * y.std(axis=1, ddof=1) / math.sqrt(n)
    out["rated-t"] = (y.mean(axis=1) - half, y.mean(axis=1) + half)
    # The narrower of the two, chosen after seeing both (what a reader picking the narrowest interval does).
    pick = (out["new"][1] - out["new"][0]) < 2 * half
    out["narrower"] = (
        np.where(pick, out["new"][0], out["rated-t"][0]),
        np.where(pick, out["new"][1], out["rated-t"][1]),
    )
    return out


def cell(
    rng: np.random.Generator, size: int, frac: float, rho: float, lower: bool, reps: int
) -> dict[str, Array]:
    """One cell: ``reps`` simulated runs; the first n outputs of each are the rated ones (the outputs are
    independent draws, so the first n are a random subset)."""
    truth = true_mean()
    n = max(ppi.MIN_RATED, round(frac * size))
    h, m = simulate(rng, reps, size, rho)
    if lower:
        m = 1.0 - m
    res = intervals(h[:, :n], m[:, :n], m[:, n:])
    run_mean = h.mean(axis=1)
    out: dict[str, Array] = {"lam": ppi._tuned_lambdas(h[:, :n], m[:, :n], m[:, n:])}
    for name, (lo, hi) in res.items():
        out[f"cov:{name}"] = ((lo <= truth) & (truth <= hi)).astype(np.float64)
        out[f"covrun:{name}"] = ((lo <= run_mean) & (run_mean <= hi)).astype(np.float64)
        out[f"width:{name}"] = hi - lo
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
        hh, mm = simulate(rng, 1, 100, 0.3 + 0.6 * float(rng.random()))
        h, m = hh[0], mm[0]
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


def selection(reps: int, seed: int) -> None:
    """Coverage of the narrowest interval among five metrics of one run (rho 0.3 to 0.85, independent errors),
    chosen after seeing them all, as GET /runs/{id}/estimate's ``narrowest`` suggests; beside it, the same
    choice among intervals each at 1 - 0.05/5 (Bonferroni: all five cover together at >= 95 %, so whichever
    is chosen does)."""
    rng = np.random.default_rng(seed)
    truth = true_mean()
    rhos = (0.3, 0.45, 0.6, 0.75, 0.85)
    print(f"narrowest of {len(rhos)} metrics (rho {', '.join(map(str, rhos))}), {reps} runs per row")
    print(
        f"{'N':>4} {'rated':>5} | each metric's coverage (new)      | narrowest | "
        "Bonferroni narrowest (w vs new)"
    )
    for size, n in ((100, 10), (100, 25), (100, 50), (500, 50), (500, 125)):
        z = rng.standard_normal((reps, size))
        ratings = [
            1 + np.searchsorted(CUTS, z + RATER_SD * rng.standard_normal((reps, size))) for _ in range(2)
        ]
        h = (ratings[0] + ratings[1]) / 2.0
        lo_e, hi_e = math.exp(0.8 * Q20), math.exp(0.8 * Q90)
        found: dict[float, list[Array]] = {0.95: [], 1 - 0.05 / len(rhos): []}
        for rho in rhos:
            zm = rho * z + math.sqrt(1 - rho * rho) * rng.standard_normal((reps, size))
            m = np.round(np.clip((np.exp(0.8 * zm) - lo_e) / (hi_e - lo_e), 0.0, 1.0), 2).astype(np.float64)
            for conf, acc in found.items():
                r = ppi.ppi_intervals(h[:, :n], m[:, :n], m[:, n:], confidence=conf)
                acc.append(np.stack([r.ci_low, r.ci_high]))
        out = []
        widths = []
        for acc in found.values():
            iv = np.stack(acc)  # (metrics, 2, reps)
            cover = (iv[:, 0] <= truth) & (truth <= iv[:, 1])
            k = np.argmin(iv[:, 1] - iv[:, 0], axis=0)
            pick = cover[k, np.arange(reps)]
            widths.append(float(np.mean(iv[k, 1, np.arange(reps)] - iv[k, 0, np.arange(reps)])))
            out.append((cover.mean(axis=1), float(pick.mean())))
        each = " ".join(f"{c:.3f}" for c in out[0][0])
        print(
            f"{size:>4} {n:>5} | {each} | {out[0][1]:>9.3f} | {out[1][1]:.3f} ({widths[1] / widths[0]:.2f}x)",
            flush=True,
        )


def flag(c: float, se: float) -> str:
    if c < BAND[0] - 2 * se:
        return "LOW"
    if c > BAND[1] + 2 * se:
        return "HIGH"
    return "low" if c < BAND[0] else "high" if c > BAND[1] else ""


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
    ap.add_argument(
        "--selection", action="store_true", help="coverage of the narrowest of five metrics, and exit"
    )
    args = ap.parse_args()
    if args.selection:
        selection(args.replicates, args.seed)
        return
    if args.against_ppi_py:
        against_ppi_py(seed=args.seed)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    rhos = [float(r) for r in args.rhos.split(",")]
    reps = args.replicates
    rng = np.random.default_rng(args.seed)
    print(f"E[H] = {true_mean():.6f}; {reps} replicates per cell; band {BAND[0]:.3f}-{BAND[1]:.3f}")
    print(
        "coverage of E[H] (Monte Carlo SE); low/high: outside the band, LOW/HIGH: by more than 2 MC SE; "
        "w = mean width / mean rated-only t width on the same runs"
    )
    extra = [m for m in METHODS if m not in ("old", "new", "rated-t")]
    head = (
        f"{'N':>4} {'rated':>7} {'rho':>4} {'dir':>6} {'lam':>5} | "
        + " | ".join(f"{m:<18}" for m in ("old", "new", "rated-t"))
        + " | "
        + " ".join(f"{m:>10}" for m in extra)
        + " || "
        + " ".join(f"{'w ' + m:>8}" for m in ("old", "new"))
        + " "
        + " ".join(f"{'w ' + m:>12}" for m in extra)
        + " || run-mean cov new"
    )
    print(head)
    start = time.perf_counter()
    summary: dict[str, list[tuple[int, float]]] = {m: [] for m in METHODS}
    for size in sizes:
        for frac in FRACTIONS:
            for rho in rhos:
                for lower in (False, True) if not args.skip_lower else (False,):
                    res = cell(rng, size, frac, rho, lower, reps)
                    n = max(ppi.MIN_RATED, round(frac * size))
                    cov: dict[str, str] = {}
                    for name in METHODS:
                        c = float(res[f"cov:{name}"].mean())
                        se = math.sqrt(c * (1 - c) / reps)
                        summary[name].append((n, c))
                        cov[name] = f"{c:.3f} ({se:.3f}) {flag(c, se):<4}"
                    ref = float(res["width:rated-t"].mean())

                    def ratio(m: str, res: dict[str, Array] = res, ref: float = ref) -> float:
                        return float(res[f"width:{m}"].mean()) / ref

                    print(
                        f"{size:>4} {n:>3}={frac:>3.0%} {rho:>4.2f} {'lower' if lower else 'higher':>6} "
                        f"{float(res['lam'].mean()):>5.2f} | "
                        + " | ".join(f"{cov[m]:<18}" for m in ("old", "new", "rated-t"))
                        + " | "
                        + " ".join(
                            f"{cov[m][:5] + ' ' + flag(float(cov[m][:5]), 0.0)[:1]:>10}" for m in extra
                        )
                        + " || "
                        + " ".join(f"{ratio(m):>8.3f}" for m in ("old", "new"))
                        + " "
                        + " ".join(f"{ratio(m):>12.3f}" for m in extra)
                        + f" || {float(res['covrun:new'].mean()):.3f}",
                        flush=True,
                    )
    se_note = math.sqrt(0.95 * 0.05 / reps)
    print(f"MC SE at 0.95: {se_note:.4f}. {time.perf_counter() - start:.0f} s")
    print(
        "per method: cells outside the band (by more than 2 MC SE); coverage range; mean coverage by n rated"
    )
    for name in METHODS:
        cs = [c for _, c in summary[name]]
        out = sum(not BAND[0] <= c <= BAND[1] for c in cs)
        far = sum(flag(c, math.sqrt(c * (1 - c) / reps)).isupper() for c in cs)
        by_n: dict[int, list[float]] = {}
        for n, c in summary[name]:
            by_n.setdefault(n, []).append(c)
        pooled = " ".join(f"n={n}: {np.mean(v):.4f}" for n, v in sorted(by_n.items()))
        print(f"  {name:<10} {out:>2} ({far}) of {len(cs)}; {min(cs):.3f}-{max(cs):.3f}; {pooled}")


if __name__ == "__main__":
    main()
