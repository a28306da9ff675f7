"""services.datasets: datasets, idempotent document and question imports, exports, the repository."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from services.datasets import service as datasets
from services.datasets.repository import DatasetRepository
from services.datasets.schemas import DatasetCreate
from services.errors import Conflict, InvalidItems, NotFound
from services.models import Dataset, Document, Passage, Question
from tests.unit.services.factories import DOC_TEXT, dataset, rows


def _errors(exc: pytest.ExceptionInfo[InvalidItems]) -> list[tuple[int | None, str]]:
    return [(e.index, e.field) for e in exc.value.items]


def test_the_session_is_rolled_back_even_after_a_commit(db: Session, engine: Engine) -> None:
    datasets.create_dataset(db, DatasetCreate(name="isolated"))
    db.commit()  # releases the savepoint only
    with engine.connect() as other:
        assert other.scalar(select(func.count()).select_from(Dataset)) == 0
    assert db.scalar(select(Dataset.name)) == "isolated"


def test_create_dataset_stores_it_and_refuses_a_taken_name(db: Session) -> None:
    read = datasets.create_dataset(db, DatasetCreate(name="study", language="fr", description="x"))
    stored = db.get(Dataset, read.id)
    assert stored is not None
    assert (stored.name, stored.language, stored.description) == ("study", "fr", "x")
    assert stored.chunking == {"page_max_words": 1000, "max_words": 200, "overlap_words": 0}
    assert (read.documents, read.questions, read.unanswerable) == (0, 0, 0)

    with pytest.raises(Conflict) as exc:
        datasets.create_dataset(db, DatasetCreate(name="study"))
    assert [(e.field, e.reason) for e in exc.value.items] == [("name", f"already taken by dataset {read.id}")]
    assert db.scalar(select(func.count()).select_from(Dataset)) == 1


def test_unknown_dataset_is_not_found(db: Session) -> None:
    with pytest.raises(NotFound, match="dataset 999 does not exist"):
        datasets.get_dataset(db, 999)
    with pytest.raises(NotFound):
        datasets.import_documents(db, 999, rows({"external_id": "d", "text": "t"}))
    with pytest.raises(NotFound):
        datasets.list_questions(db, 999)


def test_document_reimport_counts_created_updated_unchanged(db: Session) -> None:
    ds = datasets.create_dataset(db, DatasetCreate(name="docs")).id
    first = datasets.import_documents(
        db,
        ds,
        rows({"external_id": "a", "text": "alpha"}, {"external_id": "b", "text": "beta", "title": "B"}),
    )
    assert (first.kind, first.received, first.created, first.updated, first.unchanged) == (
        "documents", 2, 2, 0, 0
    )  # fmt: skip
    again = datasets.import_documents(
        db,
        ds,
        rows({"external_id": "a", "text": "alpha"}, {"external_id": "b", "text": "beta", "title": "B"}),
    )
    assert (again.created, again.updated, again.unchanged) == (0, 0, 2)
    changed = datasets.import_documents(
        db,
        ds,
        rows(
            {"external_id": "a", "text": "alpha", "metadata": {"lang": "en"}},
            {"external_id": "c", "text": "gamma"},
        ),
    )
    assert (changed.created, changed.updated, changed.unchanged) == (1, 1, 0)
    stored = {d.external_id: d for d in db.scalars(select(Document).where(Document.dataset_id == ds))}
    assert sorted(stored) == ["a", "b", "c"]
    assert stored["a"].meta == {"lang": "en"}
    assert (stored["b"].title, stored["b"].text) == ("B", "beta")


def test_a_bad_document_batch_lists_every_bad_row_and_writes_nothing(db: Session) -> None:
    ds = datasets.create_dataset(db, DatasetCreate(name="docs")).id
    with pytest.raises(InvalidItems) as exc:
        datasets.import_documents(
            db,
            ds,
            rows(
                {"external_id": "a", "text": "fine"},
                {"external_id": "b", "text": "   "},
                {"external_id": "a", "text": "again"},
                {"text": "no id"},
            ),
        )
    assert _errors(exc) == [(1, "text"), (3, "external_id"), (2, "external_id")]
    assert "duplicate 'a' (first at index 0)" in exc.value.items[2].reason
    assert exc.value.detail == "documents: 4 rows, 3 errors in 3 of them; nothing was imported"
    assert db.scalar(select(func.count()).select_from(Document)) == 0


def test_a_document_text_cannot_shrink_under_a_stored_passage(db: Session) -> None:
    ds = dataset(db)
    with pytest.raises(InvalidItems) as exc:
        datasets.import_documents(db, ds, rows({"external_id": "d1", "text": "Paris."}))
    # One error per passage that would point past the new end: each question is named.
    assert _errors(exc) == [(0, "text")] * 3
    assert sorted(e.reason.split("question ")[1] for e in exc.value.items) == [
        f"'q{i}' has a passage ending at 31" for i in (1, 2, 3)
    ]
    assert db.scalar(select(Document.text)) == DOC_TEXT


def test_questions_import_with_passages_and_reimport_is_idempotent(db: Session) -> None:
    ds = dataset(db, n_questions=0)
    items: list[dict[str, Any]] = [
        {
            "external_id": "q1",
            "question": "Capital of France?",
            "reference_answer": "Paris",
            "types": ["factual"],
            "passages": [{"document_id": "d1", "start": 0, "end": 31, "text": DOC_TEXT[:31]}],
        },
        {"external_id": "q2", "question": "Capital of Spain?", "answerable": False},
    ]
    report = datasets.import_questions(db, ds, rows(*items))
    assert (report.created, report.updated, report.unchanged) == (2, 0, 0)
    assert datasets.import_questions(db, ds, rows(*items)).unchanged == 2

    items[0]["passages"] = [{"document_id": "d1", "start": 32, "end": 65}]
    report = datasets.import_questions(db, ds, rows(*items))
    assert (report.created, report.updated, report.unchanged) == (0, 1, 1)
    q1 = db.scalars(select(Question).where(Question.external_id == "q1")).one()
    assert [(p.position, p.start, p.end) for p in q1.passages] == [(0, 32, 65)]
    assert db.scalar(select(func.count()).select_from(Passage)) == 1  # the replaced passage is gone
    read = datasets.dataset_read(db, datasets.get_dataset(db, ds))
    assert (read.documents, read.questions, read.unanswerable) == (1, 2, 1)


@pytest.mark.parametrize(
    ("passage", "field", "reason"),
    [
        ({"document_id": "nope", "start": 0, "end": 5}, "passages[0].document_id", "unknown document 'nope'"),
        (
            {"document_id": "d1", "start": 5, "end": 5},
            "passages[0].end",
            "end 5 must be greater than start 5",
        ),
        ({"document_id": "d1", "start": 0, "end": 999}, "passages[0].end", "beyond document length 83"),
        ({"document_id": "d1", "start": 31, "end": 32}, "passages[0]", "the span holds only whitespace"),
        ({"document_id": "d1", "start": 0, "end": 5, "text": "Rome"}, "passages[0].text", "does not match"),
    ],
)
def test_a_bad_passage_names_its_field(
    db: Session, passage: dict[str, object], field: str, reason: str
) -> None:
    ds = dataset(db, n_questions=0)
    assert len(DOC_TEXT) == 83
    with pytest.raises(InvalidItems) as exc:
        datasets.import_questions(db, ds, rows({"external_id": "q", "question": "?", "passages": [passage]}))
    [error] = exc.value.items
    assert (error.index, error.field) == (0, field)
    assert reason in error.reason
    assert db.scalar(select(func.count()).select_from(Question)) == 0


def test_question_rules_of_the_schema_are_item_errors(db: Session) -> None:
    ds = dataset(db, n_questions=0)
    with pytest.raises(InvalidItems) as exc:
        datasets.import_questions(
            db,
            ds,
            rows(
                {
                    "external_id": "q1",
                    "question": "?",
                    "answerable": False,
                    "passages": [{"document_id": "d1", "start": 0, "end": 3}],
                },
                {"external_id": "q2", "question": "?", "types": ["a", "a"]},
                {"external_id": "q1", "question": "?"},
            ),
        )
    assert _errors(exc) == [(0, "(row)"), (1, "types")]  # q1 at index 2 is not a duplicate of a bad row
    assert "passages" in exc.value.items[0].reason  # an unanswerable question has nothing to find


def test_export_reimports_to_the_identical_dataset(db: Session) -> None:
    ds = dataset(db, n_questions=2)
    questions = datasets.list_questions(db, ds, include_text=True)
    assert questions[0].passages[0].text == DOC_TEXT[:31]
    exported = datasets.export_question_items(questions)
    assert "text" not in exported[0]["passages"][0] and "id" not in exported[0]
    report = datasets.import_questions(db, ds, rows(*exported))
    assert (report.created, report.updated, report.unchanged) == (0, 0, 2)
    docs = datasets.export_document_items(datasets.list_documents(db, ds))
    assert datasets.import_documents(db, ds, rows(*docs)).unchanged == 1
    assert datasets.to_jsonl(docs).count("\n") == 1


def test_repository_queries(db: Session) -> None:
    ds = dataset(db, n_questions=3)
    other = dataset(db, name="other", n_questions=1)
    repo = DatasetRepository(db)
    assert repo.by_name("other") is not None and repo.by_name("missing") is None
    assert [d.name for d in repo.list()] == ["ds", "other"]
    assert repo.counts(ds) == (1, 3, 0)
    assert list(repo.documents_by_external_id(ds, ["d1", "x"])) == ["d1"]
    assert repo.documents_by_external_id(ds, []) == {}
    assert [q.external_id for q in repo.questions(ds)] == ["q1", "q2", "q3"]
    assert sorted(repo.questions_by_external_id(ds, ["q2"])) == ["q2"]
    doc_id = repo.documents(other)[0].id
    [passage] = repo.passages_of_documents([doc_id])
    assert passage.question.dataset_id == other
