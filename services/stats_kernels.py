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


# The best threshold so far of a ROC scan: (Youden's J times P N, an integer; group; tp and fp there).
_Best = tuple[int, int, int, int]
_NO_BEST: _Best = (-(2**62), -1, 0, 0)


@_jit
def _better(
    best: _Best, tp: int, fp: int, drawn: int, g: int, p_int: int, n_int: int
) -> _Best:  # pragma: no cover - compiled
    """The scan's best threshold after trying group ``g`` (``drawn`` items of it in the resample).

    Youden's J = tp/P - fp/N is compared exactly, as the integer tp N - fp P
    (services.stats.passfail.youden_key): only a strictly greater J replaces the best, so from the top the
    highest threshold among equal maxima stays (in floats, equal J can differ by rounding). A group not
    drawn in this resample is no threshold.
    """
    key = tp * n_int - fp * p_int
    if (drawn > 0) & (key > best[0]):
        return key, g, tp, fp
    return best


@_jit
def _fill_table(
    c: NDArray[np.int64], cell: NDArray[np.int64], table: NDArray[np.int64]
) -> None:  # pragma: no cover - compiled
    """table[cell[i]] += c[i] for every item, over a zeroed table: one sequential pass, no gather."""
    table[:] = 0
    for i in range(c.size):
        table[cell[i]] += c[i]


