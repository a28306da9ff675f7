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
from services.errors import InvalidItems
from services.reports.comparison_schemas import SystemMetric, SystemsRead
from services.reports.data import Column, ReportData, gather
from services.reports.presentation.markdown import _cell as md_cell
from services.reports.presentation.markdown import _text as md_text
from services.reports.service import _higher_is_better, _k_of
from services.reports.stability import UNSTABLE_ICC_A1, judge_retest
from services.reports.systems import MIN_RUNS, systems
from services.reports.trust_schemas import (
    AltTestRead,
    CalibrationRead,
    CurvePointRead,
    ErrorRead,
    GatingRead,
    HumanBaselineRead,
    MetricTrust,
    NonInferiorityRead,
    RankingRead,
    RateRead,
    RaterTestRead,
    TrustRead,
    Verdict,
    VerdictRead,
)
from services.stats.alttest import DEFAULT_ALPHA
from services.stats.calibration import ErrorFigure
from services.stats.uses import (
    DecisionRates,
    NonInferiority,
    Rate,
    decision_rates,
    non_inferiority,
    paired_leave_out,
    questions_for_power,
)

ITEM_RULE = (
    "yes when the Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025) passes: the metric, "
    "calibrated onto the rubric (held-out), beats at least half of the raters (omega >= 0.5), each by a "
    "one-sided paired t-test of H0 rho_rater - rho_metric >= epsilon, Benjamini-Yekutieli adjusted, alpha "
    "0.05; or when its held-out MAE is shown not worse than the human baseline's by more than epsilon "
    "rubric points (non-inferiority: one-sided 95 % upper limit of MAE_metric - MAE_human, jackknife-t by "
    "question, below epsilon); no when the test runs and fails, or cannot run and the MAE is shown worse by "
    "more than epsilon (one-sided lower limit above it); not yet otherwise"
)
RANKING_RULE = (
    "from the system-level report over >= 3 runs of the dataset: yes when Kendall's tau-b between the human "
    "and the metric run means has a 95 % interval above 0 and the metric orders every pair of runs the "
    "humans tell apart (paired t-test, Holm p < 0.05; at least one such pair) as the humans do; no when the "
    "interval lies below 0 or a pair both sides tell apart is ordered the other way round; not yet otherwise"
)
GATING_RULE = (
    "pass = score >= the threshold on the rubric, the metric's score its held-out calibrated value: yes "
    "when its TPR and its TNR are each shown not worse than the raters' own (each rater against the mean "
    "of the others, averaged) by more than epsilon (one-sided 95 % upper limit of the difference, "
    "jackknife-t by question, below epsilon); no when either is shown worse by more than epsilon; not yet "
    "otherwise"
)
NOT_YET_RULE = (
    "not yet names the missing or undecided figure and the questions that would decide it at power 0.8: "
    "(z_0.95 + z_0.8)^2 sigma^2 / (epsilon - d)^2, sigma^2 = G se^2, the power formula of the comparisons"
)
# Test-retest ICC(A,1) of a judge's repeats below this is read as unstable (Koo & Li 2016: below 0.75 is
# at best moderate reliability), as the stability report reads it.
STABLE_ICC = UNSTABLE_ICC_A1
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
            RaterTestRead.model_validate(t, from_attributes=True)  # the same fields, by name
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


def _ni(res: NonInferiority) -> NonInferiorityRead:
    return NonInferiorityRead.model_validate(res, from_attributes=True)  # the same fields, by name


def _rate(r: Rate) -> RateRead:
    return RateRead(estimate=r.estimate, ci_low=r.low, ci_high=r.high, undefined_reason=r.undefined_reason)


def _further(needed: int | None, have: int, ratings_per_question: float) -> int | None:
    """Ratings beyond those given for ``needed`` questions at the current ratings per question."""
    if needed is None:
        return None
    return max(0, math.ceil((needed - have) * ratings_per_question))


def mae_test(cal: stats.CalibrationResult, hb: stats.HumanBaseline, epsilon: float) -> NonInferiority:
    """Non-inferiority of the held-out MAE against the human baseline's, paired by question."""
    a, b = cal.mae, hb.mae
    if a.estimate is None or b.estimate is None or a.leave_out is None or b.leave_out is None:
        why = a.undefined_reason or b.undefined_reason or "no leave-one-question-out values"
        return NonInferiority(None, epsilon, DEFAULT_ALPHA, None, 0, None, None, None, None, 0, None, why)
    d, loo = paired_leave_out(a.estimate, a.leave_out, b.estimate, b.leave_out)
    return non_inferiority(d, loo, epsilon, alpha=DEFAULT_ALPHA)


