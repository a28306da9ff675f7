"""System level: does a metric rank whole runs (system versions) of one dataset as the humans do?

Over three or more runs, on the questions every run answered and every answer has a human reference score:
the human mean per run (Student t interval over questions), each metric's mean per run, Kendall's tau-b
between the human means and the metric's means (sign flipped for lower-is-better metrics) with a percentile
bootstrap over questions (the same questions drawn for every run: the runs are paired by question), the
pairs of runs the metric orders as the humans do, and for each pair of runs the paired t-test of the human
difference beside the metric's (same winner? either distinguishable from zero after Holm over the pairs?).

Failure modes: NotFound for an unknown run; InvalidItems (422, field "runs") for fewer than three distinct
runs, runs of different datasets, or no question answered by every run.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from services import stats
from services.config import Settings
from services.errors import InvalidItems, ItemError
from services.models import Run
from services.reports.comparison_schemas import (
    MetricPair,
    NotComputed,
    PairTest,
    RankAgreement,
    RunMean,
    SystemMetric,
    SystemsRead,
)
from services.reports.data import Column, gather
from services.reports.pairwise import SMALL_N, columns_at, outputs_by_question, run_info, run_of
from services.reports.schemas import ReportWarning
from services.reports.service import _higher_is_better, _library_kind, run_notes

FloatArray = NDArray[np.float64]
MIN_RUNS = 3
_CHUNK_ELEMENTS = 500_000
# Run means are compared at this many decimals: two runs whose means are equal in exact arithmetic (integer
# ratings often are) tie, whatever order the floating-point sums were taken in.
MEAN_DECIMALS = 10


def run_mean(run_id: int, x: FloatArray) -> RunMean:
    """Mean with the Student t interval (scipy.stats.ttest_1samp(x, 0).confidence_interval())."""
    from scipy import stats as sps

    n = int(x.size)
    if n == 0:
        return RunMean(run_id=run_id, mean=None, ci_low=None, ci_high=None, n=0)
    mean = float(x.mean())
    if n < 2 or float(np.ptp(x)) == 0.0:
        return RunMean(
            run_id=run_id, mean=mean, ci_low=mean if n >= 2 else None, ci_high=mean if n >= 2 else None, n=n
        )
    half = float(sps.t.ppf(0.975, n - 1) * x.std(ddof=1) / np.sqrt(n))
    return RunMean(run_id=run_id, mean=mean, ci_low=mean - half, ci_high=mean + half, n=n)


def paired_test(run_a: int, run_b: int, a: FloatArray, b: FloatArray) -> PairTest:
    """Mean of b - a with the paired t-test (scipy.stats.ttest_rel(b, a)) and its 95 % interval."""
    from scipy import stats as sps

    n = int(a.size)
    diff = b - a
    base = PairTest(run_a=run_a, run_b=run_b, n=n, difference=None, ci_low=None, ci_high=None, p_value=None)
    if n < 2:
        return base.model_copy(update={"undefined_reason": "fewer than 2 questions"})
    # Rounded like the run means: a difference that is 0 in exact arithmetic is 0 (no winner).
    mean = round(float(diff.mean()), MEAN_DECIMALS) + 0.0
    if float(np.ptp(diff)) == 0.0:
        return base.model_copy(
            update={
                "difference": mean,
                "undefined_reason": "every question has the same difference: no variance to test",
            }
        )
    res = sps.ttest_rel(b, a)
    ci = res.confidence_interval(0.95)
    return base.model_copy(
        update={
            "difference": mean,
            "ci_low": float(ci.low),
            "ci_high": float(ci.high),
            "p_value": float(res.pvalue),
        }
    )


def _holm(tests: list[PairTest]) -> None:
    for t, p in zip(tests, stats.adjust_p_values([t.p_value for t in tests], "holm"), strict=True):
        t.holm_p = p


def _tau_b(h: FloatArray, m: FloatArray) -> FloatArray:
    """Kendall tau-b of every row of h with the same row of m (rows = resamples, columns = runs); NaN when a
    row is all ties in either."""
    i, j = np.triu_indices(h.shape[1], k=1)
    sh, sm = np.sign(h[:, i] - h[:, j]), np.sign(m[:, i] - m[:, j])
    s = (sh * sm).sum(axis=1)
    nh, nm = np.count_nonzero(sh, axis=1), np.count_nonzero(sm, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((nh > 0) & (nm > 0), s / np.sqrt(nh * nm.astype(np.float64)), np.nan)


def rank_bootstrap(
    human: FloatArray, metric: FloatArray, n_resamples: int, seed: int
) -> tuple[FloatArray, int]:
    """tau-b of the run means on resamples of the questions (columns of the runs x questions matrices).

    Resample r draws the questions ``np.random.default_rng(seed).integers(0, q, size=(n_resamples, q))[r]``
    (drawn in blocks, the same stream); means are rounded to ``MEAN_DECIMALS`` before ranking. Returns the
    defined values and how many resamples were undefined.
    """
    q = human.shape[1]
    rng = np.random.default_rng(seed)
    out = np.empty(n_resamples)
    rows = max(1, _CHUNK_ELEMENTS // max(q, 1))
    for start in range(0, n_resamples, rows):
        size = min(rows, n_resamples - start)
        idx = rng.integers(0, q, size=(size, q), dtype=np.int64)
        counts = np.zeros((size, q))
        np.add.at(counts, (np.repeat(np.arange(size), q), idx.ravel()), 1.0)
        hm = np.round(counts @ human.T / q, MEAN_DECIMALS)
        mm = np.round(counts @ metric.T / q, MEAN_DECIMALS)
        out[start : start + size] = _tau_b(hm, mm)
    defined = out[np.isfinite(out)]
    return defined, int(n_resamples - defined.size)


def _bad(message: str, reason: str) -> InvalidItems:
    return InvalidItems(message, [ItemError(None, "runs", reason)])


def systems(
    session: Session,
    settings: Settings,
    run_ids: list[int],
    *,
    k: int = 5,
    seed: int = 0,
    n_resamples: int = 2000,
) -> SystemsRead:
    """The system-level analysis of these runs (see the module docstring). Raises NotFound / InvalidItems."""
    ids, runs, datasets, outs, answered = _runs(session, run_ids)
    data = gather(session, ids, settings.ratings.reference, settings.ratings.min_raters)
    human_of = {it.output_id: it.human for it in data.items}
    common = sorted(q for q in answered if all(human_of.get(outs[r][q]) is not None for r in ids))
    H = np.array([[human_of[outs[r][q]] for q in common] for r in ids], dtype=np.float64).reshape(
        len(ids), -1
    )
    human = [run_mean(r, H[i]) for i, r in enumerate(ids)]
    human_pairs = [paired_test(ids[i], ids[j], H[i], H[j]) for i, j in combinations(range(len(ids)), 2)]
    _holm(human_pairs)
    metrics: list[SystemMetric] = []
    not_computed: list[NotComputed] = []
    for col in columns_at(data, k):
        result = _system_metric(col, ids, outs, answered, common, H, n_resamples, seed)
        if isinstance(result, NotComputed):
            not_computed.append(result)
        else:
            metrics.append(result)
    metrics.sort(key=lambda m: (m.kendall.estimate is None, -(m.kendall.estimate or 0.0), m.metric))
    rule = (
        f"Human and metric means per run over the questions every run answered and every answer has a "
        f"human score (a metric: those where it is defined in every run too); Student t interval of each "
        f"mean. Kendall's tau-b between the run means (lower-is-better metrics negated) with a percentile "
        f"bootstrap resampling questions, the same questions for every run ({n_resamples} resamples, seed "
        f"{seed}). Pairs of runs: paired t-test over questions of B - A, Holm over the pairs."
    )
    return SystemsRead(
        dataset_id=datasets[0],
        runs=[run_info(r) for r in runs],
        notes=sorted({n for r in runs for n in run_notes(r)}),
        n_questions=len(common),
        human=human,
        human_pairs=human_pairs,
        interval_rule=rule,
        metrics=metrics,
        not_computed=not_computed,
        warnings=_warnings(len(ids), len(common)),
    )


def _runs(
    session: Session, run_ids: list[int]
) -> tuple[list[int], list[Run], list[int], dict[int, dict[str, int]], set[str]]:
    """The distinct run ids in order, their runs, their one dataset, each run's outputs by question and
    the questions every run answers; InvalidItems for fewer than MIN_RUNS runs, two datasets or no
    question in common."""
    ids = list(dict.fromkeys(run_ids))
    if len(ids) < MIN_RUNS:
        raise _bad(f"the system level compares at least {MIN_RUNS} runs", f"{len(ids)} distinct run(s) given")
    runs = [run_of(session, rid, "runs") for rid in ids]
    datasets = sorted({r.dataset_id for r in runs})
    if len(datasets) > 1:
        raise _bad("the runs must belong to one dataset", f"datasets {datasets}")
    outs = {rid: outputs_by_question(session, rid) for rid in ids}
    answered = set.intersection(*(set(o) for o in outs.values()))
    if not answered:
        raise _bad("the runs have no question in common", "no question is answered by every run")
    return ids, runs, datasets, outs, answered


def _system_metric(
    col: Column,
    ids: list[int],
    outs: dict[int, dict[str, int]],
    answered: set[str],
    common: list[str],
    H: FloatArray,
    n_resamples: int,
    seed: int,
) -> SystemMetric | NotComputed:
    """One metric at the system level, or why it is not computed (a run it did not score, fewer than 3
    questions with a human score and the metric in every run)."""
    hib = _higher_is_better(col)
    library, kind = _library_kind(col)
    unscored = [r for r in ids if not any(outs[r][q] in col.values for q in answered)]
    if unscored:
        return NotComputed(metric=col.name, reason=f"not scored on run(s) {', '.join(map(str, unscored))}")
    qs = [i for i, q in enumerate(common) if all(outs[r][q] in col.values for r in ids)]
    if len(qs) < 3:
        return NotComputed(
            metric=col.name,
            reason=f"only {len(qs)} question(s) have a human score and the metric in every run (3 needed)",
        )
    M = np.array([[col.values[outs[r][common[i]]] for i in qs] for r in ids], dtype=np.float64)
    Hm = H[:, qs]
    sign = 1.0 if hib else -1.0
    hmeans = np.round(Hm.mean(axis=1), MEAN_DECIMALS)
    mmeans = np.round(sign * M.mean(axis=1), MEAN_DECIMALS)
    level = stats.system_level(hmeans, mmeans)
    defined, n_undefined = rank_bootstrap(Hm, sign * M, n_resamples, seed)
    return SystemMetric(
        metric=col.name,
        library=library,
        kind=kind,
        higher_is_better=hib,
        n_questions=len(qs),
        means=[run_mean(r, M[i]) for i, r in enumerate(ids)],
        kendall=_rank_agreement(level.kendall, defined, n_undefined, n_resamples),
        pairwise_correct=level.pairwise_correct,
        pairwise_total=level.pairwise_total,
        pairs=_metric_pairs(ids, Hm, sign * M),
    )


def _rank_agreement(
    tau: stats.CorrelationResult, defined: FloatArray, n_undefined: int, n_resamples: int
) -> RankAgreement:
    """tau-b of the run means with its percentile interval, none when 5% or more resamples are undefined."""
    if tau.estimate is None:
        return RankAgreement(
            estimate=None,
            ci_low=None,
            ci_high=None,
            ci_method=None,
            n_resamples=n_resamples,
            n_resamples_undefined=n_undefined,
            undefined_reason=tau.undefined_reason,
        )
    if defined.size < 0.95 * n_resamples:
        return RankAgreement(
            estimate=tau.estimate,
            ci_low=None,
            ci_high=None,
            ci_method=None,
            n_resamples=n_resamples,
            n_resamples_undefined=n_undefined,
            undefined_reason=f"a ranking is all ties in {n_undefined} of {n_resamples} resamples",
        )
    low, high = (float(v) for v in np.quantile(defined, [0.025, 0.975]))
    return RankAgreement(
        estimate=tau.estimate,
        ci_low=low,
        ci_high=high,
        ci_method="percentile bootstrap over questions",
        n_resamples=n_resamples,
        n_resamples_undefined=n_undefined,
    )


def _metric_pairs(ids: list[int], Hm: FloatArray, oriented: FloatArray) -> list[MetricPair]:
    """Every pair of runs: the paired tests of the human scores and of the metric (oriented, higher is
    better), Holm over the pairs on each side, and whether they name the same winner."""
    pairs_h, pairs_m, pairs = [], [], []
    for i, j in combinations(range(len(ids)), 2):
        th = paired_test(ids[i], ids[j], Hm[i], Hm[j])
        tm = paired_test(ids[i], ids[j], oriented[i], oriented[j])
        pairs_h.append(th)
        pairs_m.append(tm)
    _holm(pairs_h)
    _holm(pairs_m)
    for th, tm in zip(pairs_h, pairs_m, strict=True):
        same = None
        if th.difference is not None and tm.difference is not None and th.difference != 0:
            same = bool(np.sign(th.difference) == np.sign(tm.difference))
        pairs.append(
            MetricPair(
                run_a=th.run_a,
                run_b=th.run_b,
                human=th,
                metric=tm,
                same_winner=same,
                human_distinguishable=None if th.holm_p is None else th.holm_p < 0.05,
                metric_distinguishable=None if tm.holm_p is None else tm.holm_p < 0.05,
            )
        )
    return pairs


def _warnings(n_runs: int, n_questions: int) -> list[ReportWarning]:
    out = (
        [
            ReportWarning(
                code="small_sample",
                scope="system level",
                message=f"Kendall's tau over {n_runs} runs takes only {n_runs * (n_runs - 1) // 2 + 1} "
                "values: "
                "a ranking of so few systems is a coarse check, and its interval is coarse too",
                n=n_runs,
            )
        ]
        if n_runs < 6
        else []
    )
    if n_questions == 0:
        out.append(
            ReportWarning(
                code="undefined",
                scope="system level",
                message="no question has a human score in every run: rate the runs' answers",
                n=0,
            )
        )
    elif n_questions < SMALL_N:
        out.append(
            ReportWarning(
                code="small_sample",
                scope="system level",
                message=f"only {n_questions} questions have a human score in every run: the run means and "
                "their differences are uncertain",
                n=n_questions,
                n_needed=SMALL_N,
            )
        )
    return out
