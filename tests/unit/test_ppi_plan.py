"""The ratings plan agrees with the interval printed beside it: it never says a width is reached that the
reported interval does not have."""

from __future__ import annotations

import numpy as np

from services import ppi

# Ten 1-5 ratings and a metric on 40 outputs (seed 0, trial 8 of a search over metric-like data): the
# plug-in projection at today's 10 ratings is under 0.5 wide, the reported (jackknife) interval 1.65.
Y = np.array([3, 4, 2, 1, 2, 5, 1, 5, 2, 3], dtype=float)
F = np.array(
    [
        *(0.2, 0.94, 0.09, 0.0, 0.32, 0.99, 0.26, 0.83, 0.17, 0.59, 0.96, 0.72, 0.98, 0.57, 0.98, 0.84),
        *(0.78, 0.89, 0.63, 0.36, 0.53, 0.23, 0.78, 0.17, 0.58, 0.54, 0.67, 0.76, 0.11, 0.62, 0.41, 0.61),
        *(0.69, 0.59, 0.73, 0.52, 0.46, 0.29, 0.23, 0.7),
    ]
)


def test_the_plan_starts_from_the_reported_interval() -> None:
    fr, fu = F[:10], F[10:]
    res = ppi.ppi_mean(Y, fr, fu)
    assert res.width > 1.6
    plan = ppi.plan_width(Y, fr, fu, 0.5, current_width=res.width)
    # not "already reached": more ratings are needed, or the width is out of reach on this run
    assert plan.n_rated_needed is None or plan.n_rated_needed > Y.size


def test_a_plan_never_says_reached_beside_a_wider_interval() -> None:
    rng = np.random.default_rng(1)
    for _ in range(300):
        f = np.round(rng.uniform(0, 1, 40), 2)
        y = np.clip(np.round(1 + 4 * f[:10] + rng.normal(0, 0.6, 10)), 1, 5)
        if np.std(y) == 0:
            continue
        res = ppi.ppi_mean(y, f[:10], f[10:])
        plan = ppi.plan_width(y, f[:10], f[10:], 0.5, current_width=res.width)
        assert (plan.n_rated_needed == y.size) == (res.width <= 0.5), (res.width, plan)


def test_the_projected_residual_variance_is_that_of_the_rated_pairs() -> None:
    # The metric spreads over the rated outputs and not over the others: taken over all outputs, its
    # variance is small, lambda large, and var(y - lambda f) came out a quarter of the rated pairs' own; the
    # projection at today's ratings was 3.8 wide beside a 12.7-wide interval.
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    f = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    fu = np.full(20, 0.5)
    var_f = float(np.var(np.concatenate([f, fu]), ddof=1))
    cov = float(np.cov(y, f, ddof=1)[0, 1])
    var_y = float(np.var(y, ddof=1))
    reported = ppi.ppi_mean(y, f, fu).width
    projected = ppi.projected_width(5, 25, var_y, var_f, cov, 0.95, float(np.var(f, ddof=1)))
    assert reported / 2 < projected < reported * 2, (projected, reported)
