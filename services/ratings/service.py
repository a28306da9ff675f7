"""Raters, rubrics and ratings; the reference score of an output; the rating matrix for agreement.

Rating batches follow the import rules: validated whole, every bad row listed, nothing half written.
A rater rating an output again replaces their score (created_at kept, updated_at moves).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy.orm import Session

from services.datasets.repository import DatasetRepository
from services.datasets.schemas import ImportReport
from services.errors import Conflict, Forbidden, ItemError
from services.ingest import Row, notes_of
from services.models import Question, Rater, Rubric, Run
from services.pagination import Page, PageRequest, map_page, page_in_order, take
from services.ratings.join import Join, Target, map_columns, resolve
from services.ratings.repository import RatingRepository
from services.ratings.schemas import (
    DEFAULT_RUBRIC_LEVELS,
    DEFAULT_RUBRIC_NAME,
    RaterCreate,
    RaterRead,
    RatingIn,
    RatingRead,
    RubricCreate,
    RubricRead,
)
from services.runs.repository import RunRepository
from services.runs.service import get_run, lock_run
from services.tasks.repository import TaskRepository
from services.validation import duplicate_errors, invalid_rows, validate_rows


def ensure_default_rubric(session: Session) -> Rubric:
    repo = RatingRepository(session)
    rubric = repo.default_rubric()
    if rubric is None:
        rubric = Rubric(
            name=DEFAULT_RUBRIC_NAME, min_score=1, max_score=5, levels=DEFAULT_RUBRIC_LEVELS, is_default=True
        )
        repo.add(rubric)
        repo.flush()
    return rubric


def rubric_read(r: Rubric) -> RubricRead:
    return RubricRead(
        id=r.id, name=r.name, min=r.min_score, max=r.max_score, levels=r.levels, is_default=r.is_default
    )


def list_rubrics(session: Session, page: PageRequest) -> Page[RubricRead]:
    ensure_default_rubric(session)
    rubrics = sorted(RatingRepository(session).rubrics().values(), key=lambda r: r.id)
    return map_page(page_in_order(rubrics, page, lambda r: (r.id,)), rubric_read)


def create_rubric(session: Session, data: RubricCreate) -> RubricRead:
    ensure_default_rubric(session)
    repo = RatingRepository(session)
    taken = repo.rubrics().get(data.name)
    if taken is not None:
        raise Conflict(
            f"a rubric named {data.name!r} already exists (id {taken.id})",
            [ItemError(None, "name", f"already taken by rubric {taken.id}")],
        )
    rubric = Rubric(name=data.name, min_score=data.min, max_score=data.max, levels=data.levels)
    repo.add(rubric)
    repo.flush()
    return rubric_read(rubric)


def list_raters(session: Session, page: PageRequest) -> Page[RaterRead]:
    raters = sorted(RatingRepository(session).raters().values(), key=lambda r: r.id)
    return map_page(page_in_order(raters, page, lambda r: (r.id,)), lambda r: RaterRead(id=r.id, name=r.name))


def create_raters(session: Session, rows: list[Row]) -> ImportReport:
    """Register raters by name; existing names are reported unchanged."""
    good, errors = validate_rows(rows, RaterCreate)
    errors += duplicate_errors([(r, x.name) for r, x in good], "name")
    if errors:
        raise invalid_rows("raters", rows, errors)
    repo = RatingRepository(session)
    existing = repo.raters()
    created = 0
    for _, rater in good:
        if rater.name not in existing:
            repo.add(Rater(name=rater.name))
            created += 1
    repo.flush()
    return ImportReport(
        kind="raters",
        received=len(rows),
        created=created,
        updated=0,
        unchanged=len(good) - created,
        notes=notes_of(rows),
    )


def register_named_raters(session: Session, names: set[str]) -> list[str]:
    """Register the raters among ``names`` not registered yet (an import that asked for it); returns them."""
    repo = RatingRepository(session)
    missing = sorted(names - set(repo.raters()))
    for name in missing:
        repo.add(Rater(name=name))
    if missing:
        repo.flush()
    return missing


def registered_note(names: list[str]) -> list[str]:
    return [f"raters registered: {', '.join(names)}"] if names else []


def implied_rubric(
    stored: set[str], named: list[str | None], rubrics: dict[str, Rubric], fallback: str
) -> str:
    """The rubric of a row that names none: the one rubric the target is already rated with; for a target
    not rated yet, the one known rubric the batch names; else ``fallback``."""
    known = {name for name in named if name and name in rubrics}
    if len(stored) == 1:
        return next(iter(stored))
    if not stored and len(known) == 1:
        return next(iter(known))
    return fallback


def unknown_rater(row: Row, name: str) -> ItemError:
    return ItemError(row.index, "rater", f"unknown rater {name!r}; register it with POST /raters", row.line)


def rubric_errors(row: Row, field: str, value: float, rubric: Rubric | None, name: str) -> list[ItemError]:
    """The row's rubric unknown, or its ``field`` (``value``) outside the rubric's scale."""
    if rubric is None:
        return [ItemError(row.index, "rubric", f"unknown rubric {name!r}", row.line)]
    if not rubric.min_score <= value <= rubric.max_score:
        reason = f"{value} is outside the scale {rubric.min_score}..{rubric.max_score} of {rubric.name!r}"
        return [ItemError(row.index, field, reason, row.line)]
    return []


def _check_author(session: Session, run_id: int, author: str, author_id: int | None) -> None:
    if author_id is None or not TaskRepository(session).rates_run(run_id, author_id):
        raise Forbidden(f"{author!r} has no rating task on run {run_id}")


def _join(
    repo: RatingRepository, run: Run, good: list[tuple[Row, RatingIn]], join: Join
) -> tuple[list[tuple[Row, RatingIn]], list[ItemError]]:
    """The rows keyed by the question's id, found by id, text or position (services.ratings.join)."""
    rows = [Row(r.index, r.line, item.model_dump()) for r, item in good]
    stored = repo.questions_of_run(run.dataset_id, run.id)
    joined, errors = resolve(
        rows,
        {run.name: [Target(e, q) for e, q, _ in stored]},
        join,
        order={run.name: [Target(e, q) for e, q, o in stored if o is not None]},
        unknown_run=f"this is run {run.id} ({run.name!r}): post that run's rows to it, or import them with "
        "the study (POST /studies/import)",
    )
    items = {r.index: item for r, item in good}
    return [
        (r, items[r.index].model_copy(update={"question_id": ext, "run": None})) for r, _, ext in joined
    ], errors


