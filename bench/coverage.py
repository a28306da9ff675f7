"""Monte Carlo coverage of every interval a report can show, on the kind of data the service sees.

Tied data (docs/statistics.md §2): a latent quality z ~ N(0, 1) per output; two raters each give a 1-5 rating
cut from z + N(0, 0.6^2) at -1, -0.3, 0.4, 1.1, and the human score is their mean; a metric's latent
zm = rho z + sqrt(1 - rho^2) e becomes clip((e^{0.8 zm} - e^{0.8 q20}) / (e^{0.8 q90} - e^{0.8 q20}), 0, 1)
rounded to 0.01 (about 21% zeros and 10% ones). n = 50 and 100 outputs, rho = 0, 0.3, 0.6.

Pooled runs: q questions answered by two runs. The second run repeats the first run's answer (same scores,
same ratings) for half the questions; for the others it gives a new answer whose quality shares the
question's difficulty (z = sqrt(.5) u_question + sqrt(.5) e_answer). 2q outputs, q distinct questions.

Differences: two metrics on the same outputs (latent rho .6 and .3), the difference of their coefficients
with the human score, as the report's comparison with the best metric shows it: Zou's interval (on the
Fisher limits for Pearson, on the Fieller limits for Spearman and Kendall) and, beside it with ci=bca, the
jackknife-t of the difference ("jack-t": d -+ t_{n-1} se, se the jackknife SE of d); then the paired BCa and
percentile bootstraps of the difference, which the report no longer shows because they under-cover.

Pass/fail alignment (docs/statistics.md §9): the human score binarised at 4 (the 1-5 rubric's upper half); the
ROC AUC interval (DeLong's on the logit scale on independent outputs, the question BCa on pooled runs)
against the population AUC; the held-out figures (Youden's J, kappa, accuracy,
precision, recall: each half of the questions judged at the Youden threshold of the other half, jackknife-t
interval leaving one question out) against the population figures of that cross-fitted decision (each
half's threshold applied to the population, weighted by the half's size).

Jackknife-t ("jack-t", the report's coefficient interval on pooled runs): tanh(atanh r -+ t_{G-1} se), se
the jackknife SE of atanh r leaving out one question (all its outputs) at a time, G the questions; on
single data each output is its own question. "differences-pooled": two metrics' coefficients on the pooled
simulation: the jackknife-t of their difference by question (what a pooled report's comparison shows)
beside the question BCa and a candidate, Zou's MOVER on the two jackknife-t intervals.

Single-run coefficient cells: "bca" is what a report shows with ci=bca: for Pearson, BCa read at the
small-sample expanded level 2 Phi(sqrt(n/(n-1)) t_{n-1}) - 1 (services.stats.expanded_confidence), for
Spearman and Kendall scipy's BCa at 95%; "bca-plain" is scipy's BCa at 95% (for Spearman and Kendall the
same interval; "--match expanded" adds their expanded BCa, which over-covers at n = 50). Pooled cells
"bca" treat the 2q outputs as independent (what a report must not do).

Truths are the population values, estimated once from 3,000,000 simulated outputs (their Monte Carlo error,
below 0.001, is negligible beside the intervals). Each cell prints coverage with its binomial Monte Carlo
standard error; the target band is 93.5-96.5%. Bootstrap intervals use fewer replicates (each costs a
bootstrap of --resamples draws).

Usage: python bench/coverage.py [--replicates 1000] [--boot-replicates 300] [--resamples 2000]
                                [--workers 1] [--only single,pooled,differences,passfail]
                                [--match jack-t,pooled/kendall]  (cells whose scenario/coef/interval match)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import zlib
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import scipy
from numpy.typing import NDArray
from scipy import stats as sps
from scipy.special import ndtri

# The repository root in place of bench/ (the script's directory) on the path: bench/coverage.py must
# not shadow the coverage package, which numba imports.
sys.path[0] = str(Path(__file__).resolve().parents[1])

from services import stats  # noqa: E402
from services.stats.core import DEFAULT_CHUNK_ELEMENTS, reference_statistic  # noqa: E402
from services.stats.corr_kernels import correlation_kernel  # noqa: E402
from services.stats.passfail import PassFailKernel, question_halves, youden_cut  # noqa: E402
from services.stats.resampling import (  # noqa: E402
    bootstrap_distribution,
    bootstrap_limits,
    leave_one_out,
    units_of,
)

Array = NDArray[np.float64]
CUTS = np.array([-1.0, -0.3, 0.4, 1.1])
Q20, Q90 = float(ndtri(0.2)), float(ndtri(0.9))
RHOS = (0.0, 0.3, 0.6)
SIZES = (50, 100)
POOLED_QUESTIONS = 50
BAND = (0.935, 0.965)
TRUTH_N = 3_000_000


# ------------------------------------------------------------------------------------------- simulation


def ratings(rng: np.random.Generator, z: Array, raters: int = 2) -> Array:
    """Mean of ``raters`` 1-5 ratings cut from z plus rater noise."""
    cut = [1.0 + np.searchsorted(CUTS, z + rng.normal(0.0, 0.6, z.size)) for _ in range(raters)]
    return np.mean(cut, axis=0)


def metric_of(zm: Array) -> Array:
    """A judge-like score in [0, 1] piling up at 0 and 1, on a 0.01 grid."""
    e = np.exp(0.8 * zm)
    lo, hi = math.exp(0.8 * Q20), math.exp(0.8 * Q90)
    return np.round(np.clip((e - lo) / (hi - lo), 0.0, 1.0), 2)


def single(rng: np.random.Generator, n: int, rhos: Iterable[float]) -> tuple[Array, list[Array]]:
    """Human score and one metric per rho on n independent outputs."""
    z = rng.standard_normal(n)
    metrics = [metric_of(r * z + math.sqrt(1 - r * r) * rng.standard_normal(n)) for r in rhos]
    return ratings(rng, z), metrics


def pooled(
    rng: np.random.Generator, q: int, rhos: Iterable[float]
) -> tuple[Array, list[Array], NDArray[np.int64]]:
    """Two runs of q questions; half the second run's outputs repeat the first run's (scores and ratings)."""
    u = rng.standard_normal(q)
    z = math.sqrt(0.5) * u[None, :] + math.sqrt(0.5) * rng.standard_normal((2, q))
    repeat = np.zeros(q, dtype=bool)
    repeat[rng.permutation(q)[: q // 2]] = True
    z[1, repeat] = z[0, repeat]
    human = ratings(rng, z.ravel()).reshape(2, q)
    human[1, repeat] = human[0, repeat]
    metrics = []
    for r in rhos:
        noise = rng.standard_normal((2, q))
        noise[1, repeat] = noise[0, repeat]
        metrics.append(metric_of(r * z + math.sqrt(1 - r * r) * noise).ravel())
    return human.ravel(), metrics, np.tile(np.arange(q), 2)


# ---------------------------------------------------------------------------------------------- truths

STATISTICS: dict[str, Callable[[Array, Array], float]] = {
    "pearson": lambda x, y: float(sps.pearsonr(x, y).statistic),
    "spearman": lambda x, y: float(sps.spearmanr(x, y).statistic),
    "kendall": lambda x, y: float(sps.kendalltau(x, y).statistic),
}


@cache
def truth(rho: float, method: str) -> float:
    """Population coefficient of (metric, human score) at latent rho (0 exactly at rho = 0)."""
    if rho == 0.0:
        return 0.0
    human, (metric,) = single(np.random.default_rng(12345), TRUTH_N, (rho,))
    return STATISTICS[method](metric, human)


PASS_AT = 4.0


@cache
def truth_pass_fail(rho: float) -> dict[str, float]:
    """Population AUC, and kappa and accuracy at the population's Youden threshold."""
    from sklearn.metrics import cohen_kappa_score, roc_auc_score

    human, (metric,) = single(np.random.default_rng(777), TRUTH_N, (rho,))
    y = (human >= PASS_AT).astype(int)
    # The reports' rule: J on exact counts, the highest threshold among equal maxima.
    threshold, youden_j = youden_cut(y, metric)
    pred = (metric >= threshold).astype(int)
    return {
        "threshold": threshold,
        "youden_j": youden_j,
        "auc": float(roc_auc_score(y, metric)),
        "kappa": float(cohen_kappa_score(y, pred)),
        "accuracy": float(np.mean(pred == y)),
    }


