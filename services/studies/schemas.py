"""Options and answer of a one-step study import."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from services.corpus import DEFAULT_THRESHOLD
from services.ratings.schemas import PREFERENCE_IMPORT_RUBRIC_NAME
from services.types import Integer

StudyFormat = Literal["auto", "ragas", "ragchecker", "deepeval", "mapped"]
FIELDS = (
    "question_id",
    "question",
    "reference_answer",
    "answer",
    "retrieved_contexts",
    "retrieved_ids",
    "gold_passages",
    "gold_ids",
    "types",
    "answerable",
)


class StudyOptions(BaseModel):
    """How to read a study file and where to put it."""

    model_config = ConfigDict(extra="forbid")

    dataset: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="name of the dataset to create, or to add to when it exists",
    )
    dataset_id: int | None = Field(default=None, ge=1, description="an existing dataset to add to")
    language: str = Field(default="en", pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")
    run: str | None = Field(
        default=None, min_length=1, max_length=200, description="name of the new run (default: the file name)"
    )
    format: StudyFormat = "auto"
    columns: dict[str, str] = Field(
        default_factory=dict,
        description=f"for a plain CSV/JSONL: field -> column name, fields among {', '.join(FIELDS)}",
    )
    list_separator: str | None = Field(
        default=None, min_length=1, max_length=3, description="for list cells written as 'a|b' (plain files)"
    )
    fuzzy_threshold: float = Field(default=DEFAULT_THRESHOLD, ge=50, le=100)
    fuzzy_word_changes: Literal["error", "warn"] = Field(
        default="warn",
        description="a gold passage found by a fuzzy match whose words differ from the corpus (a word "
        "changed, added or left out): refuse the import naming the question and the words (error), or "
        "import it with a note that the runs' reports repeat (warn)",
    )
    higher_is_better: list[str] = Field(default_factory=list, description="metric columns, higher is better")
    lower_is_better: list[str] = Field(default_factory=list, description="metric columns, lower is better")
    scores: Literal["auto", "skip"] = Field(
        default="auto", description="import the file's metric columns (auto) or not (skip)"
    )
    ratings_columns: dict[str, str] = Field(
        default_factory=dict,
        description="ratings files: field -> the file's column, fields among "
        "question_id, question, rater, score, rubric, comment, run",
    )
    ratings_join: Literal["auto", "order"] = Field(
        default="auto",
        description="auto: a rating finds its question by question_id, else by its text (exact, then "
        "normalised); order: rows naming neither match the run's questions by position",
    )
    preferences_columns: dict[str, str] = Field(
        default_factory=dict,
        description="preference files: field -> the file's column, fields among "
        "question_id, question, rater, preference, rubric, comment, run_a, run_b",
    )

    @field_validator("columns")
    @classmethod
    def _fields(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(FIELDS))
        if unknown:
            raise ValueError(f"unknown field(s) {unknown}; fields are {', '.join(FIELDS)}")
        return value

    @model_validator(mode="after")
    def _one_dataset(self) -> StudyOptions:
        if (self.dataset is None) == (self.dataset_id is None):
            raise ValueError("give the dataset's name (dataset) or the id of an existing one (dataset_id)")
        return self


class StudyPreferenceIn(BaseModel):
    """One row of a preference file beside the study: a rater's preference between two runs' answers to
    one question (the rows of POST /preferences, with the question found like a rating's and the runs named
    by the import's run names)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    question_id: str | None = Field(default=None, min_length=1, description="external id of the question")
    question: str | None = Field(
        default=None,
        description="the question's text, when the row has no question_id (joined like a rating)",
    )
    run_a: str | None = Field(
        default=None, description="name of run A (default, with two runs: the first study file's run)"
    )
    run_b: str | None = Field(
        default=None, description="name of run B (default, with two runs: the second study file's run)"
    )
    rater: str = Field(min_length=1, description="name of the rater (registered when missing)")
    preference: Integer = Field(
        description="on the rubric's scale, its high end for run B's answer (default rubric -2..2: "
        "-2 = A much better, 0 = as good, 2 = B much better)"
    )
    rubric: str | None = Field(
        default=None,
        description="rubric name; default: the one rubric the pair's rows name, else "
        f"{PREFERENCE_IMPORT_RUBRIC_NAME!r} (-2..2)",
    )
    comment: str | None = None

    @field_validator("question_id", "question", "run_a", "run_b", "rubric", "comment", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


class DatasetRef(BaseModel):
    id: int
    name: str
    created: bool


class RunRef(BaseModel):
    id: int
    name: str


class FileInfo(BaseModel):
    name: str | None
    kind: Literal["json", "jsonl", "csv"]
    encoding: str
    delimiter: str | None
    rows: int


class Counts(BaseModel):
    received: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0


class CorpusInfo(BaseModel):
    source: Literal["corpus", "existing", "derived"] = Field(
        description="corpus: the uploaded corpus (and the dataset's documents); existing: the dataset's "
        "documents; derived: documents made from the file's contexts"
    )
    name: str | None
    documents: Counts


class QuestionCounts(Counts):
    with_reference_answer: int = 0
    with_gold_passages: int = 0


class Located(BaseModel):
    """How texts given without offsets were found (scores: 0-100, see services.corpus)."""

    total: int = 0
    given: int = 0
    exact: int = 0
    normalized: int = 0
    fuzzy: int = 0
    unlocated: int = 0
    lowest_fuzzy_score: float | None = None


class WordChange(BaseModel):
    given: str = Field(description="the words as the file gives them (empty: a word the corpus adds)")
    corpus: str = Field(description="the words in the corpus span (empty: a word the corpus lacks)")


class LocatedPassage(BaseModel):
    """A gold passage given as text that was not found verbatim in the corpus."""

    question_id: str
    passage: int = Field(description="the passage's position among the question's passages (from 0)")
    document_id: str = Field(description="external id of the document it was located in")
    start: int
    end: int
    location: Literal["normalized", "fuzzy"]
    match_score: float | None
    word_changes: list[WordChange] = Field(
        description="for a fuzzy match: the words that differ between the given text and the corpus span, "
        "compared case-folded without punctuation (empty: only case, spacing or punctuation differ)"
    )


class ScoresInfo(BaseModel):
    metrics: list[str] = Field(default_factory=list)
    created: int = 0
    not_imported: list[str] = Field(
        default_factory=list, description="numeric columns left out, and why (unknown direction, skip)"
    )


class RunImportRead(BaseModel):
    """One run of the import: one per study file that has answers."""

    id: int
    name: str
    format: Literal["ragas", "ragchecker", "deepeval", "mapped"]
    file: FileInfo
    outputs: int
    chunks: Located
    scores: ScoresInfo


class RatingsInfo(BaseModel):
    files: int
    received: int
    created: int
    raters: list[str] = Field(description="the raters the files name")
    raters_created: list[str] = Field(description="raters registered by this import")
    by_run: dict[str, int] = Field(description="run name -> ratings imported for it")


class PreferencePairInfo(BaseModel):
    run_a: str = Field(description="the pair's first run in the import's order (its study file came first)")
    run_b: str = Field(description="the pair's second run; rows given for (run_b, run_a) count here too")
    rubric: str
    created: int


class PreferencesInfo(BaseModel):
    files: int
    received: int
    created: int
    raters: list[str] = Field(description="the raters the files name")
    raters_created: list[str] = Field(description="raters registered by this import for the preferences")
    pairs: list[PreferencePairInfo] = Field(description="preferences imported per pair of runs")


class StudyImportRead(BaseModel):
    dataset: DatasetRef
    run: RunRef | None = Field(description="the run of the first study file (every run: runs)")
    runs: list[RunImportRead]
    format: Literal["ragas", "ragchecker", "deepeval", "mapped"]
    file: FileInfo
    corpus: CorpusInfo
    questions: QuestionCounts
    passages: Located
    located_passages: list[LocatedPassage] = Field(
        description="every gold passage located other than verbatim (normalised or fuzzy), by question"
    )
    outputs: int
    chunks: Located
    scores: ScoresInfo
    ratings: RatingsInfo | None
    preferences: PreferencesInfo | None = Field(
        default=None,
        description="pairwise preferences between the import's runs (GET /preferences lists them)",
    )
    fuzzy_threshold: float
    fuzzy_word_changes: Literal["error", "warn"]
    notes: list[str]
