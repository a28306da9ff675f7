from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from services.types import Int, Integer

DEFAULT_RUBRIC_NAME = "default-1-5"
# The study's rubric: one 1-5 scale that mixes factuality and relevance.
DEFAULT_RUBRIC_LEVELS = {
    "1": "Wrong or off-topic: the answer contradicts the reference or the documents, invents facts, "
    "or does not address the question; also an unanswerable question answered with made-up content.",
    "2": "Mostly wrong or unhelpful: some relevant element, but the main point is wrong or missing; "
    "or the system says it does not know although the documents contain the answer.",
    "3": "Partly correct: the main point is right but important details are missing or wrong, "
    "or the answer is buried in irrelevant or confusing content.",
    "4": "Correct and relevant with minor flaws: a secondary detail missing or imprecise, "
    "or some unneeded content; nothing that would mislead the user.",
    "5": "Correct, complete and relevant: every key fact of the reference answer, nothing false, "
    "focused on the question. An unanswerable question correctly declined (the system says the "
    "documents do not contain the answer) is a 5.",
}


class RaterCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1, max_length=200)


class RaterRead(BaseModel):
    id: int
    name: str


class RubricCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1, max_length=200)
    min: Int = Field(ge=-100, le=100)
    max: Int = Field(ge=-100, le=100)
    levels: dict[str, str] = Field(default_factory=dict, description="score (as text) -> description")

    @model_validator(mode="after")
    def _scale(self) -> RubricCreate:
        if self.max <= self.min:
            raise ValueError("max must be greater than min")
        for key in self.levels:
            try:
                level = int(key)
            except ValueError:
                raise ValueError(f"level {key!r} is not an integer") from None
            if not self.min <= level <= self.max:
                raise ValueError(f"level {key} is outside the scale {self.min}..{self.max}")
        return self


class RubricRead(BaseModel):
    id: int
    name: str
    min: int
    max: int
    levels: dict[str, str]
    is_default: bool


class RatingIn(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    question_id: str | None = Field(
        default=None,
        min_length=1,
        description="external id of the question; without it (or when no question has it), the question "
        "is found by its text",
    )
    question: str | None = Field(
        default=None,
        description="the question's text: joined exactly, then normalised (Unicode NFKC, case, whitespace)",
    )
    run: str | None = Field(
        default=None, description="name of the run whose output the row rates (default: the run posted to)"
    )
    rater: str = Field(min_length=1, description="name of a registered rater")
    score: Integer
    rubric: str | None = Field(default=None, description="rubric name; the default rubric when omitted")
    comment: str | None = None

    @field_validator("question_id", "question", "run", "rubric", "comment", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        # CSV cells are empty strings, not missing values.
        return None if isinstance(value, str) and not value.strip() else value


# The scale of imported preferences when the file names no rubric: -2..2, positive = run B's answer better.
PREFERENCE_IMPORT_RUBRIC_NAME = "preference-b-over-a"
PREFERENCE_IMPORT_LEVELS = {
    "-2": "Run A's answer is much better.",
    "-1": "Run A's answer is somewhat better.",
    "0": "Both answers are about as good (or as bad).",
    "1": "Run B's answer is somewhat better.",
    "2": "Run B's answer is much better.",
}


class PreferenceIn(BaseModel):
    """One rater's preference between run A's and run B's answers to one question."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    question_id: str = Field(min_length=1, description="external id of the question")
    rater: str = Field(min_length=1, description="name of a registered rater")
    preference: Integer = Field(
        description="on the rubric's scale, its high end for run B's answer (default rubric -2..2: "
        "-2 = A much better, 0 = as good, 2 = B much better)"
    )
    rubric: str | None = Field(
        default=None,
        description="rubric name; default: the pair's rubric, else "
        f"{PREFERENCE_IMPORT_RUBRIC_NAME!r} (-2..2)",
    )
    comment: str | None = None

    @field_validator("rubric", "comment", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


class PreferenceRead(BaseModel):
    question_id: str
    rater: str
    preference: int = Field(description="on the rubric's scale, its high end for run_b's answer")
    rubric: str
    comment: str | None
    output_a_version: int = Field(description="the version of run A's output the preference was given on")
    output_b_version: int
    stale: bool = Field(description="either answer changed since: left out of the pairwise report")
    created_at: datetime
    updated_at: datetime


class RatingRead(BaseModel):
    question_id: str
    output_id: int
    rater: str
    score: int
    rubric: str
    comment: str | None
    created_at: datetime
    updated_at: datetime