@_jit
def _scan_table(table: NDArray[np.int64], p_int: int, n_int: int) -> tuple[int, _Best]:  # pragma: no cover
    """One resample's ROC, top down a tie group at a time, from each group's resampled fails and passes
    (``table[2 g]``, ``table[2 g + 1]``, groups by ascending score): (twice the Mann-Whitney sum, the best
    threshold). Predicting pass at or above group g gives tp, fp; the fails below are N - fp."""
    tp = 0
    fp = 0
    auc_twice = 0
    best = _NO_BEST
    for g in range(table.size // 2 - 1, -1, -1):
        neg = table[2 * g]
        pos = table[2 * g + 1]
        tp += pos
        fp += neg
        auc_twice += pos * (2 * (n_int - fp) + neg)
        best = _better(best, tp, fp, pos + neg, g, p_int, n_int)
    return auc_twice, best


@_jit
def pass_fail_rows(
    counts: NDArray[np.int64],
    passed: NDArray[np.int64],
    order: NDArray[np.int64],
    bounds: NDArray[np.int64],
    values: NDArray[np.float64],
    out: NDArray[np.float64],
) -> None:  # pragma: no cover - compiled
    """Pass/fail figures of one metric per resample row (see services.stats.passfail.PassFailKernel.resample).

    ``order`` sorts the items by ascending score, ``bounds`` (G + 1) delimits its G tie groups, ``values``
    the groups' scores. ``out[r]`` = AUC, threshold, Youden's J, kappa, accuracy, precision, recall. Twice
    the Mann-Whitney sum is an integer: the numpy kernel's float sum of halves, exactly. The ROC is scanned
    from each tie group's resampled weight of fails and passes, summed in one pass over the items (no
    gather in score order, which cost a third more at 10,000 items without ties).
    """
    rows, n = counts.shape
    n_groups = bounds.size - 1
    cell = np.empty(n, dtype=np.int64)  # 2 * (tie group) + passed, per item
    for g in range(n_groups):
        for k in range(bounds[g], bounds[g + 1]):
            cell[order[k]] = 2 * g + passed[order[k]]
    table = np.zeros(2 * n_groups, dtype=np.int64)
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
        _fill_table(c, cell, table)
        auc_twice, best = _scan_table(table, p_int, n_int)
        _, best_g, tp_int, fp_int = best
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
        out[r, 2] = tp_b / p_tot - fp_b / n_tot
        out[r, 3] = (accuracy - expected) / (1 - expected)
        out[r, 4] = accuracy
        out[r, 5] = tp_b / (tp_b + fp_b)
        out[r, 6] = tp_b / p_tot


@_jit
def _human_ranks(
    c: NDArray[np.int64], h_group: NDArray[np.int64], weights: NDArray[np.int64], ranks: NDArray[np.int64]
) -> tuple[int, int, int]:  # pragma: no cover - compiled
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
def _largest(values: NDArray[np.int64]) -> int:  # pragma: no cover - compiled
    largest = 0
    for v in values:
        largest = max(largest, v)
    return largest


@_jit
def _x_tables(
    x_orders: NDArray[np.int64], x_last: NDArray[np.bool_], x_levels: NDArray[np.int64], n_levels: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:  # pragma: no cover - compiled
    """For the metrics with few tie groups (G groups x H human levels at most n/2 cells): each item's cell
    x group * H + human level, and G; G is 0 for the others, which are scanned an item at a time."""
    n_metrics, n = x_orders.shape
    n_groups = np.zeros(n_metrics, dtype=np.int64)
    cells = np.empty((n_metrics, n), dtype=np.int64)
    for m in range(n_metrics):
        g = 0
        for k in range(n):
            g += x_last[m, k]
        if g * (n_levels + 1) > n // 2:
            continue
        n_groups[m] = g
        g = 0
        for k in range(n):
            cells[m, x_orders[m, k]] = g * n_levels + x_levels[m, k]
            g += x_last[m, k]
    return n_groups, cells


@_jit
def _spearman_table(
    table: NDArray[np.int64], n_groups: int, h_ranks: NDArray[np.int64]
) -> tuple[int, int]:  # pragma: no cover - compiled
    """(sum of doubled x rank * doubled human rank * w, sum of w * doubled x rank^2) of one metric on one
    resample, from the resampled weight of each (x group, human level) cell."""
    n_levels = h_ranks.size
    below = 0
    sxy = 0
    x_sq = 0
    for g in range(n_groups):
        w_group = 0
        s_group = 0
        for lv in range(n_levels):
            w = table[g * n_levels + lv]
            w_group += w
            s_group += w * h_ranks[lv]
        rank = 2 * below + w_group + 1
        sxy += rank * s_group
        x_sq += w_group * rank * rank
        below += w_group
    return sxy, x_sq


# Up to this many distinct human values, Kendall's kernel keeps the weight at each value per resample and
# sums at most H/2 of them per item (_kendall_block); above it, a Fenwick tree (O(log H) per item).
_KENDALL_PREFIX_MAX_LEVELS = 64


@_jit
def _add_group(group: NDArray[np.int64], cum: NDArray[np.int64]) -> None:  # pragma: no cover - compiled
    """cum[l + 1] += weight of ``group`` at levels 0..l (a finished x group joins the lower ones)."""
    running = 0
    for lv in range(group.size):
        running += group[lv]
        cum[lv + 1] += running


@_jit
def _concordance_table(
    table: NDArray[np.int64], n_groups: int, n_levels: int, cum: NDArray[np.int64]
) -> tuple[int, int]:  # pragma: no cover - compiled
    """(concordant - discordant weight, pairs tied in x) of one metric on one resample, from the resampled
    weight of each (x group, human level) cell; ``cum[l]`` the weight of lower x groups below level l."""
    cum[:] = 0
    below = 0
    cmd = 0
    x_ties = 0
    for g in range(n_groups):
        group = table[g * n_levels : (g + 1) * n_levels]
        w_group = 0
        for lv in range(n_levels):
            w = group[lv]
            cmd += w * (cum[lv] + cum[lv + 1] - below)
            w_group += w
        _add_group(group, cum)
        below += w_group
        x_ties += w_group * (w_group - 1) // 2
    return cmd, x_ties


@_jit
def _fenwick_prefix(tree: NDArray[np.int64], j: int) -> int:  # pragma: no cover - compiled
    """Weight at levels below j (a Fenwick tree over levels 1..H)."""
    total = 0
    while j > 0:
        total += tree[j]
        j -= j & -j
    return total


@_jit
def _fenwick_add(tree: NDArray[np.int64], level: int, w: int) -> None:  # pragma: no cover - compiled
    """Add weight w at level ``level`` (0-based) of a Fenwick tree."""
    j = level + 1
    while j < tree.size:
        tree[j] += w
        j += j & -j


@_jit
def _concordance_fenwick(
    c: NDArray[np.int64],
    order: NDArray[np.int64],
    last: NDArray[np.bool_],
    levels: NDArray[np.int64],
    tree: NDArray[np.int64],
) -> tuple[int, int]:  # pragma: no cover - compiled
    """_concordance_table's sums of one metric on one resample an item at a time in ascending x, with a
    Fenwick tree over the human levels (many distinct human values)."""
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
            cmd += w * (_fenwick_prefix(tree, level) - (below - _fenwick_prefix(tree, level + 1)))
            w_group += w
        if last[k]:
            for kk in range(first, k + 1):
                ww = c[order[kk]]
                if ww:
                    _fenwick_add(tree, levels[kk], ww)
            below += w_group
            x_ties += w_group * (w_group - 1) // 2
            w_group = 0
            first = k + 1
    return cmd, x_ties


@_jit
def _transposed(counts: NDArray[np.int64]) -> NDArray[np.int32]:  # pragma: no cover - compiled
    """(items, rows) copy of the (rows, items) counts: an item's weights in every resample side by side, in
    int32 (a count is at most the items drawn), half the memory the per-item gathers walk through."""
    rows, n = counts.shape
    out = np.empty((n, rows), dtype=np.int32)
    for r in range(rows):
        for i in range(n):
            out[i, r] = counts[r, i]
    return out


@_jit
def _spearman_block(
    ct: NDArray[np.int32],
    order: NDArray[np.int64],
    last: NDArray[np.bool_],
    levels: NDArray[np.int64],
    h_ranks: NDArray[np.int64],
    sxy: NDArray[np.int64],
    x_sq: NDArray[np.int64],
    w_group: NDArray[np.int64],
    s_group: NDArray[np.int64],
    below: NDArray[np.int64],
) -> None:  # pragma: no cover - compiled
    """_spearman_table's sums of one metric, an item at a time in ascending x, on every resample of a block
    at once: ``ct`` the (items, rows) counts, ``h_ranks`` the (human level, rows) doubled ranks, the sums
    into ``sxy`` and ``x_sq``. Each item updates a row of independent resamples (vector instructions, no
    chain through memory, where one resample at a time waited on its previous item)."""
    rows = ct.shape[1]
    sxy[:] = 0
    x_sq[:] = 0
    w_group[:] = 0
    s_group[:] = 0
    below[:] = 0
    singleton = True
    for k in range(order.size):
        w = ct[order[k]]
        hr = h_ranks[levels[k]]
        if last[k] and singleton:
            for r in range(rows):
                wr = np.int64(w[r])
                rank = 2 * below[r] + wr + 1
                sxy[r] += rank * (wr * hr[r])
                x_sq[r] += wr * rank * rank
                below[r] += wr
        elif last[k]:
            for r in range(rows):
                wr = np.int64(w[r])
                wg = w_group[r] + wr
                sg = s_group[r] + wr * hr[r]
                rank = 2 * below[r] + wg + 1
                sxy[r] += rank * sg
                x_sq[r] += wg * rank * rank
                below[r] += wg
                w_group[r] = 0
                s_group[r] = 0
            singleton = True
        else:
            for r in range(rows):
                wr = np.int64(w[r])
                w_group[r] += wr
                s_group[r] += wr * hr[r]
            singleton = False


@_jit
def _kendall_block(
    ct: NDArray[np.int32],
    order: NDArray[np.int64],
    last: NDArray[np.bool_],
    levels: NDArray[np.int64],
    level_w: NDArray[np.int64],
    cmd: NDArray[np.int64],
    x_ties: NDArray[np.int64],
    acc: NDArray[np.int64],
    w_group: NDArray[np.int64],
    below: NDArray[np.int64],
) -> None:  # pragma: no cover - compiled
    """_concordance_table's sums of one metric, an item at a time in ascending x, on every resample of a
    block at once (``ct`` the (items, rows) counts): (concordant - discordant weight, pairs tied in x) per
    row, into ``cmd`` and ``x_ties``.

    ``level_w[l]`` holds, per row, the weight of the items of lower x groups at human level l. An item at
    level l adds w * (lower - higher) = w * (2 lower + level_w[l] - below): ``lower`` summed over the levels
    below l, or over those above it (lower = below - level_w[l] - upper) when they are fewer. A finished x
    group adds its items to their levels. Integer sums: the same counts as the item-at-a-time kernels.
    """
    rows = ct.shape[1]
    n_levels = level_w.shape[0]
    level_w[:] = 0
    cmd[:] = 0
    x_ties[:] = 0
    w_group[:] = 0
    below[:] = 0
    first = 0
    for k in range(order.size):
        w = ct[order[k]]
        level = levels[k]
        at = level_w[level]
        if level <= n_levels - 1 - level:
            for r in range(rows):
                acc[r] = at[r] - below[r]
            for lv in range(level):
                lower = level_w[lv]
                for r in range(rows):
                    acc[r] += 2 * lower[r]
        else:
            for r in range(rows):
                acc[r] = below[r] - at[r]
            for lv in range(level + 1, n_levels):
                upper = level_w[lv]
                for r in range(rows):
                    acc[r] -= 2 * upper[r]
        for r in range(rows):
            cmd[r] += np.int64(w[r]) * acc[r]
        if last[k]:
            if k == first:
                for r in range(rows):
                    wr = np.int64(w[r])
                    at[r] += wr
                    below[r] += wr
                    x_ties[r] += wr * (wr - 1) // 2
            else:
                for kk in range(first, k + 1):
                    ww = ct[order[kk]]
                    into = level_w[levels[kk]]
                    for r in range(rows):
                        into[r] += np.int64(ww[r])
                        w_group[r] += np.int64(ww[r])
                for r in range(rows):
                    below[r] += w_group[r]
                    x_ties[r] += w_group[r] * (w_group[r] - 1) // 2
                    w_group[r] = 0
            first = k + 1


@_jit
def _rank_rows(
    kendall: bool,
    counts: NDArray[np.int64],
    h_group: NDArray[np.int64],
    n_h_groups: int,
    x_orders: NDArray[np.int64],
    x_last: NDArray[np.bool_],
    x_levels: NDArray[np.int64],
    out: NDArray[np.float64],
) -> None:  # pragma: no cover - compiled
    """Spearman's rho or Kendall's tau-b of M metrics with the human score per resample row.

    ``x_orders[m]`` sorts metric m ascending (stable); ``x_last[m, k]`` marks the last sorted position of
    each of its tie groups; ``x_levels[m, k]`` is the human tie group of that position's item. A metric
    with few tie groups is counted from its cells of (x group, human level) weights, filled in one pass over
    the items, a resample at a time. The others are visited an item at a time in ascending x, every
    resample of the block together (``_spearman_block``, ``_kendall_block``: the items' weights transposed
    once for all metrics). Spearman: doubled midranks keep every sum an exact integer. Kendall: the weight
    of the items of lower metric value is kept per human level, so each item's concordant minus discordant
    weight costs at most H/2 additions for H human levels; when the human score has many distinct values
    (more than ``_KENDALL_PREFIX_MAX_LEVELS``), a Fenwick tree per resample instead, O(n log H).
    """
    rows = counts.shape[0]
    n_metrics = x_orders.shape[0]
    weights = np.zeros(n_h_groups, dtype=np.int64)
    ranks = np.zeros(n_h_groups, dtype=np.int64)
    cum = np.zeros(n_h_groups + 1, dtype=np.int64)
    prefix = n_h_groups <= _KENDALL_PREFIX_MAX_LEVELS
    n_groups, cells = _x_tables(x_orders, x_last, x_levels, n_h_groups)
    table = np.zeros(max(1, _largest(n_groups) * n_h_groups), dtype=np.int64)
    drawn = np.empty(rows, dtype=np.int64)
    h_sq = np.empty(rows, dtype=np.int64)
    y_ties = np.empty(rows, dtype=np.int64)
    h_ranks = np.empty((n_h_groups, rows), dtype=np.int64)
    for r in range(rows):
        c = counts[r]
        drawn[r], h_sq[r], y_ties[r] = _human_ranks(c, h_group, weights, ranks)
        h_ranks[:, r] = ranks
        for m in range(n_metrics):
            if not n_groups[m]:
                continue
            cells_m = table[: n_groups[m] * n_h_groups]
            _fill_table(c, cells[m], cells_m)
            if kendall:
                a, b = _concordance_table(cells_m, n_groups[m], n_h_groups, cum)
                out[r, m] = _tau_b(a, b, drawn[r], y_ties[r])
            else:
                a, b = _spearman_table(cells_m, n_groups[m], ranks)
                out[r, m] = _rho(a, b, drawn[r], h_sq[r])
    scanned = 0
    for m in range(n_metrics):
        scanned += n_groups[m] == 0
    if scanned == 0:
        return
    if kendall and not prefix:
        tree = np.zeros(n_h_groups + 1, dtype=np.int64)
        for m in range(n_metrics):
            if n_groups[m]:
                continue
            for r in range(rows):
                a, b = _concordance_fenwick(counts[r], x_orders[m], x_last[m], x_levels[m], tree)
                out[r, m] = _tau_b(a, b, drawn[r], y_ties[r])
        return
    ct = _transposed(counts)
    sums_a = np.empty(rows, dtype=np.int64)
    sums_b = np.empty(rows, dtype=np.int64)
    scratch = np.empty((3, rows), dtype=np.int64)
    s0, s1, s2 = scratch[0], scratch[1], scratch[2]
    level_w = np.empty((n_h_groups, rows), dtype=np.int64)
    for m in range(n_metrics):
        if n_groups[m]:
            continue
        if kendall:
            _kendall_block(ct, x_orders[m], x_last[m], x_levels[m], level_w, sums_a, sums_b, s0, s1, s2)
            for r in range(rows):
                out[r, m] = _tau_b(sums_a[r], sums_b[r], drawn[r], y_ties[r])
        else:
            _spearman_block(ct, x_orders[m], x_last[m], x_levels[m], h_ranks, sums_a, sums_b, s0, s1, s2)
            for r in range(rows):
                out[r, m] = _rho(sums_a[r], sums_b[r], drawn[r], h_sq[r])


@_jit
def _rho(sxy: int, x_sq: int, drawn: int, h_sq: int) -> float:  # pragma: no cover - compiled
    """Spearman's rho from the doubled-rank sums (the numpy kernel's operations)."""
    centre = drawn * (drawn + 1) * (drawn + 1)
    vh = float(h_sq - centre)
    vx = float(x_sq - centre)
    return float(float(sxy - centre) / np.sqrt(vx * vh))


@_jit
def _tau_b(cmd: int, x_ties: int, drawn: int, y_ties: int) -> float:  # pragma: no cover - compiled
    """Kendall's tau-b in the numpy kernel's operation order (scipy.stats.kendalltau's): identical floats."""
    tot = float(drawn * (drawn - 1) // 2)
    xtie = float(x_ties)
    ytie = float(y_ties)
    if xtie == tot or ytie == tot:
        return np.nan
    tau = float(float(cmd) / np.sqrt(tot - xtie) / np.sqrt(tot - ytie))
    return min(1.0, max(-1.0, tau))


# Public entry points (services.stats threads them with in_threads): the arguments of _rank_rows before
# ``kendall``, i.e. counts, h_group, n_h_groups, x_orders, x_last, x_levels, out.
@_jit
def spearman_rows(*args: Any) -> None:  # pragma: no cover - compiled
    """Spearman's rho per resample row (see _SpearmanKernel.resample and _rank_rows)."""
    _rank_rows(False, *args)


@_jit
def kendall_rows(*args: Any) -> None:  # pragma: no cover - compiled
    """Kendall's tau-b per resample row (see _KendallKernel.resample and _rank_rows)."""
    _rank_rows(True, *args)


@_jit
def concordance_per_item(
    order: NDArray[np.int64], last: NDArray[np.bool_], levels: NDArray[np.int64], n_levels: int
) -> NDArray[np.float64]:  # pragma: no cover - compiled
    """K_i = sum_j sign(x_j - x_i) sign(h_j - h_i) for every item (services.stats.ranks.concordance_per_item).

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
                    _fenwick_add(tree, levels[kk], 1)
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
