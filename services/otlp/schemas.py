"""What ``POST /v1/traces`` answers."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from services.studies.schemas import Located

TRACES_PATH = "/v1/traces"
DATASET_HEADER = "X-Ragmeta-Dataset"
RUN_HEADER = "X-Ragmeta-Run"


class UnmappedSpan(BaseModel):
    trace_id: str
    span_id: str
    name: str
    kind: str | None = Field(description="openinference.span.kind, LLM for a GenAI span, null when unknown")
    reason: str


class OutputCounts(BaseModel):
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    invalidated_ratings: int = 0
    invalidated_scores: int = 0


class PartialSuccess(BaseModel):
    """OTLP's own answer field: spans not turned into (part of) an output count as rejected."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    rejected_spans: int = Field(0, alias="rejectedSpans")
    error_message: str = Field("", alias="errorMessage")


class TraceIngestRead(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    dataset_id: int
    run_id: int
    run: str
    run_created: bool
    traces: int = Field(description="traces in the request")
    spans: int = Field(description="spans in the request")
    outputs: OutputCounts = Field(
        description="outputs written: one per trace that gives a question and answer"
    )
    questions_created: int = Field(description="questions of the dataset created from the traces' inputs")
    chunks: Located = Field(description="how the retrieved chunks were found in the dataset's documents")
    unmapped_spans: int = Field(description="spans that gave no part of an output (each listed in unmapped)")
    unmapped: list[UnmappedSpan]
    notes: list[str] = Field(default_factory=list)
    partial_success: PartialSuccess = Field(alias="partialSuccess")
