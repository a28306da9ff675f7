"""A run's mean human score from a few ratings and a metric on every output (prediction-powered inference,
PPI++), per metric, beside the rated-only interval, with the ratings a target width would need.

The statistics are in ``services.ppi`` (why PPI++ with a free lambda and a t quantile: see its docstring and
bench/ppi.py)."""

from __future__ import annotations

import math

import numpy as np
from sqlalchemy.orm import Session

from services import ppi, stats
from services.config import Settings
from services.errors import InvalidItems, ItemError
from services.models import Rubric
from services.reports import coverage
from services.reports.data import Column, gather
from services.reports.estimate_schemas import MeanEstimate, PpiRow, RunEstimate, WidthPlan
from services.reports.schemas import NotComputed, ReportWarning
from services.reports.service import _higher_is_better, _k_of, _library_kind
from services.runs.service import get_run
from services.tasks.active import active_rated_tasks

# bench/ppi.py checked coverage from 10 rated outputs up; below that the interval is shown with a warning.
MIN_CHECKED_RATED = 10
METHOD = (
    "PPI++ (Angelopoulos, Duchi & Zrnic 2023): lambda * mean(metric on the unrated outputs) + "
    "mean(human - lambda * metric on the rated outputs), "
    "lambda = Cov(human, metric) / ((1 + n/N) Var(metric)) "
    "tuned on the data and not clipped (the metric is on another scale than the rubric, or lower-is-better); "
    "interval: t(n - 1) with the two-sample delete-one jackknife SE (each rated and each unrated output "
    "left out in turn, lambda re-tuned each time, so the SE carries lambda's estimation). Rated-only: "
    "mean +- t(n - 1) SD / sqrt(n). Coverage on simulated tied 1-5 ratings averaged over 2 raters: "
    "94.6-96.0 % with 10-250 rated outputs (bench/ppi.py, 10,000 runs per cell)."
)
ASSUMPTIONS = [
    "The rated outputs are a random subset of the run's outputs: outputs chosen for rating because they "
    "looked easy, hard or interesting bias every estimate here.",
    "The estimate is the expected human score of this system on questions like the dataset's (the run's "
    "outputs as draws); on the run's own outputs alone the interval is conservative.",
    "A metric used as a predictor needs no calibration: a poor metric gets a lambda near 0 and an interval "
    "near the rated-only one; it cannot bias the estimate.",
]


Scale = tuple[float, float] | None


def _estimate(res: ppi.MeanInterval, method: str, scale: Scale) -> MeanEstimate:
    """The interval as reported: on a rubric, clipped to its scale (a mean of 1-5 ratings is never above
    5), saying so with the computed limits; the width stays the computed one, which the plan is about."""
    lo, hi, clipped = res.ci_low, res.ci_high, None
    if scale is not None and (lo < scale[0] or hi > scale[1]):
        lo, hi = max(lo, scale[0]), min(hi, scale[1])
        clipped = (
            f"interval clipped to the rubric's scale [{scale[0]:g}, {scale[1]:g}] (computed: "
            f"[{res.ci_low:.2f}, {res.ci_high:.2f}], width {res.width:.2f})"
        )
    return MeanEstimate(
        estimate=res.estimate,
        ci_low=lo,
        ci_high=hi,
        width=res.width,
        se=res.se,
        df=res.df,
        method=method,
        ci_clipped=clipped,
    )


def _rated_only_plan(y: np.ndarray, total: int, target: float, confidence: float) -> WidthPlan:
    sd = float(np.std(y, ddof=1))

    def width(n: int) -> float:
        return 2 * float(ppi._quantile(confidence, n - 1)) * sd / math.sqrt(n)

    needed = next((n for n in range(y.size, total + 1) if width(n) <= target), None)
    return WidthPlan(
        target_width=target,
        n_rated_needed=needed,
        more_ratings=None if needed is None else needed - y.size,
        width_if_all_rated=width(total),
        note=_plan_note(needed, y.size, total, width(total), target, "rated-only"),
    )


