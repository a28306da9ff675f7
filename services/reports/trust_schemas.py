"""The response of ``GET /runs/{id}/trust``: per metric, its calibration onto the rubric, the Alternative
Annotator Test and a verdict per use, each verdict with its rule and a one-line reason."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Verdict = Literal["yes", "no", "not yet"]
Use = Literal["item", "gating"]


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


class MetricTrust(BaseModel):
    metric: str
    higher_is_better: bool
    calibration: CalibrationRead
    alt_test: AltTestRead
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
    note: str | None = None
