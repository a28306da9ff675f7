"""The report: agreement, the study's three analyses with intervals, comparisons with the best metric, and a
per-question-type breakdown. Every undefined figure carries its reason instead of a number."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict
from typing import Any, Literal

import numpy as np
from sqlalchemy.orm import Session

from services import stats
from services.config import Settings
from services.metrics import registry
from services.models import Run
from services.ratings.service import rating_table
from services.reports import coverage, honesty
from services.reports.data import Column, Item, ReportData, gather
from services.reports.schemas import Analysis, Comparison, Corr, MetricRow, ReportRead, RunInfo, TypeBreakdown
from services.runs.repository import RunRepository
from services.runs.service import get_run

CiKind = Literal["fisher", "bca"]
TITLES = {
    1: "Overall and generation metrics vs the human reference score",
    2: "Retrieval metrics vs word-level recall@{k}",
    3: "Retrieval metrics vs the human reference score",
}


def report_version(session: Session, run_ids: list[int]) -> tuple[object, ...]:
    """What a cached report of these runs must match to be reused (see services.reports.cache)."""
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


def run_notes(run: Run) -> list[str]:
    meta = run.meta or {}
    notes = [str(n) for n in (meta.get("notes") or [])]
    if meta.get("ratings_note"):
        notes.append(str(meta["ratings_note"]))
    return notes


def agreement_block(
    session: Session, settings: Settings, run_ids: list[int], seed: int = 0
) -> dict[str, Any]:
    """Inter-rater agreement over the runs' outputs (items), excluding outputs under the minimum raters."""
    runs = [get_run(session, rid) for rid in run_ids]
    table = rating_table(session, run_ids)
    min_raters = settings.ratings.min_raters
    flagged = [oid for oid in table.output_ids if len(table.scores[oid]) < min_raters]
    used = [oid for oid in table.output_ids if len(table.scores[oid]) >= min_raters]
    block: dict[str, Any] = {
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
    block["result"] = asdict(result)
    return block


def _corr(res: stats.CorrelationResult) -> Corr:
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


def _analysis(
    aid: Literal[1, 2, 3],
    reference_name: str,
    items: list[Item],
    cols: list[Column],
    reference: dict[int, float | None],
    ref_missing: dict[int, str],
    ci: CiKind,
    seed: int,
    n_resamples: int,
    k: int,
) -> Analysis:
    rows: list[MetricRow] = []
    vectors: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for col in cols:
        x, y, excluded = _vectors(items, col, reference, ref_missing)
        hib = _higher_is_better(col)
        library, kind = _library_kind(col)
        if x.size >= 3 and stats.near_constant(x):
            why = "near-constant metric: fewer than 3 items differ from its most common value"
            rows.append(
                MetricRow(
                    metric=col.name,
                    library=library,
                    kind=kind,
                    higher_is_better=hib,
                    n=int(x.size),
                    excluded=dict(excluded),
                    pearson=_undefined(why),
                    spearman=_undefined(why),
                    kendall=_undefined(why),
                    oriented_r=None,
                )
            )
            continue
        method_ci: Any = "bca" if ci == "bca" else "analytic"
        corr = {
            m: stats.correlation(x, y, m, ci=method_ci, n_resamples=n_resamples, seed=seed)
            for m in ("pearson", "spearman", "kendall")
        }
        r = corr["pearson"].estimate
        rows.append(
            MetricRow(
                metric=col.name,
                library=library,
                kind=kind,
                higher_is_better=hib,
                n=int(x.size),
                excluded=dict(excluded),
                pearson=_corr(corr["pearson"]),
                spearman=_corr(corr["spearman"]),
                kendall=_corr(corr["kendall"]),
                oriented_r=None if r is None else (r if hib else -r),
            )
        )
        vectors[col.name] = (x, y)
    defined = [row for row in rows if row.oriented_r is not None]
    best = max(defined, key=lambda row: row.oriented_r or -2.0) if defined else None
    note = None
    if best is not None:
        _compare(
            best,
            defined,
            items,
            {c.name: c for c in cols},
            reference,
            n_resamples if ci == "bca" else 0,
            seed,
        )
    else:
        note = "no metric has a defined correlation in this analysis"
    rows.sort(key=lambda row: (row.oriented_r is None, -(row.oriented_r or 0.0), row.metric))
    return Analysis(
        id=aid,
        title=TITLES[aid].format(k=k),
        reference=reference_name,
        metrics=rows,
        best=best.metric if best else None,
        note=note,
    )


def _compare(
    best: MetricRow,
    rows: list[MetricRow],
    items: list[Item],
    cols: dict[str, Column],
    reference: dict[int, float | None],
    n_resamples: int,
    seed: int,
) -> None:
    bcol = cols[best.metric]
    bsign = 1.0 if best.higher_is_better else -1.0
    pvals: list[float | None] = []
    comps: list[Comparison] = []
    for row in rows:
        if row is best:
            continue
        col = cols[row.metric]
        sign = 1.0 if row.higher_is_better else -1.0
        common = [
            it.output_id
            for it in items
            if reference.get(it.output_id) is not None
            and it.output_id in col.values
            and it.output_id in bcol.values
        ]
        a = np.array([bsign * bcol.values[o] for o in common])
        b = np.array([sign * col.values[o] for o in common])
        h = np.array([reference[o] for o in common], dtype=np.float64)
        comp = stats.compare_correlations(a, b, h, method="pearson", n_resamples=n_resamples, seed=seed)
        c = Comparison(best=best.metric, n=comp.n, difference=comp.difference)
        if comp.undefined_reason or comp.williams is None:
            c.note = comp.undefined_reason or comp.analytic_undefined_reason
            pvals.append(None)
        else:
            c.williams_t, c.williams_p = comp.williams.statistic, comp.williams.p_value
            if comp.steiger is not None:
                c.steiger_z, c.steiger_p = comp.steiger.statistic, comp.steiger.p_value
            c.zou_low, c.zou_high = comp.zou_low, comp.zou_high
            pvals.append(comp.williams.p_value)
            if (
                comp.r_a is not None
                and comp.r_b is not None
                and comp.r_ab is not None
                and comp.r_a != comp.r_b
            ):
                try:
                    c.n_needed = stats.n_needed_to_separate(comp.r_a, comp.r_b, comp.r_ab)
                except ValueError:
                    c.n_needed = None
        comps.append(c)
        row.comparison = c
    for c, p in zip(comps, stats.adjust_p_values(pvals, "holm"), strict=True):
        c.holm_p = p
        if p is not None:
            c.indistinguishable_from_best = p >= 0.05
            if c.indistinguishable_from_best and c.n_needed is not None and c.n_needed > c.n:
                c.note = (
                    f"n = {c.n} is too small to tell these two metrics apart: about {c.n_needed} items "
                    "would be needed at power 0.8"
                )


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
    analyses = [
        _analysis(1, "human reference score", items, overall, human, human_missing, ci, seed, n_resamples, k)
    ]
    ref_col = data.columns.get(ref_name)
    if ref_col is None:
        analyses.append(
            Analysis(
                id=2,
                title=TITLES[2].format(k=k),
                reference=ref_name,
                metrics=[],
                best=None,
                note=f"{ref_name} is not computed for these runs; run a scoring job with it",
            )
        )
    else:
        recall: dict[int, float | None] = {it.output_id: ref_col.values.get(it.output_id) for it in items}
        recall_missing = {
            oid: f"reference recall {ref_col.missing.get(oid, 'not scored')}"
            for oid, v in recall.items()
            if v is None
        }
        others = [c for c in retrieval if c.name != ref_name]
        analyses.append(
            _analysis(2, ref_name, items, others, recall, recall_missing, ci, seed, n_resamples, k)
        )
    analyses.append(
        _analysis(
            3, "human reference score", items, retrieval, human, human_missing, ci, seed, n_resamples, k
        )
    )
    agreement = agreement_block(session, settings, run_ids, seed)
    result = agreement.get("result") or {}
    ceiling = result.get("attenuation_ceiling")
    by_type = []
    all_types = sorted({t for it in items for t in it.types})
    for t in all_types:
        sub = [it for it in items if t in it.types]
        metrics = {}
        for col in overall:
            x, y, _ = _vectors(sub, col, human, human_missing)
            if x.size >= 3 and stats.near_constant(x):
                metrics[col.name] = _undefined("near-constant metric on this type")
            else:
                metrics[col.name] = _corr(stats.pearson(x, y))
        by_type.append(TypeBreakdown(type=t, n_items=len(sub), metrics=metrics))
    n_ref = sum(1 for it in items if it.human is not None)
    notes = sorted({n for r in runs for n in run_notes(r)}) + retired_notes(data)
    report = ReportRead(
        dataset_id=data.dataset_id,
        runs=[RunInfo(id=r.id, name=r.name, notes=run_notes(r)) for r in runs],
        notes=notes,
        filters={"k": k, "types": types or [], "answerable": answerable, "ci": ci},
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
        bootstrap={"method": "BCa", "paired_by": "output", "seed": seed, "n_resamples": n_resamples}
        if ci == "bca"
        else None,
    )
    statuses, report.coverage = coverage.metric_status(session, settings, run_ids, items, data.columns, k)
    return honesty.finish(report, statuses)


def report_rows(report: ReportRead) -> list[dict[str, Any]]:
    """One row per metric x analysis (the CSV form)."""
    out = []
    for a in report.analyses:
        for m in a.metrics:
            c = m.comparison
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
