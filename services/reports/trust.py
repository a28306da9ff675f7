"""May a metric replace the raters, and for what? Calibration, the Alternative Annotator Test and a verdict
per metric and per use, from the same items, reference scores and ratings the report reads
(``services.reports.data.gather``).

Verdicts are yes / no / not yet, each with its rule written out and a one-line reason; "not yet" says what
is missing. Nothing here is a score of the project's own: the item-level verdict is the published test's
decision, and a use without a decision procedure here stays "not yet" with the reason.

Failure modes: NotFound for an unknown run, InvalidItems for pooled runs of different datasets (from
``gather``); a run without ratings gives every verdict "not yet".
"""

from __future__ import annotations

import math

import numpy as np
from sqlalchemy.orm import Session

from services import stats
from services.config import Settings
from services.reports.data import Column, ReportData, gather
from services.reports.service import _higher_is_better, _k_of
from services.reports.trust_schemas import (
    AltTestRead,
    CalibrationRead,
    CurvePointRead,
    ErrorRead,
    HumanBaselineRead,
    MetricTrust,
    RaterTestRead,
    TrustRead,
    VerdictRead,
)
from services.stats.alttest import DEFAULT_ALPHA
from services.stats.calibration import ErrorFigure

ITEM_RULE = (
    "yes when the Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025) passes: the metric, "
    "calibrated onto the rubric (held-out), beats at least half of the raters (omega >= 0.5), each by a "
    "one-sided paired t-test of H0 rho_rater - rho_metric >= epsilon, Benjamini-Yekutieli adjusted, alpha "
    "0.05; no when the test runs and fails; not yet when it cannot run"
)
GATING_RULE = (
    "pass/fail gating needs a target the metric's held-out TPR and TNR must reach (such as a rater's own "
    "against the others' decision); until one is computed the verdict is not yet"
)
EPSILON_RULE = (
    "epsilon is the cost-benefit margin the metric may trail a rater by; 0.2 by default, the paper's "
    "guidance for skilled raters (0.1 for experts, 0.15-0.2 for crowd workers); set it with ?epsilon="
)


def _error(fig: ErrorFigure) -> ErrorRead:
    ci = fig.interval
    ok = ci is not None and ci.low is not None
    return ErrorRead(
        estimate=fig.estimate,
        ci_low=ci.low if ok and ci is not None else None,
        ci_high=ci.high if ok and ci is not None else None,
        ci_method="jackknife-t by question" if ok else None,
        undefined_reason=fig.undefined_reason or (ci.undefined_reason if ci is not None else None),
    )


def _calibration(res: stats.CalibrationResult) -> CalibrationRead:
    return CalibrationRead(
        n=res.n,
        n_questions=res.n_questions,
        folds=res.folds,
        seed=res.seed,
        increasing=res.increasing,
        mae=_error(res.mae),
        rmse=_error(res.rmse),
        curve=[CurvePointRead(metric=p.metric, rubric=p.rubric) for p in res.curve],
        undefined_reason=res.undefined_reason,
    )


def _alt(res: stats.AltTestResult) -> AltTestRead:
    return AltTestRead(
        epsilon=res.epsilon,
        alpha=res.alpha,
        n_raters=res.n_raters,
        n_items=res.n_items,
        raters=[
            RaterTestRead(
                rater=t.rater,
                n_items=t.n_items,
                rho_metric=t.rho_metric,
                rho_rater=t.rho_rater,
                t_statistic=t.t_statistic,
                p_value=t.p_value,
                p_adjusted=t.p_adjusted,
                rejected=t.rejected,
            )
            for t in res.raters
        ],
        omega=res.omega,
        rho=res.rho,
        rho_ci_low=None if res.rho_interval is None else res.rho_interval.low,
        rho_ci_high=None if res.rho_interval is None else res.rho_interval.high,
        replace=res.replace,
        raters_needed=res.raters_needed,
        items_needed=res.items_needed,
        undefined_reason=res.undefined_reason,
    )


def item_verdict(alt: stats.AltTestResult, calibration: stats.CalibrationResult) -> VerdictRead:
    """Replace a rater for item-level scoring: the alt-test's decision, or what keeps it from running."""
    if calibration.undefined_reason is not None:
        return VerdictRead(
            use="item",
            verdict="not yet",
            rule=ITEM_RULE,
            reason=f"no calibration onto the rubric: {calibration.undefined_reason}",
        )
    if alt.replace is None:
        return VerdictRead(use="item", verdict="not yet", rule=ITEM_RULE, reason=alt.undefined_reason or "")
    won = sum(t.rejected for t in alt.raters)
    figures = (
        f"beats {won} of {alt.n_raters} raters (omega = {alt.omega:.2f}, rho = {alt.rho:.2f}) "
        f"at epsilon = {alt.epsilon:g}"
    )
    if alt.replace:
        return VerdictRead(use="item", verdict="yes", rule=ITEM_RULE, reason=f"passes the test: {figures}")
    return VerdictRead(use="item", verdict="no", rule=ITEM_RULE, reason=f"fails the test: {figures}")


def gating_verdict() -> VerdictRead:
    return VerdictRead(
        use="gating",
        verdict="not yet",
        rule=GATING_RULE,
        reason="no target for the held-out TPR/TNR is computed yet; the report's pass/fail section has "
        "the figures",
    )


def _ratings_matrix(data: ReportData, output_ids: list[int]) -> np.ndarray:
    raters = data.ratings.raters
    out = np.full((len(output_ids), len(raters)), np.nan)
    col = {r: j for j, r in enumerate(raters)}
    for i, oid in enumerate(output_ids):
        for rater, score in data.ratings.scores.get(oid, {}).items():
            out[i, col[rater]] = score
    return out