@cache
def pass_fail_table(rho: float) -> tuple[Array, Array, Array, float]:
    """Population P(pass and metric >= v), P(fail and metric >= v) on the metric's 0.01 grid, and P(pass)."""
    human, (metric,) = single(np.random.default_rng(777), TRUTH_N, (rho,))
    passed = human >= PASS_AT
    grid = np.round(np.arange(101) / 100, 2)
    cells = np.rint(metric * 100).astype(np.int64)
    pos = np.bincount(cells[passed], minlength=101) / metric.size
    neg = np.bincount(cells[~passed], minlength=101) / metric.size
    return grid, pos[::-1].cumsum()[::-1], neg[::-1].cumsum()[::-1], float(passed.mean())


def confusion_figures(tp: Array, fp: Array, fn: Array, tn: Array) -> dict[str, Array]:
    total = tp + fp + fn + tn
    accuracy = (tp + tn) / total
    p_pass, p_pred = (tp + fn) / total, (tp + fp) / total
    expected = p_pass * p_pred + (1 - p_pass) * (1 - p_pred)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "youden_j": tp / (tp + fn) - fp / (fp + tn),
            "kappa": (accuracy - expected) / (1 - expected),
            "accuracy": accuracy,
            "precision": tp / (tp + fp),
            "recall": tp / (tp + fn),
        }