def _ni_text(name: str, ni: NonInferiority) -> str:
    if ni.difference is None or ni.upper is None or ni.lower is None:
        return f"{name}: no test ({ni.undefined_reason})"
    return (
        f"{name} {ni.difference:+.3f} (one-sided 95 % limits {ni.lower:+.3f} .. {ni.upper:+.3f}) against "
        f"epsilon {ni.margin:g}: {ni.decision}"
    )


def item_verdict(
    alt: stats.AltTestResult,
    calibration: stats.CalibrationResult,
    mae: NonInferiority | None = None,
    ratings_per_question: float = 0.0,
    stability: str | None = None,
    n_raters: int | None = None,
) -> VerdictRead:
    """Replace a rater for item-level scoring: the alt-test's decision, the MAE non-inferiority test, or what
    keeps either from deciding (ITEM_RULE)."""
    note = f"; {stability}" if stability else ""

    def verdict(v: Verdict, reason: str, **kw: int | str | None) -> VerdictRead:
        return VerdictRead(use="item", verdict=v, rule=ITEM_RULE, reason=reason + note, **kw)

    if calibration.undefined_reason is not None:
        return verdict(
            "not yet",
            f"no calibration onto the rubric: {calibration.undefined_reason}",
            missing="calibration onto the rubric",
        )
    mae_line = "" if mae is None else "; held-out " + _ni_text("MAE - human MAE", mae)
    if alt.replace is not None:
        won = sum(t.rejected for t in alt.raters)
        figures = (
            f"beats {won} of {alt.n_raters} raters (omega = {alt.omega:.2f}, rho = {alt.rho:.2f}) "
            f"at epsilon = {alt.epsilon:g}"
        )
        if alt.replace:
            return verdict("yes", f"passes the Alternative Annotator Test: {figures}")
        if mae is not None and mae.decision == "non-inferior":
            return verdict("yes", f"MAE within epsilon of the raters{mae_line}; the alt-test {figures}")
        return verdict("no", f"fails the Alternative Annotator Test: {figures}{mae_line}")
    if mae is not None and mae.decision == "non-inferior":
        return verdict("yes", f"MAE within epsilon of the raters{mae_line}; alt-test: {alt.undefined_reason}")
    if mae is not None and mae.decision == "inferior":
        return verdict("no", f"MAE worse than the raters' by more than epsilon{mae_line}")
    needed = None if mae is None else mae.questions_needed
    have = 0 if mae is None else mae.n_questions
    raters = max(0, alt.raters_needed - (alt.n_raters if n_raters is None else n_raters))
    return verdict(
        "not yet",
        f"the alt-test cannot run ({alt.undefined_reason}){mae_line}"
        + (f"; about {needed} questions would decide the MAE test" if needed else ""),
        missing="Alternative Annotator Test and MAE non-inferiority",
        questions_needed=needed,
        further_ratings=_further(needed, have, ratings_per_question),
        raters_needed=raters or None,
    )


def gating_verdict(
    g: DecisionRates | None,
    tpr: NonInferiority | None,
    tnr: NonInferiority | None,
    ratings_per_question: float = 0.0,
    why: str | None = None,
) -> VerdictRead:
    """Pass/fail gating at the rubric threshold (GATING_RULE)."""
    if g is None or tpr is None or tnr is None:
        return VerdictRead(
            use="gating",
            verdict="not yet",
            rule=GATING_RULE,
            reason=why or "no held-out pass/fail decisions",
            missing="held-out TPR and TNR",
        )
    figs = (
        f"at threshold {g.threshold:g}: TPR {_pct(g.tpr)} vs raters {_pct(g.human_tpr)}, "
        f"TNR {_pct(g.tnr)} vs raters {_pct(g.human_tnr)}"
    )
    tests = f"{_ni_text('TPR shortfall', tpr)}; {_ni_text('TNR shortfall', tnr)}"
    if tpr.decision == "non-inferior" and tnr.decision == "non-inferior":
        return VerdictRead(use="gating", verdict="yes", rule=GATING_RULE, reason=f"{figs}; {tests}")
    if "inferior" in (tpr.decision, tnr.decision):
        return VerdictRead(use="gating", verdict="no", rule=GATING_RULE, reason=f"{figs}; {tests}")
    open_ = [t for t in (tpr, tnr) if t.decision != "non-inferior"]
    needed_list = [t.questions_needed for t in open_ if t.questions_needed is not None]
    needed = max(needed_list) if needed_list else None
    names = [n for n, t in (("TPR", tpr), ("TNR", tnr)) if t.decision != "non-inferior"]
    have = max(t.n_questions for t in open_)
    return VerdictRead(
        use="gating",
        verdict="not yet",
        rule=GATING_RULE,
        reason=f"{figs}; {tests}" + (f"; about {needed} questions would decide it" if needed else ""),
        missing=" and ".join(names) + " non-inferiority",
        questions_needed=needed,
        further_ratings=_further(needed, have, ratings_per_question),
    )


