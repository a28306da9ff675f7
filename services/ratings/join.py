"""Which question (and run) each row of a ratings file is about, the way the team keyed it.

A team's sheet rarely carries the service's question ids: the questions may have been imported from a file
without ids (ids made from the text), and the sheet may name questions by the team's own ids, by their text,
or only by the order of its rows. The join is, per row:

1. ``question_id`` equal to a question's id;
2. else ``question`` (the text): equal to a question's text, then equal once both are normalised (Unicode
   NFKC, case folded, runs of whitespace as one space); two questions that match alike are refused, naming
   both, never picked between;
3. else, only when asked (``join="order"``), the position of the row: the n-th row of a rater (in a run)
   rates the n-th question of the run, in the order its outputs were imported.

A row may also name its ``run`` (by name): rows are then routed to that run's outputs.
Pure functions: the caller reads the questions and runs and passes them in.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from services.csvread import normalise_header
from services.errors import InvalidItems, ItemError
from services.ingest import Batch, Row

Join = Literal["auto", "order"]
# Fields of a ratings row that a column mapping may name.
RATING_FIELDS = ("question_id", "question", "rater", "score", "rubric", "comment", "run")
# Fields of a preference row beside a study import (services.studies.preferences).
PREFERENCE_FIELDS = ("question_id", "question", "rater", "preference", "rubric", "comment", "run_a", "run_b")
WAY_OUT = (
    "join by question text with a `question` column, map the column that holds the ids with "
    'columns={"question_id": ...}, or join=order to match rows to questions by position'
)
_SPACES = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """The form two spellings of one question share: NFKC, case folded, whitespace collapsed."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()


@dataclass(frozen=True)
class Target:
    """A question one can rate: its id (external) and text."""

    external_id: str
    question: str


def map_columns(
    rows: list[Row],
    columns: Mapping[str, str],
    field: str = "columns",
    fields: Sequence[str] = RATING_FIELDS,
    what: str = "ratings",
) -> list[Row]:
    """Rename the columns a mapping names (field -> the file's column) to the fields they hold (among
    ``fields``); InvalidItems naming the field when a mapped column is absent."""
    if not columns:
        return rows
    unknown = sorted(set(columns) - set(fields))
    if unknown:
        raise InvalidItems(
            f"unknown field(s) in {field}: {', '.join(unknown)}",
            [ItemError(None, f"{field}.{u}", f"fields are {', '.join(fields)}") for u in unknown],
        )
    present: list[str] = list(rows.columns or []) if isinstance(rows, Batch) else []
    if not present:
        for r in rows:
            if isinstance(r.data, dict):
                present += [k for k in r.data if k not in present]
    by_norm = {normalise_header(str(c)): str(c) for c in present}
    rename: dict[str, str] = {}
    errors = []
    for name, column in columns.items():
        hit = column if column in present else by_norm.get(normalise_header(column))
        if hit is None:
            errors.append(
                ItemError(
                    None, f"{field}.{name}", f"no column {column!r}; the file has: {', '.join(present)}"
                )
            )
        else:
            rename[hit] = name
    if errors:
        raise InvalidItems(f"{field} names columns the {what} file does not have", errors)

    def renamed(data: dict[str, Any]) -> dict[str, Any]:
        # A column already named like a mapped field gives way to the column mapped to it.
        kept = {k: v for k, v in data.items() if k in rename or k not in rename.values()}
        return {rename.get(k, k): v for k, v in kept.items()}

    return Batch(
        [Row(r.index, r.line, renamed(r.data) if isinstance(r.data, dict) else r.data) for r in rows],
        notes=list(rows.notes) if isinstance(rows, Batch) else [],
        columns=list(renamed(dict.fromkeys(rows.columns)))
        if isinstance(rows, Batch) and rows.columns is not None
        else None,
    )


