"""Response schemas of the comparisons between runs: pairwise preference meta-evaluation (two runs) and
system level (three or more runs)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from services.reports.schemas import Comparison, Corr, ReportWarning, RunInfo

PreferenceSource = Literal["preference_ratings", "absolute_ratings"]


class NotComputed(BaseModel):
    metric: str
    reason: str


class Proportion(BaseModel):
    """A proportion with its Wilson score interval (scipy.stats.binomtest(...).proportion_ci('wilson'))."""

    correct: int
    total: int
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    undefined_reason: str | None = None


class PairwiseMetric(BaseModel):
    metric: str
    library: str
    kind: str
    higher_is_better: bool
    n_pairs: int = Field(description="questions with a human preference and the metric on both answers")
    pearson: Corr
    spearman: Corr
    kendall: Corr
    sign_agreement: Proportion = Field(
        description="share of the pairs the humans did not tie where the metric picks the same answer; "
        "a zero metric difference there counts as wrong"
    )
    n_metric_ties: int = Field(description="pairs (humans not tied) where the metric difference is exactly 0")
    comparison: Comparison | None = Field(default=None, description="Pearson vs the best metric")
    spearman_comparison: Comparison | None = None
    kendall_comparison: Comparison | None = None


class PreferenceCounts(BaseModel):
    """The preference ratings on this pair of runs, by source, and those left out."""

    side_by_side: int = Field(
        description="current preferences given side by side in pairwise rating tasks (used unless "
        "source=absolute)"
    )
    imported: int = Field(description="current preferences imported with POST /preferences (likewise)")
    stale: int = Field(
        description="left out: preferences given on an answer of either run that has changed since (or, "
        "for side-by-side preferences given before answer versions were recorded, possibly changed)"
    )


class PairwiseRead(BaseModel):
    """Metric differences (run B - run A, sign flipped for lower-is-better metrics, so positive = B better)
    against the humans' preference for B over A, one row per question."""

    dataset_id: int
    run_a: RunInfo
    run_b: RunInfo
    notes: list[str]
    source: PreferenceSource = Field(
        description="preference_ratings: preference ratings on these two runs, given side by side in "
        "pairwise rating tasks and/or imported from a file (`preferences` counts each; mean over raters, "
        "centred so that 0 = no preference); absolute_ratings: the difference of the two answers' human "
        "reference scores (no current preference rating exists for this pair)"
    )
    source_detail: str
    preferences: PreferenceCounts
    preference_scale: list[float] = Field(description="[min, max] of a preference (B over A)")
    n_questions_both: int = Field(description="questions answered in both runs")
    n_pairs: int = Field(description="questions with a human preference")
    n_human_ties: int = Field(description="pairs whose preference is exactly 0 (left out of sign agreement)")
    human_prefers_b: int
    human_prefers_a: int
    interval_rule: str
    ties_rule: str
    best: str | None = Field(description="metric with the highest Pearson r with the preference")
    top_spearman: str | None = None
    top_kendall: str | None = None
    metrics: list[PairwiseMetric]
    not_computed: list[NotComputed]
    warnings: list[ReportWarning]


class RunMean(BaseModel):
    run_id: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int


class PairTest(BaseModel):
    """One pair of runs: mean paired difference (B - A) over questions with Student's paired t-test."""

    run_a: int
    run_b: int
    n: int
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    holm_p: float | None = Field(default=None, description="Holm over the pairs of runs of this row")
    undefined_reason: str | None = None


class MetricPair(BaseModel):
    run_a: int
    run_b: int
    human: PairTest
    metric: PairTest
    same_winner: bool | None = Field(
        description="the metric's difference (oriented: positive = B better) has the sign of the humans'"
    )
    human_distinguishable: bool | None = Field(description="human difference: Holm p < 0.05")
    metric_distinguishable: bool | None = Field(description="metric difference: Holm p < 0.05")


class RankAgreement(BaseModel):
    estimate: float | None = Field(description="Kendall tau-b between human and (oriented) metric run means")
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None
    n_resamples: int
    n_resamples_undefined: int = Field(description="resamples where a ranking was all ties (left out)")
    undefined_reason: str | None = None


class SystemMetric(BaseModel):
    metric: str
    library: str
    kind: str
    higher_is_better: bool
    n_questions: int = Field(description="questions with a human score and the metric in every run")
    means: list[RunMean]
    kendall: RankAgreement
    pairwise_correct: int = Field(description="pairs of runs ordered as the humans order them")
    pairwise_total: int = Field(description="pairs of runs the humans do not tie")
    pairs: list[MetricPair]


class SystemsRead(BaseModel):
    """How well each metric ranks whole runs as the humans do, with a bootstrap over questions."""

    dataset_id: int
    runs: list[RunInfo]
    notes: list[str]
    n_questions: int = Field(description="questions with a human reference score in every run")
    human: list[RunMean] = Field(description="human mean per run, Student t interval over questions")
    human_pairs: list[PairTest]
    interval_rule: str
    metrics: list[SystemMetric]
    not_computed: list[NotComputed]
    warnings: list[ReportWarning]
