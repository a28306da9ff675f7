"""The report: agreement, the study's three analyses with intervals, comparisons with the best metric, and a
per-question-type breakdown. Every undefined figure carries its reason instead of a number."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, cast

import numpy as np
from sqlalchemy.orm import Session

from services import stats
from services.config import Settings
from services.metrics import registry
from services.models import Run
from services.ratings.service import RatingTable, rating_table
from services.reports import coverage, honesty
from services.reports.data import Column, Item, ReportData, gather
from services.reports.schemas import (
    AgreementRead,
    AgreementResultRead,
    Analysis,
    CiKind,
    Comparison,
    Corr,
    Figure,
    MetricRow,
    PassFail,
    PassFailRow,
    ReportRead,
    RunInfo,
    TypeBreakdown,
)
from services.runs.repository import RunRepository
from services.runs.service import get_run
from services.scores.external import library_kind

METHODS: tuple[Literal["pearson", "spearman", "kendall"], ...] = ("pearson", "spearman", "kendall")
TITLES = {
    1: "Overall and generation metrics vs the human reference score",
    2: "Retrieval metrics vs word-level recall@{k}",
    3: "Retrieval metrics vs the human reference score",
}


def report_version(session: Session, run_ids: list[int]) -> tuple[object, ...]:
    """What a cached report of these runs must match to be reused (see services.reports.cache). Raises
    NotFound for a run that does not exist: a report cached before its run was deleted is never served
    (an empty run's data version is the same before and after its deletion)."""
    for run_id in run_ids:
        get_run(session, run_id)
    return RunRepository(session).data_version(run_ids)


def retired_notes(data: ReportData) -> list[str]:
    """Say how many ratings and scores were left out because their output's answer changed since."""
    notes = []
    if data.retired_ratings:
        notes.append(
            f"{data.retired_ratings} rating(s) are for a previous answer of their output "
            "(kept in history, excluded from this report)"
        )
    if data.retired_scores:
        notes.append(
            f"{data.retired_scores} metric score(s) are for a previous answer of their output "
            "(kept in history, excluded from this report; score the run again)"
        )
    return notes


def judge_notes(data: ReportData) -> list[str]:
    """Say which judge configuration the report uses for metrics scored under several (the latest scored)."""
    groups: dict[tuple[int, str, str], list[str]] = {}
    for metric, (n, judge) in sorted(data.several_judges.items()):
        key = (n, str(judge.get("model")), str(judge.get("language")))
        groups.setdefault(key, []).append(metric)
    notes = [
        f"{', '.join(metrics)}: scores from {n} judge configurations are stored; this report uses the one "
        f"scored last (model {model}, language {language}); GET /runs/<id>/judge-sensitivity compares them"
        for (n, model, language), metrics in groups.items()
    ]
    repeated = sorted((c.repeats, name) for name, c in data.columns.items() if c.repeats > 1)
    if repeated:
        notes.append(
            "judge repeats: "
            + ", ".join(f"{name} ({k})" for k, name in repeated)
            + " were asked several independent times per output; each value is the mean of its repeats "
            "(GET /runs/<id>/stability: the judge's test-retest reliability)"
        )
    return notes


def run_notes(run: Run) -> list[str]:
    meta = run.meta or {}
    notes = [str(n) for n in (meta.get("notes") or [])]
    if meta.get("ratings_note"):
        notes.append(str(meta["ratings_note"]))
    return notes


def agreement_block(
    session: Session, settings: Settings, run_ids: list[int], seed: int = 0, table: RatingTable | None = None
) -> AgreementRead:
    """Inter-rater agreement over the runs' outputs (items), excluding outputs under the minimum raters.
    ``table``: the runs' ratings when already read (a report reads them once)."""
    runs = [get_run(session, rid) for rid in run_ids]
    if table is None:
        table = rating_table(session, run_ids)
    min_raters = settings.ratings.min_raters
    flagged = [oid for oid in table.output_ids if len(table.scores[oid]) < min_raters]
    used = [oid for oid in table.output_ids if len(table.scores[oid]) >= min_raters]
    block: AgreementRead = {
        "runs": [r.id for r in runs],
        "notes": sorted({n for r in runs for n in run_notes(r)}),
        "rubric": None,
        "raters": table.raters,
        "n_rated_outputs": len(table.output_ids),
        "n_used": len(used),
        "n_excluded_under_min_raters": len(flagged),
        "min_raters": min_raters,
        "result": None,
        "undefined_reason": None,
    }
    if table.rubric is not None:
        block["rubric"] = {
            "name": table.rubric.name,
            "min": table.rubric.min_score,
            "max": table.rubric.max_score,
        }
    if len(table.raters) < 2:
        block["undefined_reason"] = "agreement needs ratings from at least two raters"
        return block
    if len(used) < 2:
        block["undefined_reason"] = f"fewer than two outputs rated by at least {min_raters} raters"
        return block
    assert table.rubric is not None
    matrix = np.array(
        [[table.scores[oid].get(r, np.nan) for oid in used] for r in table.raters], dtype=np.float64
    )
    result = stats.agreement(matrix, table.raters, table.rubric.min_score, table.rubric.max_score, seed=seed)
    # asdict gives the dataclasses' fields; AgreementResultRead names the same ones (ReportRead validates it)
    block["result"] = cast(AgreementResultRead, asdict(result))
    return block


def corr_of(res: stats.CorrelationResult) -> Corr:
    """A correlation result as the report shows it; the reason covers an undefined interval too."""
    return Corr(
        estimate=res.estimate,
        ci_low=res.ci_low,
        ci_high=res.ci_high,
        p_value=res.p_value,
        ci_method=res.ci_method,
        undefined_reason=res.undefined_reason or res.ci_undefined_reason,
    )


def _undefined(reason: str) -> Corr:
    return Corr(
        estimate=None, ci_low=None, ci_high=None, p_value=None, ci_method=None, undefined_reason=reason
    )


def _higher_is_better(col: Column) -> bool:
    base = col.metric.partition("@")[0]
    spec = registry.BY_NAME.get(base)
    if spec is not None:
        return spec.higher_is_better
    return str(col.details.get("higher_is_better", "true")).lower() != "false"


def _library_kind(col: Column) -> tuple[str, str]:
    spec = registry.BY_NAME.get(col.metric.partition("@")[0])
    if spec is not None:
        return spec.library, spec.kind
    # An imported score of a metric the service knows keeps that metric's kind (retrieval, generation...).
    imported = library_kind(col.metric)
    if imported is not None:
        return imported
    return col.metric.split(".")[0], "overall"


def _k_of(metric: str) -> int | None:
    _, sep, k = metric.partition("@")
    return int(k) if sep and k.isdigit() else None


def _vectors(
    items: list[Item], col: Column, reference: dict[int, float | None], ref_missing: dict[int, str]
) -> tuple[np.ndarray, np.ndarray, Counter[str]]:
    xs, ys = [], []
    excluded: Counter[str] = Counter()
    for it in items:
        ref = reference.get(it.output_id)
        if ref is None:
            excluded[ref_missing.get(it.output_id, "no reference value")] += 1
            continue
        if it.output_id in col.values:
            xs.append(col.values[it.output_id])
            ys.append(ref)
        else:
            excluded[col.missing.get(it.output_id, "not scored")] += 1
    return np.array(xs, dtype=np.float64), np.array(ys, dtype=np.float64), excluded


@dataclass(frozen=True)
class IntervalMode:
    """How a report's intervals and p-values are obtained (from ``ci`` and whether questions repeat)."""

    requested: CiKind
    bootstrap: bool  # every interval from the bootstrap (BCa); else analytic where a tested formula exists
    clustered: bool  # some question has several outputs: resample questions, never outputs
    n_resamples: int
    seed: int
    rule: str


def interval_mode(ci: CiKind, n_items: int, n_questions: int, n_resamples: int, seed: int) -> IntervalMode:
    """The interval rule of a report, stated in words for the reader."""
    clustered = n_questions < n_items
    boot = f"BCa, {n_resamples} resamples, seed {seed}"
    if clustered:
        rule = (
            f"{n_items} outputs come from {n_questions} distinct questions: outputs of one question are not "
            "independent, so every interval and p-value leaves out or resamples whole questions. "
            "Coefficients: jackknife-t on Fisher's z (leave one question out, t with questions - 1 df; the "
            "question bootstrap covers only 91-95% at 50 questions, bench/coverage.py); comparisons with "
            "the top metric: jackknife-t of the difference, leaving one question out; pass/fail: AUC by "
            f"question bootstrap ({boot}), held-out figures by question jackknife. Fisher/Fieller intervals "
            "and Williams' test would be too narrow here."
        )
        if ci == "auto":
            rule = "ci=auto: " + rule
        return IntervalMode(ci, True, True, n_resamples, seed, rule)
    analytic = (
        "Fisher (Pearson), Fieller (Spearman) and Fieller with the tie correction (Kendall) intervals, scipy "
        "p-values; comparisons with the top metric: Zou's interval with Williams' t (Pearson) or with a "
        "z-test on the Fieller SEs (Spearman, Kendall)."
    )
    if ci == "bca":
        rule = (
            f"Paired bootstrap over outputs ({boot}) for every coefficient's interval; scipy p-values. "
            "Pearson's is expanded for small samples (limits read at 2 Phi(sqrt(n/(n-1)) t(n-1)) - 1, "
            "95.8% at n = 50): its plain BCa covers only 93.3-93.8% at n = 50 on tied ratings, where "
            "Spearman's and Kendall's cover 93.9-95.8% as they are (bench/coverage.py). "
            "Comparisons with the top metric keep Zou's interval and Williams' t or the Fieller z-test, "
            "with the jackknife-t interval of the difference beside them (leave one output out, t with "
            "n - 1 df): the paired bootstrap of a difference covers only 92.7-94.2% at n = 50-100 on tied "
            "ratings, bench/coverage.py."
        )
        return IntervalMode(ci, True, False, n_resamples, seed, rule)
    if ci == "auto":
        rule = (
            "ci=auto: every output is its own question, so the analytic intervals are used (they cover "
            "93.5-96.5% on tied 1-5 ratings at n = 50 and 100, bench/coverage.py): " + analytic
        )
    else:
        rule = analytic
    return IntervalMode(ci, False, False, n_resamples, seed, rule)


def _coefficient_ci(mode: IntervalMode) -> Literal["analytic", "bca", "jackknife"]:
    """Questions repeat: jackknife-t by question (the question BCa under-covers there); else per the mode."""
    if mode.clustered:
        return "jackknife"
    return "bca" if mode.bootstrap else "analytic"


def _correlations(
    matrix: dict[str, np.ndarray], human: np.ndarray, clusters: list[str], mode: IntervalMode
) -> dict[str, dict[str, stats.CorrelationResult]]:
    """Pearson, Spearman and Kendall of every column (NaN = missing) with the reference, per the mode."""
    out: dict[str, dict[str, stats.CorrelationResult]] = {name: {} for name in matrix}
    for method in METHODS:
        res = stats.correlations_many(
            matrix,
            human,
            method,
            ci=_coefficient_ci(mode),
            n_resamples=mode.n_resamples,
            seed=mode.seed,
            clusters=clusters if mode.clustered else None,
            expand=method == "pearson",
        )
        for name, r in res.items():
            out[name][method] = r
    return out


def _corr_of(res: stats.CorrelationResult) -> Corr:
    c = corr_of(res)
    if res.estimate is not None:
        c.p_method = res.p_method
    return c


def _analysis(
    aid: Literal[1, 2, 3],
    reference_name: str,
    items: list[Item],
    cols: list[Column],
    reference: dict[int, float | None],
    ref_missing: dict[int, str],
    mode: IntervalMode,
    k: int,
) -> Analysis:
    rows: list[MetricRow] = []
    used = [it for it in items if reference.get(it.output_id) is not None]
    human = np.array([reference[it.output_id] for it in used], dtype=np.float64)
    questions = [it.question_id for it in used]
    matrix: dict[str, np.ndarray] = {}
    for col in cols:
        x, _, excluded = _vectors(items, col, reference, ref_missing)
        hib = _higher_is_better(col)
        library, kind = _library_kind(col)
        n_q = len({it.question_id for it in used if it.output_id in col.values})
        row = MetricRow(
            metric=col.name,
            library=library,
            kind=kind,
            higher_is_better=hib,
            n=int(x.size),
            excluded=dict(excluded),
            pearson=_undefined(""),
            spearman=_undefined(""),
            kendall=_undefined(""),
            oriented_r=None,
            n_questions=n_q,
        )
        rows.append(row)
        if x.size >= 3 and stats.near_constant(x):
            why = "near-constant metric: fewer than 3 items differ from its most common value"
            row.pearson = row.spearman = row.kendall = _undefined(why)
            continue
        matrix[col.name] = np.array([col.values.get(it.output_id, np.nan) for it in used], dtype=np.float64)
    corr = _correlations(matrix, human, questions, mode)
    by_name = {row.metric: row for row in rows}
    for name, res in corr.items():
        row = by_name[name]
        row.pearson, row.spearman, row.kendall = (_corr_of(res[m]) for m in METHODS)
        r = res["pearson"].estimate
        row.oriented_r = None if r is None else (r if row.higher_is_better else -r)
    best = _compare_all(rows, matrix, human, questions, mode)
    note = None if best["pearson"] is not None else "no metric has a defined correlation in this analysis"
    rows.sort(key=lambda row: (row.oriented_r is None, -(row.oriented_r or 0.0), row.metric))
    return Analysis(
        id=aid,
        title=TITLES[aid].format(k=k),
        reference=reference_name,
        metrics=rows,
        best=best["pearson"],
        note=note,
        top_spearman=best["spearman"],
        top_kendall=best["kendall"],
    )


def _oriented(row: MetricRow, method: str) -> float | None:
    est = getattr(row, method).estimate
    return None if est is None else (est if row.higher_is_better else -est)


def _compare_all(
    rows: list[MetricRow],
    matrix: dict[str, np.ndarray],
    human: np.ndarray,
    questions: list[str],
    mode: IntervalMode,
) -> dict[str, str | None]:
    """Every metric against the best one, per coefficient, with Holm over each coefficient's family."""
    best: dict[str, str | None] = {}
    for method in METHODS:
        defined = [row for row in rows if row.metric in matrix and _oriented(row, method) is not None]
        if not defined:
            best[method] = None
            continue
        top = max(defined, key=lambda row: _oriented(row, method) or -2.0)
        best[method] = top.metric
        comps = _compare(method, top, [r for r in defined if r is not top], matrix, human, questions, mode)
        for row, comp in comps:
            setattr(row, "comparison" if method == "pearson" else f"{method}_comparison", comp)
        _holm([comp for _, comp in comps])
    return best


def _sign(row: MetricRow) -> float:
    return 1.0 if row.higher_is_better else -1.0


def _compare(
    method: Literal["pearson", "spearman", "kendall"],
    best: MetricRow,
    others: list[MetricRow],
    matrix: dict[str, np.ndarray],
    human: np.ndarray,
    questions: list[str],
    mode: IntervalMode,
) -> list[tuple[MetricRow, Comparison]]:
    ref = _sign(best) * matrix[best.metric]
    oriented = {row.metric: _sign(row) * matrix[row.metric] for row in others}
    clusters = questions if mode.clustered else None
    # Zou's interval (and Williams' t or the Fieller z-test) on independent outputs; the jackknife-t of the
    # difference beside it with ci=bca, and in its place on pooled runs (by question). The paired BCa
    # bootstrap of a difference covers only 92.7-94.2% at n = 50-100 on tied ratings (bench/coverage.py).
    analytic = not mode.clustered
    jack: dict[str, stats.JackknifeCI] = {}
    if not analytic or mode.bootstrap:
        jack = stats.jackknife_differences_many(ref, oriented, human, method, clusters=clusters)
    out: list[tuple[MetricRow, Comparison]] = []
    for row in others:
        b = oriented[row.metric]
        keep = np.isfinite(ref) & np.isfinite(b)
        c = Comparison(
            best=best.metric,
            method=method,
            n=int(keep.sum()),
            n_questions=len({q for q, k in zip(questions, keep, strict=True) if k}),
            difference=None,
        )
        if analytic:
            comp = stats.compare_correlations(ref[keep], b[keep], human[keep], method=method, n_resamples=0)
            _analytic_comparison(c, comp)
            if row.metric in jack:
                jci = jack[row.metric]
                c.jackknife_low, c.jackknife_high, c.jackknife_p = jci.low, jci.high, jci.p_value
        else:
            jci = jack[row.metric]
            # On the items both metrics scored, as its interval: with a sparse metric, the difference of
            # the two rows' coefficients would mix two item sets.
            c.difference = jci.estimate
            c.ci_low, c.ci_high, c.p_value = jci.low, jci.high, jci.p_value
            defined = jci.low is not None
            c.ci_method, c.p_method = ("jackknife-t", "cluster jackknife") if defined else (None, None)
            if jci.undefined_reason:
                c.note = f"jackknife of the difference undefined: {jci.undefined_reason}"
            c.jackknife_low, c.jackknife_high, c.jackknife_p = jci.low, jci.high, jci.p_value
        out.append((row, c))
    return out


def _analytic_comparison(c: Comparison, comp: stats.DependentComparison) -> None:
    c.n, c.difference = comp.n, comp.difference
    if comp.undefined_reason or comp.analytic_undefined_reason:
        c.note = comp.undefined_reason or comp.analytic_undefined_reason
        return
    if comp.rank_z is not None:
        c.zou_low, c.zou_high = comp.zou_low, comp.zou_high
        c.ci_low, c.ci_high, c.ci_method = comp.zou_low, comp.zou_high, "zou"
        c.p_value, c.p_method = comp.rank_z.p_value, "fieller-z"
        return
    if comp.williams is None:
        return
    c.williams_t, c.williams_p = comp.williams.statistic, comp.williams.p_value
    if comp.steiger is not None:
        c.steiger_z, c.steiger_p = comp.steiger.statistic, comp.steiger.p_value
    c.zou_low, c.zou_high = comp.zou_low, comp.zou_high
    c.ci_low, c.ci_high, c.ci_method = comp.zou_low, comp.zou_high, "zou"
    c.p_value, c.p_method = comp.williams.p_value, "williams"
    if comp.r_a is not None and comp.r_b is not None and comp.r_ab is not None and comp.r_a != comp.r_b:
        try:
            c.n_needed = stats.n_needed_to_separate(comp.r_a, comp.r_b, comp.r_ab)
        except ValueError:
            c.n_needed = None


def _holm(comps: list[Comparison]) -> None:
    for c, p in zip(comps, stats.adjust_p_values([c.p_value for c in comps], "holm"), strict=True):
        c.holm_p = p
        if p is not None:
            c.indistinguishable_from_best = p >= 0.05
            if c.indistinguishable_from_best and c.n_needed is not None and c.n_needed > c.n:
                c.note = (
                    f"n = {c.n} is too small to tell these two metrics apart: about {c.n_needed} items "
                    "would be needed at power 0.8"
                )


def _figure(res: stats.Interval) -> Figure:
    return Figure(
        estimate=res.estimate,
        ci_low=res.ci_low,
        ci_high=res.ci_high,
        ci_method=res.ci_method,
        undefined_reason=res.undefined_reason,
        n_resamples_undefined=res.n_resamples_undefined,
    )


# From bench/coverage.py: averaged 1-5 ratings, judge scores piled at 0 and 1, n = 50-100.
PASS_FAIL_CAUTION = (
    "Youden's J, kappa, accuracy, precision and recall are held out: the questions are split in two halves "
    "(stratified by pass, seeded), each half is judged at the threshold that maximises J on the other half, "
    "and the figures come from those decisions, so no output is judged by a threshold chosen on it (the "
    "same figures at the threshold chosen on all the data are optimistic, and their bootstrap intervals "
    "covered 68-93 %). They estimate how a threshold chosen on half this data judges new outputs; their "
    "jackknife intervals (leaving one question out; precision's t with the df of the questions the metric "
    "passes) covered 93.6-96.3 % in simulation (bench/coverage.py). The ROC AUC's interval is "
    "DeLong's on the logit scale (94.6-96.3 %), or the question bootstrap when questions repeat "
    "(95.5-96.0 %). The threshold itself has no interval; the two halves' thresholds show how much it "
    "moves."
)


def _pass_fail(
    items: list[Item],
    cols: list[Column],
    human: dict[int, float | None],
    rubric: tuple[int, int] | None,
    pass_threshold: float | None,
    mode: IntervalMode,
) -> PassFail:
    """Analysis 4: each metric's best pass/fail decision against the humans' (binarised reference score)."""
    title = "Pass/fail alignment: the metric's decision vs the raters'"
    if pass_threshold is not None:
        threshold = pass_threshold
        rule = f"pass = human reference score >= {pass_threshold:g} (set by the request)"
    elif rubric is not None:
        threshold = stats.default_pass_threshold(*rubric)
        rule = (
            f"pass = human reference score >= {threshold:g}: the upper half of the rubric "
            f"{rubric[0]}..{rubric[1]} (default; pass_threshold= to change it)"
        )
    else:
        return PassFail(
            title=title,
            human_threshold=None,
            threshold_rule="",
            metrics=[],
            note="no ratings: no human pass/fail",
        )
    used = [it for it in items if human.get(it.output_id) is not None]
    h = np.array([human[it.output_id] for it in used], dtype=np.float64)
    questions = [it.question_id for it in used]
    rows: list[PassFailRow] = []
    vectors = {col.name: np.array([col.values.get(it.output_id, np.nan) for it in used]) for col in cols}
    near = {
        name
        for name, x in vectors.items()
        if np.isfinite(x).sum() >= 3 and stats.near_constant(x[np.isfinite(x)])
    }
    # Metrics with the same missing values share one set of resamples (drawn once for all of them).
    results = stats.pass_fail_many(
        {name: x for name, x in vectors.items() if name not in near},
        h,
        threshold,
        higher_is_better={col.name: _higher_is_better(col) for col in cols},
        n_resamples=mode.n_resamples,
        seed=mode.seed,
        clusters=questions if mode.clustered else None,
    )
    for col in cols:
        x = vectors[col.name]
        hib = _higher_is_better(col)
        library, kind = _library_kind(col)
        complete = np.isfinite(x)
        reason: str | None
        if col.name in near:
            res = stats.pass_fail(np.ones(0), np.ones(0), threshold)
            reason = "near-constant metric: fewer than 3 items differ from its most common value"
        else:
            res = results[col.name]
            reason = res.undefined_reason
        figures = {name: _figure(getattr(res, name)) for name in stats.PASS_FAIL_FIGURES}
        if reason is not None:
            figures = {
                name: Figure(
                    estimate=None, ci_low=None, ci_high=None, ci_method=None, undefined_reason=reason
                )
                for name in figures
            }
        rows.append(
            PassFailRow(
                metric=col.name,
                library=library,
                kind=kind,
                higher_is_better=hib,
                n=int(complete.sum()),
                n_questions=len({q for q, c in zip(questions, complete, strict=True) if c}),
                n_pass=int((h[complete] >= threshold).sum()),
                n_fail=int((h[complete] < threshold).sum()),
                confusion=[list(r) for r in res.confusion] if res.confusion and reason is None else None,
                confusion_held_out=[list(r) for r in res.confusion_held_out]
                if res.confusion_held_out and reason is None
                else None,
                held_out_thresholds=list(res.held_out_thresholds)
                if res.held_out_thresholds and reason is None
                else None,
                undefined_reason=reason,
                **figures,
            )
        )
    rows.sort(key=lambda r: (r.auc.estimate is None, -(r.auc.estimate or 0.0), r.metric))
    note = PASS_FAIL_CAUTION
    if not any(r.auc.estimate is not None for r in rows):
        note = "no metric has a defined pass/fail figure"
    return PassFail(title=title, human_threshold=threshold, threshold_rule=rule, metrics=rows, note=note)


def _recall_analysis(
    data: ReportData,
    items: list[Item],
    retrieval: list[Column],
    ref_name: str,
    mode: IntervalMode,
    k: int,
) -> Analysis:
    """Analysis 2: retrieval metrics against word-level recall@k, or why it is not computed."""
    ref_col = data.columns.get(ref_name)
    if ref_col is None:
        return Analysis(
            id=2,
            title=TITLES[2].format(k=k),
            reference=ref_name,
            metrics=[],
            best=None,
            note=f"{ref_name} is not computed for these runs; run a scoring job with it",
        )
    recall: dict[int, float | None] = {it.output_id: ref_col.values.get(it.output_id) for it in items}
    recall_missing = {
        oid: f"reference recall {ref_col.missing.get(oid, 'not scored')}"
        for oid, v in recall.items()
        if v is None
    }
    others = [c for c in retrieval if c.name != ref_name]
    return _analysis(2, ref_name, items, others, recall, recall_missing, mode, k)


def _by_type(
    items: list[Item],
    overall: list[Column],
    human: dict[int, float | None],
    human_missing: dict[int, str],
    mode: IntervalMode,
) -> list[TypeBreakdown]:
    """Pearson of each overall metric with the human reference score within each question type."""
    by_type: list[TypeBreakdown] = []
    all_types = sorted({t for it in items for t in it.types})
    for t in all_types:
        sub = [it for it in items if t in it.types]
        metrics = {}
        rated = [it for it in sub if human.get(it.output_id) is not None]
        h = np.array([human[it.output_id] for it in rated], dtype=np.float64)
        columns = {}
        for col in overall:
            x, _, _ = _vectors(sub, col, human, human_missing)
            if x.size >= 3 and stats.near_constant(x):
                metrics[col.name] = _undefined("near-constant metric on this type")
            else:
                columns[col.name] = np.array([col.values.get(it.output_id, np.nan) for it in rated])
        type_mode = replace(mode, bootstrap=mode.clustered)  # Pearson only: Fisher unless questions repeat
        questions = [it.question_id for it in rated]
        res = stats.correlations_many(
            columns,
            h,
            "pearson",
            ci=_coefficient_ci(type_mode),
            n_resamples=mode.n_resamples,
            seed=mode.seed,
            clusters=questions if mode.clustered else None,
        )
        metrics.update({name: _corr_of(r) for name, r in res.items()})
        metrics = {col.name: metrics[col.name] for col in overall}
        by_type.append(TypeBreakdown(type=t, n_items=len(sub), metrics=metrics))
    return by_type


def build_report(
    session: Session,
    settings: Settings,
    run_ids: list[int],
    *,
    k: int = 5,
    types: list[str] | None = None,
    answerable: bool | None = None,
    ci: CiKind = "fisher",
    seed: int = 0,
    n_resamples: int = 2000,
    pass_threshold: float | None = None,
) -> ReportRead:
    """Correlations of every metric with the human reference (analyses 1, 3) and of retrieval metrics with
    word-level recall@k (analysis 2), on the runs' outputs pooled. Raises NotFound / InvalidItems."""
    data: ReportData = gather(session, run_ids, settings.ratings.reference, settings.ratings.min_raters)
    items = [
        it
        for it in data.items
        if (not types or set(types) & set(it.types)) and (answerable is None or it.answerable == answerable)
    ]
    runs = [get_run(session, rid) for rid in run_ids]
    human = {it.output_id: it.human for it in items}
    human_missing = {it.output_id: it.human_missing or "not rated" for it in items}
    cols = [c for c in data.columns.values() if _k_of(c.metric) in (None, k)]
    retrieval = [c for c in cols if _library_kind(c)[1] == "retrieval"]
    overall = [c for c in cols if _library_kind(c)[1] != "retrieval"]
    ref_name = f"ref.word_recall@{k}"
    n_questions = len({it.question_id for it in items})
    mode = interval_mode(ci, len(items), n_questions, n_resamples, seed)
    analyses = [_analysis(1, "human reference score", items, overall, human, human_missing, mode, k)]
    analyses.append(_recall_analysis(data, items, retrieval, ref_name, mode, k))
    analyses.append(_analysis(3, "human reference score", items, retrieval, human, human_missing, mode, k))
    rubric = data.ratings.rubric
    pass_fail = _pass_fail(
        items,
        overall + retrieval,
        human,
        None if rubric is None else (rubric.min_score, rubric.max_score),
        pass_threshold,
        mode,
    )
    agreement = agreement_block(session, settings, run_ids, seed, data.ratings)
    result = agreement["result"]
    ceiling = result["attenuation_ceiling"] if result else None
    by_type = _by_type(items, overall, human, human_missing, mode)
    n_ref = sum(1 for it in items if it.human is not None)
    notes = sorted({n for r in runs for n in run_notes(r)}) + retired_notes(data) + judge_notes(data)
    report = ReportRead(
        dataset_id=data.dataset_id,
        runs=[RunInfo(id=r.id, name=r.name, notes=run_notes(r)) for r in runs],
        notes=notes,
        filters={
            "k": k,
            "types": types or [],
            "answerable": answerable,
            "ci": ci,
            "pass_threshold": pass_threshold,
        },
        reference_score={
            "method": settings.ratings.reference,
            "min_raters": settings.ratings.min_raters,
            "n_items": len(items),
            "n_with_reference": n_ref,
            "n_without": dict(Counter(it.human_missing for it in items if it.human is None)),
        },
        agreement=agreement,
        human_ceiling=ceiling if isinstance(ceiling, float) and math.isfinite(ceiling) else None,
        analyses=analyses,
        by_type=by_type,
        bootstrap={
            "method": "BCa",
            "paired_by": "question" if mode.clustered else "output",
            "seed": seed,
            "n_resamples": n_resamples,
        }
        if mode.bootstrap
        else None,
        n_items=len(items),
        n_questions=n_questions,
        pass_fail=pass_fail,
        interval_rule=mode.rule,
    )
    statuses, report.coverage = coverage.metric_status(session, settings, run_ids, items, data.columns, k)
    return honesty.finish(report, statuses)


def report_rows(report: ReportRead) -> list[dict[str, Any]]:
    """One row per metric x analysis (the CSV form); pass/fail figures on the rows of analyses 1 and 3."""
    out = []
    pf = {m.metric: m for m in report.pass_fail.metrics} if report.pass_fail else {}
    for a in report.analyses:
        for m in a.metrics:
            c = m.comparison
            sc, kc = m.spearman_comparison, m.kendall_comparison
            p = pf.get(m.metric) if a.id in (1, 3) else None
            out.append(
                {
                    "analysis": a.id,
                    "reference": a.reference,
                    "metric": m.metric,
                    "library": m.library,
                    "kind": m.kind,
                    "higher_is_better": m.higher_is_better,
                    "n": m.n,
                    "n_excluded": sum(m.excluded.values()),
                    "excluded": "; ".join(f"{k}: {v}" for k, v in sorted(m.excluded.items())),
                    "pearson_r": m.pearson.estimate,
                    "pearson_ci_low": m.pearson.ci_low,
                    "pearson_ci_high": m.pearson.ci_high,
                    "pearson_p": m.pearson.p_value,
                    "pearson_ci_method": m.pearson.ci_method,
                    "spearman_rho": m.spearman.estimate,
                    "spearman_ci_low": m.spearman.ci_low,
                    "spearman_ci_high": m.spearman.ci_high,
                    "kendall_tau_b": m.kendall.estimate,
                    "kendall_ci_low": m.kendall.ci_low,
                    "kendall_ci_high": m.kendall.ci_high,
                    "undefined_reason": m.pearson.undefined_reason,
                    "ci_clipped": m.pearson.ci_clipped,
                    "status": "computed",
                    "top": a.top,
                    "best": a.best,
                    "diff_vs_best": c.difference if c else None,
                    "williams_p": c.williams_p if c else None,
                    "holm_p": c.holm_p if c else None,
                    "zou_low": c.zou_low if c else None,
                    "zou_high": c.zou_high if c else None,
                    "indistinguishable_from_best": c.indistinguishable_from_best if c else None,
                    "verdict": a.verdict,
                    "n_questions": m.n_questions,
                    "diff_ci_low": c.ci_low if c else None,
                    "diff_ci_high": c.ci_high if c else None,
                    "diff_p_method": c.p_method if c else None,
                    "top_spearman": a.top_spearman,
                    "spearman_diff_vs_top": sc.difference if sc else None,
                    "spearman_diff_ci_low": sc.ci_low if sc else None,
                    "spearman_diff_ci_high": sc.ci_high if sc else None,
                    "spearman_holm_p": sc.holm_p if sc else None,
                    "top_kendall": a.top_kendall,
                    "kendall_diff_vs_top": kc.difference if kc else None,
                    "kendall_diff_ci_low": kc.ci_low if kc else None,
                    "kendall_diff_ci_high": kc.ci_high if kc else None,
                    "kendall_holm_p": kc.holm_p if kc else None,
                    "pass_fail_auc": p.auc.estimate if p else None,
                    "pass_fail_auc_ci_low": p.auc.ci_low if p else None,
                    "pass_fail_auc_ci_high": p.auc.ci_high if p else None,
                    "pass_fail_threshold": p.threshold.estimate if p else None,
                    "pass_fail_kappa": p.kappa.estimate if p else None,
                    "pass_fail_kappa_ci_low": p.kappa.ci_low if p else None,
                    "pass_fail_kappa_ci_high": p.kappa.ci_high if p else None,
                }
            )
        for nc in a.not_computed:
            out.append(
                {
                    "analysis": a.id,
                    "reference": a.reference,
                    "metric": nc.metric,
                    "library": nc.library,
                    "kind": nc.kind,
                    "undefined_reason": nc.reason,
                    "status": "not computed",
                    "top": a.top,
                    "best": a.best,
                    "verdict": a.verdict,
                }
            )
    # Every row carries every column (not-computed rows leave the statistics empty).
    computed_first = sorted(out, key=lambda row: row["status"] != "computed")
    columns = list(dict.fromkeys(key for row in computed_first for key in row))
    return [{c: row.get(c) for c in columns} for row in out]
