"""What an uploaded file looks like, and the column names each kind of row accepts in a CSV header.

A ratings sheet posted as outputs should get one sentence ("this looks like a ratings file ...") rather than
a field error per row; ``detect`` recognises every kind of file the service reads from its keys alone.
Accepted column names are compared with normalised headers (lower case, spaces and hyphens as underscores).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    name: str
    label: str
    where: str


KINDS = {
    k.name: k
    for k in (
        Kind("ragchecker", "RAGChecker results", "POST /runs/{id}/outputs, or POST /studies/import"),
        Kind("ragas", "Ragas rows", "POST /runs/{id}/outputs, or POST /studies/import"),
        Kind("deepeval", "a DeepEval test-case file", "POST /studies/import"),
        Kind("ratings", "a ratings file", "POST /runs/{id}/ratings"),
        Kind(
            "preferences",
            "a file of pairwise preferences",
            "POST /preferences, or the preferences field of POST /studies/import",
        ),
        Kind("scores", "a file of precomputed scores", "POST /runs/{id}/scores"),
        Kind("questions", "a questions file", "POST /datasets/{id}/questions"),
        Kind("documents", "a documents file (a corpus)", "POST /datasets/{id}/documents"),
        Kind("outputs", "a file of outputs", "POST /runs/{id}/outputs"),
        Kind("raters", "a list of raters", "POST /raters"),
    )
}

_QUESTION_ID = ("question_id", "qid", "query_id", "question_ref")

# For each row model read from CSV: field -> accepted header names, the field's own name first.
ACCEPTED: dict[str, dict[str, tuple[str, ...]]] = {
    "RatingIn": {
        "question_id": _QUESTION_ID,
        "question": ("question", "question_text", "query", "user_input", "input"),
        "run": ("run", "run_name"),
        "rater": ("rater", "rater_name", "annotator", "annotateur", "evaluator", "evaluateur", "évaluateur"),
        "score": ("score", "rating", "grade", "note"),
        "rubric": ("rubric", "scale", "grille"),
        "comment": ("comment", "comments", "remark", "remarks", "commentaire", "commentaires"),
    },
    "StudyPreferenceIn": {
        "question_id": _QUESTION_ID,
        "question": ("question", "question_text", "query", "user_input", "input"),
        "run_a": ("run_a",),
        "run_b": ("run_b",),
        "rater": ("rater", "rater_name", "annotator", "annotateur", "evaluator", "evaluateur", "évaluateur"),
        "preference": ("preference", "preferred", "préférence"),
        "rubric": ("rubric", "scale", "grille"),
        "comment": ("comment", "comments", "remark", "remarks", "commentaire", "commentaires"),
    },
    "ExternalScoreIn": {
        "question_id": _QUESTION_ID,
        "metric": ("metric", "metric_name"),
        "value": ("value", "metric_value", "score"),
        "higher_is_better": ("higher_is_better",),
    },
    "RaterCreate": {"name": ("name", "rater", "rater_name")},
    "NativeOutput": {
        "question_id": _QUESTION_ID,
        "answer": ("answer", "response", "output", "generated_answer"),
        "retrieved": ("retrieved", "retrieved_chunks", "chunks"),
        "generator": ("generator",),
        "latency_ms": ("latency_ms", "latency"),
    },
}

# Which kinds of file each row model reads.
ACCEPTS: dict[str, frozenset[str]] = {
    "NativeOutput": frozenset({"outputs", "ragas", "ragchecker"}),
    "RagasOutput": frozenset({"outputs", "ragas", "ragchecker"}),
    "RagCheckerOutput": frozenset({"outputs", "ragas", "ragchecker"}),
    "RatingIn": frozenset({"ratings"}),
    "StudyPreferenceIn": frozenset({"preferences"}),
    "RaterCreate": frozenset({"raters"}),
    "ExternalScoreIn": frozenset({"scores"}),
    "DocumentCreate": frozenset({"documents"}),
    "QuestionCreate": frozenset({"questions"}),
}

_RATER = set(ACCEPTED["RatingIn"]["rater"])
_SCORE = set(ACCEPTED["RatingIn"]["score"])


def keys_of(items: Iterable[object], limit: int = 20) -> set[str]:
    """The normalised keys of the first ``limit`` object items."""
    keys: set[str] = set()
    for n, item in enumerate(items):
        if n >= limit:
            break
        if isinstance(item, dict):
            keys |= {str(k).strip().lower().replace(" ", "_").replace("-", "_") for k in item}
    return keys


def detect(keys: set[str]) -> tuple[Kind, list[str]] | None:
    """The kind of file whose rows have these keys, with the keys that gave it away; None if unknown."""
    k = keys

    def hit(name: str, *evidence: str) -> tuple[Kind, list[str]]:
        return KINDS[name], [e for e in evidence if e in k]

    if k & {"query_id", "gt_answer", "retrieved_context"}:
        return hit("ragchecker", "query_id", "gt_answer", "retrieved_context", "response")
    if "user_input" in k:
        return hit("ragas", "user_input", "response", "retrieved_contexts", "reference")
    deepeval = {"actual_output", "expected_output", "retrieval_context", "context"}
    camel = {"actualoutput", "retrievalcontext", "metricsdata", "testcases"}
    if ("input" in k and k & deepeval) or k & camel:
        return hit(
            "deepeval", "input", "actual_output", "retrieval_context", "context", "actualoutput", "testcases"
        )
    rater, score = k & _RATER, k & _SCORE
    if rater and score and "metric" not in k:
        return KINDS["ratings"], sorted(k & set(_QUESTION_ID)) + sorted(rater) + sorted(score)
    if rater and k & {"preference", "preferred", "préférence"}:
        return KINDS["preferences"], sorted(k & set(_QUESTION_ID)) + sorted(rater) + ["preference"]
    if {"metric", "value"} <= k:
        return hit("scores", "question_id", "metric", "value")
    if "question" in k and k & {"external_id", "passages", "reference_answer", "answerable"}:
        return hit("questions", "external_id", "question", "reference_answer", "passages")
    if {"external_id", "text"} <= k:
        return hit("documents", "external_id", "text", "title")
    if ("answer" in k and k & set(_QUESTION_ID)) or "retrieved" in k:
        return hit("outputs", "question_id", "answer", "retrieved")
    if k == {"name"}:
        return hit("raters", "name")
    return None


def wrong_kind_message(found: Kind, evidence: list[str], expected: str) -> str:
    return (
        f"this looks like {found.label} (it has {', '.join(evidence)}), not {expected}; "
        f"send it to {found.where}"
    )