def crossfit_truth(rho: float, thresholds: list[float], weights: list[float]) -> dict[str, float]:
    """Population figures of the cross-fitted decision: items of fold f judged at thresholds[f]."""
    grid, pos, neg, p = pass_fail_table(rho)
    tp = fp = 0.0
    for t, w in zip(thresholds, weights, strict=True):
        g = int(np.searchsorted(grid, t - 1e-9))
        tp += w * pos[g]
        fp += w * neg[g]
    out = confusion_figures(np.array(tp), np.array(fp), np.array(p - tp), np.array(1 - p - fp))
    return {k: float(v) for k, v in out.items()}


_HELD_OUT_MEMO: dict[tuple[bytes, bytes, int, bool], stats.PassFailResult] = {}


def crossfit_interval(
    x: Array, h: Array, rho: float, figure: str, resamples: int, seed: int, clusters: NDArray[np.int64] | None
) -> tuple[float | None, float | None, float]:
    """The service's held-out figure (threshold chosen on one random half of the questions, the figure on
    the other half, swapped; jackknife-t interval leaving one question out, the decisions fixed), and the
    population figure of that cross-fitted decision: the truth it should cover."""
    # The held-out intervals need no resamples (jackknife); one call serves the five figures.
    key = (x.tobytes(), h.tobytes(), seed, clusters is None)
    if key not in _HELD_OUT_MEMO:
        if len(_HELD_OUT_MEMO) > 5000:
            _HELD_OUT_MEMO.clear()
        _HELD_OUT_MEMO[key] = stats.pass_fail(x, h, PASS_AT, n_resamples=0, seed=seed, clusters=clusters)
    res = _HELD_OUT_MEMO[key]
    if res.held_out_thresholds is None:
        return None, None, math.nan
    units = units_of(clusters, np.ones(x.size, dtype=bool))
    fold = question_halves(units, h >= PASS_AT, seed)  # the service's split, for the weight of each half
    weights = [float(np.mean(fold == f)) for f in (0, 1)]
    target = crossfit_truth(rho, list(res.held_out_thresholds), weights)[figure]
    iv = getattr(res, figure)
    return iv.ci_low, iv.ci_high, target


def auc_contrast(
    x: Array, h: Array, kind: str, resamples: int, seed: int
) -> tuple[float | None, float | None]:
    """What the report no longer shows for AUC on independent outputs: plain DeLong, AUC -+ z se, and the
    item BCa (the pass/fail kernel's resamples and closed-form jackknife, as reports drew them before)."""
    passed = h >= PASS_AT
    if kind == "delong-plain":
        auc, var = stats.delong_auc(x, passed)
        half = 1.959963984540054 * math.sqrt(var)
        return auc - half, auc + half
    kernel = PassFailKernel(x, passed)
    units = units_of(None, np.ones(x.size, dtype=bool))
    theta_b = bootstrap_distribution(kernel, units, resamples, seed, DEFAULT_CHUNK_ELEMENTS)[0]
    jack = leave_one_out(kernel, units, DEFAULT_CHUNK_ELEMENTS)[0]
    from sklearn.metrics import roc_auc_score

    limits = bootstrap_limits(theta_b[np.isfinite(theta_b)], float(roc_auc_score(passed, x)), jack, 0.95)
    return (None, None) if isinstance(limits, str) else limits


@cache
def truth_difference(method: str) -> float:
    human, (m1, m2) = single(np.random.default_rng(54321), TRUTH_N, (0.6, 0.3))
    return STATISTICS[method](m1, human) - STATISTICS[method](m2, human)


# ------------------------------------------------------------------------------------------------ cells


