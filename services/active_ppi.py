"""Active sampling of the outputs to rate, and the prediction-powered estimate that uses its inclusion
probabilities (active PPI: Zrnic & Candès 2024, "Active statistical inference", ICML).

Pure functions over numpy arrays (no database, no HTTP), like ``services.ppi``.

The design (sequential Poisson sampling on a seeded stream). The run's M outputs are put in a random order
fixed by the task's seed. When a rater needs an item and none is open, the next outputs of the stream are
decided in turn: output t is included with probability

    pi_t = clip((budget / M) * u_t / mean(u), pi_min, 1),   mean(u) over all M outputs,

where u_t is the output's uncertainty (the predicted SD of the human score given the metric, from
``fit_uncertainty`` on the ratings so far) and pi_min = floor * budget / M, a fraction of the uniform rate.
pi_t is recorded when it is drawn; it depends on the past only (the fit in use), never on the
output's own rating, which is what the estimator needs. Outputs not included are recorded too (decided,
pi_t kept), so that the stream can be replayed. Before ``MIN_FIT`` ratings exist, u = 1: pi = budget / M,
uniform (Poisson) sampling. The budget is the expected number of ratings over the whole stream, not a cap.

The estimator. With rated outputs i in R (human score y_i, metric f_i, weight w_i = 1/pi_i) and the metric
on all M outputs,

    theta = lambda' * mean_all(f) + sum_R w_i (y_i - lambda' f_i) / sum_R w_i,
    lambda' = Cov_w(y, f) / Var_all(f),

Cov_w the w-weighted covariance over R (ddof 0), Var_all the metric's variance over all M outputs (ddof 1):
the regression (difference) estimator with Hajek weights. With equal pi (uniform sampling) the weights
cancel, and theta is exactly services.ppi's PPI++ estimate lambda f_unrated + mean(y - lambda f_rated):
writing mean_all(f) in rated and unrated parts gives lambda = lambda' / (1 + n/N), PPI++'s tuned lambda.
The outputs not yet decided count as unrated: the decided prefix of a random order is a uniform random
subset of the run's outputs, so the weighted mean over it estimates the mean over all.

The interval: theta +- t(n - 1) SE_J with the same two-sample delete-one jackknife as services.ppi (each rated
output left out in turn, the others keeping their weights, then each unrated output, lambda' re-tuned each
time). It is the weighted (JK1) jackknife of a with-replacement PPS design; it ignores the finite-population
correction of Poisson sampling, so it errs wide. With equal pi it is services.ppi's SE exactly, so the uniform
interval is the special case. Coverage on the tied 1-5 data of bench/ppi.py: bench/active_rating.py.

Assumptions: the probabilities are the ones the outputs were drawn with (ratings gathered outside the
policy, imported or from other tasks, have no recorded pi and are not used); an output drawn but never rated
(skipped, flagged, a rater who left) counts as not rated, which is valid only if why it went unrated does not
depend on its score (said on the estimate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.ppi import MIN_RATED, MeanInterval

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

MIN_FIT = 10  # ratings before the uncertainty model replaces the uniform score
MIN_CORR = 4  # rated outputs the correlation's jackknife interval needs
RESIDUAL_FLOOR = 0.1  # the predicted residual variance is at least this share of the mean one


@dataclass(frozen=True)
class UncertaintyFit:
    """Human score ~ a + b * metric (least squares), and its squared residual ~ c0 + c1 f + c2 f^2: the
    predicted residual variance at metric value f, floored at ``floor``. ``n``: the ratings it was fitted on.
    ``uniform``: too few ratings (or a constant metric) to fit; every output has the same score."""

    n: int
    a: float = 0.0
    b: float = 0.0
    c0: float = 1.0
    c1: float = 0.0
    c2: float = 0.0
    floor: float = 1.0
    uniform: bool = True

    def score(self, f: ArrayLike) -> FloatArray:
        """The uncertainty u of outputs with metric values f: the predicted SD of the residual."""
        x = np.asarray(f, dtype=np.float64)
        if self.uniform:
            return np.ones_like(x)
        var = self.c0 + self.c1 * x + self.c2 * x * x
        return np.asarray(np.sqrt(np.maximum(var, self.floor)), dtype=np.float64)

    def as_dict(self) -> dict[str, float | int | bool]:
        return {
            "n": self.n,
            "a": self.a,
            "b": self.b,
            "c0": self.c0,
            "c1": self.c1,
            "c2": self.c2,
            "floor": self.floor,
            "uniform": self.uniform,
        }


def fit_uncertainty(y: ArrayLike, f: ArrayLike) -> UncertaintyFit:
    """The uncertainty model from the ratings so far (unweighted: any fit that uses only past ratings keeps
    the estimator valid; a better one only makes it narrower). Uniform below ``MIN_FIT`` ratings or when the
    metric takes fewer than 3 values among them."""
    yy = np.asarray(y, dtype=np.float64)
    ff = np.asarray(f, dtype=np.float64)
    n = int(yy.size)
    if n < MIN_FIT or np.unique(ff).size < 3:
        return UncertaintyFit(n=n)
    b, a = np.polyfit(ff, yy, 1)
    e2 = (yy - a - b * ff) ** 2
    mean_e2 = float(e2.mean())
    if mean_e2 <= 0.0:
        return UncertaintyFit(n=n)
    c2, c1, c0 = np.polyfit(ff, e2, 2)
    k = shrinkage(e2, c0 + c1 * ff + c2 * ff * ff)
    c0, c1, c2 = k * c0 + (1 - k) * mean_e2, k * c1, k * c2
    return UncertaintyFit(
        n=n,
        a=float(a),
        b=float(b),
        c0=float(c0),
        c1=float(c1),
        c2=float(c2),
        floor=RESIDUAL_FLOOR * mean_e2,
        uniform=False,
    )


def shrinkage(e2: FloatArray, fitted: FloatArray) -> float:
    """How far to trust the fitted residual variance over a constant one: max(0, 1 - 1/F), F the
    regression's F statistic on (2, n - 3) degrees of freedom (a James-Stein-like factor). Under a constant
    residual variance F is about 1 and the policy stays near uniform, where noisy weights would only widen the
    interval; a clear pattern (F large) is followed."""
    n = e2.size
    ss_tot = float(((e2 - e2.mean()) ** 2).sum())
    ss_res = float(((e2 - fitted) ** 2).sum())
    if ss_tot <= 0.0 or n <= 3:
        return 0.0
    r2 = max(0.0, 1.0 - ss_res / ss_tot)
    if r2 >= 1.0:
        return 1.0
    f_stat = (r2 / 2.0) / ((1.0 - r2) / (n - 3))
    return 0.0 if f_stat <= 1.0 else 1.0 - 1.0 / f_stat


def pi_min(budget: float, total: int, floor: float) -> float:
    """The least inclusion probability: ``floor`` times the uniform rate budget / total (at most 1)."""
    return min(1.0, floor * budget / total)


def inclusion_probability(u: float, u_mean: float, budget: float, total: int, least: float) -> float:
    """pi of an output of uncertainty u: the uniform rate budget / total scaled by u / u_mean (``u_mean``:
    the mean of u over all the run's outputs, so that the pi sum to about the budget), clipped to
    [least, 1]. A constant u gives every output budget / total: uniform sampling."""
    if u_mean <= 0.0:
        return min(1.0, budget / total)
    return float(min(1.0, max(least, budget / total * u / u_mean)))


def stream_order(total: int, seed: int) -> list[int]:
    """The order in which a task's outputs (indices 0..total-1) are decided, fixed by the task's seed."""
    return [int(i) for i in np.random.default_rng(seed).permutation(total)]


def draw_stream(
    rng: np.random.Generator,
    y: FloatArray,
    f: FloatArray,
    budget: float,
    floor: float,
    refit_every: int,
) -> tuple[BoolArray, FloatArray]:
    """Simulate the policy on one run (the bench's path; the service decides the same way one output at a
    time): the outputs in the order given (already random), each included with ``inclusion_probability``,
    the fit refreshed every ``refit_every`` ratings. Returns (rated, pi), pi recorded for every output."""
    total = y.size
    least = pi_min(budget, total, floor)
    rated = np.zeros(total, dtype=np.bool_)
    pis = np.zeros(total, dtype=np.float64)
    u = np.ones(total)
    u_mean = 1.0
    n_rated, last_fit = 0, 0
    for t in range(total):
        pi = inclusion_probability(float(u[t]), u_mean, budget, total, least)
        pis[t] = pi
        if rng.random() < pi:
            rated[t] = True
            n_rated += 1
            if n_rated - last_fit >= refit_every and t + 1 < total:
                u = fit_uncertainty(y[rated], f[rated]).score(f)
                u_mean = float(u.mean())
                last_fit = n_rated
    return rated, pis


@dataclass(frozen=True)
class ActiveIntervals:
    """``active_intervals`` of R runs at once (arrays of length R)."""

    estimate: FloatArray
    se: FloatArray
    ci_low: FloatArray
    ci_high: FloatArray
    lam: FloatArray  # lambda' (the slope); PPI++'s lambda is lambda' / (1 + n/N)
    n_rated: NDArray[np.int64]


def _slope(c: FloatArray, s1: FloatArray, s2: FloatArray, m: int | FloatArray, tiny: bool) -> FloatArray:
    var_f = (s2 - s1 * s1 / m) / (m - 1)
    ok = var_f > (1e-12 * np.maximum(s2 / m, 1e-300) if tiny else 0.0)
    return np.asarray(np.where(ok, c / np.where(ok, var_f, 1.0), 0.0), dtype=np.float64)


def active_intervals(
    y: FloatArray, f: FloatArray, rated: BoolArray, pi: FloatArray, *, confidence: float = 0.95
) -> ActiveIntervals:
    """The active PPI estimate and interval of every row of (R, M) arrays: human scores y (read only where
    ``rated``), the metric f on all M outputs, and each output's inclusion probability pi (read only where
    rated). Every row needs at least ``MIN_RATED`` rated outputs and one unrated. No other input checks:
    ``active_mean`` makes them."""
    from scipy import stats as sps

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    m_all = f.shape[1]
    r = rated.astype(np.float64)
    w = np.where(rated, 1.0 / np.where(rated, pi, 1.0), 0.0)
    n = r.sum(axis=1)
    big_n = m_all - n
    # theta and lambda' do not change when f is shifted, nor theta - c when y is shifted by c: centre both.
    f = f - f.mean(axis=1, keepdims=True)
    big_w = w.sum(axis=1)
    y = np.where(rated, y, 0.0)
    y_bar = (w * y).sum(axis=1) / big_w
    y = np.where(rated, y - y_bar[:, None], 0.0)
    sy, sf, syf = (w * y).sum(axis=1), (w * f).sum(axis=1), (w * y * f).sum(axis=1)
    s1, s2 = f.sum(axis=1), (f * f).sum(axis=1)
    c = syf / big_w - sy * sf / (big_w * big_w)
    lam = _slope(c, s1, s2, m_all, tiny=False)
    theta = lam * s1 / m_all + (sy - lam * sf) / big_w
    # Each rated output left out: its weight and its metric value leave every sum.
    wi = big_w[:, None] - w
    wi_safe = np.where(rated, wi, 1.0)
    sy_i, sf_i, syf_i = sy[:, None] - w * y, sf[:, None] - w * f, syf[:, None] - w * y * f
    c_i = syf_i / wi_safe - sy_i * sf_i / (wi_safe * wi_safe)
    s1_i, s2_i = s1[:, None] - f, s2[:, None] - f * f
    lam_i = _slope(c_i, s1_i, s2_i, m_all - 1, tiny=True)
    theta_i = lam_i * s1_i / (m_all - 1) + (sy_i - lam_i * sf_i) / wi_safe
    mean_i = np.where(rated, theta_i, 0.0).sum(axis=1) / n
    var = (n - 1) / n * np.where(rated, (theta_i - mean_i[:, None]) ** 2, 0.0).sum(axis=1)
    # Each unrated output left out: the weighted sums stay, the metric's do not.
    lam_j = _slope(c[:, None], s1_i, s2_i, m_all - 1, tiny=True)
    theta_j = lam_j * s1_i / (m_all - 1) + (sy[:, None] - lam_j * sf[:, None]) / big_w[:, None]
    unrated = ~rated
    n_u = np.maximum(big_n, 1.0)
    mean_j = np.where(unrated, theta_j, 0.0).sum(axis=1) / n_u
    var_j = (big_n - 1) / n_u * np.where(unrated, (theta_j - mean_j[:, None]) ** 2, 0.0).sum(axis=1)
    # One unrated output cannot be left out: lambda'-scaled variance of the metric, as services.ppi does.
    lam_ppi = lam / (1.0 + n / n_u)
    one = lam_ppi * lam_ppi * (s2 - s1 * s1 / m_all) / (m_all - 1)
    var = var + np.where(big_n > 1, var_j, one)
    se = np.sqrt(var)
    q = sps.t.ppf(0.5 + confidence / 2.0, n - 1)
    half = q * se
    est = theta + y_bar  # y was centred on its weighted mean
    return ActiveIntervals(est, se, est - half, est + half, lam, n.astype(np.int64))


def active_mean(
    y_rated: ArrayLike,
    f_rated: ArrayLike,
    pi_rated: ArrayLike,
    f_unrated: ArrayLike,
    *,
    confidence: float = 0.95,
) -> MeanInterval:
    """Active PPI estimate of the mean human score: rated outputs with their inclusion probabilities, and
    the metric on every other output of the run (decided or not). ``lam`` of the result is PPI++'s lambda
    (lambda' / (1 + n/N)), comparable with ``services.ppi.ppi_mean``'s. Raises ValueError on missing values,
    mismatched lengths, a probability outside (0, 1], fewer than 3 rated or no unrated output."""
    y = np.asarray(y_rated, dtype=np.float64)
    f = np.asarray(f_rated, dtype=np.float64)
    p = np.asarray(pi_rated, dtype=np.float64)
    fu = np.asarray(f_unrated, dtype=np.float64)
    for name, arr in (("y_rated", y), ("f_rated", f), ("pi_rated", p), ("f_unrated", fu)):
        if arr.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} has missing values")
    if not y.size == f.size == p.size:
        raise ValueError(f"{y.size} ratings, {f.size} metric values and {p.size} probabilities")
    if y.size < MIN_RATED:
        raise ValueError(f"need at least {MIN_RATED} rated outputs, got {y.size}")
    if fu.size < 1:
        raise ValueError("need at least one unrated output")
    if ((p <= 0.0) | (p > 1.0)).any():
        raise ValueError("inclusion probabilities must be in (0, 1]")
    n, big_n = y.size, fu.size
    rated = np.concatenate([np.ones(n, dtype=np.bool_), np.zeros(big_n, dtype=np.bool_)])[None, :]
    r = active_intervals(
        np.concatenate([y, np.zeros(big_n)])[None, :],
        np.concatenate([f, fu])[None, :],
        rated,
        np.concatenate([p, np.ones(big_n)])[None, :],
        confidence=confidence,
    )
    return MeanInterval(
        float(r.estimate[0]),
        float(r.se[0]),
        float(r.ci_low[0]),
        float(r.ci_high[0]),
        n,
        big_n,
        confidence,
        float(r.lam[0]) / (1.0 + n / big_n),
        float(n - 1),
    )


def uniform_width(
    n: int, total: int, y: ArrayLike, f: ArrayLike, w: ArrayLike, f_all: ArrayLike, confidence: float
) -> float:
    """The width services.ppi's uniform interval would have with ``n`` outputs of ``total`` rated at random,
    projected from the weighted moments of the ratings in hand (``services.ppi.projected_width``, the plug-in
    variance): what the same number of ratings would give without the policy."""
    from services.ppi import projected_width

    yy, ff, ww = (np.asarray(v, dtype=np.float64) for v in (y, f, w))
    ww = ww / ww.sum()
    my, mf = float((ww * yy).sum()), float((ww * ff).sum())
    var_y = float((ww * (yy - my) ** 2).sum()) * yy.size / max(yy.size - 1, 1)
    cov = float((ww * (yy - my) * (ff - mf)).sum())
    var_fr = float((ww * (ff - mf) ** 2).sum())
    var_f = float(np.var(np.asarray(f_all, dtype=np.float64), ddof=1))
    return projected_width(n, total, var_y, var_f, cov, confidence, var_f_rated=var_fr)


def _t(confidence: float, df: float) -> float:
    from scipy import stats as sps

    return float(sps.t.ppf(0.5 + confidence / 2.0, df))


def width_after(n_more: int, current: MeanInterval) -> float:
    """The interval's width after ``n_more`` further ratings drawn the same way, if the SE falls as
    1/sqrt(n) (the projection the stopping rule shows)."""
    n = current.n_rated
    return 2 * _t(current.confidence, n + n_more - 1) * current.se * math.sqrt(n / (n + n_more))


@dataclass(frozen=True)
class ActiveCorrelations:
    """``active_correlations`` of R runs at once (arrays of length R; nan where undefined)."""

    estimate: FloatArray
    se_z: FloatArray  # jackknife SE of atanh r
    ci_low: FloatArray
    ci_high: FloatArray
    n_rated: NDArray[np.int64]


def _weighted_r(
    big_w: FloatArray, sy: FloatArray, sf: FloatArray, syy: FloatArray, sff: FloatArray, syf: FloatArray
) -> FloatArray:
    """Pearson r from weighted sums (weights, w y, w f, w y^2, w f^2, w y f): the Hajek moments' ratio."""
    my, mf = sy / big_w, sf / big_w
    cov = syf / big_w - my * mf
    vy = syy / big_w - my * my
    vf = sff / big_w - mf * mf
    ok = (vy > 0.0) & (vf > 0.0)
    den = np.sqrt(np.where(ok, vy * vf, 1.0))
    return np.asarray(np.where(ok, np.clip(cov / den, -1.0, 1.0), np.nan), dtype=np.float64)


def active_correlations(
    y: FloatArray, f: FloatArray, rated: BoolArray, pi: FloatArray, *, confidence: float = 0.95
) -> ActiveCorrelations:
    """The inclusion-probability weighted Pearson correlation of metric and human score, and its interval,
    for every row of (R, M) arrays (as ``active_intervals``). Every moment is a Hajek (1/pi weighted) moment
    over the rated outputs, so equal probabilities give Pearson's r of the rated outputs exactly. Interval:
    tanh(atanh r -+ t(n - 1) SE_J), SE_J the delete-one jackknife SE of atanh r over the rated outputs (each
    left out with its weight). Undefined (nan) below 4 rated outputs, with a constant score among them, or
    when r or a leave-one-out r is +-1."""
    from scipy import stats as sps

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    w = np.where(rated, 1.0 / np.where(rated, pi, 1.0), 0.0)
    n = rated.sum(axis=1)
    big_w = w.sum(axis=1)
    safe_w = np.where(big_w > 0, big_w, 1.0)
    # r does not change when y or f is shifted: centre both on their weighted means (less cancellation).
    y = np.where(rated, y - ((w * np.where(rated, y, 0.0)).sum(axis=1) / safe_w)[:, None], 0.0)
    f = np.where(rated, f - ((w * np.where(rated, f, 0.0)).sum(axis=1) / safe_w)[:, None], 0.0)
    sums = [(w * v).sum(axis=1) for v in (y, f, y * y, f * f, y * f)]
    r = _weighted_r(safe_w, *sums)
    wi = np.where(rated, big_w[:, None] - w, 1.0)
    left = _weighted_r(
        wi, *(s[:, None] - w * v for s, v in zip(sums, (y, f, y * y, f * f, y * f), strict=True))
    )
    left_ok = np.isfinite(left) & (np.abs(np.nan_to_num(left)) < 1.0)
    z_i = np.arctanh(np.where(rated & left_ok, left, 0.0))
    ok = (n >= MIN_CORR) & np.isfinite(r) & (np.abs(np.nan_to_num(r)) < 1.0)
    ok &= np.where(rated, left_ok, True).all(axis=1)
    nn = np.maximum(n, 1).astype(np.float64)
    z_bar = np.where(rated, z_i, 0.0).sum(axis=1) / nn
    var = (nn - 1) / nn * np.where(rated, (z_i - z_bar[:, None]) ** 2, 0.0).sum(axis=1)
    se = np.sqrt(var)
    ok &= se > 0.0
    q = sps.t.ppf(0.5 + confidence / 2.0, np.maximum(nn - 1, 1))
    z = np.arctanh(np.where(ok, r, 0.0))
    nan = np.full(r.shape, np.nan)
    return ActiveCorrelations(
        np.where(ok, r, nan),
        np.where(ok, se, nan),
        np.where(ok, np.tanh(z - q * se), nan),
        np.where(ok, np.tanh(z + q * se), nan),
        n.astype(np.int64),
    )


@dataclass(frozen=True)
class CorrelationInterval:
    estimate: float
    se_z: float
    ci_low: float
    ci_high: float
    n_rated: int
    confidence: float

    @property
    def width(self) -> float:
        return self.ci_high - self.ci_low


def active_correlation(
    y_rated: ArrayLike, f_rated: ArrayLike, pi_rated: ArrayLike, *, confidence: float = 0.95
) -> CorrelationInterval | str:
    """The weighted Pearson r of the rated outputs' metric and human score with its jackknife interval on
    Fisher's z (``active_correlations``), or why it is undefined. Raises ValueError on malformed input."""
    y = np.asarray(y_rated, dtype=np.float64)
    f = np.asarray(f_rated, dtype=np.float64)
    p = np.asarray(pi_rated, dtype=np.float64)
    for name, arr in (("y_rated", y), ("f_rated", f), ("pi_rated", p)):
        if arr.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} has missing values")
    if not y.size == f.size == p.size:
        raise ValueError(f"{y.size} ratings, {f.size} metric values and {p.size} probabilities")
    if ((p <= 0.0) | (p > 1.0)).any():
        raise ValueError("inclusion probabilities must be in (0, 1]")
    if y.size < MIN_CORR:
        return f"{y.size} rated output(s); the correlation needs at least {MIN_CORR}"
    if np.ptp(y) == 0.0 or np.ptp(f) == 0.0:
        return "the human score or the metric is constant on the rated outputs"
    res = active_correlations(
        y[None, :], f[None, :], np.ones((1, y.size), dtype=np.bool_), p[None, :], confidence=confidence
    )
    if not np.isfinite(res.estimate[0]):
        return (
            "a perfect correlation (|r| = 1, also leaving one rated output out) has no interval on Fisher's z"
        )
    return CorrelationInterval(
        float(res.estimate[0]),
        float(res.se_z[0]),
        float(res.ci_low[0]),
        float(res.ci_high[0]),
        int(y.size),
        confidence,
    )


def fisher_width(r: float, n: int, confidence: float) -> float | None:
    """The width of the Fisher interval tanh(atanh r -+ z SE), SE = 1 / sqrt(n - 3), of Pearson's r from n
    outputs rated uniformly at random (docs/statistics.md section 1): the uniform design's projection."""
    from scipy import stats as sps

    if n <= 3 or not abs(r) < 1.0:
        return None
    q = float(sps.norm.ppf(0.5 + confidence / 2.0))
    z, se = math.atanh(r), 1.0 / math.sqrt(n - 3)
    return math.tanh(z + q * se) - math.tanh(z - q * se)
