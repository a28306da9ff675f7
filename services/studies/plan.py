"""What a study import will write, checked and located before its transaction: the plan ``service.plan``
builds and ``writer.write`` carries out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from services.errors import Conflict
from services.scores.external import (
    ExternalMetric,
)
from services.studies.repository import StoredDocument, StoredPassage, StoredQuestion
from services.studies.schemas import (
    Counts,
    FileInfo,
    LocatedPassage,
    StudyOptions,
)


class StaleSnapshot(Conflict):
    """The dataset changed between the snapshot and the write: plan again."""


@dataclass
class StudyFiles:
    study: bytes
    study_name: str | None = None
    corpus: bytes | None = None
    corpus_name: str | None = None
    passages: bytes | None = None
    passages_name: str | None = None
    # Further study files: one run each, over the same questions.
    more: list[tuple[bytes, str | None]] = field(default_factory=list)
    # Ratings of the runs' outputs (services.ratings.join says how rows find their output).
    ratings: list[tuple[bytes, str | None]] = field(default_factory=list)
    # Pairwise preferences between two of the runs' answers (services.studies.preferences).
    preferences: list[tuple[bytes, str | None]] = field(default_factory=list)


@dataclass
class Snapshot:
    dataset_id: int | None
    dataset_name: str
    language: str
    stamp: tuple[Any, ...] | None
    documents: list[StoredDocument]
    questions: list[StoredQuestion]
    passages: list[StoredPassage]
    raters: set[str] = field(default_factory=set)
    rubrics: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (min, max)


@dataclass
class DocPlan:
    external_id: str
    title: str | None
    text: str
    meta: dict[str, Any]
    stored_id: int | None
    action: str  # create | update | keep


@dataclass
class SpanPlan:
    doc: int | None  # index into Plan.documents
    start: int | None
    end: int | None
    how: str
    score: float | None
    text: str = ""


@dataclass
class QuestionPlan:
    external_id: str
    question: str
    reference_answer: str | None
    answerable: bool
    types: list[str]
    meta: dict[str, Any]
    passages: list[SpanPlan] | None  # None: keep the stored ones
    stored_id: int | None
    action: str


@dataclass
class OutputPlan:
    question: int  # index into Plan.questions
    answer: str
    chunks: list[SpanPlan]
    scores: dict[str, float | None]


@dataclass
class RunPlan:
    name: str
    format: str
    file: FileInfo
    outputs: list[OutputPlan]
    metrics: list[ExternalMetric]
    library: str
    not_imported: list[str]


@dataclass
class RatingPlan:
    run: int  # index into Plan.runs
    output: int  # index into the run's outputs
    rater: str
    rubric: str
    score: int
    comment: str | None


@dataclass
class RatingsPlan:
    files: int
    received: int
    ratings: list[RatingPlan]
    raters: list[str]  # every rater the files name
    notes: list[str]


@dataclass
class PreferencePlan:
    run_a: int  # index into Plan.runs
    run_b: int
    output_a: int  # index into run A's outputs
    output_b: int
    question: int  # index into Plan.questions
    rater: str
    rubric: str
    preference: int  # as the row gives it: on the rubric's scale, its high end for run B
    comment: str | None


@dataclass
class PreferencesPlan:
    files: int
    received: int
    preferences: list[PreferencePlan]
    raters: list[str]  # every rater the files name
    notes: list[str]


@dataclass
class Plan:
    snapshot: Snapshot
    options: StudyOptions
    runs: list[RunPlan]
    files: list[FileInfo]
    formats: list[str]
    corpus_source: str
    corpus_name: str | None
    documents: list[DocPlan]
    questions: list[QuestionPlan]
    ratings: RatingsPlan | None
    document_counts: Counts
    preferences: PreferencesPlan | None = None
    located: list[LocatedPassage] = field(default_factory=list)
    passage_notes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
