"""services.stats.interrater.icc_results against pingouin's intraclass_corr, the oracle: the six ICCs, their
F statistics, degrees of freedom and p-values on many random raters x items matrices (integer ratings with
ties, continuous ratings, perfect agreement, a constant rater, raters whose names sort in another order than
they are given)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pingouin
import pytest

from services.stats.interrater import icc_results

KINDS = ("ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)", "ICC(C,k)")


def pingouin_table(data: np.ndarray, names: list[str]) -> dict[str, tuple[float, float, int, int, float]]:
    """pingouin's ICC, F, df1, df2 and p-value of a raters x items matrix, by ICC name."""
    k, n = data.shape
    frame = pd.DataFrame(
        {
            "item": np.tile(np.arange(n), k),
            "rater": np.repeat(np.asarray(names, dtype=object), n),
            "score": data.ravel(),
        }
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        table = pingouin.intraclass_corr(frame, targets="item", raters="rater", ratings="score")
    return {
        str(row.Type): (float(row.ICC), float(row.F), int(row.df1), int(row.df2), float(row.pval))
        for row in table.itertuples(index=False)
    }


def same(ours: float | None, theirs: float) -> bool:
    """Equal within 1e-12 relative, a non-finite pingouin figure being None here."""
    if not math.isfinite(theirs):
        return ours is None
    return ours is not None and ours == pytest.approx(theirs, rel=1e-12, abs=0.0)


def matrices(seed: int, count: int) -> list[tuple[str, np.ndarray, list[str]]]:
    rng = np.random.default_rng(seed)
    out: list[tuple[str, np.ndarray, list[str]]] = []
    for i in range(count):
        k = int(rng.integers(2, 7))
        n = int(rng.integers(3, 501)) if i % 4 else int(rng.integers(3, 12))
        case = ("integer", "continuous", "perfect", "constant rater", "0-1 judge")[i % 5]
        if case == "integer":
            data = rng.integers(1, 6, size=(k, n)).astype(np.float64)
        elif case == "continuous":
            data = rng.normal(rng.uniform(-5, 5), rng.uniform(0.1, 10), size=(k, n))
        elif case == "perfect":
            data = np.vstack([rng.integers(1, 6, size=n).astype(np.float64)] * k)
        elif case == "constant rater":
            data = rng.integers(1, 6, size=(k, n)).astype(np.float64)
            data[rng.integers(k)] = float(rng.integers(1, 6))
        else:
            truth = rng.normal(size=n)
            data = np.clip(0.5 + 0.15 * (truth + rng.normal(scale=0.5, size=(k, n))), 0, 1)
        if float(np.ptp(data)) == 0.0:  # no ICC at all: covered below
            continue
        # Names given out of order: pingouin sorts raters by name, so the sums run in that order.
        names = [f"r{j}" for j in rng.permutation(k)] if i % 2 else list("zyxwvu"[:k])
        out.append((case, data, names))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_icc_f_df_and_p_are_pingouins(seed: int) -> None:
    cases = matrices(seed, 80)
    kinds = {case for case, _, _ in cases}
    assert kinds == {"integer", "continuous", "perfect", "constant rater", "0-1 judge"}
    for case, data, names in cases:
        ours, reason = icc_results(data, names)
        assert reason is None
        assert tuple(ours) == KINDS
        for kind, (icc, f_value, df1, df2, p_value) in pingouin_table(data, names).items():
            got = ours[kind]
            where = f"{case} {data.shape} {kind}"
            assert same(got.estimate, icc), (where, got.estimate, icc)
            assert same(got.f_statistic, f_value), (where, got.f_statistic, f_value)
            assert (got.df1, got.df2) == (df1, df2), where
            assert same(got.p_value, p_value), (where, got.p_value, p_value)


def test_eleven_raters_or_more_sum_in_pingouins_name_order() -> None:
    # "r10" sorts before "r2": the rater means enter the sums in that order.
    rng = np.random.default_rng(7)
    data = rng.normal(size=(12, 300))
    names = [f"r{j}" for j in range(12)]
    ours, _ = icc_results(data, names)
    for kind, (icc, f_value, _, _, p_value) in pingouin_table(data, names).items():
        assert same(ours[kind].estimate, icc) and same(ours[kind].f_statistic, f_value), kind
        assert same(ours[kind].p_value, p_value), kind


def test_perfect_agreement_has_icc_one_infinite_f_and_p_zero() -> None:
    row = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 2.0])
    ours, reason = icc_results(np.vstack([row, row, row]), ["a", "b", "c"])
    assert reason is None
    for kind in KINDS:
        assert ours[kind].estimate == 1.0, kind
        assert ours[kind].f_statistic is None, kind  # F = inf
        assert ours[kind].p_value == 0.0, kind


def test_constant_raters_leave_the_consistency_iccs_undefined_as_pingouin_does() -> None:
    data = np.vstack([np.full(20, 1.0), np.full(20, 3.0)])
    ours, reason = icc_results(data, ["a", "b"])
    assert reason is None
    ref = pingouin_table(data, ["a", "b"])
    assert ours["ICC(C,1)"].estimate is None and not math.isfinite(ref["ICC(C,1)"][0])
    for kind in KINDS:
        assert same(ours[kind].estimate, ref[kind][0]), kind
        assert same(ours[kind].f_statistic, ref[kind][1]), kind
        assert same(ours[kind].p_value, ref[kind][4]), kind


def test_too_few_items_or_one_value_give_a_reason_and_no_icc() -> None:
    assert icc_results(np.array([[1.0, 2.0], [2.0, 3.0]]), ["a", "b"]) == (
        {},
        "fewer than 3 items rated by every rater (n = 2)",
    )
    assert icc_results(np.full((3, 10), 4.0), ["a", "b", "c"]) == ({}, "every rating has the same value")
