from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from services.jobs.service import JobParams, JobProgress
from services.types import Int

Mode = Literal["hybrid", "bm25", "dense"]


class RetrieveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    query: str = Field(min_length=1)
    k: Int = Field(default=5, ge=1, le=100)
    mode: Mode = "hybrid"


class RetrievedChunkOut(BaseModel):
    rank: int
    document_id: str
    start: int
    end: int
    text: str
    score: float


class RetrieveResponse(BaseModel):
    mode: Mode
    k: int
    chunks: list[RetrievedChunkOut]


class AnswerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    question: str = Field(min_length=1)
    k: Int = Field(default=5, ge=1, le=50)
    mode: Mode = "hybrid"


class GeneratorInfo(BaseModel):
    kind: Literal["llm", "extractive"]
    model: str | None = None
    declined: bool | None = Field(default=None, description="extractive only: under the relevance threshold")


class AnswerResponse(BaseModel):
    answer: str
    chunks: list[RetrievedChunkOut]
    generator: GeneratorInfo
    latency_ms: float
    tokens: dict[str, Any] | None = None


class IndexRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    force: bool = Field(default=False, strict=True, description="rebuild even when the index is up to date")


class GenerateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    regenerate: bool = Field(
        default=False, strict=True, description="answer again questions that already have an output"
    )


class IndexJobParams(JobParams):
    dataset_id: int
    force: bool


class IndexJobSummary(BaseModel):
    """The index's fingerprint and the configuration it is made of, as planned."""

    fingerprint: str
    up_to_date: bool = Field(description="the index was already built from this configuration")
    corpus: tuple[int, str] = Field(description="(number of documents, their latest change)")
    chunking: dict[str, int] = Field(description="the dataset's chunking configuration")
    language: str
    analyzer: int = Field(description="the version of the text analyzer the BM25 layer uses")
    model: str = Field(description="the dense encoder's model")
    backend: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="how the encoder runs when not with torch (onnx, onnx-int8)",
    )


class IndexJobRead(JobProgress):
    kind: Literal["index"]
    params: IndexJobParams
    summary: IndexJobSummary


class GenerateJobParams(JobParams):
    run_id: int
    regenerate: bool


class GenerateJobSummary(BaseModel):
    skipped_existing: int = Field(description="questions with an answer already, not asked again")
    questions: int


class GenerateJobRead(JobProgress):
    kind: Literal["generate"]
    params: GenerateJobParams
    summary: GenerateJobSummary