def _plan_note(needed: int | None, n: int, total: int, all_width: float, target: float, what: str) -> str:
    if needed is None:
        return (
            f"{what}: a width of {target:g} is not reachable on this run's {total} outputs (every output "
            f"rated would give {all_width:.3g}); rate another run's outputs or accept a wider interval"
        )
    if needed <= n:
        return f"{what}: the interval is already at most {target:g} wide"
    return f"{what}: about {needed - n} more rated outputs ({needed} of {total}) for a width of {target:g}"


def _row(
    col: Column,
    output_ids: list[int],
    rated: list[int],
    y: np.ndarray,
    confidence: float,
    target: float,
    ref_width: float,
    scale: Scale,
) -> PpiRow:
    hib = _higher_is_better(col)
    library, kind = _library_kind(col)
    scored = [col.values[o] for o in output_ids if o in col.values]
    row = PpiRow(
        metric=col.name,
        library=library,
        kind=kind,
        higher_is_better=hib,
        n_scored=len(scored),
        n_imputed=len(output_ids) - len(scored),
    )
    rated_scored = sum(1 for o in rated if o in col.values)
    if rated_scored < ppi.MIN_RATED:
        row.undefined_reason = (
            f"the metric has a value on {rated_scored} rated output(s); at least {ppi.MIN_RATED} are needed"
        )
        return row
    if stats.near_constant(np.array(scored, dtype=np.float64)):
        row.undefined_reason = "near-constant metric: fewer than 3 outputs differ from its most common value"
        return row
    fill = float(np.mean(scored))
    rated_set = set(rated)
    f_rated = np.array([col.values.get(o, fill) for o in rated], dtype=np.float64)
    f_unrated = np.array(
        [col.values.get(o, fill) for o in output_ids if o not in rated_set], dtype=np.float64
    )
    res = ppi.ppi_mean(y, f_rated, f_unrated, confidence=confidence)
    # The plan starts from the interval reported beside it (its jackknife SE, not the plug-in projection).
    plan = ppi.plan_width(y, f_rated, f_unrated, target, confidence=confidence, current_width=res.width)
    row.lam = res.lam
    if not stats.near_constant(f_rated) and float(np.std(y)) > 0:
        row.metric_human_r = float(np.corrcoef(f_rated, y)[0, 1])
    row.ppi = _estimate(res, "ppi++", scale)
    row.width_ratio = res.width / ref_width if ref_width > 0 else None
    row.plan = WidthPlan(
        target_width=target,
        n_rated_needed=plan.n_rated_needed,
        more_ratings=plan.more_ratings,
        width_if_all_rated=plan.width_if_all_rated,
        note=_plan_note(
            plan.n_rated_needed, y.size, y.size + f_unrated.size, plan.width_if_all_rated, target, "with it"
        ),
    )
    return row


def _check_rated(n_rated: int, n_items: int, under: int, min_raters: int) -> None:
    """InvalidItems (field ``ratings``) when no output is rated, fewer than ``ppi.MIN_RATED``, or all."""
    if not n_rated:
        why = (
            "the run has no rated output"
            if under == 0
            else (f"no output has ratings from {min_raters} raters ({under} have fewer)")
        )
        raise InvalidItems("a human score estimate needs ratings", [ItemError(None, "ratings", why)])
    if n_rated < ppi.MIN_RATED:
        raise InvalidItems(
            "a human score estimate needs ratings",
            [ItemError(None, "ratings", f"{n_rated} rated output(s); at least {ppi.MIN_RATED} are needed")],
        )
    if n_rated == n_items:
        raise InvalidItems(
            "every output is rated: the rated mean is the run's human score (see the report's agreement)",
            [ItemError(None, "ratings", f"all {n_items} outputs are rated; nothing is left to estimate")],
        )


