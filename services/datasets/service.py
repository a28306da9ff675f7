"""Datasets, documents and questions: creation, idempotent atomic imports, exact exports.

Imports validate the whole batch before writing anything: one bad row rejects the batch (InvalidItems, 422)
with every bad row listed. Re-importing the same items reports them unchanged and never duplicates.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from services.datasets.repository import DatasetRepository
from services.datasets.schemas import (
    ChunkingConfig,
    DatasetCreate,
    DatasetRead,
    DocumentCreate,
    DocumentRead,
    ImportReport,
    PassageOut,
    QuestionCreate,
    QuestionRead,
)
from services.errors import Conflict, ItemError, NotFound
from services.ingest import Row, notes_of
from services.models import Dataset, Document, Passage, Question
from services.pagination import Page, PageRequest, map_page, take
from services.validation import duplicate_errors, invalid_rows, validate_rows


def get_dataset(session: Session, dataset_id: int) -> Dataset:
    dataset = DatasetRepository(session).get(dataset_id)
    if dataset is None:
        raise NotFound(f"dataset {dataset_id} does not exist")
    return dataset


def create_dataset(session: Session, data: DatasetCreate) -> DatasetRead:
    repo = DatasetRepository(session)
    existing = repo.by_name(data.name)
    if existing is not None:
        raise Conflict(
            f"a dataset named {data.name!r} already exists (id {existing.id})",
            [ItemError(None, "name", f"already taken by dataset {existing.id}")],
        )
    dataset = Dataset(
        name=data.name,
        language=data.language,
        description=data.description,
        chunking=data.chunking.model_dump(),
    )
    repo.add(dataset)
    repo.flush()
    return dataset_read(session, dataset)


def dataset_read(session: Session, dataset: Dataset) -> DatasetRead:
    docs, qs, unans = DatasetRepository(session).counts(dataset.id)
    return DatasetRead(
        id=dataset.id,
        name=dataset.name,
        language=dataset.language,
        description=dataset.description,
        chunking=ChunkingConfig.model_validate(dataset.chunking),
        documents=docs,
        questions=qs,
        unanswerable=unans,
    )


def list_datasets(session: Session, page: PageRequest) -> Page[DatasetRead]:
    after = page.after[0] if page.after else None
    datasets = take(DatasetRepository(session).list(after, page.limit + 1), page.limit, lambda d: (d.id,))
    return map_page(datasets, lambda d: dataset_read(session, d))


def _doc_state(doc: Document) -> dict[str, Any]:
    return {"title": doc.title, "text": doc.text, "metadata": doc.meta or {}}


def import_documents(session: Session, dataset_id: int, rows: list[Row]) -> ImportReport:
    """Upsert documents by external id.

    Fails (InvalidItems) on invalid rows, duplicate ids in the batch, or a new text shorter than a stored
    reference passage that points into it (which would silently corrupt the passage).
    """
    get_dataset(session, dataset_id)
    repo = DatasetRepository(session)
    good, errors = validate_rows(rows, DocumentCreate)
    errors += duplicate_errors([(r, d.external_id) for r, d in good], "external_id")
    existing = repo.documents_by_external_id(dataset_id, {d.external_id for _, d in good})

    changed_text = {
        existing[d.external_id].id: (row, d)
        for row, d in good
        if d.external_id in existing and existing[d.external_id].text != d.text
    }
    if changed_text:
        for passage in repo.passages_of_documents(changed_text):
            row, d = changed_text[passage.document_id]
            if passage.end > len(d.text):
                errors.append(
                    ItemError(
                        row.index,
                        "text",
                        f"new text has {len(d.text)} characters but question "
                        f"{passage.question.external_id!r} has a passage ending at {passage.end}",
                        line=row.line,
                    )
                )
    if errors:
        raise invalid_rows("documents", rows, errors)

    created = updated = unchanged = 0
    for _, d in good:
        new_state = {"title": d.title, "text": d.text, "metadata": d.metadata}
        doc = existing.get(d.external_id)
        if doc is None:
            repo.add(
                Document(
                    dataset_id=dataset_id,
                    external_id=d.external_id,
                    title=d.title,
                    text=d.text,
                    meta=d.metadata,
                )
            )
            created += 1
        elif _doc_state(doc) == new_state:
            unchanged += 1
        else:
            doc.title, doc.text, doc.meta = d.title, d.text, d.metadata
            updated += 1
    repo.flush()
    return ImportReport(
        kind="documents",
        received=len(rows),
        created=created,
        updated=updated,
        unchanged=unchanged,
        notes=notes_of(rows),
    )


def _question_state(q: Question) -> dict[str, Any]:
    return {
        "question": q.question,
        "reference_answer": q.reference_answer,
        "answerable": q.answerable,
        "types": list(q.types or []),
        "metadata": q.meta or {},
        "passages": [(p.document.external_id, p.start, p.end) for p in q.passages],
    }


def _located_state(q: Question) -> dict[tuple[int, str, int, int], tuple[str, float | None]]:
    """How each stored passage was located, by position and span: a re-import that does not say keeps it."""
    return {
        (i, p.document.external_id, p.start, p.end): (p.location, p.match_score)
        for i, p in enumerate(q.passages)
    }


def _passage_errors(good: list[tuple[Row, QuestionCreate]], docs: dict[str, Document]) -> list[ItemError]:
    """The passages that do not hold: unknown document, start >= end, beyond the document, a span of
    whitespace only, a given text that differs from the span."""
    out: list[ItemError] = []
    for row, q in good:
        for i, p in enumerate(q.passages):
            field = f"passages[{i}]"
            doc = docs.get(p.document_id)
            if doc is None:
                out.append(
                    ItemError(
                        row.index, f"{field}.document_id", f"unknown document {p.document_id!r}", row.line
                    )
                )
                continue
            if p.start >= p.end:
                out.append(
                    ItemError(
                        row.index,
                        f"{field}.end",
                        f"end {p.end} must be greater than start {p.start}",
                        row.line,
                    )
                )
                continue
            if p.end > len(doc.text):
                out.append(
                    ItemError(row.index, f"{field}.end", f"beyond document length {len(doc.text)}", row.line)
                )
                continue
            span = doc.text[p.start : p.end]
            if not span.strip():
                out.append(ItemError(row.index, field, "the span holds only whitespace", row.line))
            elif p.text is not None and p.text != span:
                out.append(
                    ItemError(
                        row.index,
                        f"{field}.text",
                        f"does not match the document span {p.start}:{p.end} ({span[:40]!r}...)",
                        row.line,
                    )
                )
    return out


def _upsert_questions(
    repo: DatasetRepository,
    dataset_id: int,
    good: list[tuple[Row, QuestionCreate]],
    docs: dict[str, Document],
) -> tuple[int, int, int]:
    """Create the new questions and rewrite the changed ones (passages included, each keeping how it was
    located unless the row says): (created, updated, unchanged)."""
    existing = repo.questions_by_external_id(dataset_id, {q.external_id for _, q in good})
    created = updated = unchanged = 0
    for _, q in good:
        new_state = {
            "question": q.question,
            "reference_answer": q.reference_answer,
            "answerable": q.answerable,
            "types": q.types,
            "metadata": q.metadata,
            "passages": [(p.document_id, p.start, p.end) for p in q.passages],
        }
        obj = existing.get(q.external_id)
        old_located = _located_state(obj) if obj is not None else {}
        located = [
            (p.location, p.match_score)
            if p.location is not None
            else old_located.get((i, p.document_id, p.start, p.end), ("given", None))
            for i, p in enumerate(q.passages)
        ]
        if (
            obj is not None
            and _question_state(obj) == new_state
            and located == [(p.location, p.match_score) for p in obj.passages]
        ):
            unchanged += 1
            continue
        if obj is None:
            obj = Question(dataset_id=dataset_id, external_id=q.external_id)
            repo.add(obj)
            created += 1
        else:
            updated += 1
        obj.question = q.question
        obj.reference_answer = q.reference_answer
        obj.answerable = q.answerable
        obj.types = list(q.types)
        obj.meta = q.metadata
        obj.passages = [
            Passage(
                position=i,
                document=docs[p.document_id],
                start=p.start,
                end=p.end,
                location=how,
                match_score=score,
            )
            for i, (p, (how, score)) in enumerate(zip(q.passages, located, strict=True))
        ]
    return created, updated, unchanged


def import_questions(session: Session, dataset_id: int, rows: list[Row]) -> ImportReport:
    """Upsert questions by external id; passages refer to documents by external id.

    Fails (InvalidItems) on invalid rows, duplicate ids, unknown documents, spans outside their document,
    start >= end, a given passage text that differs from the span, or a span of whitespace only.
    """
    get_dataset(session, dataset_id)
    repo = DatasetRepository(session)
    good, errors = validate_rows(rows, QuestionCreate)
    errors += duplicate_errors([(r, q.external_id) for r, q in good], "external_id")
    wanted_docs = {p.document_id for _, q in good for p in q.passages}
    docs = repo.documents_by_external_id(dataset_id, wanted_docs)
    errors += _passage_errors(good, docs)
    if errors:
        raise invalid_rows("questions", rows, errors)

    created, updated, unchanged = _upsert_questions(repo, dataset_id, good, docs)
    repo.flush()
    return ImportReport(
        kind="questions",
        received=len(rows),
        created=created,
        updated=updated,
        unchanged=unchanged,
        notes=notes_of(rows),
    )


def question_read(q: Question, include_text: bool = False) -> QuestionRead:
    return QuestionRead(
        id=q.id,
        external_id=q.external_id,
        question=q.question,
        reference_answer=q.reference_answer,
        answerable=q.answerable,
        types=list(q.types or []),
        metadata=q.meta or {},
        passages=[
            PassageOut(
                document_id=p.document.external_id,
                start=p.start,
                end=p.end,
                text=p.document.text[p.start : p.end] if include_text else None,
                location=p.location,
                match_score=p.match_score,
            )
            for p in q.passages
        ],
    )


def list_questions(session: Session, dataset_id: int, include_text: bool = False) -> list[QuestionRead]:
    get_dataset(session, dataset_id)
    return [question_read(q, include_text) for q in DatasetRepository(session).questions(dataset_id)]


def question_page(
    session: Session, dataset_id: int, page: PageRequest, include_text: bool = False
) -> Page[QuestionRead]:
    """One page of the dataset's questions in id order (the dataset is not looked up: the caller did)."""
    after = int(page.after[0]) if page.after else None
    found = DatasetRepository(session).questions(dataset_id, after=after, limit=page.limit + 1)
    return map_page(take(found, page.limit, lambda q: (q.id,)), lambda q: question_read(q, include_text))