def _check_own_rows(
    session: Session, run_id: int, author: str, author_id: int | None, rows: list[Row]
) -> None:
    """Forbidden when the author has no rating task on the run or a row names another rater."""
    _check_author(session, run_id, author, author_id)
    others = [
        ItemError(r.index, "rater", "a rater can only post their own ratings", r.line)
        for r in rows
        if not isinstance(r.data, dict) or r.data.get("rater") != author
    ]
    if others:
        raise Forbidden(f"{len(others)} row(s) name another rater than {author!r}", others)


def _resolve(
    good: list[tuple[Row, RatingIn]],
    errors: list[ItemError],
    raters: dict[str, Rater],
    rubrics: dict[str, Rubric],
    implied: str,
    targets: dict[str, tuple[int, int | None]],
    run_rubrics: set[str],
    run_id: int,
) -> list[tuple[RatingIn, int, Rater, Rubric]]:
    """Each valid row with its output id, rater and rubric; the errors of the others are added to
    ``errors`` (unknown rater or question, no output, off the rubric's scale, another rubric than the
    run's)."""
    resolved: list[tuple[RatingIn, int, Rater, Rubric]] = []
    for row, item in good:
        rubric_name = item.rubric or implied
        rubric = rubrics.get(rubric_name)
        rater = raters.get(item.rater)
        assert item.question_id is not None
        target = targets.get(item.question_id)
        bad = len(errors)
        if rater is None:
            errors.append(unknown_rater(row, item.rater))
        if target is None:
            errors.append(
                ItemError(row.index, "question_id", f"unknown question {item.question_id!r}", row.line)
            )
        elif target[1] is None:
            errors.append(
                ItemError(
                    row.index, "question_id", f"run {run_id} has no output for {item.question_id!r}", row.line
                )
            )
        scale_errors = rubric_errors(row, "score", item.score, rubric, rubric_name)
        errors.extend(scale_errors)
        if rubric is not None and not scale_errors and run_rubrics and rubric.name not in run_rubrics:
            errors.append(
                ItemError(
                    row.index,
                    "rubric",
                    f"run {run_id} is rated with {sorted(run_rubrics)[0]!r}, not {rubric.name!r}",
                    row.line,
                )
            )
        if len(errors) == bad and rater and target and target[1] is not None and rubric:
            resolved.append((item, target[1], rater, rubric))
    return resolved


