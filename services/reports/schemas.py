from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class Corr(BaseModel):
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    ci_method: str | None
    undefined_reason: str | None = None


class Comparison(BaseModel):
    """This metric against the best one of its analysis, on the items both have."""

    best: str
    n: int
    difference: float | None = Field(description="oriented r(best) - oriented r(this metric)")
    williams_t: float | None = None
    williams_p: float | None = None
    steiger_z: float | None = None
    steiger_p: float | None = None
    zou_low: float | None = None
    zou_high: float | None = None
    holm_p: float | None = None
    indistinguishable_from_best: bool | None = Field(
        default=None, description="Holm-adjusted Williams p >= 0.05: no evidence it is worse than the best"
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


class Analysis(BaseModel):
    id: Literal[1, 2, 3]
    title: str
    reference: str
    metrics: list[MetricRow]
    best: str | None
    note: str | None = None


class TypeBreakdown(BaseModel):
    type: str
    n_items: int
    metrics: dict[str, Corr]


class RunInfo(BaseModel):
    id: int
    name: str
    notes: list[str]


class ReportRead(BaseModel):
    dataset_id: int
    runs: list[RunInfo]
    notes: list[str]
    filters: dict[str, Any]
    reference_score: dict[str, Any]
    agreement: dict[str, Any] | None
    human_ceiling: float | None = Field(description="sqrt(ICC(A,k)): the most any metric can correlate")
    analyses: list[Analysis]
    by_type: list[TypeBreakdown]
    bootstrap: dict[str, Any] | None = None