@dataclass(frozen=True)
class Cell:
    scenario: str
    n: int
    rho: float
    method: str  # coefficient
    interval: str
    replicates: int


def _hit(low: float | None, high: float | None, target: float) -> int | None:
    if low is None or high is None:
        return None
    return int(low <= target <= high)


def _analytic(x: Array, h: Array, method: str, interval: str) -> tuple[float | None, float | None]:
    if method == "pearson":
        res = stats.pearson(x, h)
    elif method == "spearman":
        res = stats.spearman(x, h, ci="bonett-wright" if interval == "bonett-wright" else "fieller")
    else:
        res = stats.kendall(x, h, ci="fieller" if interval == "fieller" else "fieller-ties")
    return res.ci_low, res.ci_high


def jackknife_t_interval(
    x: Array, h: Array, method: str, clusters: NDArray[np.int64] | None
) -> tuple[float | None, float | None]:
    """The service's jackknife-t interval on Fisher's z (leave one question out when clustered)."""
    res = stats.jackknife_ci_many({"x": x}, h, method, clusters=clusters)["x"]  # type: ignore[arg-type]
    return res.low, res.high


def _jack_z(jack: Array) -> tuple[Array, float]:
    zj = np.arctanh(np.clip(jack, -1 + 1e-12, 1 - 1e-12))
    g = zj.size
    return zj - zj.mean(), float(sps.t.ppf(0.975, g - 1))


def jackknife_difference(
    x1: Array, x2: Array, h: Array, method: str, clusters: NDArray[np.int64] | None, kind: str
) -> tuple[float | None, float | None]:
    """Intervals of r1 - r2: 'raw', the service's d -+ t_{G-1} jackknife SE of d (what the comparisons
    show); 'zou', a candidate: Zou's MOVER on the two jackknife-t intervals with c the correlation of the
    leave-one-out atanh values."""
    keep = np.ones(h.size, dtype=bool)
    units = units_of(clusters, keep)
    kernel = correlation_kernel(method, np.vstack([x1, x2]), h)  # type: ignore[arg-type]
    jack = leave_one_out(kernel, units, DEFAULT_CHUNK_ELEMENTS)
    r1 = reference_statistic(method, x1, h)[0]  # type: ignore[arg-type]
    r2 = reference_statistic(method, x2, h)[0]  # type: ignore[arg-type]
    if not np.isfinite(jack).all():
        return None, None
    g = jack.shape[1]
    t = float(sps.t.ppf(0.975, g - 1))
    if kind == "raw":
        res = stats.jackknife_differences_many(x1, {"b": x2}, h, method, clusters=clusters)["b"]  # type: ignore[arg-type]
        return res.low, res.high
    z1, _ = _jack_z(jack[0])
    z2, _ = _jack_z(jack[1])
    s1 = math.sqrt((g - 1) / g * float(z1 @ z1))
    s2 = math.sqrt((g - 1) / g * float(z2 @ z2))
    c = float(z1 @ z2) / math.sqrt(float(z1 @ z1) * float(z2 @ z2))
    ci1 = (math.tanh(math.atanh(r1) - t * s1), math.tanh(math.atanh(r1) + t * s1))
    ci2 = (math.tanh(math.atanh(r2) - t * s2), math.tanh(math.atanh(r2) + t * s2))
    return stats.mover_ci(r1, ci1, r2, ci2, c)


