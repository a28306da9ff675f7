"""Compiled resample kernels for services.stats (numba): one pass over the items per resample and metric.

The bootstrap statistics of services.stats are computed from per-item resample counts. In numpy, each rank
statistic needs about ten full passes over a (resamples x items) block per metric (gathers, cumulative sums,
products); these kernels do the same arithmetic in one pass with the block row in cache. Every sum is an
integer (or a multiple of 1/2) held exactly in int64 / float64, and the final floating-point operations are
those of the numpy kernels in services.stats, in the same order: the results are identical to the bit
(tests/unit/test_stats_kernels.py compares them).

Compiled on first use and cached on disk (``cache=True``: numba's cache directory, ``NUMBA_CACHE_DIR`` to
move it); ``warm_up()`` compiles or loads them ahead of the first report (report worker processes call it).
The kernels release the GIL.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

_jit = njit(cache=True, nogil=True, error_model="numpy")

# Resample rows are split between this many threads (the kernels release the GIL); at most 4.
THREADS = max(1, min(4, len(os.sched_getaffinity(0))))
_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        # A forked child inherits the executor object but not its threads: it gets its own.
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(THREADS, thread_name_prefix="stats-kernel"))
        return _pool[1]


def in_threads(kernel: Callable[..., None], counts: NDArray[np.int64], *args: Any) -> None:
    """``kernel(counts, *args)`` with its resample rows split between ``THREADS`` threads.

    The last argument is the output array (one row per resample row); every row is computed by the same
    code whichever thread runs it, so the result does not depend on the split.
    """
    rows = counts.shape[0]
    parts = min(THREADS, rows)
    if parts <= 1:
        kernel(counts, *args)
        return
    *inputs, out = args
    cuts = np.linspace(0, rows, parts + 1).astype(np.int64)
    futures = [
        _executor().submit(kernel, counts[a:b], *inputs, out[a:b])
        for a, b in itertools.pairwise(cuts)
        if b > a
    ]
    for future in futures:
        future.result()


@_jit
def _scan_singletons(
    c: NDArray[np.int64], order: NDArray[np.int64], passed_sorted: NDArray[np.int64], p_int: int, n_int: int
) -> tuple[int, int, float, int, int]:  # pragma: no cover - compiled
    """_scan_groups for a score without ties (one item per group), without the group bookkeeping."""
    p_tot = float(p_int)
    n_tot = float(n_int)
    inexact = p_int * n_int >= 2**40
    tp = 0
    fp = 0
    auc_twice = 0
    best_key = -(2**62)
    best_j = -np.inf
    best_g = -1
    tp_b = 0
    fp_b = 0
    for k in range(order.size - 1, -1, -1):
        w = c[order[k]]
        pos = w * passed_sorted[k]
        neg = w - pos
        tp += pos
        fp += neg
        auc_twice += pos * (2 * (n_int - fp) + neg)
        key = tp * n_int - fp * p_int
        if (w > 0) & ((key >= best_key) | inexact):
            best_key = key
            j = tp / p_tot - fp / n_tot
            if j > best_j:
                best_j = j
                best_g = k
                tp_b = tp
                fp_b = fp
    return auc_twice, best_g, best_j, tp_b, fp_b


@_jit
def _scan_groups(
    c: NDArray[np.int64],
    order: NDArray[np.int64],
    passed_sorted: NDArray[np.int64],
    opens: NDArray[np.bool_],
    group_of: NDArray[np.int64],
    p_int: int,
    n_int: int,
) -> tuple[int, int, float, int, int]:  # pragma: no cover - compiled
    """One resample's ROC, top down a tie group at a time: (twice the Mann-Whitney sum, Youden group,
    its J, tp and fp there). Predicting pass at or above group g gives tp, fp; the fails below are N - fp.

    Youden's J = tp/P - fp/N is compared as the integer tp N - fp P: a group whose integer is below the best
    one's so far is below it by at least 1/(P N), far more than the rounding of the float J (while P N <
    2**40), so only groups at the running integer maximum need the float J, which then decides exactly as
    the numpy kernel (strictly greater from the top: the highest threshold among equal float maxima).
    """
    p_tot = float(p_int)
    n_tot = float(n_int)
    inexact = p_int * n_int >= 2**40
    tp = 0
    fp = 0
    auc_twice = 0
    best_key = -(2**62)
    best_j = -np.inf
    best_g = -1
    tp_b = 0
    fp_b = 0
    pos = 0
    drawn_g = 0
    for k in range(order.size - 1, -1, -1):
        w = c[order[k]]
        pos += w * passed_sorted[k]
        drawn_g += w
        if opens[k]:
            neg = drawn_g - pos
            tp += pos
            fp += neg
            auc_twice += pos * (2 * (n_int - fp) + neg)
            key = tp * n_int - fp * p_int
            # One rarely taken branch (bitwise and): a group not drawn in this resample is no threshold.
            if (drawn_g > 0) & ((key >= best_key) | inexact):
                best_key = key
                j = tp / p_tot - fp / n_tot
                if j > best_j:
                    best_j = j
                    best_g = group_of[k]
                    tp_b = tp
                    fp_b = fp
            pos = 0
            drawn_g = 0
    return auc_twice, best_g, best_j, tp_b, fp_b


@_jit
def pass_fail_rows(
    counts: NDArray[np.int64],
    passed: NDArray[np.int64],
    order: NDArray[np.int64],
    bounds: NDArray[np.int64],
    values: NDArray[np.float64],
    out: NDArray[np.float64],
) -> None:  # pragma: no cover - compiled
    """Pass/fail figures of one metric per resample row (see services.stats._PassFailKernel.resample).

    ``order`` sorts the items by ascending score, ``bounds`` (G + 1) delimits its G tie groups, ``values``
    the groups' scores. ``out[r]`` = AUC, threshold, Youden's J, kappa, accuracy, precision, recall. Twice
    the Mann-Whitney sum is an integer: the numpy kernel's float sum of halves, exactly.
    """
    rows, n = counts.shape
    passed_sorted = np.empty(n, dtype=np.int64)
    group_of = np.empty(n, dtype=np.int64)  # tie group of each sorted position
    for g in range(bounds.size - 1):
        for k in range(bounds[g], bounds[g + 1]):
            passed_sorted[k] = passed[order[k]]
            group_of[k] = g
    opens = np.zeros(n, dtype=np.bool_)  # sorted position that starts a group (the last one seen top down)
    opens[bounds[:-1]] = True
    no_ties = bounds.size == n + 1
    for r in range(rows):
        c = counts[r]
        p_int = 0
        drawn = 0
        for i in range(n):
            p_int += c[i] * passed[i]
            drawn += c[i]
        n_int = drawn - p_int
        if p_int == 0 or n_int == 0:
            out[r, :] = np.nan
            continue
        if no_ties:
            auc_twice, best_g, best_j, tp_int, fp_int = _scan_singletons(
                c, order, passed_sorted, p_int, n_int
            )
        else:
            auc_twice, best_g, best_j, tp_int, fp_int = _scan_groups(
                c, order, passed_sorted, opens, group_of, p_int, n_int
            )
        p_tot = float(p_int)
        n_tot = float(n_int)
        tp_b = float(tp_int)
        fp_b = float(fp_int)
        fn_b = p_tot - tp_b
        tn_b = n_tot - fp_b
        total = p_tot + n_tot
        accuracy = (tp_b + tn_b) / total
        expected = ((tp_b + fp_b) * p_tot + (fn_b + tn_b) * n_tot) / (total * total)
        out[r, 0] = (0.5 * float(auc_twice)) / (p_tot * n_tot)
        out[r, 1] = values[best_g]
        out[r, 2] = best_j
        out[r, 3] = (accuracy - expected) / (1 - expected)
        out[r, 4] = accuracy
        out[r, 5] = tp_b / (tp_b + fp_b)
        out[r, 6] = tp_b / p_tot


@_jit
def _human_ranks(
    c: NDArray[np.int64], h_group: NDArray[np.int64], weights: NDArray[np.int64], ranks: NDArray[np.int64]
) -> tuple[int, int, int]:
    """Per tie group of the human score: resampled weight and doubled midrank; returns (items drawn,
    sum of w * (2 rank)^2, tied pairs)."""
    weights[:] = 0
    drawn = 0
    for i in range(c.size):
        weights[h_group[i]] += c[i]
        drawn += c[i]
    below = 0
    sq = 0
    ties = 0
    for g in range(weights.size):
        w = weights[g]
        rank = 2 * below + w + 1
        ranks[g] = rank
        sq += w * rank * rank
        ties += w * (w - 1) // 2
        below += w
    return drawn, sq, ties


@_jit
def spearman_rows(
    counts: NDArray[np.int64],
    h_group: NDArray[np.int64],
    n_h_groups: int,
    x_orders: NDArray[np.int64],
    x_last: NDArray[np.bool_],
    x_levels: NDArray[np.int64],
    out: NDArray[np.float64],
) -> None:  # pragma: no cover - compiled
    """Spearman's rho of M metrics with the human score per resample row (see _SpearmanKernel.resample).

    ``x_orders[m]`` sorts metric m ascending (stable); ``x_last[m, k]`` marks the last sorted position of
    each of its tie groups; ``x_levels[m, k]`` is the human tie group of that position's item. Doubled
    midranks keep every sum an exact integer.
    """
    rows, n = counts.shape
    n_metrics = x_orders.shape[0]
    weights = np.zeros(n_h_groups, dtype=np.int64)
    ranks = np.zeros(n_h_groups, dtype=np.int64)
    for r in range(rows):
        c = counts[r]
        drawn, h_sq, _ = _human_ranks(c, h_group, weights, ranks)
        centre = drawn * (drawn + 1) * (drawn + 1)
        vh = float(h_sq - centre)
        for m in range(n_metrics):
            order = x_orders[m]
            last = x_last[m]
            levels = x_levels[m]
            below = 0
            sxy = 0
            x_sq = 0
            w_group = 0
            s_group = 0
            for k in range(n):
                w = c[order[k]]
                w_group += w
                s_group += w * ranks[levels[k]]
                if last[k]:
                    rank = 2 * below + w_group + 1
                    sxy += rank * s_group
                    x_sq += w_group * rank * rank
                    below += w_group
                    w_group = 0
                    s_group = 0
            vx = float(x_sq - centre)
            out[r, m] = float(sxy - centre) / np.sqrt(vx * vh)


# Up to this many distinct human values, Kendall's kernel keeps the weight below each value in a plain
# prefix array (an O(1) query, an O(H) update per tie group); above it, a Fenwick tree (O(log H) each).
_KENDALL_PREFIX_MAX_LEVELS = 64


@_jit
def _concordance_prefix(
    c: NDArray[np.int64],
    order: NDArray[np.int64],
    last: NDArray[np.bool_],
    levels: NDArray[np.int64],
    n_levels: int,
    cum: NDArray[np.int64],
    group: NDArray[np.int64],
) -> tuple[int, int]:  # pragma: no cover - compiled
    """(concordant - discordant weight, pairs tied in x) of one metric on one resample, few human levels.

    ``cum[l]`` is the weight of the items in lower x groups whose human level is below l; ``group[l]`` the
    current x group's weight at level l, added to ``cum`` when the group ends.
    """
    cum[:] = 0
    group[:] = 0
    below = 0
    cmd = 0
    x_ties = 0
    w_group = 0
    singleton = True
    for k in range(order.size):
        w = c[order[k]]
        level = levels[k]
        # Lower human value among lower x: cum[level]; higher: below - cum[level + 1].
        cmd += w * (cum[level] + cum[level + 1] - below)
        if last[k]:
            if singleton:
                # A group of one item (every item of a score without ties): add it directly, over the
                # whole (short) array without a branch, which the compiler vectorises.
                for lv in range(1, n_levels + 1):
                    cum[lv] += w * (lv > level)
                below += w
                x_ties += w * (w - 1) // 2
            else:
                group[level] += w
                w_group += w
                running = 0
                for lv in range(n_levels):
                    running += group[lv]
                    group[lv] = 0
                    cum[lv + 1] += running
                below += w_group
                x_ties += w_group * (w_group - 1) // 2
                w_group = 0
            singleton = True
        else:
            group[level] += w
            w_group += w
            singleton = False
    return cmd, x_ties


@_jit
def _concordance_fenwick(
    c: NDArray[np.int64],
    order: NDArray[np.int64],
    last: NDArray[np.bool_],
    levels: NDArray[np.int64],
    n_levels: int,
    tree: NDArray[np.int64],
) -> tuple[int, int]:  # pragma: no cover - compiled
    """_concordance_prefix with a Fenwick tree over the human levels (many distinct human values)."""
    tree[:] = 0
    below = 0
    cmd = 0
    x_ties = 0
    w_group = 0
    first = 0
    for k in range(order.size):
        w = c[order[k]]
        if w:
            level = levels[k]
            lower = 0
            j = level
            while j > 0:
                lower += tree[j]
                j -= j & -j
            upto = 0
            j = level + 1
            while j > 0:
                upto += tree[j]
                j -= j & -j
            cmd += w * (lower - (below - upto))
            w_group += w
        if last[k]:
            for kk in range(first, k + 1):
                ww = c[order[kk]]
                if ww:
                    j = levels[kk] + 1
                    while j <= n_levels:
                        tree[j] += ww
                        j += j & -j
            below += w_group
            x_ties += w_group * (w_group - 1) // 2
            w_group = 0
            first = k + 1
    return cmd, x_ties


@_jit
def kendall_rows(
    counts: NDArray[np.int64],
    h_group: NDArray[np.int64],
    n_h_groups: int,
    x_orders: NDArray[np.int64],
    x_last: NDArray[np.bool_],
    x_levels: NDArray[np.int64],
    out: NDArray[np.float64],
) -> None:  # pragma: no cover - compiled
    """Kendall's tau-b of M metrics with the human score per resample row (see _KendallKernel.resample).

    Items are visited by ascending metric, a tie group at a time; the weight of the items of lower metric
    value is kept per human level (prefix array, or a Fenwick tree when the human score has many distinct
    values), so each item's concordant minus discordant weight is two lookups: O(n) per resample and
    metric for few human levels, O(n log H) otherwise. Same arguments as spearman_rows.
    """
    rows = counts.shape[0]
    n_metrics = x_orders.shape[0]
    weights = np.zeros(n_h_groups, dtype=np.int64)
    ranks = np.zeros(n_h_groups, dtype=np.int64)
    cum = np.zeros(n_h_groups + 1, dtype=np.int64)
    group = np.zeros(n_h_groups, dtype=np.int64)
    prefix = n_h_groups <= _KENDALL_PREFIX_MAX_LEVELS
    for r in range(rows):
        c = counts[r]
        drawn, _, y_ties = _human_ranks(c, h_group, weights, ranks)
        tot = float(drawn * (drawn - 1) // 2)
        ytie = float(y_ties)
        for m in range(n_metrics):
            if prefix:
                cmd, x_ties = _concordance_prefix(
                    c, x_orders[m], x_last[m], x_levels[m], n_h_groups, cum, group
                )
            else:
                cmd, x_ties = _concordance_fenwick(c, x_orders[m], x_last[m], x_levels[m], n_h_groups, cum)
            xtie = float(x_ties)
            if xtie == tot or ytie == tot:
                out[r, m] = np.nan
                continue
            # The numpy kernel's operation order (scipy.stats.kendalltau's): identical floats.
            tau = float(cmd) / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
            if tau > 1.0:
                tau = 1.0
            elif tau < -1.0:
                tau = -1.0
            out[r, m] = tau


@_jit
def _fenwick_prefix(tree: NDArray[np.int64], j: int) -> int:  # pragma: no cover - compiled
    total = 0
    while j > 0:
        total += tree[j]
        j -= j & -j
    return total


@_jit
def concordance_per_item(
    order: NDArray[np.int64], last: NDArray[np.bool_], levels: NDArray[np.int64], n_levels: int
) -> NDArray[np.float64]:  # pragma: no cover - compiled
    """K_i = sum_j sign(x_j - x_i) sign(h_j - h_i) for every item (see services.stats._concordance_per_item).

    ``order`` sorts x ascending, ``last`` ends its tie groups, ``levels`` is the human tie group (0..H-1) at
    each sorted position. Items of lower x count (lower h) - (higher h), items of higher x the opposite: a
    pass up and a pass down, each with a Fenwick tree over the human levels; O(n log H).
    """
    n = order.size
    k_sorted = np.zeros(n, dtype=np.int64)
    tree = np.zeros(n_levels + 1, dtype=np.int64)
    for direction in (1, -1):
        tree[:] = 0
        seen = 0
        if direction == 1:
            start, stop = 0, n
        else:
            start, stop = n - 1, -1
        first = start
        k = start
        while k != stop:
            level = levels[k]
            lower = _fenwick_prefix(tree, level)
            higher = seen - _fenwick_prefix(tree, level + 1)
            k_sorted[k] += direction * (lower - higher)
            # The group ends here going up (last[k]) or going down (the position before starts a group).
            ends = last[k] if direction == 1 else (k == 0 or last[k - 1])
            if ends:
                kk = first
                while kk != k + direction:
                    j = levels[kk] + 1
                    while j <= n_levels:
                        tree[j] += 1
                        j += j & -j
                    seen += 1
                    kk += direction
                first = k + direction
            k += direction
    out = np.empty(n, dtype=np.float64)
    for k in range(n):
        out[order[k]] = float(k_sorted[k])
    return out


def warm_up() -> None:
    """Compile (or load from the cache) every kernel on a tiny input, so the first report does not wait."""
    counts = np.ones((1, 4), dtype=np.int64)
    passed = np.array([0, 1, 0, 1], dtype=np.int64)
    order = np.arange(4, dtype=np.int64)
    pass_fail_rows(counts, passed, order, np.arange(5, dtype=np.int64), np.arange(4.0), np.empty((1, 7)))
    group = np.array([0, 0, 1, 1], dtype=np.int64)
    last = np.ones((1, 4), dtype=np.bool_)
    spearman_rows(counts, group, 2, order[None, :], last, group[None, :], np.empty((1, 1)))
    kendall_rows(counts, group, 2, order[None, :], last, group[None, :], np.empty((1, 1)))
    concordance_per_item(order, last[0], group, 2)
