from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from services.types import Integer

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
    min: int = Field(ge=-100, le=100)
    max: int = Field(ge=-100, le=100)
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

    question_id: str = Field(min_length=1, description="external id of the question")
    rater: str = Field(min_length=1, description="name of a registered rater")
    score: Integer
    rubric: str | None = Field(default=None, description="rubric name; the default rubric when omitted")
    comment: str | None = None

    @field_validator("rubric", "comment", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        # CSV cells are empty strings, not missing values.
        return None if isinstance(value, str) and not value.strip() else value


class RatingRead(BaseModel):
    question_id: str
    output_id: int
    rater: str
    score: int
    rubric: str
    comment: str | None
    created_at: datetime
    updated_at: datetime
