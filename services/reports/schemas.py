from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

# The report's blocks built as plain dicts (the statistics layer's dataclasses through ``asdict``) are typed
# as TypedDicts: pydantic validates and documents them, and they stay dicts, so the JSON is what it was.


class ReportFilters(TypedDict):
    """The report's query: k, question types, answerable, interval rule, pass threshold."""

    k: int
    types: list[str]
    answerable: bool | None
    ci: str
    pass_threshold: float | None


class ReferenceScore(TypedDict):
    """How the human reference score of an item is formed, and how many items have one."""

    method: str
    min_raters: int
    n_items: int
    n_with_reference: int
    n_without: dict[str, int]


class BootstrapInfo(TypedDict):
    """The bootstrap behind the intervals (absent where they are analytic)."""

    method: str
    paired_by: str
    seed: int
    n_resamples: int


class RubricRange(TypedDict):
    name: str
    min: int
    max: int


class CorrelationRead(TypedDict):
    """A correlation with its interval (stats.CorrelationResult)."""

    method: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n: int
    ci_method: str | None
    undefined_reason: str | None
    n_dropped: int
    confidence: float
    ci_undefined_reason: str | None
    p_method: str
    n_clusters: int | None


class AlphaRead(TypedDict):
    """Krippendorff's alpha at one level of measurement (stats.AlphaResult)."""

    level: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    n_items: int
    n_resamples: int
    n_resamples_undefined: int
    undefined_reason: str | None
    ci_undefined_reason: str | None


class IccRead(TypedDict):
    """One intraclass correlation (stats.IccResult)."""

    kind: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    f_statistic: float | None
    df1: int
    df2: int
    p_value: float | None


class RaterPairRead(TypedDict):
    """Agreement of two raters on the items both rated (stats.RaterPair)."""

    rater_a: str
    rater_b: str
    n_items: int
    exact_count: int
    exact: float | None
    within_one_count: int
    within_one: float | None
    pearson: CorrelationRead
    spearman: CorrelationRead


class AgreementResultRead(TypedDict):
    """Inter-rater agreement of the used outputs (stats.AgreementResult)."""

    rater_names: list[str]
    scale_min: int
    scale_max: int
    n_items: int
    n_items_used: int
    n_items_excluded: int
    exclusion_reason: str | None
    alpha: dict[str, AlphaRead]
    icc: dict[str, IccRead]
    icc_n_items: int
    icc_n_items_excluded: int
    icc_exclusion_reason: str | None
    icc_undefined_reason: str | None
    kappa_quadratic: float | None
    kappa_undefined_reason: str | None
    pairs: list[RaterPairRead]
    attenuation_ceiling: float | None


class AgreementRead(TypedDict):
    """Inter-rater agreement over the runs' outputs; ``result`` is None with ``undefined_reason``."""

    runs: list[int]
    notes: list[str]
    rubric: RubricRange | None
    raters: list[str]
    n_rated_outputs: int
    n_used: int
    n_excluded_under_min_raters: int
    min_raters: int
    result: AgreementResultRead | None
    undefined_reason: str | None


class Corr(BaseModel):
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    ci_method: str | None
    undefined_reason: str | None = None
    ci_clipped: str | None = Field(
        default=None, description="set when the interval was clipped to the coefficient's domain, and why"
    )
    p_method: str | None = Field(
        default=None,
        description="where p_value comes from: scipy (independent items), or the cluster jackknife or "
        "bootstrap (questions repeat)",
    )


class Comparison(BaseModel):
    """This metric against the best one of its analysis for one coefficient, on the items both have.

    On independent items: Zou's interval, with Williams' t (p) and Steiger's Z for Pearson, or a z-test on
    atanh with the Fieller SEs for Spearman and Kendall; with ci=bca the jackknife-t interval of the
    difference beside them. On pooled runs whose questions repeat: the jackknife-t interval of the
    difference leaving one question out, and its t-test. Holm runs over each coefficient's family.
    """

    best: str
    n: int
    difference: float | None = Field(
        description="oriented coefficient(best) - oriented coefficient(this), both on the n outputs where "
        "both metrics and the reference are present (where the interval is)",
    )
    method: Literal["pearson", "spearman", "kendall"] = "pearson"
    n_questions: int | None = Field(default=None, description="distinct questions behind the n items")
    ci_low: float | None = Field(default=None, description="95% interval of the difference (see ci_method)")
    ci_high: float | None = None
    ci_method: str | None = Field(default=None, description="zou, or jackknife-t (pooled runs)")
    p_value: float | None = Field(default=None, description="unadjusted p of no difference (see p_method)")
    p_method: str | None = Field(
        default=None, description="williams, fieller-z, or cluster jackknife (pooled runs)"
    )
    jackknife_low: float | None = Field(
        default=None,
        description=(
            "jackknife-t interval of the difference, d -+ t(G-1) se leaving one output (one question on "
            "pooled runs) out: with ci=bca, and on pooled runs. It replaces the paired bootstrap of the "
            "difference, which covers only 92.7-94.2% at n = 50-100 on tied ratings (bench/coverage.py)"
        ),
    )
    jackknife_high: float | None = None
    jackknife_p: float | None = Field(default=None, description="t-test of no difference, same se and df")
    williams_t: float | None = None
    williams_p: float | None = None
    steiger_z: float | None = None
    steiger_p: float | None = None
    zou_low: float | None = None
    zou_high: float | None = None
    holm_p: float | None = None
    indistinguishable_from_best: bool | None = Field(
        default=None, description="Holm-adjusted p >= 0.05: no evidence it is worse than the best"
    )
    n_needed: int | None = Field(default=None, description="items needed to separate the two at power 0.8")
    note: str | None = None


