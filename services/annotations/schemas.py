"""Options and answer of an annotation import (POST /runs/{run_id}/annotations)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Platform = Literal["langfuse", "opik", "phoenix", "mlflow"]
PLATFORMS: tuple[Platform, ...] = ("langfuse", "opik", "phoenix", "mlflow")


class AnnotationOptions(BaseModel):
    """How to read a platform's export of scores and annotations, and what to make of it."""

    model_config = ConfigDict(extra="forbid")

    platform: Platform = Field(description="the platform that wrote the export")
    human: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="the human score that becomes the run's ratings, when the file holds several (a run is "
        "rated on one rubric; the others are listed as not imported)",
    )
    rubric: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="an existing rubric for the human scores; default: one inferred from the score's "
        "configuration (numeric with integer bounds, categorical with integer values, boolean), named "
        "<platform>.<score>",
    )
    raters: dict[str, str] = Field(
        default_factory=dict,
        description="author (as the platform names them: user id, e-mail, source id) -> rater name; an "
        "author not listed is a rater of their own name",
    )
    higher_is_better: list[str] = Field(default_factory=list, description="judge scores, higher is better")
    lower_is_better: list[str] = Field(default_factory=list, description="judge scores, lower is better")

    @field_validator("raters")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for author, rater in value.items():
            if not author.strip() or not rater.strip() or len(rater) > 200:
                raise ValueError(
                    f"{author!r} -> {rater!r}: both must be non-empty, a rater at most 200 chars"
                )
        return {a.strip(): r.strip() for a, r in value.items()}


class AnnotationCounts(BaseModel):
    created: int = 0
    updated: int = 0
    unchanged: int = 0


class RubricUsed(BaseModel):
    name: str
    min: int
    max: int
    levels: dict[str, str]
    source: Literal["asked", "config", "values", "existing"] = Field(
        description="asked: the rubric option; config: inferred from the platform's score configuration; "
        "values: a boolean score (0..1); existing: a rubric of the inferred name already stored, same scale"
    )
    created: bool


class AnnotationImportRead(BaseModel):
    run_id: int
    platform: Platform
    received: int = Field(description="scores and annotations in the file (one per author and name)")
    traces: int = Field(description="distinct traces (or spans) the file's scores are about")
    matched_outputs: int = Field(description="outputs of the run that at least one score joined")
    unmatched: int = Field(description="scores about a trace that is no output of this run (not imported)")
    unmatched_traces: list[str] = Field(description="up to 20 of those trace (or span) ids")
    human: str | None = Field(description="the human score imported as ratings")
    rubric: RubricUsed | None
    ratings: AnnotationCounts
    raters: list[str] = Field(description="the raters of the imported ratings")
    raters_created: list[str]
    metrics: list[str] = Field(description="judge scores imported, as external.<platform>.<name>")
    scores: AnnotationCounts
    not_imported: list[str] = Field(description="what the file holds that was left out, and why")
    notes: list[str]
