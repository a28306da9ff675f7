"""Active sampling of the outputs to rate (services/active_ppi.py) against uniform sampling: coverage of the
active PPI interval, and the ratings each design needs to reach a target width for the run's mean.

Data: the tied 1-5 simulation of bench/ppi.py (latent quality z; two raters' 1-5 ratings cut from
z + N(0, 0.6^2), averaged; the metric a skewed, clipped 0-1 transform of rho z + sqrt(1 - rho^2) e; rho is
the latent correlation, the realised metric-human correlation is printed beside it). Truth: E[H].

Per cell (N outputs, rho): for each budget (expected ratings, a share of N) the policy is run on every
simulated run: the outputs in random order, each included with pi = clip((budget / N) u / mean(u),
pi_min, 1), u the predicted SD of the human score given the metric, refitted on the ratings so far at 20
evenly spaced points of the stream (the service refits every few ratings, off the request path; any
schedule that uses only past ratings keeps the estimator valid). The uniform design rates a random n of
the N outputs (services.ppi's PPI++ interval), n = the same budget. Printed per budget: the mean number of
ratings the active design took, coverage of E[H] by the active interval (binomial Monte Carlo SE), and the
mean widths of active PPI, uniform PPI++ and the uniform rated-only t interval.

The metric-human correlation under the same draws (active_ppi.active_correlations: 1/pi weighted Pearson r,
jackknife on Fisher's z over the rated outputs): its coverage of the population correlation (10^7 simulated
outputs, true_corr) and of each run's own r over its N outputs, its bias and mean width; beside it n = the
budget outputs rated uniformly: the same jackknife (equal weights) and Fisher's interval.

Ratings to a target width: the target is the mean width of the uniform PPI++ interval at 20 % of N rated;
the ratings each design needs for it are read off its mean-width curve (interpolated in log n); "saving" is
1 - active / uniform PPI++ (goal: at least 30 % at rho >= .6, never below -5 % at rho = .3).

--data ambiguous: the same human scores with a judge that is sharp on some outputs and lost on others
(the "ambiguous traces" case): with probability rho an output is clear, its metric Phi(2 (z + 0.3 e)),
near 0 or 1 and close to the truth; otherwise its metric is 0.5 + 0.05 e', uninformative. The residual
variance then depends on the metric, which is where drawing by uncertainty can gain; on the default data
it barely does (the best possible policy, pi proportional to the true conditional SD, would cut the
variance by 0.01-1.5 % at rho .3-.85).

--data demo: the policy replayed on the demo study the project ships (data/demo: three runs of 50 outputs,
two raters each, loaded as app/demo.py loads them). The "oracle" is the demo's own ratings: an output the
policy draws gets the mean of its two ratings. The metric guiding the draws is ROUGE-L F1 against the
reference answer (the project's RougeAdapter: rouge-score with Unicode word tokens), an offline metric the
demo scores. Each run (N = 50) and the three pooled (N = 150) are replayed --replicates times per budget
(a fresh random order and coins each time); the truth is the run's own mean human score (and its own
metric-human r), so coverage is of a finite population, which the interval (made for the population the
outputs come from) over-covers by up to a factor of the finite-population correction 1 - n/N on the
variance. Printed: active vs uniform widths at the same budget and the coverage of the run's mean.

Usage: python bench/active_rating.py [--replicates 1000] [--sizes 200,1000] [--rhos 0.3,0.6,0.85]
                                     [--floor 0.5] [--seed 0] [--data tied|ambiguous|demo]
                                     [--budgets 0.05,...,0.4]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ppi import simulate, true_mean  # bench/ppi.py: the same tied data

from services import active_ppi, ppi

Array = NDArray[np.float64]
BAND = (0.935, 0.965)
BUDGETS = (0.05, 0.08, 0.12, 0.16, 0.2, 0.25, 0.3, 0.4)
TARGET_AT = 0.2
DEMO_BUDGETS = (0.2, 0.3, 0.4, 0.6)
REFITS = 20


def _fits(y: Array, f: Array, rated: NDArray[np.bool_]) -> Array:
    """Uncertainty scores u (R, M) from fits on each row's rated outputs: active_ppi.fit_uncertainty,
    vectorised (least squares from masked moments); rows with fewer than MIN_FIT ratings stay uniform."""
    r = rated.astype(np.float64)
    n = r.sum(axis=1)
    ok = n >= active_ppi.MIN_FIT
    nn = np.maximum(n, 1.0)
    mf = (r * f).sum(axis=1) / nn
    my = (r * y).sum(axis=1) / nn
    vf = (r * (f - mf[:, None]) ** 2).sum(axis=1)
    b = np.where(vf > 0, (r * (f - mf[:, None]) * (y - my[:, None])).sum(axis=1) / np.where(vf > 0, vf, 1), 0)
    a = my - b * mf
    e2 = (y - a[:, None] - b[:, None] * f) ** 2
    # e2 ~ c0 + c1 f + c2 f^2 on the rated outputs: 3x3 normal equations per row.
    x = np.stack([np.ones_like(f), f, f * f], axis=2)  # (R, M, 3)
    xtx = np.einsum("rm,rmi,rmj->rij", r, x, x) + 1e-9 * np.eye(3)
    xty = np.einsum("rm,rmi,rm->ri", r, x, e2)
    c = np.linalg.solve(xtx, xty[:, :, None])[:, :, 0]
    mean_e2 = (r * e2).sum(axis=1) / nn
    fitted = c[:, 0:1] + c[:, 1:2] * f + c[:, 2:3] * f * f
    # active_ppi.shrinkage per row: max(0, 1 - 1/F) toward the constant residual variance
    ss_tot = (r * (e2 - mean_e2[:, None]) ** 2).sum(axis=1)
    ss_res = (r * (e2 - fitted) ** 2).sum(axis=1)
    r2 = np.clip(1 - ss_res / np.where(ss_tot > 0, ss_tot, 1), 0, 1 - 1e-12)
    f_stat = (r2 / 2) / ((1 - r2) / np.maximum(n - 3, 1))
    k = np.where((ss_tot > 0) & (f_stat > 1), 1 - 1 / np.where(f_stat > 1, f_stat, 1), 0.0)[:, None]
    var = k * fitted + (1 - k) * mean_e2[:, None]
    u = np.sqrt(np.maximum(var, active_ppi.RESIDUAL_FLOOR * mean_e2[:, None]))
    good = ok & (vf > 0) & (mean_e2 > 0)
    return np.where(good[:, None], u, 1.0)


def draw(
    rng: np.random.Generator, y: Array, f: Array, budget: float, floor: float
) -> tuple[NDArray[np.bool_], Array]:
    """The policy on every row at once (the outputs of a row are already in random order)."""
    reps, total = y.shape
    least = active_ppi.pi_min(budget, total, floor)
    rated = np.zeros((reps, total), dtype=np.bool_)
    pis = np.zeros((reps, total))
    u = np.ones((reps, total))
    u_mean = np.ones(reps)
    refit_at = {round(total * k / REFITS) for k in range(1, REFITS)}
    rate = budget / total
    for t in range(total):
        if t in refit_at:
            u = _fits(y, f, rated)
            u_mean = u.mean(axis=1)
        pi = np.clip(rate * u[:, t] / u_mean, least, 1.0)
        pis[:, t] = pi
        rated[:, t] = rng.random(reps) < pi
    return rated, pis


def _needed(ns: list[float], widths: list[float], target: float) -> float:
    """Ratings at which the mean-width curve crosses the target (interpolated in log n, log width)."""
    for k in range(1, len(ns)):
        if widths[k] <= target <= widths[k - 1]:
            lo, hi = math.log(widths[k - 1]), math.log(widths[k])
            s = (math.log(target) - lo) / (hi - lo) if hi != lo else 0.0
            return math.exp(math.log(ns[k - 1]) + s * (math.log(ns[k]) - math.log(ns[k - 1])))
    return math.nan if target < widths[-1] else ns[0]


def ambiguous(rng: np.random.Generator, reps: int, n: int, clear: float) -> tuple[Array, Array]:
    """bench/ppi.py's human scores (same generator, so E[H] is the same); a metric sharp on a share
    ``clear`` of the outputs, lost on the rest."""
    z = rng.standard_normal((reps, n))
    cuts = np.array([-1.0, -0.3, 0.4, 1.1])
    ratings = [1 + np.searchsorted(cuts, z + 0.6 * rng.standard_normal((reps, n))) for _ in range(2)]
    h = (ratings[0] + ratings[1]) / 2.0
    sharp = sps_norm_cdf(2.0 * (z + 0.3 * rng.standard_normal((reps, n))))
    lost = 0.5 + 0.05 * rng.standard_normal((reps, n))
    m = np.round(np.where(rng.random((reps, n)) < clear, sharp, lost), 2)
    return h.astype(np.float64), m.astype(np.float64)


def sps_norm_cdf(x: Array) -> Array:
    from scipy.special import ndtr

    return np.asarray(ndtr(x), dtype=np.float64)


def true_corr(rho: float, data: str) -> float:
    """The population correlation of human score and metric, from 10^7 simulated outputs on a fixed
    seed (Monte Carlo SE about (1 - r^2) / sqrt(10^7) < 0.0003)."""
    rng = np.random.default_rng(12345)
    acc = np.zeros(5)
    for _ in range(10):
        h, m = simulate(rng, 10, 100_000, rho) if data == "tied" else ambiguous(rng, 10, 100_000, rho)
        acc += [h.sum(), m.sum(), (h * h).sum(), (m * m).sum(), (h * m).sum()]
    k = 10 * 10 * 100_000
    sh, sm, shh, smm, shm = acc / k
    return float((shm - sh * sm) / math.sqrt((shh - sh * sh) * (smm - sm * sm)))


def oracle_saving(rho: float, data: str) -> float:
    """The share of ratings the best possible policy would save over uniform PPI++ at the same width:
    1 - E[s(f)]^2 / E[s(f)^2], s(f)^2 = E[(H - a - b f)^2 | f] the true conditional squared residual of the
    human score about its population regression on the metric (by metric value, 10^6 simulated outputs),
    pi proportional to s(f) without floor or cap (so an upper bound)."""
    rng = np.random.default_rng(54321)
    h, m = simulate(rng, 10, 100_000, rho) if data == "tied" else ambiguous(rng, 10, 100_000, rho)
    h, m = h.ravel(), m.ravel()
    b, a = np.polyfit(m, h, 1)
    e2 = (h - a - b * m) ** 2
    _, inverse, counts = np.unique(m, return_inverse=True, return_counts=True)
    s2 = np.bincount(inverse, weights=e2) / counts  # per metric value
    p = counts / counts.sum()
    return float(1 - (p * np.sqrt(s2)).sum() ** 2 / (p * s2).sum())


def corr_row(
    h: Array,
    m: Array,
    rated: NDArray[np.bool_],
    pis: Array,
    keep: NDArray[np.bool_],
    n_u: int,
    rho_true: float,
) -> dict[str, float]:
    """Coverage and width of the weighted correlation's jackknife interval (active_ppi.active_correlations)
    of the population correlation and of each run's own r over its N outputs; beside them, n_u outputs rated
    uniformly: the same jackknife (equal weights) and Fisher's interval (docs/statistics.md section 1)."""
    act = active_ppi.active_correlations(h[keep], m[keep], rated[keep], pis[keep])
    ok = np.isfinite(act.estimate)
    r_run = np.array([np.corrcoef(h[i], m[i])[0, 1] for i in np.flatnonzero(keep)])
    first = np.zeros_like(rated)
    first[:, :n_u] = True
    uni = active_ppi.active_correlations(h, m, first, np.ones_like(h))
    r_u = uni.estimate
    q = 1.959963984540054
    fz = np.arctanh(np.clip(r_u, -0.999999, 0.999999))
    f_lo, f_hi = np.tanh(fz - q / math.sqrt(n_u - 3)), np.tanh(fz + q / math.sqrt(n_u - 3))
    lo, hi = act.ci_low[ok], act.ci_high[ok]
    u_ok = np.isfinite(r_u)
    return {
        "r_reps": float(ok.sum()),
        "r_cov": float(((lo <= rho_true) & (rho_true <= hi)).mean()),
        "r_cov_run": float(((lo <= r_run[ok]) & (r_run[ok] <= hi)).mean()),
        "r_bias": float(act.estimate[ok].mean() - rho_true),
        "r_w": float((hi - lo).mean()),
        "r_ucov_jk": float(((uni.ci_low <= rho_true) & (rho_true <= uni.ci_high))[u_ok].mean()),
        "r_uw_jk": float((uni.ci_high - uni.ci_low)[u_ok].mean()),
        "r_ucov_fisher": float(((f_lo <= rho_true) & (rho_true <= f_hi))[u_ok].mean()),
        "r_uw_fisher": float((f_hi - f_lo)[u_ok].mean()),
    }


