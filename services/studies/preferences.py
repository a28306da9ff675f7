"""Pairwise preference files beside a study import: each row one rater's preference between two of the
import's runs' answers to one question, as POST /preferences takes them, except that the question is found
like a rating's (by id, else by its text) and the two runs are named by the import's run names (columns
``run_a`` and ``run_b``; with exactly two runs they default to the first study file's run and the second's).

Planned before the write transaction (``plan_preferences``: every row that cannot be placed is listed,
naming the file, line and field) and written in it (``write_preferences``), so a study with its preferences
is one atomic import; deleting the dataset or a run takes the preferences with it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from sqlalchemy.orm import Session

from services.errors import InvalidItems, ItemError, WrongKind
from services.ingest import Batch, Row
from services.models import Rater
from services.ratings.join import PREFERENCE_FIELDS, WAY_OUT, QuestionIndex, Target, map_columns
from services.ratings.preferences import ensure_import_rubric
from services.ratings.repository import PreferenceRepository, RatingRepository
from services.ratings.schemas import PREFERENCE_IMPORT_RUBRIC_NAME
from services.studies.formats import read_table
from services.studies.plan import (
    PreferencePlan,
    PreferencesPlan,
    QuestionPlan,
    RunPlan,
    Snapshot,
    StaleSnapshot,
    StudyFiles,
)
from services.studies.schemas import PreferencePairInfo, PreferencesInfo, StudyOptions, StudyPreferenceIn
from services.validation import invalid_rows, validate_rows

_WAY_OUT = (
    "join by question text with a `question` column, or map the column that holds the ids with "
    'preferences_columns={"question_id": ...}'
)
# Outputs are written by the import itself: their first version.
_NEW_OUTPUT_VERSION = 1


def _prefix(n: int, name: str | None, count: int) -> str:
    """The field prefix naming the file: ``preferences (prefs.csv).``, or with its position when several."""
    label = name or "file"
    return f"preferences ({label})." if count == 1 else f"preferences[{n}] ({label})."


class _Rows:
    """The rows of every preference file checked one by one, then per pair of runs (``check_pairs``)."""

    def __init__(self, snap: Snapshot, runs: list[RunPlan], questions: list[QuestionPlan]) -> None:
        self.snap = snap
        self.runs = runs
        self.run_index = {run.name: i for i, run in enumerate(runs)}
        self.outputs = [{o.question: j for j, o in enumerate(run.outputs)} for run in runs]
        self.index = QuestionIndex([Target(q.external_id, q.question) for q in questions])
        self.q_pos = {q.external_id: i for i, q in enumerate(questions)}
        self.errors: list[ItemError] = []
        # (prefix, file label, row, item, run A, run B, question): the rows placed so far.
        self.placed: list[tuple[str, str, Row, StudyPreferenceIn, int, int, int]] = []
        self.seen: dict[tuple[int, int, int, str], tuple[str, int | None]] = {}

    def _error(self, row: Row, field: str, reason: str) -> None:
        self.errors.append(ItemError(row.index, field, reason, row.line))

    def _pair(self, prefix: str, row: Row, item: StudyPreferenceIn) -> tuple[int, int] | None:
        names = [run.name for run in self.runs]
        given = (item.run_a, item.run_b)
        if given == (None, None):
            if len(self.runs) == 2:
                return 0, 1
            reason = (
                f"several runs ({', '.join(map(repr, names))}): each row needs run_a and run_b naming two"
            )
            self._error(row, prefix + "run_a", reason)
            return None
        out: list[int] = []
        for field, name in zip(("run_a", "run_b"), given, strict=True):
            if name is None:
                self._error(row, prefix + field, f"missing: the row names {given[0] or given[1]!r} only")
            elif name not in self.run_index:
                self._error(
                    row, prefix + field, f"unknown run {name!r}; the runs are {', '.join(map(repr, names))}"
                )
            else:
                out.append(self.run_index[name])
        if len(out) != 2:
            return None
        if out[0] == out[1]:
            self._error(
                row, prefix + "run_b", f"run_b is run_a ({names[out[0]]!r}): compare two different runs"
            )
            return None
        return out[0], out[1]

    def add(self, prefix: str, label: str, row: Row, item: StudyPreferenceIn) -> None:
        """Place one valid row: its pair of runs, its question, both runs' answers; no row twice."""
        pair = self._pair(prefix, row, item)
        found, why, fname = self.index.find(item.question_id, item.question)
        if found is None:
            assert why is not None
            self._error(row, prefix + fname, why.replace(WAY_OUT, _WAY_OUT))
        if pair is None or found is None:
            return
        q = self.q_pos[found.external_id]
        missing = [self.runs[r].name for r in pair if q not in self.outputs[r]]
        if missing:
            reason = f"run {missing[0]!r} has no answer to question {found.external_id!r}"
            self._error(row, prefix + "question_id", reason)
            return
        lo, hi = sorted(pair)
        key = (lo, hi, q, item.rater)
        if key in self.seen:
            where = f"{self.seen[key][0]} line {self.seen[key][1]}"
            reason = (
                f"a second preference by {item.rater!r} on question {found.external_id!r} between runs "
                f"{self.runs[lo].name!r} and {self.runs[hi].name!r} ({where})"
            )
            self._error(row, prefix + "question_id", reason)
            return
        self.seen[key] = (label, row.line)
        self.placed.append((prefix, label, row, item, pair[0], pair[1], q))

    def check_pairs(self) -> list[PreferencePlan]:
        """Each row's rubric (a row naming none: the one rubric its pair's rows name, else the -2..2 import
        rubric) and scale; one rubric per pair of runs."""
        named: dict[tuple[int, int], set[str]] = {}
        for *_, item, a, b, _q in self.placed:
            if item.rubric:
                named.setdefault((min(a, b), max(a, b)), set()).add(item.rubric)
        out: list[PreferencePlan] = []
        used: dict[tuple[int, int], set[str]] = {}
        for prefix, _label, row, item, a, b, q in self.placed:
            pair = (min(a, b), max(a, b))
            implied = named.get(pair, set())
            rubric = item.rubric or (
                next(iter(implied)) if len(implied) == 1 else PREFERENCE_IMPORT_RUBRIC_NAME
            )
            scale = self.snap.rubrics.get(
                rubric, (-2, 2) if rubric == PREFERENCE_IMPORT_RUBRIC_NAME else None
            )
            if scale is None:
                self._error(row, prefix + "rubric", f"unknown rubric {rubric!r}")
                continue
            if not scale[0] <= item.preference <= scale[1]:
                reason = f"{item.preference} is outside the scale {scale[0]}..{scale[1]} of {rubric!r}"
                self._error(row, prefix + "preference", reason)
                continue
            used.setdefault(pair, set()).add(rubric)
            out.append(
                PreferencePlan(
                    a,
                    b,
                    self.outputs[a][q],
                    self.outputs[b][q],
                    q,
                    item.rater,
                    rubric,
                    item.preference,
                    item.comment,
                )
            )
        for (lo, hi), names in sorted(used.items()):
            if len(names) > 1:
                reason = (
                    f"runs {self.runs[lo].name!r} and {self.runs[hi].name!r} are compared on "
                    f"{sorted(names)}: one pair of runs is rated on one rubric"
                )
                self.errors.append(ItemError(None, "preferences", reason))
        return out


