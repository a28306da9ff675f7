"""Response schemas of the single-run estimates: the human score from few ratings (PPI), judge sensitivity."""

from __future__ import annotations

from pydantic import BaseModel, Field

from services.reports.schemas import Corr, NotComputed, ReportWarning


class MeanEstimate(BaseModel):
    """An estimate of the run's mean human score with its interval."""

    estimate: float
    ci_low: float
    ci_high: float
    width: float
    se: float
    df: float | None = Field(description="degrees of freedom of the t quantile")
    method: str
    ci_clipped: str | None = Field(
        default=None,
        description="set when the computed interval went past the rubric's scale: it is clipped to the "
        "scale (ci_low, ci_high) and this says so with the computed limits; width stays the computed one",
    )


class WidthPlan(BaseModel):
    """Ratings needed for an interval of the target width, if the next ratings look like those so far."""

    target_width: float
    n_rated_needed: int | None = Field(
        description="rated outputs needed in all (null: not reachable by rating this run's outputs)"
    )
    more_ratings: int | None = Field(description="ratings beyond those already given (0: already reached)")
    width_if_all_rated: float = Field(description="projected width with every output of the run rated")
    note: str


class PpiRow(BaseModel):
    """One metric as the predictor of the human score."""

    metric: str
    library: str
    kind: str
    higher_is_better: bool
    n_scored: int = Field(description="outputs of the run with a value of this metric")
    n_imputed: int = Field(
        description="outputs without a value, predicted by the metric's mean on the run (kept so that the "
        "estimate stays about the whole run)"
    )
    lam: float | None = Field(
        default=None,
        description="PPI++ power-tuning weight of the metric (0 = rated-only, 1 = plain PPI; not clipped)",
    )
    metric_human_r: float | None = Field(
        default=None, description="Pearson r of the metric with the human score on the rated outputs"
    )
    ppi: MeanEstimate | None = None
    width_ratio: float | None = Field(
        default=None, description="width of this interval / width of the rated-only interval"
    )
    plan: WidthPlan | None = None
    undefined_reason: str | None = None


class RunEstimate(BaseModel):
    """The run's mean human score estimated from the rated outputs and each metric on every output."""

    run_id: int
    run_name: str
    rubric: dict[str, int | str] | None
    n_outputs: int
    n_rated: int = Field(description="outputs with a human reference score (the rated items)")
    n_under_min_raters: int = Field(description="outputs with ratings from too few raters (counted unrated)")
    n_unrated: int
    rated_items: str = Field(description="how a rated item and its score are formed")
    confidence: float
    target_width: float
    rated_only: MeanEstimate
    rated_only_plan: WidthPlan
    metrics: list[PpiRow]
    narrowest: str | None = Field(description="the metric giving the narrowest interval")
    narrowest_note: str
    method: str
    design: str = Field(
        default="uniform: the rated outputs are taken as a uniform random subset of the run's outputs",
        description="the sampling design every interval here assumes (an active rating task's ratings are "
        "estimated with their recorded probabilities by GET /tasks/{id}/estimate)",
    )
    assumptions: list[str]
    warnings: list[ReportWarning] = Field(default_factory=list)
    not_computed: list[NotComputed] = Field(
        default_factory=list, description="catalogue metrics with no scores on this run, and why"
    )


class JudgeConfiguration(BaseModel):
    """A judge configuration as the store records it with each judge score (its fingerprint)."""

    id: str = Field(description="short fingerprint of (model, endpoint, language): what ?a= and ?b= take")
    model: str | None
    endpoint: str | None
    language: str | None
    metrics: list[str] = Field(description="judge metrics with scores of this configuration on the run")
    n_scores: int
    latest_at: str
    reported: list[str] = Field(
        default_factory=list,
        description="metrics whose report column comes from this configuration (the latest scored)",
    )


class JudgeConfigurations(BaseModel):
    run_id: int
    configurations: list[JudgeConfiguration]
    rule: str


class ConfigAgreement(BaseModel):
    """How the two configurations' scores of one metric agree, on the outputs both scored."""

    n: int
    pearson: Corr
    spearman: Corr
    mean_difference: float | None = Field(description="mean of (b - a)")
    mean_difference_ci_low: float | None = None
    mean_difference_ci_high: float | None = None
    mean_abs_difference: float | None = None
    undefined_reason: str | None = None


class CoefficientDifference(BaseModel):
    """corr(a, human) - corr(b, human) on the same items (oriented: positive = a agrees better)."""

    method: str
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None
    p_value: float | None
    p_method: str | None
    undefined_reason: str | None = None
    holm_p: float | None = Field(default=None, description="p adjusted by Holm over the metrics compared")


class SensitivityRow(BaseModel):
    metric: str
    library: str
    higher_is_better: bool
    n: int = Field(description="rated outputs scored under both configurations (the paired items)")
    n_questions: int
    a: dict[str, Corr] = Field(description="pearson, spearman, kendall with the human score under a")
    b: dict[str, Corr]
    differences: list[CoefficientDifference]
    agreement: ConfigAgreement
    undefined_reason: str | None = None


class JudgeSensitivity(BaseModel):
    run_id: int
    a: JudgeConfiguration
    b: JudgeConfiguration
    n_rated: int
    metrics: list[SensitivityRow]
    only_in_a: list[str]
    only_in_b: list[str]
    method: str
    warnings: list[ReportWarning] = Field(default_factory=list)