class MetricRow(BaseModel):
    metric: str
    library: str
    kind: str
    higher_is_better: bool
    n: int
    excluded: dict[str, int]
    pearson: Corr
    spearman: Corr
    kendall: Corr
    oriented_r: float | None = Field(description="Pearson r, sign flipped for lower-is-better metrics")
    comparison: Comparison | None = None
    n_questions: int | None = Field(default=None, description="distinct questions behind the n items")
    spearman_comparison: Comparison | None = None
    kendall_comparison: Comparison | None = None


class NotComputed(BaseModel):
    """A catalogue metric that belongs to an analysis but has no statistics, and why."""

    metric: str
    library: str
    kind: str
    reason: str
    reason_code: str | None = Field(
        default=None, description="no_judge, unavailable, not_requested, pending or failed"
    )


class Analysis(BaseModel):
    id: Literal[1, 2, 3]
    title: str
    reference: str
    metrics: list[MetricRow]
    best: str | None = Field(
        description="the top metric, named only when at least one other metric is distinguishable from it "
        "at 95 %; null otherwise (see `top` and `verdict`)"
    )
    note: str | None = None
    top: str | None = Field(
        default=None, description="the metric with the highest oriented r (the anchor of the comparisons)"
    )
    top_group: list[str] = Field(
        default_factory=list,
        description="the top metric and every metric not distinguishable from it at 95 % (Holm)",
    )
    verdict: str | None = Field(default=None, description="the analysis' conclusion in one sentence")
    not_computed: list[NotComputed] = Field(
        default_factory=list, description="catalogue metrics of this analysis with no statistics, and why"
    )
    top_spearman: str | None = None
    top_kendall: str | None = None


class Figure(BaseModel):
    """A pass/fail figure with its bootstrap interval (None where undefined, with the reason)."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None
    undefined_reason: str | None = None
    n_resamples_undefined: int = Field(default=0, description="resamples without a pass or a fail, left out")


class PassFailRow(BaseModel):
    """One metric's pass/fail decision against the binarised human reference."""

    metric: str
    library: str
    kind: str
    higher_is_better: bool
    n: int
    n_questions: int | None = None
    n_pass: int = Field(description="outputs the humans pass (reference >= the pass threshold)")
    n_fail: int
    auc: Figure = Field(
        description="ROC AUC of the metric for the human pass (scikit-learn); DeLong's interval on the logit "
        "scale, or a BCa resampling questions when questions repeat"
    )
    threshold: Figure = Field(
        description="metric value maximising Youden's J on all the data (J compared on exact counts; among "
        "equal maxima the strictest: the highest value, the lowest for a lower-is-better metric); the metric "
        "passes an output at or above it (at or below for a lower-is-better metric); no interval (see "
        "held_out_thresholds)"
    )
    youden_j: Figure = Field(
        description="TPR - FPR of the held-out decisions (see kappa), jackknife interval"
    )
    kappa: Figure = Field(
        description="Cohen's kappa of the metric's held-out decisions with the humans': each half of the "
        "questions judged at the threshold maximising J on the other half; accuracy, precision and recall "
        "likewise; jackknife-t intervals leaving one question out"
    )
    accuracy: Figure
    precision: Figure
    recall: Figure
    confusion: list[list[int]] | None = Field(
        default=None,
        description="[[TN, FP], [FN, TP]] at the threshold, pass the positive class (scikit-learn layout)",
    )
    confusion_held_out: list[list[int]] | None = Field(
        default=None, description="[[TN, FP], [FN, TP]] of the held-out decisions behind kappa and the rest"
    )
    held_out_thresholds: list[float] | None = Field(
        default=None, description="the threshold chosen on each half of the questions, judging the other"
    )
    undefined_reason: str | None = None


class PassFail(BaseModel):
    """Analysis 4: does the metric's pass/fail decision agree with the raters' (judge alignment)?"""

    title: str
    human_threshold: float | None = Field(description="a human reference score at or above it is a pass")
    threshold_rule: str
    metrics: list[PassFailRow]
    note: str | None = None


