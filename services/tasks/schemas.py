from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from services.ratings.schemas import RubricRead
from services.types import MAX_ID, MAX_INT, Int, OptionalInt

Mode = Literal["pointwise", "pairwise"]
Status = Literal["pending", "rated", "skipped", "flagged"]

PREFERENCE_RUBRIC_NAME = "preference-1-5"
# Scores are given on what the rater sees (left/right) and stored for the task's two runs (A = run_id).
PREFERENCE_LEVELS = {
    "1": "The left answer is much better.",
    "2": "The left answer is somewhat better.",
    "3": "Both answers are about as good (or as bad).",
    "4": "The right answer is somewhat better.",
    "5": "The right answer is much better.",
}


class TaskCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    run_id: Int = Field(ge=1, le=MAX_ID, description="the run whose outputs are rated (run A in pairwise)")
    mode: Mode = "pointwise"
    run_b_id: OptionalInt = Field(default=None, ge=1, le=MAX_ID, description="pairwise: the other run")
    rubric: str | None = Field(
        default=None, description="rubric name; default: the study's 1-5 scale, or a 1-5 preference scale"
    )
    raters: list[str] = Field(min_length=1, max_length=1000, description="account names")
    per_output: OptionalInt = Field(
        default=None,
        ge=1,
        le=1000,
        description="k raters per output, balanced at random; omit: everyone rates all",
    )
    show_reference: bool = Field(
        default=False, strict=True, description="show the reference answer to raters"
    )
    show_contexts: bool = Field(
        default=True, strict=True, description="show the retrieved contexts to raters"
    )
    seed: OptionalInt = Field(default=None, ge=0, le=MAX_INT, description="recorded; random when omitted")


class RaterProgress(BaseModel):
    name: str
    order_seed: int
    assigned: int
    rated: int
    skipped: int
    flagged: int
    pending: int


class TaskRead(BaseModel):
    id: int
    name: str
    mode: Mode
    run_id: int
    run_b_id: int | None
    rubric: RubricRead
    per_output: int | None
    show_reference: bool
    show_contexts: bool
    seed: int
    n_outputs: int
    raters: list[RaterProgress]
    created_at: datetime
    warnings: list[str] = Field(
        default_factory=list,
        description="what this design cannot give, naming the setting (e.g. too few raters per output for "
        "a report)",
    )


class QueueEntry(BaseModel):
    position: int
    question_id: str
    question: str
    status: Status
    score: int | None = Field(description="this rater's own score (pairwise: as shown, left/right)")
    flag_reason: str | None


class Queue(BaseModel):
    task_id: int
    task: str
    mode: Mode
    rater: str
    total: int
    done: int
    next_position: int | None
    entries: list[QueueEntry]


class Context(BaseModel):
    rank: int
    text: str


class Answer(BaseModel):
    side: Literal["single", "left", "right"]
    answer: str
    contexts: list[Context] | None
    version: int = Field(
        description="the version of this answer served (it moves on when the answer or its contexts change); "
        "send it back with the rating: pointwise as version, pairwise as left_version / right_version"
    )


class ItemView(BaseModel):
    task_id: int
    task: str
    mode: Mode
    position: int
    total: int
    done: int
    status: Status
    question_id: str
    question: str
    reference_answer: str | None = Field(description="only when the task shows it")
    answers: list[Answer]
    rubric: RubricRead
    score: int | None
    comment: str | None
    flag_reason: str | None
    prev_position: int | None
    next_position: int | None


class ItemAction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["rate", "skip", "flag"]
    score: OptionalInt = Field(
        default=None, ge=-MAX_INT, le=MAX_INT, description="rate: a level of the task's rubric"
    )
    comment: str | None = Field(default=None, max_length=5000)
    reason: str | None = Field(default=None, max_length=1000, description="flag: why it cannot be rated")
    left_version: OptionalInt = Field(
        default=None,
        ge=1,
        le=MAX_INT,
        description="pairwise rate: the `version` of the left answer served with the item; the preference is "
        "recorded on it (stale in reports once the answer has changed). Omitted, with right_version: the "
        "versions current when the preference is saved",
    )
    right_version: OptionalInt = Field(
        default=None, ge=1, le=MAX_INT, description="pairwise rate: the right answer's `version` as served"
    )
    version: OptionalInt = Field(
        default=None,
        ge=1,
        le=MAX_INT,
        description="pointwise rate: the `version` of the answer served with the item; the score is recorded "
        "on it (an earlier version than the answer's current one: kept with the ratings of previous answers, "
        "counted and left out of reports). Omitted: the version current when the score is saved",
    )

    @field_validator("comment", "reason", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value


class ActionResult(BaseModel):
    position: int
    status: Status
    next_position: int | None
    stale: bool = Field(
        default=False,
        description="the rating was given on an earlier version of an answer than its current one (it "
        "changed while the item was open): it is kept at that version and left out of reports; open the "
        "item again to rate the answer as it is now",
    )


class Estimate(BaseModel):
    estimate: float | None
    ci_low: float | None
    ci_high: float | None


class AgreementSummary(BaseModel):
    raters: list[str]
    n_items: int
    n_items_used: int
    alpha_ordinal: Estimate | None
    alpha_interval: Estimate | None
    icc_a1: Estimate | None
    icc_ak: Estimate | None
    kappa_quadratic: float | None
    undefined_reason: str | None


class Disagreement(BaseModel):
    question_id: str
    question: str
    scores: dict[str, int]
    spread: int


class Flag(BaseModel):
    question_id: str
    question: str | None = None
    rater: str
    reason: str | None


class Dashboard(BaseModel):
    task: TaskRead
    threshold: int
    agreement: AgreementSummary
    disagreements: list[Disagreement]
    flagged: list[Flag]


class ExportRow(BaseModel):
    """One rating in the format POST /runs/{id}/ratings reads (pairwise adds the two runs and the side)."""

    question_id: str
    rater: str
    score: int
    rubric: str
    comment: str | None = None
    run_a: int | None = None
    run_b: int | None = None