def run_cell(cell: Cell, resamples: int) -> tuple[Cell, int, int, float]:
    """(cell, hits, defined replicates, mean width)."""
    hits = defined = 0
    widths = 0.0
    for rep in range(cell.replicates):
        rng = np.random.default_rng([zlib.crc32(cell.scenario.encode()), cell.n, int(cell.rho * 10), rep])
        clusters = None
        if cell.scenario == "passfail":
            h, (x,) = single(rng, cell.n, (cell.rho,))
            target = truth_pass_fail(cell.rho).get(cell.method, math.nan)
        elif cell.scenario == "passfail-pooled":
            h, (x,), clusters = pooled(rng, cell.n // 2, (cell.rho,))
            target = truth_pass_fail(cell.rho).get(cell.method, math.nan)
        elif cell.scenario == "single":
            h, (x,) = single(rng, cell.n, (cell.rho,))
            target = truth(cell.rho, cell.method)
        elif cell.scenario == "pooled":
            h, (x,), clusters = pooled(rng, cell.n // 2, (cell.rho,))
            target = truth(cell.rho, cell.method)
        elif cell.scenario == "differences-pooled":
            h, (x1, x2), clusters = pooled(rng, cell.n // 2, (0.6, 0.3))
            target = truth_difference(cell.method)
        else:
            h, (x1, x2) = single(rng, cell.n, (0.6, 0.3))
            target = truth_difference(cell.method)
        low: float | None
        high: float | None
        if cell.scenario.startswith("passfail") and cell.interval.startswith("held-out"):
            low, high, target = crossfit_interval(x, h, cell.rho, cell.method, resamples, rep, clusters)
        elif cell.scenario == "passfail" and cell.interval in ("delong-plain", "bca-item"):
            low, high = auc_contrast(x, h, cell.interval, resamples, rep)
        elif cell.scenario.startswith("passfail"):
            pf = stats.pass_fail(x, h, PASS_AT, n_resamples=resamples, seed=rep, clusters=clusters)
            figure = getattr(pf, cell.method)
            low, high = figure.ci_low, figure.ci_high
        elif cell.scenario.startswith("differences") and cell.interval.startswith(("jack-t", "zou-jack")):
            kind = "raw" if cell.interval.startswith("jack-t") else "zou"
            low, high = jackknife_difference(x1, x2, h, cell.method, clusters, kind)
        elif cell.scenario.startswith("differences"):
            if cell.interval == "zou":
                res = stats.compare_correlations(x1, x2, h, method=cell.method, n_resamples=0)  # type: ignore[arg-type]
                low, high = res.zou_low, res.zou_high
            else:
                b = stats.bootstrap_difference_ci(
                    x1,
                    x2,
                    h,
                    cell.method,  # type: ignore[arg-type]
                    ci_method="percentile" if cell.interval == "percentile" else "bca",
                    n_resamples=resamples,
                    seed=rep,
                    clusters=clusters,
                )
                low, high = b.low, b.high
        elif cell.interval.startswith("jack-t"):
            low, high = jackknife_t_interval(x, h, cell.method, clusters)
        elif cell.interval in (
            "bca",
            "bca-plain",
            "bca-expanded",
            "percentile",
            "bca-by-question",
            "pct-by-question",
        ):
            b = stats.bootstrap_ci_many(
                {"x": x},
                h,
                cell.method,  # type: ignore[arg-type]
                ci_method="percentile" if cell.interval.startswith("p") else "bca",
                n_resamples=resamples,
                seed=rep,
                clusters=clusters if cell.interval.endswith("by-question") else None,
                # What a single-run report shows with ci=bca: Pearson's read at the expanded level.
                expand=cell.interval == "bca-expanded"
                or (cell.scenario == "single" and cell.interval == "bca" and cell.method == "pearson"),
            )["x"]
            low, high = b.low, b.high
        else:
            low, high = _analytic(x, h, cell.method, cell.interval)
        hit = _hit(low, high, target)
        if hit is not None:
            hits += hit
            defined += 1
            assert low is not None and high is not None
            widths += high - low
    return cell, hits, defined, widths / max(defined, 1)


def cells(args: argparse.Namespace) -> list[Cell]:
    analytic = {
        "pearson": ["fisher"],
        "spearman": ["fieller", "bonett-wright"],
        "kendall": ["fieller", "fieller-ties"],
    }
    out: list[Cell] = []
    if "single" in args.only:
        for n in SIZES:
            for rho in RHOS:
                for method, intervals in analytic.items():
                    out += [Cell("single", n, rho, method, i, args.replicates) for i in intervals]
                    out.append(Cell("single", n, rho, method, "bca", args.boot_replicates))
                    if method == "pearson":
                        out.append(Cell("single", n, rho, method, "bca-plain", args.boot_replicates))
                    elif args.match and "expanded" in args.match:
                        out.append(Cell("single", n, rho, method, "bca-expanded", args.boot_replicates))
                    out.append(Cell("single", n, rho, method, "jack-t", args.replicates))
    if "pooled" in args.only:
        n = 2 * POOLED_QUESTIONS
        for rho in RHOS:
            for method, intervals in analytic.items():
                # What a report would show taking the 2q outputs for independent items, then what it shows.
                out += [Cell("pooled", n, rho, method, i, args.replicates) for i in intervals[-1:]]
                out.append(Cell("pooled", n, rho, method, "bca", args.boot_replicates))
                out.append(Cell("pooled", n, rho, method, "bca-by-question", args.boot_replicates))
                out.append(Cell("pooled", n, rho, method, "pct-by-question", args.boot_replicates))
                out.append(Cell("pooled", n, rho, method, "jack-t-by-q", args.replicates))
    if "differences" in args.only:
        for n in SIZES:
            for method in ("pearson", "spearman", "kendall"):
                out.append(Cell("differences", n, 0.0, method, "zou", args.replicates))
                out.append(Cell("differences", n, 0.0, method, "bca", args.boot_replicates))
                out.append(Cell("differences", n, 0.0, method, "percentile", args.boot_replicates))
                out.append(Cell("differences", n, 0.0, method, "jack-t", args.replicates))
                out.append(Cell("differences", n, 0.0, method, "zou-jack", args.replicates))
        for method in ("pearson", "spearman", "kendall"):
            n = 2 * POOLED_QUESTIONS
            out.append(Cell("differences-pooled", n, 0.0, method, "bca-by-question", args.boot_replicates))
            out.append(Cell("differences-pooled", n, 0.0, method, "jack-t-by-q", args.replicates))
            out.append(Cell("differences-pooled", n, 0.0, method, "zou-jack-by-q", args.replicates))
    if "passfail" in args.only:
        for n in SIZES:
            for rho in RHOS:
                out.append(Cell("passfail", n, rho, "auc", "delong-logit", args.replicates))
                out.append(Cell("passfail", n, rho, "auc", "delong-plain", args.replicates))
                out.append(Cell("passfail", n, rho, "auc", "bca-item", args.boot_replicates))
                out += [Cell("passfail", n, rho, f, "held-out", args.replicates) for f in HELD_OUT]
        for rho in RHOS:
            n = 2 * POOLED_QUESTIONS
            out.append(Cell("passfail-pooled", n, rho, "auc", "bca-by-question", args.boot_replicates))
            out += [Cell("passfail-pooled", n, rho, f, "held-out-by-q", args.replicates) for f in HELD_OUT]
    return out


HELD_OUT = stats.HELD_OUT_FIGURES


def _fmt(cell: Cell, hits: int, defined: int, width: float) -> str:
    p = hits / defined if defined else float("nan")
    se = math.sqrt(p * (1 - p) / defined) if defined else float("nan")
    flag = "" if BAND[0] <= p <= BAND[1] else ("  LOW" if p < BAND[0] else "  HIGH")
    undefined = cell.replicates - defined
    extra = f"  ({undefined} undefined)" if undefined else ""
    rho = "" if cell.scenario.startswith("differences") else f"{cell.rho:>4.1f}"
    return (
        f"{cell.scenario:<16}{cell.n:>5}{rho:>6}  {cell.method:<9}{cell.interval:<16}{defined:>6}"
        f"{p:>9.3f} ± {se:.3f}{width:>8.3f}{flag}{extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replicates", type=int, default=1000, help="data sets per analytic cell")
    parser.add_argument("--boot-replicates", type=int, default=300, help="data sets per bootstrap cell")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (the report's)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--only", default="single,pooled,differences,passfail")
    parser.add_argument(
        "--match",
        default="",
        help="only cells whose scenario/coef/interval contains one of these (comma list)",
    )
    args = parser.parse_args()
    args.only = set(args.only.split(","))
    start = time.perf_counter()
    todo = cells(args)
    if args.match:
        wanted = args.match.split(",")
        todo = [c for c in todo if any(w in f"{c.scenario}/{c.method}/{c.interval}" for w in wanted)]
    # Truths first, in this process, so that workers inherit none of the work twice.
    for cell in todo:
        if cell.scenario.startswith("passfail"):
            truth_pass_fail(cell.rho)
        elif cell.scenario.startswith("differences"):
            truth_difference(cell.method)
        else:
            truth(cell.rho, cell.method)
    print(f"numpy {np.__version__}, scipy {scipy.__version__}")
    print(
        f"coverage of 95% intervals; ± is the Monte Carlo SE; band {BAND[0]:.3f}-{BAND[1]:.3f}; "
        f"bootstrap: {args.resamples} resamples"
    )
    print(
        f"{'scenario':<16}{'n':>5}{'rho':>6}  {'coef':<9}{'interval':<16}{'reps':>6}{'coverage':>9}"
        f"{'':8}{'width':>8}"
    )
    if args.workers > 1:
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            for result in pool.map(run_cell, todo, [args.resamples] * len(todo)):
                print(_fmt(*result), flush=True)
    else:
        for cell in todo:
            print(_fmt(*run_cell(cell, args.resamples)), flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
