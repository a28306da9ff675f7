"""Shapes of dataset items as callers send and receive them (external ids, character offsets)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.config import JsonDict

from services.types import MAX_INT, Int

NonEmpty = Field(min_length=1)
# Declared in the schema for what the ``_not_blank`` validators check (clients and fuzzers see the rule).
NOT_BLANK: JsonDict = {"pattern": r"\S"}


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or only whitespace")
    return value


class ChunkingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    page_max_words: Int = Field(default=1000, ge=10, le=100_000)
    max_words: Int = Field(default=200, ge=5, le=10_000)
    overlap_words: Int = Field(default=0, ge=0, le=10_000)

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingConfig:
        if self.overlap_words >= self.max_words:
            raise ValueError("overlap_words must be smaller than max_words")
        if self.max_words > self.page_max_words:
            raise ValueError("max_words must not exceed page_max_words")
        return self


class DatasetCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1, max_length=200, json_schema_extra=NOT_BLANK)
    language: str = Field(default="en", pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$", examples=["fr", "en"])
    description: str | None = Field(default=None, max_length=10_000)
    chunking: ChunkingConfig = ChunkingConfig()

    _name = field_validator("name")(_not_blank)


class DatasetRead(BaseModel):
    id: int
    name: str
    language: str
    description: str | None
    chunking: ChunkingConfig
    documents: int
    questions: int
    unanswerable: int


class DocumentCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    external_id: str = Field(min_length=1, max_length=300, json_schema_extra=NOT_BLANK)
    title: str | None = None
    text: str = Field(min_length=1, json_schema_extra=NOT_BLANK)
    metadata: dict[str, Any] = Field(default_factory=dict)

    _ext = field_validator("external_id")(_not_blank)
    _text = field_validator("text")(_not_blank)


class PassageIn(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    document_id: str = Field(min_length=1, description="external id of the document")
    start: Int = Field(ge=0, le=MAX_INT, description="character offset (code points) of the first character")
    end: Int = Field(ge=0, le=MAX_INT, description="character offset one past the last character")
    text: str | None = Field(default=None, description="optional: checked against the document span")
    location: Literal["given", "exact", "normalized", "fuzzy"] | None = Field(
        default=None,
        description="how the span was obtained, as the questions export says (kept with the passage; "
        "default given)",
    )
    match_score: float | None = Field(
        default=None, ge=0, le=100, description="the match score of a span located from text, 0-100"
    )

    @model_validator(mode="after")
    def _score_of_located(self) -> PassageIn:
        if self.match_score is not None and self.location in (None, "given"):
            raise ValueError("match_score belongs to a located passage (location exact, normalized or fuzzy)")
        return self


class QuestionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    external_id: str = Field(min_length=1, max_length=300, json_schema_extra=NOT_BLANK)
    question: str = Field(min_length=1, json_schema_extra=NOT_BLANK)
    reference_answer: str | None = Field(
        default=None, description="the expected answer; for an unanswerable question, the expected refusal"
    )
    answerable: bool = Field(
        default=True,
        strict=True,
        description="false: the corpus does not answer it (no passages; reference_answer, if any, is the "
        "expected refusal)",
    )
    types: list[str] = Field(
        default_factory=list,
        json_schema_extra={"uniqueItems": True, "items": {"type": "string", "pattern": r"\S"}},
    )
    passages: list[PassageIn] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    _ext = field_validator("external_id")(_not_blank)
    _q = field_validator("question")(_not_blank)

    @field_validator("types")
    @classmethod
    def _types(cls, value: list[str]) -> list[str]:
        if any(not t.strip() for t in value):
            raise ValueError("types must not contain empty strings")
        if len(set(value)) != len(value):
            raise ValueError("types must not repeat")
        return value

    @model_validator(mode="after")
    def _unanswerable_has_no_passage(self) -> QuestionCreate:
        # An unanswerable question may keep its reference answer: the refusal a team expects ("the documents
        # do not say"), which answer metrics compare outputs with. It has no passage to retrieve.
        if not self.answerable and self.passages:
            raise ValueError("an unanswerable question (answerable=false) carries no passages")
        if self.reference_answer is not None and not self.reference_answer.strip():
            raise ValueError("reference_answer must be null or non-empty")
        return self


class PassageOut(BaseModel):
    document_id: str
    start: int
    end: int
    text: str | None = None
    location: str = Field(
        default="given", description="given | exact | normalized | fuzzy (located from text)"
    )
    match_score: float | None = Field(default=None, description="for a passage located from its text, 0-100")


class QuestionRead(BaseModel):
    id: int
    external_id: str
    question: str
    reference_answer: str | None
    answerable: bool
    types: list[str]
    passages: list[PassageOut]
    metadata: dict[str, Any]


class DocumentRead(BaseModel):
    id: int
    external_id: str
    title: str | None
    text: str
    metadata: dict[str, Any]


class ImportReport(BaseModel):
    kind: Literal["documents", "questions", "outputs", "ratings", "raters", "scores", "preferences"]
    received: int
    created: int
    updated: int
    unchanged: int
    # Outputs only: ratings and scores of answers that this import replaced, moved to history (kept,
    # excluded from reports).
    invalidated_ratings: int = 0
    invalidated_scores: int = 0
    notes: list[str] = Field(
        default_factory=list, description="what reading the file had to assume, e.g. an encoding fallback"
    )
