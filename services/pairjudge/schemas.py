"""What a pairwise judging job is asked (``PairJudgingRequest``) and reads as (``PairJudgingJobRead``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from services.jobs.service import JobParams, JobProgress
from services.metrics.schemas import JudgeSettingsRead, JudgeUsageRead
from services.types import MAX_ID, Int


class PairJudgingRequest(BaseModel):
    run_b: Int = Field(
        ge=1,
        le=MAX_ID,
        description="the other run, of the same dataset: its answers are compared with this run's, question "
        "by question",
    )
    recompute: bool = Field(
        default=False,
        strict=True,
        description="judge again the pairs already judged under the same judge configuration (the judge "
        "cache still answers a request it has seen: no new call is made for it)",
    )


class PairJudgingParams(JobParams):
    run_a: int = Field(description="the lower of the two run ids (pairs are stored in this order)")
    run_b: int
    recompute: bool
    config_key: str


class PairJudgingSummary(BaseModel):
    questions: int = Field(description="questions both runs answer")
    without_answer: int = Field(description="questions left out: one of the runs has no answer to them")
    skipped_already_judged: int = Field(description="pairs already judged under the same configuration")
    judge: JudgeSettingsRead
    prompt: str = Field(description="the version of the pairwise prompt")
    orders: str = Field(description="how each pair is asked")
    judge_usage: dict[str, JudgeUsageRead] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="the judge calls over the job's batches, once a batch called the judge",
    )


class PairJudgingJobRead(JobProgress):
    kind: Literal["pair_judging"]
    params: PairJudgingParams
    summary: PairJudgingSummary
