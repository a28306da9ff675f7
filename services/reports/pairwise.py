"""Pairwise preference meta-evaluation: can a metric tell which of two runs' answers the humans prefer?

For two runs of one dataset, each question answered by both is a pair. The human label of a pair is the
raters' preference for run B's answer over run A's (preference ratings given side by side in a pairwise
rating task or imported from a file, mean over raters, on -2..2), or, when the pair has no preference rating,
the difference of the two answers' human reference scores. A preference given on an answer that has changed
since (its output's version moved on) is stale: left out, and counted in the response. A metric's label is
its difference B - A, sign flipped for lower-is-better metrics, so that positive always means "B is better".
Per metric: Pearson, Spearman and Kendall between the two with BCa intervals resampling questions, sign
agreement (which answer is better) with a Wilson interval, and the comparison of every coefficient with the
best metric's (Zou's interval, Holm), as in the main report.

Failure modes: NotFound for an unknown run, InvalidItems (422, naming the field) for the same run twice, runs
of different datasets, no question answered by both runs, or preference ratings requested where none exist.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from sqlalchemy.orm import Session

from services import stats
from services.config import Settings
from services.errors import InvalidItems, ItemError, NotFound
from services.models import Run
from services.ratings.repository import PreferenceRepository
from services.reports.comparison_schemas import (
    NotComputed,
    PairwiseMetric,
    PairwiseRead,
    PreferenceCounts,
    PreferenceSource,
    Proportion,
)
from services.reports.data import Column, ReportData, gather
from services.reports.schemas import MetricRow, ReportWarning, RunInfo
from services.reports.service import (
    METHODS,
    IntervalMode,
    _compare_all,
    _corr_of,
    _higher_is_better,
    _k_of,
    _library_kind,
    run_notes,
)
from services.runs.repository import RunRepository
from services.tasks.repository import TaskRepository

# Below this many pairs the warnings say the intervals are wide.
SMALL_N = 30
TIES_RULE = (
    "Sign agreement leaves out the pairs the humans tied (preference exactly 0) and counts a metric "
    "difference of exactly 0 on any other pair as wrong (the metric did not pick the preferred answer)."
)


def run_of(session: Session, run_id: int, field: str) -> Run:
    """The run, or NotFound naming the request field that gave its id."""
    run = RunRepository(session).get(run_id)
    if run is None:
        raise NotFound(
            f"run {run_id} does not exist", [ItemError(None, field, f"run {run_id} does not exist")]
        )
    return run


def run_info(run: Run) -> RunInfo:
    return RunInfo(id=run.id, name=run.name, notes=run_notes(run))


def outputs_by_question(session: Session, run_id: int) -> dict[str, int]:
    """Question external id -> output id of one run."""
    return {q: oid for oid, q, _, _ in RunRepository(session).report_items([run_id])}


def columns_at(data: ReportData, k: int) -> list[Column]:
    """The metric columns a report at this k shows (metrics without @k, and those at this k)."""
    return sorted((c for c in data.columns.values() if _k_of(c.metric) in (None, k)), key=lambda c: c.name)


def wilson(correct: int, total: int) -> Proportion:
    from scipy import stats as sps

    if total == 0:
        return Proportion(
            correct=0,
            total=0,
            estimate=None,
            ci_low=None,
            ci_high=None,
            undefined_reason="every pair is tied by the humans",
        )
    ci = sps.binomtest(correct, total).proportion_ci(0.95, method="wilson")
    return Proportion(
        correct=correct, total=total, estimate=correct / total, ci_low=float(ci.low), ci_high=float(ci.high)
    )


@dataclass
class Preferences:
    source: PreferenceSource
    detail: str
    scale: list[float]
    labels: dict[str, float]  # question external id -> preference for B over A
    counts: PreferenceCounts


def _label(score: float, lo: int, hi: int, b_high: bool) -> float:
    """A score on a [lo, hi] preference scale whose high end is for ``b_high``'s side, mapped to -2..2 with
    positive = our run B preferred."""
    label = 2 * (score - (lo + hi) / 2) / ((hi - lo) / 2)
    return label if b_high else -label


def _rated_preferences(session: Session, run_a: int, run_b: int, questions: set[str]) -> Preferences:
    """Preference ratings of the pair from both sources: side by side in pairwise rating tasks, and imported
    from files. Those given on an answer that has changed since are left out and counted."""
    by_question: dict[str, list[float]] = {}
    tasks, raters = set(), set()
    side_by_side = imported = stale = 0
    for q, task_id, user_id, pref, task_run_a, lo, hi, is_stale in TaskRepository(
        session
    ).pairwise_preferences(run_a, run_b):
        if q not in questions:
            continue
        if is_stale:
            stale += 1
            continue
        # Stored for the task's run A vs its run B, high = the task's run B better.
        by_question.setdefault(q, []).append(_label(pref, lo, hi, task_run_a == run_a))
        tasks.add(task_id)
        raters.add(("task", task_id, user_id))
        side_by_side += 1
    low_run = min(run_a, run_b)
    for row in PreferenceRepository(session).of_pair(low_run, max(run_a, run_b)):
        q, rater, score, _, lo, hi, _, va, vb, cur_a, cur_b, *_ = row
        if q not in questions:
            continue
        if (va, vb) != (cur_a, cur_b):
            stale += 1
            continue
        # Stored for (lower run id, higher run id), high = the higher id's answer better.
        by_question.setdefault(q, []).append(_label(score, lo, hi, low_run == run_a))
        raters.add(("file", 0, rater))
        imported += 1
    counts = PreferenceCounts(side_by_side=side_by_side, imported=imported, stale=stale)
    sources = []
    if side_by_side:
        sources.append(f"{side_by_side} given side by side in {len(tasks)} pairwise rating task(s)")
    if imported:
        sources.append(f"{imported} imported from files")
    detail = (
        f"Preference ratings ({'; '.join(sources)}) by {len(raters)} rater(s); each score mapped to -2..2 "
        "(positive: run B's answer preferred), mean over the raters of each question"
    )
    if stale:
        detail += f"; {stale} given on an answer that has changed since are left out"
    labels = {q: float(np.mean(v)) for q, v in by_question.items()}
    return Preferences("preference_ratings", detail, [-2.0, 2.0], labels, counts)


def _absolute_preferences(
    data: ReportData,
    out_a: dict[str, int],
    out_b: dict[str, int],
    questions: set[str],
    counts: PreferenceCounts,
) -> Preferences:
    human = {it.output_id: it.human for it in data.items}
    labels = {}
    for q in questions:
        ha, hb = human.get(out_a[q]), human.get(out_b[q])
        if ha is not None and hb is not None:
            labels[q] = hb - ha
    rubric = data.ratings.rubric
    width = float(rubric.max_score - rubric.min_score) if rubric is not None else 4.0
    detail = (
        "No preference ratings exist for this pair of runs: the preference is derived from the absolute "
        "ratings, human reference score of run B's answer minus run A's (questions whose two answers both "
        "have a reference score)"
        if not counts.stale
        else f"The {counts.stale} preference rating(s) of this pair of runs were all given on an answer that "
        "has changed since and are left out: the preference is derived from the absolute ratings, human "
        "reference score of run B's answer minus run A's (questions whose two answers both have a "
        "reference score)"
    )
    return Preferences("absolute_ratings", detail, [-width, width], labels, counts)


def _bad(field: str, message: str, reason: str | None = None) -> InvalidItems:
    return InvalidItems(message, [ItemError(None, field, reason or message)])


def pairwise(
    session: Session,
    settings: Settings,
    run_a: int,
    run_b: int,
    *,
    source: str = "auto",
    k: int = 5,
    seed: int = 0,
    n_resamples: int = 2000,
) -> PairwiseRead:
    """The pairwise meta-evaluation of runs ``run_a`` and ``run_b`` (see the module docstring).

    ``source``: auto (preference ratings when the pair has some, else absolute ratings), preference, or
    absolute. Raises NotFound / InvalidItems naming the field.
    """
    ra, rb, out_a, out_b, both = _pair(session, run_a, run_b)
    data = gather(session, [run_a, run_b], settings.ratings.reference, settings.ratings.min_raters)
    prefs = _preferences(session, data, run_a, run_b, out_a, out_b, both, source)
    questions = sorted(prefs.labels)
    human = np.array([prefs.labels[q] for q in questions], dtype=np.float64)
    n_ties = int(np.count_nonzero(human == 0))
    mode = _interval_mode(n_resamples, seed)
    deltas, meta, not_computed = _metric_deltas(data, k, questions, out_a, out_b, both, ra, rb)
    corr = _correlations(deltas, human, questions, n_resamples, seed)
    rows, metrics = _metric_rows(deltas, meta, corr, human)
    best = _compare_all(rows, deltas, human, questions, mode)
    for row, pm in zip(rows, metrics, strict=True):
        pm.comparison, pm.spearman_comparison, pm.kendall_comparison = (
            row.comparison,
            row.spearman_comparison,
            row.kendall_comparison,
        )
    metrics.sort(key=lambda m: (m.pearson.estimate is None, -(m.pearson.estimate or 0.0), m.metric))
    warnings = _warnings(len(questions), n_ties, metrics, prefs)
    notes = sorted({n for r in (ra, rb) for n in run_notes(r)})
    if prefs.counts.stale:
        notes.append(
            f"{prefs.counts.stale} preference rating(s) were given on an answer that has changed since: left "
            "out (kept; rate these pairs again)"
        )
    return PairwiseRead(
        dataset_id=ra.dataset_id,
        run_a=run_info(ra),
        run_b=run_info(rb),
        notes=notes,
        source=prefs.source,
        source_detail=prefs.detail,
        preferences=prefs.counts,
        preference_scale=prefs.scale,
        n_questions_both=len(both),
        n_pairs=len(questions),
        n_human_ties=n_ties,
        human_prefers_b=int(np.count_nonzero(human > 0)),
        human_prefers_a=int(np.count_nonzero(human < 0)),
        interval_rule=mode.rule,
        ties_rule=TIES_RULE,
        best=best["pearson"],
        top_spearman=best["spearman"],
        top_kendall=best["kendall"],
        metrics=metrics,
        not_computed=not_computed,
        warnings=warnings,
    )


def _pair(
    session: Session, run_a: int, run_b: int
) -> tuple[Run, Run, dict[str, int], dict[str, int], set[str]]:
    """The two runs, each one's outputs by question, and the questions both answer; InvalidItems when
    they are one run, of two datasets, or share no question."""
    if run_a == run_b:
        raise _bad("run_b", "compare two different runs", f"run_b is run_a ({run_a})")
    ra, rb = run_of(session, run_a, "run_a"), run_of(session, run_b, "run_b")
    if ra.dataset_id != rb.dataset_id:
        raise _bad(
            "run_b",
            "the two runs must belong to one dataset",
            f"run {run_b} is of dataset {rb.dataset_id}, run {run_a} of dataset {ra.dataset_id}",
        )
    out_a, out_b = outputs_by_question(session, run_a), outputs_by_question(session, run_b)
    both = set(out_a) & set(out_b)
    if not both:
        raise _bad(
            "run_b",
            "the two runs have no question in common",
            f"run {run_a} answers {len(out_a)} question(s), run {run_b} {len(out_b)}, none of them both",
        )
    return ra, rb, out_a, out_b, both


def _preferences(
    session: Session,
    data: ReportData,
    run_a: int,
    run_b: int,
    out_a: dict[str, int],
    out_b: dict[str, int],
    both: set[str],
    source: str,
) -> Preferences:
    """The human preferences ``source`` asks for: the pair's current preference ratings (auto, when it
    has some; preference, else InvalidItems), or the difference of the absolute ratings."""
    rated = _rated_preferences(session, run_a, run_b, both)
    prefs: Preferences | None = None
    if source in ("auto", "preference"):
        prefs = rated if rated.labels else None
        if prefs is None and source == "preference":
            stale = (
                f" ({rated.counts.stale} given on answers that changed since)" if rated.counts.stale else ""
            )
            raise _bad(
                "source",
                "no current preference ratings exist for these two runs",
                f"no pairwise rating task on these runs has a rated item and none was imported{stale}; use "
                "source=absolute or auto",
            )
    if prefs is None:
        prefs = _absolute_preferences(data, out_a, out_b, both, rated.counts)
    return prefs


def _interval_mode(n_resamples: int, seed: int) -> IntervalMode:
    return IntervalMode(
        "bca",
        bootstrap=True,
        clustered=False,
        n_resamples=n_resamples,
        seed=seed,
        rule=(
            f"Each question is one pair. Intervals: BCa bootstrap resampling questions ({n_resamples} "
            f"resamples, seed {seed}), Pearson's expanded for small samples (limits read at "
            "2 Phi(sqrt(n/(n-1)) t(n-1)) - 1); p-values from scipy. Comparisons with the best metric: Zou's "
            "interval with Williams' t (Pearson) or a z-test on the Fieller SEs (Spearman, Kendall), Holm "
            "per coefficient, with the jackknife-t of the difference (leave one question out) beside. Sign "
            "agreement: Wilson score interval."
        ),
    )


def _metric_deltas(
    data: ReportData,
    k: int,
    questions: list[str],
    out_a: dict[str, int],
    out_b: dict[str, int],
    both: set[str],
    ra: Run,
    rb: Run,
) -> tuple[dict[str, np.ndarray], dict[str, tuple[str, str, bool]], list[NotComputed]]:
    """Per metric, its difference B - A on each pair, oriented so that higher means B better (NaN where
    either answer has no score), with (library, kind, higher_is_better); the metrics left out, and why."""
    not_computed: list[NotComputed] = []
    deltas: dict[str, np.ndarray] = {}
    meta: dict[str, tuple[str, str, bool]] = {}
    for col in columns_at(data, k):
        hib = _higher_is_better(col)
        library, kind = _library_kind(col)
        sign = 1.0 if hib else -1.0
        d = np.array(
            [
                sign * (col.values[out_b[q]] - col.values[out_a[q]])
                if out_a[q] in col.values and out_b[q] in col.values
                else np.nan
                for q in questions
            ],
            dtype=np.float64,
        )
        have = np.isfinite(d)
        in_a = sum(1 for q in both if out_a[q] in col.values)
        in_b = sum(1 for q in both if out_b[q] in col.values)
        if in_a == 0 or in_b == 0:
            missing = ra if in_a == 0 else rb
            not_computed.append(NotComputed(metric=col.name, reason=f"not scored on run {missing.id}"))
            continue
        if int(have.sum()) < 3:
            not_computed.append(
                NotComputed(
                    metric=col.name,
                    reason=f"only {int(have.sum())} pair(s) with a human preference and the metric on both "
                    "answers (3 needed)",
                )
            )
            continue
        if stats.near_constant(d[have]):
            not_computed.append(
                NotComputed(
                    metric=col.name,
                    reason="near-constant difference: fewer than 3 pairs differ from its most common value",
                )
            )
            continue
        deltas[col.name] = d
        meta[col.name] = (library, kind, hib)
    return deltas, meta, not_computed


def _correlations(
    deltas: dict[str, np.ndarray], human: np.ndarray, questions: list[str], n_resamples: int, seed: int
) -> dict[str, dict[str, stats.CorrelationResult]]:
    """Each metric's correlation with the human preference, by method."""
    corr: dict[str, dict[str, stats.CorrelationResult]] = {name: {} for name in deltas}
    for method in METHODS:
        res = stats.correlations_many(
            deltas,
            human,
            method,
            ci="bca",
            n_resamples=n_resamples,
            seed=seed,
            clusters=questions,
            expand=method == "pearson",
        )
        for name, r in res.items():
            corr[name][method] = r
    return corr


