"""All SQL about runs and outputs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, insert, literal, or_, select, update
from sqlalchemy.orm import selectinload

from services.models import (
    Dataset,
    Document,
    MetricScore,
    MetricScoreHistory,
    Output,
    PairVerdict,
    Passage,
    Question,
    Rating,
    RatingHistory,
    RetrievedChunk,
    Run,
    UTCDateTime,
    utcnow,
)
from services.repository import Repository

_RATING_COLUMNS = ["output_id", "rater_id", "rubric_id", "score", "comment", "created_at", "updated_at"]
_SCORE_COLUMNS = [
    "output_id", "metric", "config_key", "repeat", "config", "k", "value", "reason", "error", "details",
    "tokens", "latency_ms", "job_id", "created_at", "updated_at",
]  # fmt: skip


# The columns an import writes and compares, in this order: of an output, and of each of its chunks.
VALUE_FIELDS = ("answer", "generator", "latency_ms", "error")
CHUNK_FIELDS = ("document_id", "start", "end", "text", "score", "location", "match_score")
# An output's VALUE_FIELDS, and the CHUNK_FIELDS of its chunks in rank order.
Fingerprint = tuple[tuple[Any, ...], tuple[tuple[Any, ...], ...]]


@dataclass(frozen=True, slots=True)
class StoredOutput:
    """An output as stored: its id and the fingerprint of its rows (``Fingerprint``)."""

    id: int
    fingerprint: Fingerprint


# Above this many ids, a filter reads the whole run rather than binding one parameter per id.
MAX_IN = 2000


class RunRepository(Repository):
    def get(self, run_id: int) -> Run | None:
        return self.session.get(Run, run_id)

    def get_for_update(self, run_id: int) -> Run | None:
        """The run, row-locked until the transaction ends (PostgreSQL; SQLite's writers are serialised by
        BEGIN IMMEDIATE already): every write to a run's outputs, ratings or scores takes this lock first,
        so concurrent batches touch the same rows one after the other instead of deadlocking or losing
        updates."""
        return self.session.scalar(
            select(Run).where(Run.id == run_id).with_for_update().execution_options(populate_existing=True)
        )

    def by_name(self, dataset_id: int, name: str) -> Run | None:
        return self.session.scalar(select(Run).where(Run.dataset_id == dataset_id, Run.name == name))

    def all(
        self, dataset_id: int | None = None, after: int | None = None, limit: int | None = None
    ) -> Sequence[Run]:
        stmt = select(Run).order_by(Run.id).limit(limit)
        if after is not None:
            stmt = stmt.where(Run.id > after)
        if dataset_id is not None:
            stmt = stmt.where(Run.dataset_id == dataset_id)
        return self.session.scalars(stmt).all()

    def counts(self, run_id: int) -> tuple[int, int]:
        outputs = self.session.scalar(select(func.count()).where(Output.run_id == run_id)) or 0
        rated = (
            self.session.scalar(
                select(func.count(func.distinct(Rating.output_id)))
                .join(Output, Output.id == Rating.output_id)
                .where(Output.run_id == run_id)
            )
            or 0
        )
        return outputs, rated

    def outputs(self, run_id: int, after: int | None = None, limit: int | None = None) -> Sequence[Output]:
        """The run's outputs in question id order (one per question), after the question id ``after``."""
        stmt = (
            select(Output)
            .where(Output.run_id == run_id)
            .options(selectinload(Output.chunks))
            .order_by(Output.question_id)
            .limit(limit)
        )
        if after is not None:
            stmt = stmt.where(Output.question_id > after)
        return self.session.scalars(stmt).all()

    def outputs_by_question(self, run_id: int) -> dict[int, Output]:
        return {o.question_id: o for o in self.outputs(run_id)}

    def stored_outputs(self, run_id: int) -> dict[int, StoredOutput]:
        """Per question id: the output's id and the fingerprint of its stored rows, read as plain rows in
        two statements (no ORM objects: at 10,000 outputs x 5 chunks building them cost more than all the
        rest of a re-import)."""
        o, c = Output, RetrievedChunk
        chunks: dict[int, list[tuple[Any, ...]]] = {}
        chunk_rows = (
            select(c.output_id, c.document_id, c.start, c.end, c.text, c.score, c.location, c.match_score)
            .join(o, o.id == c.output_id)
            .where(o.run_id == run_id)
            .order_by(c.output_id, c.rank)
        )
        for oid, *fields in self.session.execute(chunk_rows):
            chunks.setdefault(oid, []).append(tuple(fields))
        stored: dict[int, StoredOutput] = {}
        output_rows = select(o.id, o.question_id, o.answer, o.generator, o.latency_ms, o.error)
        for oid, qid, answer, generator, latency_ms, error in self.session.execute(
            output_rows.where(o.run_id == run_id)
        ):
            values = (answer, generator or {}, latency_ms, error)
            stored[qid] = StoredOutput(oid, (values, tuple(chunks.get(oid, ()))))
        return stored

    def output_for(self, run_id: int, question_id: int) -> Output | None:
        stmt = (
            select(Output)
            .where(Output.run_id == run_id, Output.question_id == question_id)
            .options(selectinload(Output.chunks))
        )
        return self.session.scalar(stmt)

    def questions_of_outputs(self, run_id: int) -> dict[int, Question]:
        stmt = select(Question).join(Output, Output.question_id == Question.id).where(Output.run_id == run_id)
        return {q.id: q for q in self.session.scalars(stmt)}

    def replace_chunks(self, output: Output, chunks: list[RetrievedChunk]) -> None:
        # Delete the old rows first: the unit of work would insert the new ranks before deleting the old
        # ones and trip the (output_id, rank) unique constraint.
        output.chunks.clear()
        self.session.flush()
        output.chunks.extend(chunks)

    def output_ids_by_question(
        self, dataset_id: int, run_id: int, external_ids: Iterable[str] | None
    ) -> dict[str, tuple[int, int | None]]:
        """For each of these external question ids of the dataset (None: all of them): (question id, the
        run's output id or None when the run has no output for it)."""
        ids = list(external_ids) if external_ids is not None else None
        on = (Output.question_id == Question.id) & (Output.run_id == run_id)
        stmt = (
            select(Question.external_id, Question.id, Output.id)
            .join(Output, on, isouter=True)
            .where(Question.dataset_id == dataset_id)
        )
        if ids is not None and len(ids) <= MAX_IN:
            stmt = stmt.where(Question.external_id.in_(ids))
        return {ext: (qid, oid) for ext, qid, oid in self.session.execute(stmt)}

    def insert_outputs(self, rows: list[dict[str, Any]]) -> dict[int, int]:
        """Bulk INSERT of outputs; returns question id -> new output id."""
        now = utcnow()
        ids = self.insert_rows(
            Output, [{"created_at": now, "updated_at": now, **r} for r in rows], with_ids=True
        )
        return {r["question_id"]: oid for r, oid in zip(rows, ids, strict=True)}

    def update_outputs(self, rows: list[dict[str, Any]]) -> None:
        """Bulk UPDATE by primary key (rows carry ``id``)."""
        if rows:
            now = utcnow()
            self.session.execute(update(Output), [{"updated_at": now, **r} for r in rows])

    def replace_chunk_rows(self, chunks: dict[int, list[dict[str, Any]]], replace: Sequence[int]) -> None:
        """Delete the chunks of the outputs in ``replace``, then insert ``chunks`` (output id -> rows)."""
        for i in range(0, len(replace), 500):
            part = list(replace[i : i + 500])
            self.session.execute(delete(RetrievedChunk).where(RetrievedChunk.output_id.in_(part)))
        rows = [{"output_id": oid, **row} for oid, part_rows in chunks.items() for row in part_rows]
        self.insert_rows(RetrievedChunk, rows)

    def outputs_with_context(self, output_ids: Sequence[int]) -> list[tuple[Output, Question, Dataset]]:
        """Outputs with their chunks, question (and passages) and dataset: what a metric sample needs."""
        stmt = (
            select(Output, Question, Dataset)
            .join(Question, Question.id == Output.question_id)
            .join(Run, Run.id == Output.run_id)
            .join(Dataset, Dataset.id == Run.dataset_id)
            .where(Output.id.in_(list(output_ids)))
            .options(
                selectinload(Output.chunks), selectinload(Question.passages).selectinload(Passage.document)
            )
        )
        return [(o, q, d) for o, q, d in self.session.execute(stmt)]

    def document_texts(self, document_ids: Iterable[int]) -> dict[int, str]:
        stmt = select(Document.id, Document.text).where(Document.id.in_(list(document_ids)))
        return {i: t for i, t in self.session.execute(stmt)}

    def report_items(self, run_ids: Sequence[int]) -> list[tuple[int, str, list[str], bool]]:
        """(output id, question external id, types, answerable) of the runs' outputs, as plain tuples."""
        stmt = (
            select(Output.id, Question.external_id, Question.types, Question.answerable)
            .join(Question, Question.id == Output.question_id)
            .where(Output.run_id.in_(list(run_ids)))
            .order_by(Output.run_id, Question.id)
        )
        return [(i, e, t, a) for i, e, t, a in self.session.execute(stmt)]

    def outputs_and_questions(self, run_ids: Sequence[int]) -> list[tuple[Output, Question]]:
        stmt = (
            select(Output, Question)
            .join(Question, Question.id == Output.question_id)
            .where(Output.run_id.in_(list(run_ids)))
            .order_by(Output.run_id, Question.id)
        )
        return [(o, q) for o, q in self.session.execute(stmt)]

    def output_versions(self, output_ids: Iterable[int]) -> dict[int, int]:
        stmt = select(Output.id, Output.version).where(Output.id.in_(list(output_ids)))
        return {i: v for i, v in self.session.execute(stmt)}

    def retire_dependants(self, output_ids: Sequence[int]) -> tuple[int, int]:
        """The answers of these outputs changed: bump their version and move their ratings and scores to
        the history tables (set-based). Returns how many ratings and scores were moved."""
        ids = list(output_ids)
        if not ids:
            return 0, 0
        now = literal(utcnow(), UTCDateTime())
        self.session.flush()
        moved = []
        for current, history, cols in (
            (Rating, RatingHistory, _RATING_COLUMNS),
            (MetricScore, MetricScoreHistory, _SCORE_COLUMNS),
        ):
            where = current.output_id.in_(ids)
            moved.append(self.session.scalar(select(func.count()).select_from(current).where(where)) or 0)
            self.session.execute(
                insert(history).from_select(
                    [*cols, "output_version", "invalidated_at"],
                    select(*(getattr(current, c) for c in cols), Output.version, now)
                    .join(Output, Output.id == current.output_id)
                    .where(where),
                )
            )
            self.session.execute(delete(current).where(where))
        self.session.execute(
            update(Output)
            .where(Output.id.in_(ids))
            .values(version=Output.version + 1)
            .execution_options(synchronize_session="fetch")
        )
        return int(moved[0]), int(moved[1])

    def retired_counts(self, run_ids: Sequence[int]) -> tuple[int, int]:
        """Ratings and scores kept in history for earlier answers of these runs' outputs."""
        ratings = self.session.scalar(
            select(func.count())
            .select_from(RatingHistory)
            .join(Output, Output.id == RatingHistory.output_id)
            .where(Output.run_id.in_(list(run_ids)))
        )
        scores = self.session.scalar(
            select(func.count())
            .select_from(MetricScoreHistory)
            .join(Output, Output.id == MetricScoreHistory.output_id)
            .where(Output.run_id.in_(list(run_ids)))
        )
        return int(ratings or 0), int(scores or 0)

    def data_version(self, run_ids: Sequence[int]) -> tuple[object, ...]:
        """A fingerprint of everything a report of these runs reads: it changes with any insert, update or
        delete of their outputs, chunks, ratings, scores (and histories), runs, questions and passages."""
        ids = list(run_ids)
        dataset_ids = select(Run.dataset_id).where(Run.id.in_(ids)).scalar_subquery()
        output_ids = select(Output.id).where(Output.run_id.in_(ids)).scalar_subquery()
        question_ids = select(Question.id).where(Question.dataset_id.in_(dataset_ids)).scalar_subquery()
        parts: list[tuple[Any, Any, Any]] = [
            (Run, Run.id.in_(ids), Run.updated_at),
            (Output, Output.run_id.in_(ids), Output.updated_at),
            (RetrievedChunk, RetrievedChunk.output_id.in_(output_ids), None),
            (Rating, Rating.output_id.in_(output_ids), Rating.updated_at),
            (MetricScore, MetricScore.output_id.in_(output_ids), MetricScore.updated_at),
            (RatingHistory, RatingHistory.output_id.in_(output_ids), None),
            (MetricScoreHistory, MetricScoreHistory.output_id.in_(output_ids), None),
            (Question, Question.dataset_id.in_(dataset_ids), Question.updated_at),
            (Passage, Passage.question_id.in_(question_ids), None),
            (
                PairVerdict,
                or_(PairVerdict.run_a_id.in_(ids), PairVerdict.run_b_id.in_(ids)),
                PairVerdict.updated_at,
            ),
        ]
        version: list[object] = []
        for model, where, updated in parts:
            cols = [func.count(), func.max(model.id)]
            if updated is not None:
                cols.append(func.max(updated))
            row = self.session.execute(select(*cols).select_from(model).where(where)).one()
            version.append(tuple(str(v) for v in row))
        return tuple(version)