class QuestionIndex:
    """Finds the question a row names, by id, then by text (exact, then normalised)."""

    def __init__(self, targets: Sequence[Target]) -> None:
        self.by_id = {t.external_id: t for t in targets}
        self.by_text: dict[str, list[Target]] = {}
        self.by_norm: dict[str, list[Target]] = {}
        for t in targets:
            self.by_text.setdefault(t.question.strip(), []).append(t)
            self.by_norm.setdefault(normalise_text(t.question), []).append(t)

    def find(self, question_id: str | None, question: str | None) -> tuple[Target | None, str | None, str]:
        """(the question, or None with the reason, and the field the reason is about)."""
        if question_id is not None and question_id in self.by_id:
            return self.by_id[question_id], None, "question_id"
        if question is not None and question.strip():
            for hits in (
                self.by_text.get(question.strip(), []),
                self.by_norm.get(normalise_text(question), []),
            ):
                if len(hits) == 1:
                    return hits[0], None, "question"
                if len(hits) > 1:
                    a, b = hits[0], hits[1]
                    return (
                        None,
                        f"question {question[:80]!r} matches more than one question: {a.external_id!r} "
                        f"({a.question[:60]!r}) and {b.external_id!r} ({b.question[:60]!r}); give its "
                        "question_id",
                        "question",
                    )
            if question_id is None:
                return None, f"no question has the text {question[:80]!r} (even normalised)", "question"
        if question_id is not None:
            sample = ", ".join(repr(i) for i in list(self.by_id)[:3])
            return (
                None,
                f"unknown question {question_id!r} (the questions' ids are like {sample}); {WAY_OUT}",
                "question_id",
            )
        return None, f"the row names no question (question_id or question); {WAY_OUT}", "question_id"


def _cell(data: Any, key: str) -> str | None:
    if not isinstance(data, dict):
        return None
    value = data.get(key)
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = str(value).strip() if not isinstance(value, str) else value.strip()
    return text or None


def resolve(
    rows: list[Row],
    questions: Mapping[str, Sequence[Target]],
    join: Join = "auto",
    field_prefix: str = "",
    unknown_run: str | None = None,
    order: Mapping[str, Sequence[Target]] | None = None,
) -> tuple[list[tuple[Row, str, str]], list[ItemError]]:
    """For each row: (the row, the run it is about, the question's external id).

    ``questions`` holds, per run name, the run's questions in the order of its outputs; a row without a run
    is about the only run there is. Rows that cannot be joined are listed as errors naming the field;
    ``unknown_run`` says where a row naming another run should go (default: the runs there are);
    ``order``, the questions rows match by position when not all of ``questions`` (those with an output)."""
    errors: list[ItemError] = []
    out: list[tuple[Row, str, str]] = []
    runs = list(questions)
    indexes = {name: QuestionIndex(targets) for name, targets in questions.items()}
    by_position: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        run = _cell(r.data, "run")
        if run is None and len(runs) != 1:
            reason = f"several runs ({', '.join(map(repr, runs))}): each row needs a run column naming one"
            errors.append(ItemError(r.index, f"{field_prefix}run", reason, r.line))
            continue
        key = run if run is not None else runs[0]
        if key not in questions:
            reason = f"unknown run {run!r}; {unknown_run or 'the runs are ' + ', '.join(map(repr, runs))}"
            errors.append(ItemError(r.index, f"{field_prefix}run", reason, r.line))
            continue
        qid, text = _cell(r.data, "question_id"), _cell(r.data, "question")
        if join == "order" and qid is None and text is None:
            rater = _cell(r.data, "rater") or ""
            by_position.setdefault((key, rater), []).append(r)
            continue
        found, why, fname = indexes[key].find(qid, text)
        if found is None:
            assert why is not None
            errors.append(ItemError(r.index, f"{field_prefix}{fname}", why, r.line))
            continue
        out.append((r, key, found.external_id))
    for (key, rater), group in by_position.items():
        targets = (order or questions)[key]
        if len(group) != len(targets):
            errors.append(
                ItemError(
                    group[0].index,
                    f"{field_prefix}question_id",
                    f"join=order: rater {rater!r} has {len(group)} row(s) without a question for run "
                    f"{key!r}, which has {len(targets)} question(s); rows match questions by position only"
                    " when the counts are equal",
                    group[0].line,
                )
            )
            continue
        out += [(r, key, t.external_id) for r, t in zip(group, targets, strict=True)]
    out.sort(key=lambda x: x[0].index)
    return out, errors


def with_question_id(row: Row, external_id: str) -> Row:
    """The row keyed by the question's id, its text and run dropped (already used to find it)."""
    assert isinstance(row.data, dict)
    data = {k: v for k, v in row.data.items() if k not in ("question", "run")}
    data["question_id"] = external_id
    return Row(row.index, row.line, data)