def _narrowest_note(best: PpiRow | None) -> str:
    if best is None:
        return "no metric gives an estimate: the rated-only interval is the only one"
    if best.ppi is not None and best.width_ratio is not None and best.width_ratio < 1:
        return (
            f"{best.metric} gives the narrowest interval: {best.width_ratio:.0%} of the rated-only width, "
            f"worth about {1 / best.width_ratio**2:.1f}x as many ratings. Each interval holds for a metric "
            "chosen before looking; the narrowest of several, picked after seeing them, covers less "
            "(about 91 % at 95 % with 10 ratings, bench/ppi.py --selection): choose the metric on one run "
            "and use it on the next"
        )
    return "no metric narrows the rated-only interval on these ratings"


def _rated_items_text(settings: Settings, rubric: Rubric | None) -> str:
    """What a rated item is, under these settings."""
    method = settings.ratings.reference
    return (
        f"a rated item is an output with ratings from at least {settings.ratings.min_raters} rater(s); its "
        f"score is the {method} of its raters' scores"
        + (f" on the rubric {rubric.name} ({rubric.min_score}..{rubric.max_score})" if rubric else "")
        + ". Outputs rated by fewer raters count as unrated (their ratings are not used). The estimate is "
        "therefore of the mean of that per-output score, not of a single rater's."
    )


def _warnings(
    n_rated: int, n_items: int, rows: list[PpiRow], rated_only: MeanEstimate, scale: Scale
) -> list[ReportWarning]:
    """Few ratings, intervals clipped to the rubric's scale, metrics imputed on some outputs."""
    warnings: list[ReportWarning] = []
    if n_rated < MIN_CHECKED_RATED:
        warnings.append(
            ReportWarning(
                code="small_sample",
                scope="estimate",
                message=f"only {n_rated} rated outputs: coverage was checked from {MIN_CHECKED_RATED} up "
                "(bench/ppi.py); read every interval here as indicative",
                n=n_rated,
                n_needed=MIN_CHECKED_RATED,
            )
        )
    clipped = (["rated only"] if rated_only.ci_clipped else []) + [
        r.metric for r in rows if r.ppi is not None and r.ppi.ci_clipped
    ]
    if clipped and scale is not None:
        warnings.append(
            ReportWarning(
                code="ci_clipped",
                scope="estimate",
                message=f"intervals clipped to the rubric's scale [{scale[0]:g}, {scale[1]:g}] for "
                f"{', '.join(clipped)}: the computed limits went past it (each interval's ci_clipped "
                "gives them)",
                n=len(clipped),
            )
        )
    for r in rows:
        if r.n_imputed and r.ppi is not None:
            warnings.append(
                ReportWarning(
                    code="undefined",
                    scope=r.metric,
                    message=f"no value on {r.n_imputed} of {n_items} outputs: predicted by the metric's "
                    "mean there (valid, but those outputs gain nothing from the metric)",
                    n=r.n_imputed,
                )
            )
    return warnings