def document_page(session: Session, dataset_id: int, page: PageRequest) -> Page[DocumentRead]:
    """One page of the dataset's documents in id order (the dataset is not looked up: the caller did)."""
    after = int(page.after[0]) if page.after else None
    found = DatasetRepository(session).documents(dataset_id, after=after, limit=page.limit + 1)
    return map_page(
        take(found, page.limit, lambda d: (d.id,)),
        lambda d: DocumentRead(
            id=d.id, external_id=d.external_id, title=d.title, text=d.text, metadata=d.meta or {}
        ),
    )


def list_documents(session: Session, dataset_id: int) -> list[DocumentRead]:
    get_dataset(session, dataset_id)
    return [
        DocumentRead(id=d.id, external_id=d.external_id, title=d.title, text=d.text, metadata=d.meta or {})
        for d in DatasetRepository(session).documents(dataset_id)
    ]


def export_question_items(
    questions: Sequence[QuestionRead], include_text: bool = False
) -> list[dict[str, Any]]:
    """The import form of questions: what a re-import turns into the identical dataset."""
    out = []
    for q in questions:
        item = q.model_dump(exclude={"id"})
        # How a passage was located travels with it: a re-import keeps it (PassageIn accepts it back).
        item["passages"] = [
            {k: v for k, v in p.items() if k != "text" or include_text} for p in item["passages"]
        ]
        out.append(item)
    return out


QUESTION_SHEET = ("question_id", "question", "reference_answer", "answerable", "types", "passages")


def question_sheet(questions: Sequence[QuestionRead]) -> list[dict[str, Any]]:
    """One row per question for a spreadsheet (the ids a ratings sheet names): the passages as
    ``document:start-end (how[ score])``, joined by ``; ``. Not an import form: that is JSON or JSONL."""

    def passage(p: PassageOut) -> str:
        score = f" {p.match_score:g}" if p.match_score is not None and p.location != "exact" else ""
        return f"{p.document_id}:{p.start}-{p.end} ({p.location}{score})"

    return [
        {
            "question_id": q.external_id,
            "question": q.question,
            "reference_answer": q.reference_answer or "",
            "answerable": "true" if q.answerable else "false",
            "types": "|".join(q.types),
            "passages": "; ".join(passage(p) for p in q.passages),
        }
        for q in questions
    ]


def export_document_items(documents: Sequence[DocumentRead]) -> list[dict[str, Any]]:
    return [d.model_dump(exclude={"id"}) for d in documents]


def to_jsonl(items: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)
