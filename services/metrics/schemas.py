"""The typed read of a scoring job: what it was asked (params) and what its planning and batches recorded
(summary)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from services.jobs.service import JobParams, JobProgress
from services.retrieval.segment import WordRule


def _absent(value: object) -> bool:
    return value is None


class ScoringJobParams(JobParams):
    run_id: int
    metrics: list[str] = Field(description="the metrics' full names")
    k: int
    word_rule: WordRule | None = Field(default=None, exclude_if=_absent, description="absent on older jobs")
    recompute: bool
    refresh_judge_cache: bool | None = Field(
        default=None, exclude_if=_absent, description="absent on older jobs"
    )
    repeats: int | None = Field(default=None, exclude_if=_absent, description="absent on older jobs")


class JudgeSettingsRead(BaseModel):
    """What each repeat asked the judge with (no seed: repeats are as independent as its sampling)."""

    model: str | None
    temperature: float
    seed: int | None


class RepeatsRead(BaseModel):
    k: int = Field(description="independent judge answers per (judge metric, output)")
    judge: JudgeSettingsRead
    repeated: list[str] = Field(description="the metrics asked k times")
    deterministic: list[str] = Field(description="the metrics without a judge, scored once")
    note: str


class JudgeUsageRead(BaseModel):
    """A metric's judge calls over the job's batches (services.judge.gateway.Usage)."""

    calls: int
    cache_hits: int
    upstream_calls: int
    upstream_retries: int
    failures: int
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    causes: dict[str, int] = Field(description="failed calls by cause")


class ScoringJobSummary(BaseModel):
    skipped_already_computed: int = Field(description="scores already stored under the same configuration")
    outputs: int
    config_keys: dict[str, str] = Field(description="each metric's configuration key")
    repeats: RepeatsRead | None = Field(default=None, exclude_if=_absent, description="when repeats > 1")
    judge_usage: dict[str, JudgeUsageRead] | None = Field(
        default=None, exclude_if=_absent, description="per metric, once a batch called a judge"
    )
    score_memo_hits: int | None = Field(
        default=None, exclude_if=_absent, description="scores taken from the score memo, once one was"
    )


class ScoringJobRead(JobProgress):
    kind: Literal["scoring"]
    params: ScoringJobParams
    summary: ScoringJobSummary
