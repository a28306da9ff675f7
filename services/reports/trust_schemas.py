"""The response of ``GET /runs/{id}/trust``: per metric, its calibration onto the rubric, the Alternative
Annotator Test and a verdict per use, each verdict with its rule and a one-line reason."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Verdict = Literal["yes", "no", "not yet"]
Use = Literal["item", "ranking", "gating"]
Decision = Literal["non-inferior", "inferior", "undecided"]


class ErrorRead(BaseModel):
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None = Field(description="jackknife-t by question (leave one question out, t_{G-1})")
    undefined_reason: str | None = None


class CurvePointRead(BaseModel):
    metric: float
    rubric: float


class CalibrationRead(BaseModel):
    n: int = Field(description="items with a metric value and a human reference score")
    n_questions: int
    folds: int
    seed: int
    increasing: bool = Field(description="the map's direction, from the metric's higher_is_better")
    mae: ErrorRead = Field(
        description="held-out mean absolute error of the calibrated metric vs the reference"
    )
    rmse: ErrorRead
    curve: list[CurvePointRead] = Field(description="the map fitted on every item (for the figure only)")
    undefined_reason: str | None = None


class HumanBaselineRead(BaseModel):
    n_raters: int
    n_items: int
    n_questions: int
    mae: ErrorRead = Field(description="each rater vs the mean of the others, averaged over raters")
    rmse: ErrorRead
    per_rater_mae: dict[str, float]
    undefined_reason: str | None = None


class RaterTestRead(BaseModel):
    rater: str
    n_items: int
    rho_metric: float = Field(description="share of items where the metric is at least as close as the rater")
    rho_rater: float = Field(description="share of items where the rater is at least as close as the metric")
    t_statistic: float
    p_value: float = Field(description="one-sided paired t-test of H0: rho_rater - rho_metric >= epsilon")
    p_adjusted: float = Field(description="Benjamini-Yekutieli across the raters")
    rejected: bool


class AltTestRead(BaseModel):
    epsilon: float
    alpha: float
    n_raters: int
    n_items: int
    raters: list[RaterTestRead]
    omega: float | None = Field(description="winning rate: share of raters whose null is rejected")
    rho: float | None = Field(description="average advantage probability: mean over raters of rho_metric")
    rho_ci_low: float | None = Field(default=None, description="jackknife-t by question")
    rho_ci_high: float | None = None
    replace: bool | None = Field(description="omega >= 0.5")
    raters_needed: int
    items_needed: int = Field(description="items per rater, rated by that rater and 2 others")
    undefined_reason: str | None = None


class VerdictRead(BaseModel):
    use: Use
    verdict: Verdict
    rule: str
    reason: str
    missing: str | None = Field(default=None, description="not yet: the figure that is missing or undecided")
    questions_needed: int | None = Field(
        default=None, description="not yet: questions that would decide it at power 0.8 (all, not further)"
    )
    further_ratings: int | None = Field(
        default=None, description="not yet: ratings beyond those given, at the current ratings per question"
    )
    raters_needed: int | None = Field(default=None, description="not yet: raters to add for the alt-test")


class NonInferiorityRead(BaseModel):
    """One-sided test that the metric is not worse than the human yardstick by more than the margin."""

    difference: float | None = Field(description="how much worse the metric is (metric - human for an error)")
    margin: float
    alpha: float
    se: float | None = Field(description="jackknife SE by question, both sides recomputed")
    df: int
    lower: float | None = Field(description="one-sided (1 - alpha) lower limit of the difference")
    upper: float | None = Field(description="one-sided (1 - alpha) upper limit of the difference")
    p_value: float | None = Field(description="H0: difference >= margin (t with df)")
    decision: Decision | None
    n_questions: int
    questions_needed: int | None = Field(description="undecided: questions for power 0.8 on its side")
    undefined_reason: str | None = None


class RateRead(BaseModel):
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    undefined_reason: str | None = None


class GatingRead(BaseModel):
    """Pass/fail at the rubric threshold: the calibrated (held-out) metric's decisions vs the reference's,
    beside each rater's against the mean of the others."""

    threshold: float = Field(description="pass = score >= threshold on the rubric")
    n: int
    n_pass: int
    n_fail: int
    tpr: RateRead = Field(description="share of reference passes the metric passes (jackknife-t)")
    tnr: RateRead = Field(description="share of reference fails the metric fails")
    human_tpr: RateRead = Field(description="each rater vs the others' mean, averaged over raters")
    human_tnr: RateRead
    tpr_test: NonInferiorityRead = Field(description="human TPR - metric TPR against epsilon")
    tnr_test: NonInferiorityRead


class RankingRead(BaseModel):
    """From the system-level report over the pooled runs."""

    n_runs: int
    n_questions: int
    kendall: float | None = Field(description="Kendall tau-b between human and metric run means")
    kendall_ci_low: float | None
    kendall_ci_high: float | None
    ci_method: str | None
    pairwise_correct: int = Field(description="pairs of runs ordered as the humans order them")
    pairwise_total: int
    human_distinguishable: int = Field(description="pairs the humans tell apart (Holm p < 0.05)")
    agreeing_distinguishable: int = Field(description="of those, pairs the metric orders the same way")
    confident_reversals: int = Field(description="pairs both sides tell apart, ordered the other way round")
    undefined_reason: str | None = None


class MetricTrust(BaseModel):
    metric: str
    higher_is_better: bool
    calibration: CalibrationRead
    alt_test: AltTestRead
    mae_vs_human: NonInferiorityRead = Field(
        description="held-out MAE - human baseline MAE against epsilon (rubric points)"
    )
    gating: GatingRead | None
    ranking: RankingRead | None
    stability: str | None = Field(
        default=None, description="judge repeats: the test-retest ICC(A,1) and whether it is below the bar"
    )
    verdicts: list[VerdictRead]


class TrustRead(BaseModel):
    dataset_id: int
    run_ids: list[int]
    rubric_min: float | None
    rubric_max: float | None
    raters: list[str]
    epsilon: float
    epsilon_rule: str
    human_baseline: HumanBaselineRead | None
    metrics: list[MetricTrust]
    rules: dict[str, str] = Field(default_factory=dict, description="the rule of each use's verdict")
    pass_threshold: float | None = None
    note: str | None = None
