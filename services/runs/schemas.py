"""Runs (system versions) and their outputs, in the three accepted input forms."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from services.types import MAX_INT, Number, OptionalInt, OptionalNumber

OutputFormat = Literal["auto", "native", "ragas", "ragchecker"]


class SystemConfig(BaseModel):
    """What produced the outputs; free-form beyond the common fields."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    retriever: str | None = Field(default=None, examples=["hybrid", "bm25", "dense", "external"])
    k: OptionalInt = Field(default=None, ge=1, le=1000)
    generator: str | None = Field(default=None, examples=["llm", "extractive", "external"])
    model: str | None = None
    prompt: str | None = None


class RunCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1, max_length=200)
    system: SystemConfig = SystemConfig()
    metadata: dict[str, Any] = Field(default_factory=dict)


class RunRead(BaseModel):
    id: int
    dataset_id: int
    name: str
    system: dict[str, Any]
    metadata: dict[str, Any]
    outputs: int
    rated_outputs: int


class ChunkIn(BaseModel):
    """A retrieved chunk: document id + offsets (text optional, checked), or text only (located)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    document_id: str | None = Field(default=None, description="external id of the document")
    start: OptionalInt = Field(default=None, ge=0, le=MAX_INT)
    end: OptionalInt = Field(default=None, ge=0, le=MAX_INT)
    text: str | None = None
    score: Number | None = None

    @model_validator(mode="after")
    def _offsets_or_text(self) -> ChunkIn:
        has_span = self.start is not None or self.end is not None
        if has_span and (self.start is None or self.end is None or self.document_id is None):
            raise ValueError("a chunk with offsets needs document_id, start and end")
        if not has_span and not (self.text and self.text.strip()):
            raise ValueError("a chunk needs document_id + start + end, or a non-empty text")
        return self


def _json_list(value: Any) -> Any:
    # CSV cells carry lists as JSON text.
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            raise ValueError(f"must be a JSON list: {exc.msg}") from exc
    return value


class NativeOutput(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    question_id: str = Field(min_length=1, description="external id of the question")
    answer: str
    retrieved: list[ChunkIn] = Field(default_factory=list, description="ranked, best first")
    generator: dict[str, Any] | None = None
    latency_ms: OptionalNumber = Field(default=None, ge=0)

    _r = field_validator("retrieved", mode="before")(_json_list)


class RagasOutput(BaseModel):
    """A Ragas evaluation row; matched to a question by `question_id` if present, else by exact text."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    question_id: str | None = None
    user_input: str
    response: str
    retrieved_contexts: list[str] = Field(default_factory=list)
    reference: str | None = None

    _r = field_validator("retrieved_contexts", mode="before")(_json_list)


class RagCheckerContext(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    doc_id: str | None = None
    text: str


class RagCheckerOutput(BaseModel):
    """One entry of RAGChecker's `results` list."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    # RAGChecker files use numbers or strings; a number is read as its text.
    query_id: str = Field(json_schema_extra={"type": ["string", "integer"]})
    query: str | None = None
    gt_answer: str | None = None
    response: str
    retrieved_context: list[RagCheckerContext] = Field(default_factory=list)

    @field_validator("query_id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        # true is an int too; left as it is, the field refuses it as not a string
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    _r = field_validator("retrieved_context", mode="before")(_json_list)


class ChunkRead(BaseModel):
    rank: int
    document_id: str | None
    start: int | None
    end: int | None
    text: str
    score: float | None
    location: str = Field(description="given | exact | normalized | fuzzy | unlocated")
    match_score: float | None = Field(default=None, description="for a chunk located from its text, 0-100")


class OutputRead(BaseModel):
    id: int
    question_id: str
    answer: str | None
    error: str | None
    generator: dict[str, Any]
    latency_ms: float | None
    retrieved: list[ChunkRead]