def _metric_rows(
    deltas: dict[str, np.ndarray],
    meta: dict[str, tuple[str, str, bool]],
    corr: dict[str, dict[str, stats.CorrelationResult]],
    human: np.ndarray,
) -> tuple[list[MetricRow], list[PairwiseMetric]]:
    """The rows the main report's comparison code takes (on deltas already oriented: higher = B better),
    and beside each the pairwise metric with its sign agreement."""
    rows: list[MetricRow] = []
    metrics: list[PairwiseMetric] = []
    for name, d in deltas.items():
        have = np.isfinite(d)
        library, kind, hib = meta[name]
        row = MetricRow(
            metric=name,
            library=library,
            kind=kind,
            higher_is_better=True,
            n=int(have.sum()),
            excluded={},
            pearson=_corr_of(corr[name]["pearson"]),
            spearman=_corr_of(corr[name]["spearman"]),
            kendall=_corr_of(corr[name]["kendall"]),
            oriented_r=corr[name]["pearson"].estimate,
        )
        rows.append(row)
        h, m = human[have], d[have]
        not_tied = h != 0
        correct = int(np.count_nonzero(np.sign(m[not_tied]) == np.sign(h[not_tied])))
        metrics.append(
            PairwiseMetric(
                metric=name,
                library=library,
                kind=kind,
                higher_is_better=hib,
                n_pairs=int(have.sum()),
                pearson=row.pearson,
                spearman=row.spearman,
                kendall=row.kendall,
                sign_agreement=wilson(correct, int(not_tied.sum())),
                n_metric_ties=int(np.count_nonzero(m[not_tied] == 0)),
            )
        )
    return rows, metrics