def _metric_trust(
    col: Column,
    data: ReportData,
    ratings: np.ndarray,
    rubric: tuple[float, float],
    epsilon: float,
    seed: int,
) -> MetricTrust:
    items = data.items
    x = np.array([col.values.get(it.output_id, math.nan) for it in items], dtype=np.float64)
    h = np.array([math.nan if it.human is None else it.human for it in items], dtype=np.float64)
    hib = _higher_is_better(col)
    questions = [it.question_id for it in items]
    cal = stats.calibrate(x, h, questions, rubric, higher_is_better=hib, seed=seed)
    pred = np.full(x.size, np.nan) if cal.calibrated is None else np.array(cal.calibrated)
    if cal.undefined_reason is None:
        alt = stats.alt_test(pred, ratings, data.ratings.raters, epsilon=epsilon, questions=questions)
    else:
        alt = stats.AltTestResult(
            epsilon,
            DEFAULT_ALPHA,
            0,
            0,
            (),
            None,
            None,
            None,
            f"not run: the metric has no calibration onto the rubric ({cal.undefined_reason})",
        )
    return MetricTrust(
        metric=col.name,
        higher_is_better=hib,
        calibration=_calibration(cal),
        alt_test=_alt(alt),
        verdicts=[item_verdict(alt, cal), gating_verdict()],
    )


def build_trust(
    session: Session,
    settings: Settings,
    run_ids: list[int],
    *,
    epsilon: float = stats.DEFAULT_EPSILON,
    k: int = 5,
    seed: int = 0,
) -> TrustRead:
    """Calibration, alt-test and verdicts for every metric of the runs (pooled: items = outputs, folds and
    intervals by question). Raises NotFound / InvalidItems as the report does."""
    data = gather(session, run_ids, settings.ratings.reference, settings.ratings.min_raters)
    rubric = data.ratings.rubric
    output_ids = [it.output_id for it in data.items]
    ratings = _ratings_matrix(data, output_ids)
    if rubric is None:
        return TrustRead(
            dataset_id=data.dataset_id,
            run_ids=run_ids,
            rubric_min=None,
            rubric_max=None,
            raters=data.ratings.raters,
            epsilon=epsilon,
            epsilon_rule=EPSILON_RULE,
            human_baseline=None,
            metrics=[],
            note="no ratings: nothing to calibrate a metric on or to test it against",
        )
    scale = (float(rubric.min_score), float(rubric.max_score))
    hb = stats.human_baseline(ratings, [it.question_id for it in data.items], data.ratings.raters)
    baseline = HumanBaselineRead(
        n_raters=hb.n_raters,
        n_items=hb.n_items,
        n_questions=hb.n_questions,
        mae=_error(hb.mae),
        rmse=_error(hb.rmse),
        per_rater_mae=hb.per_rater_mae,
        undefined_reason=hb.undefined_reason,
    )
    cols = sorted((c for c in data.columns.values() if _k_of(c.metric) in (None, k)), key=lambda c: c.name)
    return TrustRead(
        dataset_id=data.dataset_id,
        run_ids=run_ids,
        rubric_min=scale[0],
        rubric_max=scale[1],
        raters=data.ratings.raters,
        epsilon=epsilon,
        epsilon_rule=EPSILON_RULE,
        human_baseline=baseline,
        metrics=[_metric_trust(c, data, ratings, scale, epsilon, seed) for c in cols],
    )


def trust(session: Session, settings: Settings, run_ids: list[int], epsilon: float, seed: int) -> TrustRead:
    """``build_trust`` as the report workers call it: ``fn(session, settings, *args)``."""
    return build_trust(session, settings, run_ids, epsilon=epsilon, seed=seed)


def _fmt(e: ErrorRead) -> str:
    if e.estimate is None:
        return f"undefined ({e.undefined_reason})"
    if e.ci_low is None or e.ci_high is None:
        return f"{e.estimate:.3f} (no interval: {e.undefined_reason})"
    return f"{e.estimate:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}]"


def markdown(t: TrustRead) -> str:
    """The trust analysis as plain sentences and one table, for a pull request or a wiki."""
    runs = ", ".join(map(str, t.run_ids))
    lines = [f"# May a metric replace the raters? (run{'s' if len(t.run_ids) > 1 else ''} {runs})", ""]
    if t.note:
        return "\n".join([*lines, t.note, ""])
    lines.append(f"Raters: {', '.join(t.raters)}; rubric {t.rubric_min:g}..{t.rubric_max:g}.")
    lines.append(f"epsilon = {t.epsilon:g}: {t.epsilon_rule}.")
    if t.human_baseline is not None:
        hb = t.human_baseline
        lines.append(
            f"Human baseline (each rater vs the mean of the others): MAE {_fmt(hb.mae)}, "
            f"RMSE {_fmt(hb.rmse)}."
        )
    lines += [
        "",
        "| metric | held-out MAE | held-out RMSE | omega | rho | item scoring | gating |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in t.metrics:
        a = m.alt_test
        v = {x.use: x for x in m.verdicts}
        omega = "—" if a.omega is None else f"{a.omega:.2f}"
        rho = "—" if a.rho is None else f"{a.rho:.2f}"
        lines.append(
            f"| {m.metric} | {_fmt(m.calibration.mae)} | {_fmt(m.calibration.rmse)} | {omega} | {rho} "
            f"| {v['item'].verdict} | {v['gating'].verdict} |"
        )
    lines += ["", "## Verdicts", ""]
    for m in t.metrics:
        for x in m.verdicts:
            lines.append(f"- {m.metric}, {x.use}: **{x.verdict}**: {x.reason}.")
    lines += ["", "## Rules", "", f"- item scoring: {ITEM_RULE}.", f"- gating: {GATING_RULE}.", ""]
    return "\n".join(lines)