def _pct(r: Rate) -> str:
    if r.estimate is None:
        return f"undefined ({r.undefined_reason})"
    if r.low is None or r.high is None:
        return f"{r.estimate:.2f}"
    return f"{r.estimate:.2f} [{r.low:.2f}, {r.high:.2f}]"


def _ranking(sm: SystemMetric, n_runs: int) -> RankingRead:
    dist = [p for p in sm.pairs if p.human_distinguishable]
    return RankingRead(
        n_runs=n_runs,
        n_questions=sm.n_questions,
        kendall=sm.kendall.estimate,
        kendall_ci_low=sm.kendall.ci_low,
        kendall_ci_high=sm.kendall.ci_high,
        ci_method=sm.kendall.ci_method,
        pairwise_correct=sm.pairwise_correct,
        pairwise_total=sm.pairwise_total,
        human_distinguishable=len(dist),
        agreeing_distinguishable=sum(p.same_winner is True for p in dist),
        confident_reversals=sum(p.same_winner is False and bool(p.metric_distinguishable) for p in dist),
        undefined_reason=sm.kendall.undefined_reason,
    )


def _pair_questions_needed(sm: SystemMetric) -> int | None:
    """Questions for the closest pair of runs the humans do not yet tell apart: the paired t-test's power
    formula, two-sided alpha 0.05, power 0.8, sd of the per-question difference from its interval."""
    from scipy import stats as sps

    needed: list[int] = []
    for p in sm.pairs:
        h = p.human
        if p.human_distinguishable or h.difference is None or h.ci_low is None or h.ci_high is None:
            continue
        if h.difference == 0.0 or h.n < 2:
            continue
        sd = (h.ci_high - h.ci_low) / (2 * float(sps.t.ppf(0.975, h.n - 1))) * math.sqrt(h.n)
        n = questions_for_power(sd**2, h.difference, DEFAULT_ALPHA / 2)
        if n is not None:
            needed.append(n)
    return min(needed) if needed else None


def ranking_verdict(
    rank: RankingRead | None, sm: SystemMetric | None, why: str | None, ratings_per_question: float = 0.0
) -> VerdictRead:
    """Ranking system versions (RANKING_RULE)."""
    if rank is None or sm is None:
        return VerdictRead(
            use="ranking",
            verdict="not yet",
            rule=RANKING_RULE,
            reason=why or "no system-level figures",
            missing="Kendall tau between the run rankings (needs >= 3 runs)",
        )
    lo, hi = rank.kendall_ci_low, rank.kendall_ci_high
    tau = "undefined" if rank.kendall is None else f"{rank.kendall:.2f}"
    ci = "" if lo is None or hi is None else f" [{lo:.2f}, {hi:.2f}]"
    figs = (
        f"over {rank.n_runs} runs tau-b = {tau}{ci}, {rank.pairwise_correct} of {rank.pairwise_total} pairs "
        f"ordered as the humans; {rank.agreeing_distinguishable} of the {rank.human_distinguishable} pairs "
        f"the humans tell apart"
    )
    if (hi is not None and hi < 0) or rank.confident_reversals:
        return VerdictRead(use="ranking", verdict="no", rule=RANKING_RULE, reason=figs)
    if (
        lo is not None
        and lo > 0
        and rank.human_distinguishable > 0
        and rank.agreeing_distinguishable == rank.human_distinguishable
    ):
        return VerdictRead(use="ranking", verdict="yes", rule=RANKING_RULE, reason=figs)
    needed = _pair_questions_needed(sm) if rank.human_distinguishable == 0 else None
    missing = (
        "a pair of runs the humans tell apart"
        if rank.human_distinguishable == 0
        else "a tau-b interval above 0"
        if lo is None or lo <= 0
        else "agreement on every pair the humans tell apart"
    )
    return VerdictRead(
        use="ranking",
        verdict="not yet",
        rule=RANKING_RULE,
        reason=figs
        + (f"; about {needed} questions would separate the closest pair of runs" if needed else ""),
        missing=missing,
        questions_needed=needed,
        further_ratings=_further(needed, rank.n_questions, ratings_per_question),
    )