def _upsert(
    repo: RatingRepository, run_id: int, resolved: list[tuple[RatingIn, int, Rater, Rubric]]
) -> tuple[int, int, int]:
    """Insert the new ratings and update the changed ones: (created, updated, unchanged)."""
    existing = repo.existing(run_id, {o for _, o, *_ in resolved}, {r.id for _, _, r, _ in resolved})
    new: list[dict[str, object]] = []
    changed: list[dict[str, object]] = []
    unchanged = 0
    for item, output_id, rater, rubric in resolved:
        values = {"score": item.score, "comment": item.comment, "rubric_id": rubric.id}
        stored = existing.get((output_id, rater.id))
        if stored is None:
            new.append({"output_id": output_id, "rater_id": rater.id, **values})
        elif stored[1:] == (item.score, item.comment, rubric.id):
            unchanged += 1
        else:
            changed.append({"id": stored[0], **values})
    repo.insert_many(new)
    repo.update_many(changed)
    return len(new), len(changed), unchanged


def import_ratings(
    session: Session,
    run_id: int,
    rows: list[Row],
    author: str | None = None,
    author_id: int | None = None,
    join: Join = "auto",
    columns: Mapping[str, str] | None = None,
    register_raters: bool = False,
) -> ImportReport:
    """Upsert ratings of a run's outputs; with ``register_raters`` (not for an ``author``), the raters the
    rows name are registered when missing (said in the notes).

    Rows are joined to the run's questions by id, else by text, else (``join="order"``) by position (see
    services.ratings.join); ``columns`` maps fields to the file's own column names.
    A row without a rubric is on the run's rubric (the batch's, for a run not rated yet; else the default).
    Fails (InvalidItems) on out-of-scale scores, unknown raters, questions, rubrics or outputs, two ratings of
    one output by one rater in the batch, or a rubric other than the one the run is already rated with.
    With ``author`` (a rater writing for themselves), Forbidden when a row names another rater or the author
    has no rating task on the run.
    """
    rows = map_columns(rows, columns or {})
    run = lock_run(session, run_id)
    if author is not None:
        _check_own_rows(session, run_id, author, author_id, rows)
    default = ensure_default_rubric(session)
    repo = RatingRepository(session)
    good, errors = validate_rows(rows, RatingIn)
    registered = (
        register_named_raters(session, {i.rater for _, i in good}) if register_raters and not author else []
    )
    raters, rubrics = repo.raters(), repo.rubrics()
    run_rubrics = repo.rubric_names_of_run(run_id)
    implied = implied_rubric(run_rubrics, [item.rubric for _, item in good], rubrics, default.name)
    # Only what this batch names is read: the cost of a small batch does not grow with the run.
    targets = RunRepository(session).output_ids_by_question(
        run.dataset_id, run_id, {item.question_id for _, item in good if item.question_id is not None}
    )
    if join == "order" or any(i.question_id not in targets or i.run is not None for _, i in good):
        good, join_errors = _join(repo, run, good, join)
        errors += join_errors
        targets = RunRepository(session).output_ids_by_question(
            run.dataset_id, run_id, {item.question_id for _, item in good if item.question_id is not None}
        )
    errors += duplicate_errors([(r, f"{x.question_id}/{x.rater}") for r, x in good], "question_id")
    resolved = _resolve(good, errors, raters, rubrics, implied, targets, run_rubrics, run_id)
    if len({rubric.name for *_, rubric in resolved} | run_rubrics) > 1 and not errors:
        errors.append(ItemError(None, "rubric", "one run is rated on one rubric; this batch mixes several"))
    if errors:
        errors.sort(key=lambda e: (e.index if e.index is not None else -1, e.field))
        raise invalid_rows("ratings", rows, errors)

    created, updated, unchanged = _upsert(repo, run_id, resolved)
    return ImportReport(
        kind="ratings",
        received=len(rows),
        created=created,
        updated=updated,
        unchanged=unchanged,
        notes=notes_of(rows) + registered_note(registered),
    )