def _read(
    n: int, raw: bytes, name: str | None, count: int, options: StudyOptions
) -> tuple[Batch, list[tuple[Row, StudyPreferenceIn]], list[ItemError], str]:
    """One preference file: its rows, the valid ones, the errors (fields prefixed with the file) and the
    prefix. A mapping naming absent columns, a CSV header without a required column or another kind of file
    is refused whole, naming the file."""
    prefix = _prefix(n, name, count)
    table = read_table(raw, name, prefix.rstrip("."))
    batch = Batch(table.rows, table.notes, table.columns)
    try:
        mapped = map_columns(
            batch, options.preferences_columns, "preferences_columns", PREFERENCE_FIELDS, "preference"
        )
        good, bad = validate_rows(mapped, StudyPreferenceIn)
    except InvalidItems as exc:
        refused = WrongKind if isinstance(exc, WrongKind) else InvalidItems
        raise refused(
            f"{prefix.rstrip('.')}: {exc.detail}",
            [ItemError(e.index, prefix + e.field, e.reason, e.line) for e in exc.items],
        ) from exc
    return batch, good, [ItemError(e.index, prefix + e.field, e.reason, e.line) for e in bad], prefix


def plan_preferences(
    snap: Snapshot,
    files: StudyFiles,
    options: StudyOptions,
    runs: list[RunPlan],
    questions: list[QuestionPlan],
    known_raters: set[str],
) -> PreferencesPlan | None:
    """The preference files placed on the import's runs and questions; InvalidItems naming the file's field
    and line for every row that cannot be placed, WrongKind (naming the file) for another kind of file.
    ``known_raters``: raters that exist or that the ratings register (the others are noted as new)."""
    if not files.preferences:
        return None
    if len(runs) < 2:
        raise InvalidItems(
            f"preferences compare two runs' answers: the import has {len(runs)} run(s)",
            [ItemError(None, "preferences", "give two study files (two runs) or more")],
        )
    rows = _Rows(snap, runs, questions)
    all_rows: list[Row] = []
    notes: list[str] = []
    for n, (raw, name) in enumerate(files.preferences):
        batch, good, bad, prefix = _read(n, raw, name, len(files.preferences), options)
        notes += batch.notes
        all_rows += batch
        rows.errors += bad
        for r, item in good:
            rows.add(prefix, name or "preferences", r, item)
    planned = rows.check_pairs()
    if rows.errors:
        rows.errors.sort(key=lambda e: (e.field.split(".")[0], e.index if e.index is not None else -1))
        raise invalid_rows("preferences", all_rows, rows.errors)
    raters = sorted({p.rater for p in planned})
    new = [r for r in raters if r not in known_raters]
    if new:
        notes.append(f"{len(new)} rater(s) registered from the preferences: {', '.join(new)}")
    return PreferencesPlan(len(files.preferences), len(all_rows), planned, raters, notes)


