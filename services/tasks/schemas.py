from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from services.ratings.schemas import RubricRead
from services.types import MAX_ID, MAX_INT, Int, OptionalInt

Mode = Literal["pointwise", "pairwise"]
Status = Literal["pending", "rated", "skipped", "flagged", "released"]

PREFERENCE_RUBRIC_NAME = "preference-1-5"
# Scores are given on what the rater sees (left/right) and stored for the task's two runs (A = run_id).
PREFERENCE_LEVELS = {
    "1": "The left answer is much better.",
    "2": "The left answer is somewhat better.",
    "3": "Both answers are about as good (or as bad).",
    "4": "The right answer is somewhat better.",
    "5": "The right answer is much better.",
}


Policy = Literal["fixed", "active"]


class ActivePolicy(BaseModel):
    """The `active` sampling policy: outputs drawn one at a time with probability proportional to how
    uncertain the human score is given the metric (services/active_ppi.py, docs/statistics.md)."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field(
        min_length=1, max_length=200, description="the metric id whose scores on the run guide the draws"
    )
    budget: Int = Field(
        ge=3, le=MAX_INT, description="expected number of outputs to rate over the whole stream (not a cap)"
    )
    floor: float = Field(
        default=0.5,
        gt=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="least inclusion probability, as a share of the uniform rate budget / outputs",
    )
    refit_every: Int = Field(
        default=10, ge=1, le=100000, description="refit the uncertainty model after this many new ratings"
    )
    target_width: float | None = Field(
        default=None,
        gt=0.0,
        le=1e6,
        allow_inf_nan=False,
        description="stopping rule: close the task once the run mean's interval is at most this wide",
    )
    lease_minutes: Int = Field(
        default=30,
        ge=1,
        le=10080,
        description="an item served and left unrated this long is released: its output may be served again",
    )


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
    policy: Policy = Field(
        default="fixed",
        description="fixed: queues assigned now (everyone, or per_output raters each); active: outputs drawn "
        "one at a time with recorded inclusion probabilities (give `active`; per_output: raters per drawn "
        "output, default 1)",
    )
    active: ActivePolicy | None = Field(default=None, description="the active policy's settings")


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
    policy: Policy | None = Field(
        default=None, description="the sampling policy (not shown to the task's raters)"
    )
    active: ActivePolicy | None = Field(
        default=None, description="active policy settings (not shown to raters)"
    )
    closed_at: datetime | None = Field(default=None, description="when the stopping rule closed the task")
    closed_reason: str | None = None
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
    more_on_request: bool = Field(
        default=False,
        description="items are given one at a time: ask for the next with POST /tasks/{id}/next",
    )


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
    active_estimate: ActiveEstimate | None = Field(
        default=None,
        description="active tasks: the run mean so far, its width, and the ratings projected to the target",
    )


class ExportRow(BaseModel):
    """One rating in the format POST /runs/{id}/ratings reads (pairwise adds the two runs and the side)."""

    question_id: str
    rater: str
    score: int
    rubric: str
    comment: str | None = None
    run_a: int | None = None
    run_b: int | None = None


class NextItem(BaseModel):
    """The item the caller should rate next: their open one, or (active tasks) a newly drawn one."""

    position: int | None = Field(description="a position of the caller's queue; None: nothing left to rate")
    reason: str | None = Field(default=None, description="why there is nothing left, when position is None")


class ActiveInterval(BaseModel):
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    width: float
    se: float | None
    n_rated: int
    method: str
    design: str = Field(description="the sampling design this interval assumes")


class CorrelationInterval(BaseModel):
    estimate: float | None = Field(
        description="Pearson r (None: the uniform design's entry gives a width only)"
    )
    ci_low: float | None
    ci_high: float | None
    width: float
    se_z: float | None = Field(description="standard error of atanh r (Fisher's z)")
    n_rated: int
    method: str
    design: str = Field(description="the sampling design this interval assumes")


class ActiveCorrelation(BaseModel):
    """The Pearson correlation of the task's metric and the human score over the run's outputs, from the
    actively drawn ratings (inclusion-probability weighted), beside what uniform sampling would give."""

    metric: str
    active: CorrelationInterval | None = Field(
        description="Hajek-weighted Pearson r, jackknife on Fisher's z"
    )
    uniform_same_n: CorrelationInterval | None = Field(
        description="the width Fisher's interval of as many uniformly sampled ratings would have (projected)"
    )
    undefined_reason: str | None = None


class ActiveEstimate(BaseModel):
    """The run's mean human score from an active task's ratings, with the design behind each interval."""

    task_id: int
    run_id: int
    metric: str
    seed: int
    confidence: float
    n_outputs: int
    n_decided: int = Field(description="outputs of the stream decided so far (drawn or passed over)")
    n_drawn: int = Field(description="outputs drawn for rating")
    n_rated: int = Field(description="drawn outputs with at least one rating in this task (used)")
    n_open: int = Field(description="drawn outputs not rated yet (open, skipped or flagged): not counted")
    n_refits: int
    active: ActiveInterval | None = Field(description="active PPI (inclusion-probability weighted PPI++)")
    uniform_same_n: ActiveInterval | None = Field(
        description="the width uniform sampling of the same number of ratings would give (projected)"
    )
    target_width: float | None
    more_ratings: int | None = Field(
        description="projected further ratings to reach target_width (None: no target, or not reachable)"
    )
    reached: bool
    closed_at: datetime | None
    undefined_reason: str | None = None
    correlation: ActiveCorrelation | None = Field(
        default=None, description="the metric-human correlation under the same design"
    )
    assumptions: list[str]