def _ratings_matrix(data: ReportData, output_ids: list[int]) -> np.ndarray:
    raters = data.ratings.raters
    out = np.full((len(output_ids), len(raters)), np.nan)
    col = {r: j for j, r in enumerate(raters)}
    for i, oid in enumerate(output_ids):
        for rater, score in data.ratings.scores.get(oid, {}).items():
            out[i, col[rater]] = score
    return out


class _Shared:
    """What every metric's analysis reads: the ratings, the human baseline, the system level."""

    def __init__(
        self,
        data: ReportData,
        ratings: np.ndarray,
        rubric: tuple[float, float],
        hb: stats.HumanBaseline,
        epsilon: float,
        seed: int,
        systems: SystemsRead | None,
        systems_why: str | None,
        stability: dict[str, float | None],
    ) -> None:
        self.data, self.ratings, self.rubric, self.hb = data, ratings, rubric, hb
        self.epsilon, self.seed = epsilon, seed
        self.systems, self.systems_why, self.stability = systems, systems_why, stability
        self.threshold = stats.default_pass_threshold(*rubric)
        # The items' questions coded once for every metric's calibration, alt-test and decision rates.
        self.questions = stats.QuestionIndex.of([it.question_id for it in data.items])
        self.human = np.array(
            [math.nan if it.human is None else it.human for it in data.items], dtype=np.float64
        )
        self.per_question = float(np.isfinite(ratings).sum()) / (len(self.questions.names) or 1)


def _stability_note(icc: float | None) -> str:
    if icc is None:
        return "judge repeats: test-retest ICC(A,1) undefined"
    if icc < STABLE_ICC:
        return f"unstable judge: test-retest ICC(A,1) = {icc:.2f} across repeats, below {STABLE_ICC:g}"
    return (
        f"judge repeats: test-retest ICC(A,1) = {icc:.2f} (at least {STABLE_ICC:g}); the repeat mean is used"
    )


def _metric_trust(col: Column, sh: _Shared) -> MetricTrust:
    data, epsilon = sh.data, sh.epsilon
    items = data.items
    values = col.values
    x = np.fromiter((values.get(it.output_id, math.nan) for it in items), np.float64, len(items))
    h = sh.human
    hib = _higher_is_better(col)
    questions = sh.questions
    cal = stats.calibrate(x, h, questions, sh.rubric, higher_is_better=hib, seed=sh.seed)
    pred = np.full(x.size, np.nan) if cal.calibrated is None else np.array(cal.calibrated)
    if cal.undefined_reason is None:
        alt = stats.alt_test(pred, sh.ratings, data.ratings.raters, epsilon=epsilon, questions=questions)
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
    mae = mae_test(cal, sh.hb, epsilon)
    stab = None
    if col.name in sh.stability:
        stab = _stability_note(sh.stability[col.name])
    gating: GatingRead | None = None
    if cal.undefined_reason is None:
        rates = decision_rates(pred, h, sh.ratings, questions, sh.threshold)
        tpr = _rate_test(rates.human_tpr, rates.tpr, epsilon)
        tnr = _rate_test(rates.human_tnr, rates.tnr, epsilon)
        gating = GatingRead(
            threshold=rates.threshold,
            n=rates.n,
            n_pass=rates.n_pass,
            n_fail=rates.n_fail,
            tpr=_rate(rates.tpr),
            tnr=_rate(rates.tnr),
            human_tpr=_rate(rates.human_tpr),
            human_tnr=_rate(rates.human_tnr),
            tpr_test=_ni(tpr),
            tnr_test=_ni(tnr),
        )
        gate = gating_verdict(rates, tpr, tnr, sh.per_question)
    else:
        gate = gating_verdict(None, None, None, why=f"no calibration onto the rubric: {cal.undefined_reason}")
    sm = None
    if sh.systems is not None:
        sm = next((m for m in sh.systems.metrics if m.metric == col.name), None)
    ranking = None if sm is None or sh.systems is None else _ranking(sm, len(sh.systems.runs))
    why = sh.systems_why
    if sh.systems is not None and sm is None:
        nc = next((c.reason for c in sh.systems.not_computed if c.metric == col.name), "not in the report")
        why = f"the system level has no figure for this metric: {nc}"
    return MetricTrust(
        metric=col.name,
        higher_is_better=hib,
        calibration=_calibration(cal),
        alt_test=_alt(alt),
        mae_vs_human=_ni(mae),
        gating=gating,
        ranking=ranking,
        stability=stab,
        verdicts=[
            item_verdict(alt, cal, mae, sh.per_question, stab, len(data.ratings.raters)),
            ranking_verdict(ranking, sm, why, sh.per_question),
            gate,
        ],
    )


