"""Small builders of stored data for the service unit tests, written through the services themselves."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from services.datasets import service as datasets
from services.datasets.schemas import DatasetCreate
from services.ingest import Row
from services.ratings import service as ratings
from services.runs import service as runs
from services.runs.schemas import RunCreate

DOC_TEXT = "Paris is the capital of France. Berlin is the capital of Germany. Rome is in Italy."


def rows(*items: Any) -> list[Row]:
    """A batch as the parsers produce it for a JSON body (0-based index, no line)."""
    return [Row(i, None, item) for i, item in enumerate(items)]


def dataset(session: Session, name: str = "ds", n_questions: int = 3) -> int:
    """A dataset with one document and ``n_questions`` questions q1..qn, each with a passage into it."""
    ds = datasets.create_dataset(session, DatasetCreate(name=name, language="en"))
    datasets.import_documents(session, ds.id, rows({"external_id": "d1", "text": DOC_TEXT}))
    datasets.import_questions(
        session,
        ds.id,
        rows(
            *(
                {
                    "external_id": f"q{i}",
                    "question": f"Question {i}?",
                    "reference_answer": f"Answer {i}.",
                    "passages": [{"document_id": "d1", "start": 0, "end": 31}],
                }
                for i in range(1, n_questions + 1)
            )
        ),
    )
    return ds.id


def run(session: Session, dataset_id: int, name: str = "r1", answers: dict[str, str] | None = None) -> int:
    """A run of the dataset with one output per question (answer ``A<n>`` unless given), one chunk each."""
    r = runs.create_run(session, dataset_id, RunCreate(name=name))
    qids = [q.external_id for q in datasets.list_questions(session, dataset_id)]
    answers = answers if answers is not None else {q: f"A{q}" for q in qids}
    runs.import_outputs(
        session,
        r.id,
        rows(
            *(
                {"question_id": q, "answer": a, "retrieved": [{"document_id": "d1", "start": 0, "end": 31}]}
                for q, a in answers.items()
            )
        ),
    )
    return r.id


def raters(session: Session, *names: str) -> None:
    ratings.create_raters(session, rows(*({"name": n} for n in names)))