def cell(
    rng: np.random.Generator,
    size: int,
    rho: float,
    reps: int,
    floor: float,
    data: str = "tied",
    budgets: tuple[float, ...] = BUDGETS,
) -> tuple[list[dict[str, float]], float]:
    truth = true_mean()
    rho_true = true_corr(rho, data)
    h, m = simulate(rng, reps, size, rho) if data == "tied" else ambiguous(rng, reps, size, rho)
    rows = []
    for frac in budgets:
        budget = frac * size
        rated, pis = draw(rng, h, m, budget, floor)
        keep = (rated.sum(axis=1) >= ppi.MIN_RATED) & (rated.sum(axis=1) < size)
        res = active_ppi.active_intervals(h[keep], m[keep], rated[keep], pis[keep])
        cover = (res.ci_low <= truth) & (truth <= res.ci_high)
        n_u = max(ppi.MIN_RATED, round(budget))
        uni = ppi.ppi_intervals(h[:, :n_u], m[:, :n_u], m[:, n_u:])
        ucov = (uni.ci_low <= truth) & (truth <= uni.ci_high)
        rated_only = ppi.rated_mean(h[0, :n_u])  # for its quantile only
        sd = h[:, :n_u].std(axis=1, ddof=1)
        t_width = 2 * (rated_only.ci_high - rated_only.estimate) / rated_only.se * sd / math.sqrt(n_u)
        corr = corr_row(h, m, rated, pis, keep, n_u, rho_true)
        rows.append(
            {
                **corr,
                "budget": budget,
                "n_active": float(res.n_rated.mean()),
                "dropped": float((~keep).sum()),
                "cov": float(cover.mean()),
                "reps": float(keep.sum()),
                "ucov": float(ucov.mean()),
                "w_active": float((res.ci_high - res.ci_low).mean()),
                "n_uniform": float(n_u),
                "w_uniform": float((uni.ci_high - uni.ci_low).mean()),
                "w_rated": float(t_width.mean()),
                "pi_max_ratio": float(pis.max(axis=1).mean() / (budget / size)),
            }
        )
    return rows, rho_true