def write_preferences(
    session: Session,
    plan: PreferencesPlan | None,
    run_ids: Sequence[int],
    run_names: Sequence[str],
    question_ids: Sequence[int | None],
    output_ids: Sequence[Sequence[int]],
) -> PreferencesInfo | None:
    """The planned preferences, stored for run_a_id < run_b_id (a row for (B, A) mirrored on its rubric's
    scale), their raters registered and the import rubric made when missing."""
    if plan is None:
        return None
    repo = RatingRepository(session)
    raters = repo.raters()
    created = [name for name in plan.raters if name not in raters]
    for name in created:
        repo.add(Rater(name=name))
    if any(p.rubric == PREFERENCE_IMPORT_RUBRIC_NAME for p in plan.preferences):
        ensure_import_rubric(session)
    repo.flush()
    raters, rubrics = repo.raters(), repo.rubrics()
    unknown = sorted({p.rubric for p in plan.preferences} - set(rubrics))
    if unknown:
        raise StaleSnapshot(
            f"rubric {unknown[0]!r} was deleted while this import was prepared; nothing was written",
            [ItemError(None, "preferences", "rubric removed concurrently")],
        )
    rows = []
    for p in plan.preferences:
        rubric = rubrics[p.rubric]
        run_a, run_b = run_ids[p.run_a], run_ids[p.run_b]
        out_a, out_b = output_ids[p.run_a][p.output_a], output_ids[p.run_b][p.output_b]
        score = p.preference
        if run_a > run_b:
            run_a, run_b, out_a, out_b = run_b, run_a, out_b, out_a
            score = rubric.min_score + rubric.max_score - score
        rows.append(
            {
                "run_a_id": run_a,
                "run_b_id": run_b,
                "question_id": question_ids[p.question],
                "output_a_id": out_a,
                "output_b_id": out_b,
                "output_a_version": _NEW_OUTPUT_VERSION,
                "output_b_version": _NEW_OUTPUT_VERSION,
                "rater_id": raters[p.rater].id,
                "rubric_id": rubric.id,
                "score": score,
                "comment": p.comment,
            }
        )
    PreferenceRepository(session).insert_many(rows)
    # Per pair in the order of the import's runs (a row given for (B, A) counts for (A, B)).
    pairs = Counter(
        (run_names[min(p.run_a, p.run_b)], run_names[max(p.run_a, p.run_b)], p.rubric)
        for p in plan.preferences
    )
    return PreferencesInfo(
        files=plan.files,
        received=plan.received,
        created=len(rows),
        raters=plan.raters,
        raters_created=created,
        pairs=[PreferencePairInfo(run_a=a, run_b=b, rubric=r, created=n) for (a, b, r), n in pairs.items()],
    )