def list_ratings(
    session: Session,
    run_id: int,
    page: PageRequest,
    author: str | None = None,
    author_id: int | None = None,
) -> Page[RatingRead]:
    """The run's ratings in (output, rater) order; with ``author``, only that rater's (Forbidden without a
    task on the run)."""
    get_run(session, run_id)
    if author is not None:
        _check_author(session, run_id, author, author_id)
    after = (int(page.after[0]), int(page.after[1])) if page.after else None
    rows = RatingRepository(session).ratings_of_runs(
        [run_id], rater=author, after=after, limit=page.limit + 1
    )
    found = take(rows, page.limit, lambda r: (r[1].id, r[2].id))
    questions = DatasetRepository(session).external_ids(
        Question, (output.question_id for _, output, _, _ in found.items)
    )
    items = [
        RatingRead(
            question_id=questions[output.question_id],
            output_id=output.id,
            rater=rater.name,
            score=rating.score,
            rubric=rubric.name,
            comment=rating.comment,
            created_at=rating.created_at,
            updated_at=rating.updated_at,
        )
        for rating, output, rater, rubric in found.items
    ]
    return Page(items, found.next_key)


@dataclass(frozen=True)
class RatingTable:
    """Ratings of one or several runs: items are outputs; ``scores[item][rater]``."""

    output_ids: list[int]
    raters: list[str]
    scores: dict[int, dict[str, int]]
    rubric: Rubric | None

    def reference(self, method: str, min_raters: int) -> dict[int, tuple[float, int, bool]]:
        """Reference score per output: (mean or median of its raters, n raters, flagged under min_raters)."""
        out = {}
        for oid in self.output_ids:
            vals = list(self.scores.get(oid, {}).values())
            if not vals:
                continue
            ref = statistics.median(vals) if method == "median" else statistics.fmean(vals)
            out[oid] = (float(ref), len(vals), len(vals) < min_raters)
        return out


def rating_table(session: Session, run_ids: list[int]) -> RatingTable:
    repo = RatingRepository(session)
    scores: dict[int, dict[str, int]] = {}
    raters: dict[str, None] = {}
    rubric_ids: set[int] = set()
    for output_id, rater, score, rubric_id in repo.scores_of_runs(run_ids):
        scores.setdefault(output_id, {})[rater] = score
        raters.setdefault(rater)
        rubric_ids.add(rubric_id)
    # One rubric per run (enforced at import); pooled runs report the last one, as before.
    rubric = session.get(Rubric, max(rubric_ids)) if rubric_ids else None
    return RatingTable(output_ids=sorted(scores), raters=list(raters), scores=scores, rubric=rubric)