def build_estimate(
    session: Session,
    settings: Settings,
    run_id: int,
    *,
    k: int = 5,
    confidence: float = 0.95,
    target_width: float | None = None,
) -> RunEstimate:
    """PPI++ estimate of the run's mean human score per metric. Raises NotFound for an unknown run and
    InvalidItems (field ``ratings``) when the run has no rated output, too few, or nothing left unrated."""
    run = get_run(session, run_id)
    data = gather(session, [run_id], settings.ratings.reference, settings.ratings.min_raters)
    items = data.items
    output_ids = [it.output_id for it in items]
    rated = [it.output_id for it in items if it.human is not None]
    under = sum(1 for it in items if it.human is None and it.human_missing != "not rated")
    rubric = data.ratings.rubric
    _check_rated(len(rated), len(items), under, settings.ratings.min_raters)
    if target_width is None:
        span = (rubric.max_score - rubric.min_score) if rubric is not None else 4
        target_width = span / 8  # half a point on 1-5
    human = {it.output_id: it.human for it in items}
    y = np.array([human[o] for o in rated], dtype=np.float64)
    ref = ppi.rated_mean(y, confidence=confidence)
    cols = [c for c in data.columns.values() if _k_of(c.metric) in (None, k)]
    scale: Scale = (float(rubric.min_score), float(rubric.max_score)) if rubric is not None else None
    rows = [_row(c, output_ids, rated, y, confidence, target_width, ref.width, scale) for c in cols]
    rows.sort(key=lambda r: (r.ppi is None, r.ppi.width if r.ppi else 0.0, r.metric))
    best = next((r for r in rows if r.ppi is not None), None)
    note = _narrowest_note(best)
    rated_items = _rated_items_text(settings, rubric)
    rated_only = _estimate(ref, "t", scale)
    warnings = _warnings(len(rated), len(items), rows, rated_only, scale)
    active_tasks = active_rated_tasks(session, run_id)
    if active_tasks:
        warnings.append(
            ReportWarning(
                code="design",
                scope="estimate",
                message=f"ratings of this run come from task(s) {', '.join(map(str, active_tasks))} with the "
                "active policy: those outputs were drawn where the metric was least sure, not uniformly, so "
                "these uniform-design intervals are biased by them; GET /tasks/{id}/estimate weights them by "
                "their recorded probabilities",
                n=len(active_tasks),
            )
        )
    statuses, _ = coverage.metric_status(session, settings, [run_id], items, data.columns, k)
    not_computed = [
        NotComputed(
            metric=s.metric, library=s.library, kind=s.kind, reason=s.reason or "", reason_code=s.reason_code
        )
        for s in statuses
        if s.status == "not_computed"
    ]
    return RunEstimate(
        run_id=run.id,
        run_name=run.name,
        rubric=None
        if rubric is None
        else {"name": rubric.name, "min": rubric.min_score, "max": rubric.max_score},
        n_outputs=len(items),
        n_rated=len(rated),
        n_under_min_raters=under,
        n_unrated=len(items) - len(rated),
        rated_items=rated_items,
        confidence=confidence,
        target_width=target_width,
        rated_only=rated_only,
        rated_only_plan=_rated_only_plan(y, len(items), target_width, confidence),
        metrics=rows,
        narrowest=best.metric if best is not None else None,
        narrowest_note=note,
        method=METHOD,
        assumptions=ASSUMPTIONS,
        warnings=warnings,
        not_computed=not_computed,
    )


def estimate_rows(est: RunEstimate) -> list[dict[str, object]]:
    """The CSV form: the rated-only row first, then one row per metric."""
    base = {
        "run_id": est.run_id,
        "n_outputs": est.n_outputs,
        "n_rated": est.n_rated,
        "confidence": est.confidence,
    }
    ro = est.rated_only
    out: list[dict[str, object]] = [
        {
            **base,
            "metric": "(rated only)",
            "status": "computed",
            "lambda": 0.0,
            "estimate": ro.estimate,
            "ci_low": ro.ci_low,
            "ci_high": ro.ci_high,
            "width": ro.width,
            "width_ratio": 1.0,
            "target_width": est.target_width,
            "n_rated_needed": est.rated_only_plan.n_rated_needed,
            "more_ratings": est.rated_only_plan.more_ratings,
            "reason": "",
        }
    ]
    for r in est.metrics:
        out.append(
            {
                **base,
                "metric": r.metric,
                "status": "computed" if r.ppi else "not computed",
                "lambda": r.lam,
                "estimate": r.ppi.estimate if r.ppi else None,
                "ci_low": r.ppi.ci_low if r.ppi else None,
                "ci_high": r.ppi.ci_high if r.ppi else None,
                "width": r.ppi.width if r.ppi else None,
                "width_ratio": r.width_ratio,
                "target_width": est.target_width,
                "n_rated_needed": r.plan.n_rated_needed if r.plan else None,
                "more_ratings": r.plan.more_ratings if r.plan else None,
                "reason": r.undefined_reason or "",
            }
        )
    for nc in est.not_computed:
        out.append({**base, "metric": nc.metric, "status": "not computed", "reason": nc.reason})
    columns = list(dict.fromkeys(key for row in out for key in row))
    return [{c: row.get(c) for c in columns} for row in out]