def _rate_test(human: Rate, metric: Rate, epsilon: float) -> NonInferiority:
    """Non-inferiority of a decision rate: human - metric against epsilon, paired by question."""
    if human.estimate is None or metric.estimate is None or not human.leave_out or not metric.leave_out:
        why = metric.undefined_reason or human.undefined_reason or "no leave-one-question-out values"
        return NonInferiority(None, epsilon, DEFAULT_ALPHA, None, 0, None, None, None, None, 0, None, why)
    d, loo = paired_leave_out(human.estimate, human.leave_out, metric.estimate, metric.leave_out)
    return non_inferiority(d, loo, epsilon, alpha=DEFAULT_ALPHA)


def _system_level(
    session: Session, settings: Settings, run_ids: list[int], k: int, seed: int
) -> tuple[SystemsRead | None, str | None]:
    distinct = list(dict.fromkeys(run_ids))
    if len(distinct) < MIN_RUNS:
        return None, (
            f"ranking needs the system-level report over at least {MIN_RUNS} runs of the dataset "
            f"({len(distinct)} given: pool runs with ?runs= / --runs)"
        )
    try:
        return systems(session, settings, distinct, k=k, seed=seed), None
    except InvalidItems as exc:
        return None, f"no system level: {exc}"


def _repeat_icc(session: Session, run_ids: list[int]) -> dict[str, float | None]:
    """Test-retest ICC(A,1) of each judge metric scored with repeats >= 2, over the runs' outputs
    (``stability.judge_retest``: the figure of the stability report)."""
    retests = judge_retest(session, list(dict.fromkeys(run_ids)), threshold=STABLE_ICC)
    return {metric: r.icc_a1 for metric, r in retests.items() if r.repeats >= 2}


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
    intervals by question; ranking from the system level when >= 3 runs are pooled). Raises NotFound /
    InvalidItems as the report does."""
    data = gather(session, run_ids, settings.ratings.reference, settings.ratings.min_raters)
    rubric = data.ratings.rubric
    output_ids = [it.output_id for it in data.items]
    ratings = _ratings_matrix(data, output_ids)
    rules = {"item": ITEM_RULE, "ranking": RANKING_RULE, "gating": GATING_RULE, "not yet": NOT_YET_RULE}
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
            rules=rules,
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
    sys_read, sys_why = _system_level(session, settings, run_ids, k, seed)
    shared = _Shared(
        data, ratings, scale, hb, epsilon, seed, sys_read, sys_why, _repeat_icc(session, run_ids)
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
        metrics=[_metric_trust(c, shared) for c in cols],
        rules=rules,
        pass_threshold=shared.threshold,
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


CSV_HEADER = (
    "metric",
    "use",
    "verdict",
    "reason",
    "missing",
    "questions_needed",
    "further_ratings",
    "raters_needed",
    "held_out_mae",
    "mae_ci_low",
    "mae_ci_high",
    "human_mae",
    "omega",
    "rho",
)


def rows(t: TrustRead) -> list[dict[str, object]]:
    """One row per metric and use, with the figures that decide the item verdict beside it."""
    human = None if t.human_baseline is None else t.human_baseline.mae.estimate
    out: list[dict[str, object]] = []
    for m in t.metrics:
        for v in m.verdicts:
            out.append(
                {
                    "metric": m.metric,
                    "use": v.use,
                    "verdict": v.verdict,
                    "reason": v.reason,
                    "missing": v.missing,
                    "questions_needed": v.questions_needed,
                    "further_ratings": v.further_ratings,
                    "raters_needed": v.raters_needed,
                    "held_out_mae": m.calibration.mae.estimate,
                    "mae_ci_low": m.calibration.mae.ci_low,
                    "mae_ci_high": m.calibration.mae.ci_high,
                    "human_mae": human,
                    "omega": m.alt_test.omega,
                    "rho": m.alt_test.rho,
                }
            )
    return out


def sentences(t: TrustRead) -> list[str]:
    """The analysis as plain sentences (for the report page and the demo): one per metric and use."""
    out = []
    for m in t.metrics:
        for v in m.verdicts:
            what = {
                "item": "replace a rater",
                "ranking": "rank system versions",
                "gating": "gate at the threshold",
            }
            answer = {"yes": "yes", "no": "no", "not yet": "not yet"}[v.verdict]
            out.append(f"May {m.metric} {what[v.use]}? {answer.capitalize()}: {v.reason}.")
    return out


def markdown(t: TrustRead) -> str:
    """The trust analysis as plain sentences and one table, for a pull request or a wiki (names and
    reasons HTML-escaped, as the other Markdown reports)."""
    runs = ", ".join(map(str, t.run_ids))
    lines = [f"# May a metric replace the raters? (run{'s' if len(t.run_ids) > 1 else ''} {runs})", ""]
    if t.note:
        return "\n".join([*lines, md_text(t.note), ""])
    lines.append(f"Raters: {md_text(', '.join(t.raters))}; rubric {t.rubric_min:g}..{t.rubric_max:g}.")
    lines.append(f"epsilon = {t.epsilon:g}: {t.epsilon_rule}.")
    if t.human_baseline is not None:
        hb = t.human_baseline
        lines.append(
            f"Human baseline (each rater vs the mean of the others): MAE {md_text(_fmt(hb.mae))}, "
            f"RMSE {md_text(_fmt(hb.rmse))}."
        )
    lines += [
        "",
        "| metric | held-out MAE | held-out RMSE | omega | rho | item scoring | ranking | gating |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in t.metrics:
        a = m.alt_test
        v = {x.use: x for x in m.verdicts}
        omega = "—" if a.omega is None else f"{a.omega:.2f}"
        rho = "—" if a.rho is None else f"{a.rho:.2f}"
        lines.append(
            f"| {md_cell(m.metric)} | {md_cell(_fmt(m.calibration.mae))} "
            f"| {md_cell(_fmt(m.calibration.rmse))} "
            f"| {omega} | {rho} | {v['item'].verdict} | {v['ranking'].verdict} | {v['gating'].verdict} |"
        )
    lines += ["", "## Verdicts", ""]
    for m in t.metrics:
        for x in m.verdicts:
            lines.append(f"- {md_text(m.metric)}, {x.use}: **{x.verdict}**: {md_text(x.reason)}.")
    lines += ["", "## Rules", ""]
    lines += [f"- {use}: {md_text(rule)}." for use, rule in t.rules.items()]
    return "\n".join([*lines, ""])


def html_section(t: TrustRead) -> str:
    """The trust analysis on the report page: plain sentences, one per metric and use, and the rules."""
    from html import escape

    out = ["<section id='trust-section'><h2 id='trust'>May a metric replace the raters?</h2>"]
    if t.note:
        return "".join([*out, f"<p>{escape(t.note)}</p></section>"])
    hb = t.human_baseline
    intro = (
        f"{len(t.raters)} raters ({escape(', '.join(t.raters))}) on a {t.rubric_min:g}–{t.rubric_max:g} "
        f"rubric. Each metric is mapped onto the rubric by isotonic regression fitted on other questions, "
        f"then "
        f"compared with the raters' mean."
    )
    if hb is not None:
        intro += f" A rater differs from the mean of the others by {escape(_fmt(hb.mae))} on average (MAE)."
    out.append(f"<p>{intro}</p>")
    for m in t.metrics:
        mae = escape(_fmt(m.calibration.mae))
        out.append(
            f"<h3 class='trust-metric'>{escape(m.metric)}</h3><p>Held-out MAE {mae}.</p><ul class='verdicts'>"
        )
        for line, v in zip(sentences(t.model_copy(update={"metrics": [m]})), m.verdicts, strict=True):
            out.append(f"<li class='verdict-{v.verdict.replace(' ', '-')}'>{escape(line)}</li>")
        out.append("</ul>")
    rules = "".join(f"<li><b>{escape(use)}</b>: {escape(rule)}</li>" for use, rule in t.rules.items())
    out.append(
        f"<details><summary>How each verdict is decided (epsilon = {t.epsilon:g})</summary>"
        f"<ul>{rules}</ul><p class='muted'>{escape(t.epsilon_rule)}</p></details></section>"
    )
    return "".join(out)