def _warnings(
    n_pairs: int, n_ties: int, metrics: list[PairwiseMetric], prefs: Preferences
) -> list[ReportWarning]:
    out = []
    if n_pairs == 0:
        out.append(
            ReportWarning(
                code="undefined",
                scope="pairwise",
                message="no pair has a human preference: "
                + (
                    "rate the two runs' answers (both need a reference score) or rate them side by side"
                    if prefs.source == "absolute_ratings"
                    else "no rated pair"
                ),
                n=0,
            )
        )
    elif n_pairs < SMALL_N:
        width = stats.fisher_ci_width(0.5, n_pairs) if n_pairs > 3 else math.nan
        out.append(
            ReportWarning(
                code="small_sample",
                scope="pairwise",
                message=f"only {n_pairs} pairs: an interval of r = 0.5 is about {width:.2f} wide here"
                if math.isfinite(width)
                else f"only {n_pairs} pairs: no interval can be trusted",
                n=n_pairs,
                n_needed=SMALL_N,
            )
        )
    if n_pairs and n_ties * 2 > n_pairs:
        out.append(
            ReportWarning(
                code="small_sample",
                scope="pairwise",
                message=f"the humans tie {n_ties} of {n_pairs} pairs: sign agreement rests on "
                f"{n_pairs - n_ties} pairs",
                n=n_pairs - n_ties,
            )
        )
    for m in metrics:
        c = m.comparison
        if c is not None and c.note and c.n_needed:
            out.append(
                ReportWarning(
                    code="comparison_underpowered", scope=m.metric, message=c.note, n=c.n, n_needed=c.n_needed
                )
            )
    return out