def print_corr(rows: list[dict[str, float]]) -> None:
    """The correlation's rows of a cell: the active interval's coverage of the population r (MC SE) and of
    each run's own r, its bias and width; the uniform design's jackknife and Fisher coverage and widths."""
    print(
        f"{'budget':>7} {'r: cov active':>19} {'cov run r':>9} {'bias':>7} {'w active':>8} "
        f"{'cov unif jk':>11} {'w unif jk':>9} {'cov Fisher':>10} {'w Fisher':>8}"
    )
    for r in rows:
        se = math.sqrt(r["r_cov"] * (1 - r["r_cov"]) / max(r["r_reps"], 1))
        flag = "" if BAND[0] <= r["r_cov"] <= BAND[1] else " out"
        print(
            f"{r['budget']:>7.0f} {r['r_cov']:>11.3f} ({se:.3f}){flag:<4} {r['r_cov_run']:>5.3f} "
            f"{r['r_bias']:>+7.3f} {r['r_w']:>8.3f} {r['r_ucov_jk']:>11.3f} {r['r_uw_jk']:>9.3f} "
            f"{r['r_ucov_fisher']:>10.3f} {r['r_uw_fisher']:>8.3f}"
            + (f"  ({r['reps'] - r['r_reps']:.0f} runs undefined)" if r["r_reps"] < r["reps"] else "")
        )


