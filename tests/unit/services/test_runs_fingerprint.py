"""services.runs: an unchanged re-import is decided from each output's fingerprint, read from the rows as
sent; whatever the shortcut leaves to the whole way, both ways decide alike."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from services.datasets import service as datasets
from services.errors import InvalidItems
from services.models import Output, RetrievedChunk
from services.runs import service as runs
from services.runs.schemas import RunCreate
from tests.unit.services.factories import DOC_TEXT, dataset, rows

FIRST: list[dict[str, Any]] = [
    {
        "question_id": "q1",
        "answer": "Paris",
        "retrieved": [
            {"document_id": "d1", "start": 0, "end": 31, "score": 0.9},
            {"document_id": "d1", "start": 32, "end": 65},
        ],
        "generator": {"kind": "llm", "model": "m"},
        "latency_ms": 12.5,
    },
    {"question_id": "q2", "answer": "Berlin", "retrieved": [{"text": "Rome is in Italy."}]},
    {"question_id": "q3", "answer": "Rome"},
]


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def change(items: list[dict[str, Any]]) -> None:
        *head, last = path
        target: Any = items
        for key in head:
            target = target[key]
        if value is _DROP:
            del target[last]
        else:
            target[last] = value

    return change


_DROP = object()

# A second import of FIRST with one change each.
VARIANTS = {
    "identical": lambda items: None,
    "score changed": _set((0, "retrieved", 0, "score"), 0.5),
    "score left out": _set((0, "retrieved", 0, "score"), _DROP),
    "score as an integer": _set((0, "retrieved", 1, "score"), 1),
    "latency changed": _set((0, "latency_ms"), 13),
    "latency left out": _set((0, "latency_ms"), _DROP),
    "generator changed": _set((0, "generator"), {"kind": "llm", "model": "other"}),
    "generator empty": _set((0, "generator"), {}),
    "answer changed": _set((0, "answer"), "Lyon"),
    "offset as text": _set((0, "retrieved", 0, "start"), "0"),
    "span moved": _set((0, "retrieved", 1, "end"), 64),
    "span text given": _set((0, "retrieved", 0, "text"), DOC_TEXT[:31]),
    "a chunk fewer": _set((0, "retrieved"), [{"document_id": "d1", "start": 0, "end": 31, "score": 0.9}]),
    "unknown field": _set((2, "extra"), 1),
    "latency as a boolean": _set((0, "latency_ms"), True),
    "question sent twice": lambda items: items.append(copy.deepcopy(items[0])),
    "document text changed": lambda items: None,
}


def _state(db: Session, run_id: int) -> list[tuple[Any, ...]]:
    db.expire_all()
    outs = db.scalars(select(Output).where(Output.run_id == run_id).order_by(Output.question_id)).all()
    return [
        (
            o.answer,
            o.generator,
            o.latency_ms,
            o.version,
            # The document's own id differs between the two datasets: whether there is one is compared.
            [
                (c.rank, c.document_id is None, c.start, c.end, c.text, c.score, c.location, c.id)
                for c in o.chunks
            ],
        )
        for o in outs
    ]


def _reimport(db: Session, name: str, variant: str) -> tuple[Any, ...]:
    ds = dataset(db, name=name)
    r = runs.create_run(db, ds, RunCreate(name="v1")).id
    runs.import_outputs(db, r, rows(*copy.deepcopy(FIRST)))
    before = _state(db, r)
    if variant == "document text changed":
        datasets.import_documents(
            db, ds, rows({"external_id": "d1", "text": DOC_TEXT.replace("Paris", "Lille")})
        )
    items = copy.deepcopy(FIRST)
    VARIANTS[variant](items)
    try:
        report = runs.import_outputs(db, r, rows(*items))
    except InvalidItems as exc:
        return "refused", [(e.index, e.field, e.reason) for e in exc.items], _state(db, r) == before
    after = _state(db, r)
    # Chunk row ids tell rewritten rows from rows left alone.
    return report.model_dump(), [(*o[:4], [c[:7] for c in o[4]]) for o in after], after == before


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_shortcut_decides_as_the_whole_way(
    db: Session, monkeypatch: pytest.MonkeyPatch, variant: str
) -> None:
    fast = _reimport(db, "fast", variant)
    monkeypatch.setattr(runs, "_unchanged_natives", lambda *args: set())
    whole = _reimport(db, "whole", variant)
    assert fast == whole


def test_an_unchanged_reimport_skips_validation_and_writes_nothing(
    db: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = dataset(db)
    r = runs.create_run(db, ds, RunCreate(name="v1")).id
    runs.import_outputs(db, r, rows(*copy.deepcopy(FIRST)))
    before = _state(db, r)
    stamps = db.execute(select(Output.id, Output.updated_at).where(Output.run_id == r)).all()
    validated: list[int] = []
    normalise = runs._normalise

    def counting(batch: Any, *args: Any) -> Any:
        validated.append(len(batch))
        return normalise(batch, *args)

    monkeypatch.setattr(runs, "_normalise", counting)
    report = runs.import_outputs(db, r, rows(*copy.deepcopy(FIRST)))
    assert (report.received, report.unchanged, report.updated, report.created) == (3, 3, 0, 0)
    # q2's chunk was located from its text: that row goes the whole way; the other two do not.
    assert validated == [1]
    assert _state(db, r) == before
    assert db.execute(select(Output.id, Output.updated_at).where(Output.run_id == r)).all() == stamps
    assert (
        db.scalar(select(RetrievedChunk.id).order_by(RetrievedChunk.id.desc()).limit(1))
        == before[0][4][-1][-1] + 1
    )