class TypeBreakdown(BaseModel):
    type: str
    n_items: int
    metrics: dict[str, Corr]


class RunInfo(BaseModel):
    id: int
    name: str
    notes: list[str]


class ReportWarning(BaseModel):
    """Something the reader must know before trusting a figure: too few items, a clipped interval..."""

    code: Literal[
        "small_sample", "comparison_underpowered", "undefined", "ci_clipped", "failed_scores", "design"
    ]
    scope: str = Field(description="report, agreement, analysis N, or a metric name")
    message: str
    n: int | None = None
    n_needed: int | None = Field(default=None, description="items that would be needed, when it can be said")


class MetricStatus(BaseModel):
    """One catalogue metric (or external score) and what the report could do with it."""

    metric: str
    library: str
    kind: str
    needs_judge: bool
    status: Literal["computed", "not_computed"]
    reason_code: Literal["computed", "no_judge", "unavailable", "not_requested", "pending", "failed"]
    reason: str | None = Field(description="why it is not computed, or what failed on some items")
    n_scored: int = Field(description="outputs with a value")
    n_failed: int = Field(description="outputs whose score is an error")
    failure_causes: dict[str, int] = Field(default_factory=dict)
    analyses: list[int] = Field(
        description="analyses it belongs to (1 overall/generation, 2 and 3 retrieval)"
    )


class Coverage(BaseModel):
    n_metrics: int = Field(description="catalogue metrics plus external scores known to the runs")
    n_computed: int
    by_reason: dict[str, int]
    summary: str = Field(examples=["8 of 38 metrics computed; 30 need an LLM judge (set ...)"])


CiKind = Literal["fisher", "bca", "auto"]


class ReportQuery(BaseModel, frozen=True):
    """What a report is asked with, from the router's query string to the statistics: one typed, hashable
    value (it keys the report cache) instead of keyword arguments passed along."""

    k: int = 5
    types: tuple[str, ...] | None = None
    answerable: bool | None = None
    ci: CiKind = "fisher"
    seed: int = 0
    n_resamples: int = 2000
    pass_threshold: float | None = None


class ReportFreshness(BaseModel):
    """What data a report was computed from (also in the headers X-Report-Data-Time, X-Report-Computed-At
    and X-Report-Stale)."""

    data_time: datetime = Field(description="every write committed before this time is in the report")
    computed_at: datetime = Field(description="when the report was computed")
    stale: bool = Field(
        description="true: served from the last computed report while a newer one was being computed (writes "
        "committed after data_time may be missing); a request with Cache-Control: no-cache waits for a "
        "current one"
    )


class ReportRead(BaseModel):
    dataset_id: int
    runs: list[RunInfo]
    notes: list[str]
    filters: ReportFilters
    reference_score: ReferenceScore
    agreement: AgreementRead | None
    human_ceiling: float | None = Field(description="sqrt(ICC(A,k)): the most any metric can correlate")
    analyses: list[Analysis]
    by_type: list[TypeBreakdown]
    bootstrap: BootstrapInfo | None = None
    human_ceiling_undefined_reason: str | None = None
    warnings: list[ReportWarning] = Field(default_factory=list)
    metric_status: list[MetricStatus] = Field(
        default_factory=list,
        description="every catalogue metric asked for or known to the runs: computed, or not and why",
    )
    coverage: Coverage | None = None
    n_items: int | None = Field(default=None, description="outputs in the report (after filters)")
    n_questions: int | None = Field(default=None, description="distinct questions behind those outputs")
    pass_fail: PassFail | None = None
    interval_rule: str | None = Field(
        default=None, description="how intervals and p-values were obtained and why (ci=auto states its rule)"
    )
    freshness: ReportFreshness | None = Field(
        default=None, description="the time of the data the report was computed from, and whether it is stale"
    )


class MetricItem(BaseModel):
    """One output in a metric's drill-down: its human score, its metric score and how far apart they rank."""

    output_id: int
    run_id: int
    question_id: str
    question: str
    answer: str | None
    human: float | None
    value: float | None
    human_percentile: float | None = Field(default=None, description="mid-rank of the human score, 0-100")
    metric_percentile: float | None = Field(
        default=None, description="mid-rank of the metric score, 0-100, oriented so that higher is better"
    )
    disagreement: float | None = Field(
        default=None, description="metric percentile minus human percentile: > 0 the metric rates it higher"
    )
    missing_reason: str | None = None


class MetricItems(BaseModel):
    metric: str
    library: str
    higher_is_better: bool
    reference: str
    n: int = Field(description="items with both a metric value and a human score")
    excluded: dict[str, int]
    pearson: Corr | None = None
    items: list[MetricItem] = Field(description="largest disagreements first; items without a pair last")