def demo_population() -> dict[str, tuple[Array, Array]]:
    """Run name -> (human score, ROUGE-L F1) of the demo's outputs: each output's two ratings averaged."""
    import csv
    import json

    from rouge_score import rouge_scorer

    from services.metrics.classic import UnicodeTokenizer

    root = Path(__file__).resolve().parents[1] / "data" / "demo"
    refs = {
        q["external_id"]: q["reference_answer"]
        for q in map(json.loads, (root / "questions.jsonl").read_text(encoding="utf-8").splitlines())
    }
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=UnicodeTokenizer())
    out = {}
    for path in sorted((root / "runs").glob("*.jsonl")):
        answers = {
            o["question_id"]: o["answer"]
            for o in map(json.loads, path.read_text(encoding="utf-8").splitlines())
        }
        scores: dict[str, list[float]] = {}
        with (root / "ratings" / f"{path.stem}.csv").open(encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                scores.setdefault(row["question_id"], []).append(float(row["score"]))
        qs = sorted(q for q in answers if q in scores)
        h = np.array([np.mean(scores[q]) for q in qs])
        m = np.array([scorer.score(refs[q] or "", answers[q] or "")["rougeL"].fmeasure for q in qs])
        out[path.stem] = (h, m)
    return out


def demo(rng: np.random.Generator, reps: int, floor: float, budgets: tuple[float, ...]) -> None:
    """The policy replayed on the demo's ratings (module docstring, --data demo)."""
    pops = demo_population()
    pops["pooled (3 runs)"] = (
        np.concatenate([h for h, _ in pops.values()]),
        np.concatenate([m for _, m in pops.values()]),
    )
    print(
        f"demo replay: {reps} replays per run and budget; floor {floor}; metric ROUGE-L F1 vs the reference"
    )
    for name, (h_pop, m_pop) in pops.items():
        size = h_pop.size
        mean, r_pop = float(h_pop.mean()), float(np.corrcoef(h_pop, m_pop)[0, 1])
        print(
            f"\n{name}: N = {size}, run mean {mean:.3f} (SD {h_pop.std(ddof=1):.2f}), "
            f"metric-human r {r_pop:.3f}"
        )
        print(
            f"{'budget':>6} {'n act':>6} {'cov mean act':>18} {'cov unif':>8} {'w act':>6} {'w unif':>6} "
            f"{'ratio':>6} {'cov r act':>9} {'bias':>6} {'cov r unif jk':>13} {'cov r Fisher':>12} "
            f"{'w r act':>7} {'w r Fisher':>10}"
        )
        for frac in budgets:
            budget = frac * size
            order = np.argsort(rng.random((reps, size)), axis=1)
            h, m = h_pop[order], m_pop[order]
            rated, pis = draw(rng, h, m, budget, floor)
            keep = (rated.sum(axis=1) >= ppi.MIN_RATED) & (rated.sum(axis=1) < size)
            act = active_ppi.active_intervals(h[keep], m[keep], rated[keep], pis[keep])
            cov = float(((act.ci_low <= mean) & (mean <= act.ci_high)).mean())
            n_u = max(ppi.MIN_RATED, round(budget))
            uni = ppi.ppi_intervals(h[:, :n_u], m[:, :n_u], m[:, n_u:])
            ucov = float(((uni.ci_low <= mean) & (mean <= uni.ci_high)).mean())
            w_a, w_u = float((act.ci_high - act.ci_low).mean()), float((uni.ci_high - uni.ci_low).mean())
            c = corr_row(h, m, rated, pis, keep, n_u, r_pop)
            se = math.sqrt(cov * (1 - cov) / keep.sum())
            print(
                f"{budget:>6.0f} {act.n_rated.mean():>6.1f} {cov:>10.3f} ({se:.3f}) {ucov:>8.3f} {w_a:>6.3f} "
                f"{w_u:>6.3f} {w_a / w_u:>6.3f} {c['r_cov']:>9.3f} {c['r_bias']:>+6.3f} "
                f"{c['r_ucov_jk']:>13.3f} {c['r_ucov_fisher']:>12.3f} {c['r_w']:>7.3f} "
                f"{c['r_uw_fisher']:>10.3f}"
                + (f"  ({(~keep).sum()} replays with < 3 ratings left out)" if (~keep).any() else "")
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--sizes", default="200,1000")
    ap.add_argument("--rhos", default="0.3,0.6,0.85")
    ap.add_argument("--floor", type=float, default=0.5, help="pi_min as a share of the uniform rate")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="budgets as shares of N")
    ap.add_argument("--data", choices=("tied", "ambiguous", "demo"), default="tied")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    reps = args.replicates
    budgets = tuple(float(b) for b in args.budgets.split(","))
    if args.data == "demo":
        demo(rng, reps, args.floor, budgets if args.budgets != ",".join(map(str, BUDGETS)) else DEMO_BUDGETS)
        return
    print(
        f"E[H] = {true_mean():.4f}; {reps} simulated runs per cell and budget; floor {args.floor} x the "
        f"uniform rate; band {BAND[0]:.3f}-{BAND[1]:.3f}; MC SE at .95: {math.sqrt(0.95 * 0.05 / reps):.4f}"
    )
    start = time.perf_counter()
    summary = []
    all_cov: list[float] = []
    all_rcov: list[float] = []
    for size in (int(s) for s in args.sizes.split(",")):
        for rho in (float(r) for r in args.rhos.split(",")):
            rows, r_obs = cell(rng, size, rho, reps, args.floor, args.data, budgets)
            what = "rho" if args.data == "tied" else "share of clear outputs"
            print(
                f"\nN = {size}, {what} = {rho} (population metric-human r = {r_obs:.4f}; data: {args.data})"
            )
            print(
                f"{'budget':>7} {'n act':>7} {'cov active':>16} {'cov unif':>8} {'w active':>8} "
                f"{'w unif PPI':>10} {'w rated-t':>9} {'max pi/unif':>11}"
            )
            for r in rows:
                se = math.sqrt(r["cov"] * (1 - r["cov"]) / r["reps"])
                flag = "" if BAND[0] <= r["cov"] <= BAND[1] else " out"
                print(
                    f"{r['budget']:>7.0f} {r['n_active']:>7.1f} {r['cov']:>8.3f} ({se:.3f}){flag:<4}"
                    f" {r['ucov']:>8.3f} {r['w_active']:>8.3f} {r['w_uniform']:>10.3f} {r['w_rated']:>9.3f}"
                    f" {r['pi_max_ratio']:>11.2f}"
                    + (f"  ({r['dropped']:.0f} runs with < 3 ratings left out)" if r["dropped"] else "")
                )
                all_cov.append(r["cov"])
            print_corr(rows)
            all_rcov += [r["r_cov"] for r in rows]
            target_row = min(rows, key=lambda r: abs(r["budget"] - TARGET_AT * size))
            target = target_row["w_uniform"]
            n_act = _needed([r["n_active"] for r in rows], [r["w_active"] for r in rows], target)
            n_uni = _needed([r["n_uniform"] for r in rows], [r["w_uniform"] for r in rows], target)
            n_rat = _needed([r["n_uniform"] for r in rows], [r["w_rated"] for r in rows], target)
            summary.append((size, rho, r_obs, target, n_act, n_uni, n_rat, oracle_saving(rho, args.data)))
    print(f"\nratings to reach the target width (uniform PPI++'s mean width at {TARGET_AT:.0%} of N rated)")
    print(
        f"{'N':>5} {'rho':>5} {'r':>5} {'target':>7} {'active':>7} {'uniform PPI++':>13} {'saving':>7} "
        f"{'uniform rated-only':>18} {'saving':>7} {'oracle policy saving':>20}"
    )
    for size, rho, r_obs, target, n_act, n_uni, n_rat, best in summary:
        print(
            f"{size:>5} {rho:>5.2f} {r_obs:>5.2f} {target:>7.3f} {n_act:>7.1f} {n_uni:>13.1f} "
            f"{1 - n_act / n_uni:>7.1%} {n_rat:>18.1f} {1 - n_act / n_rat:>7.1%} {best:>20.2%}"
        )
    print(
        "saving: 1 - active / uniform (negative: the active design needs more ratings); oracle policy "
        "saving: the most any policy could save over uniform PPI++ on this data (pi proportional to the true "
        "conditional residual SD, oracle_saving)"
    )
    print(
        f"\nactive coverage over all cells and budgets: {min(all_cov):.3f}-{max(all_cov):.3f}; "
        f"{sum(not BAND[0] <= c <= BAND[1] for c in all_cov)} of {len(all_cov)} outside the band. "
        f"{time.perf_counter() - start:.0f} s"
    )
    print(
        f"weighted correlation coverage (population r) over all cells and budgets: {min(all_rcov):.3f}-"
        f"{max(all_rcov):.3f}; {sum(not BAND[0] <= c <= BAND[1] for c in all_rcov)} of {len(all_rcov)} "
        "outside the band"
    )


if __name__ == "__main__":
    main()
