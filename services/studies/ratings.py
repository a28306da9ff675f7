"""Ratings files beside a study import: each row one rater's score of one run's answer, joined to the
import's runs by run name, then by question id, text or position (services.ratings.join). Planned before
the write transaction; the writer registers the raters and inserts them."""

from __future__ import annotations

from services.errors import InvalidItems, ItemError
from services.ingest import Batch, Row
from services.ratings.join import Target, map_columns
from services.ratings.join import resolve as join_ratings
from services.ratings.schemas import DEFAULT_RUBRIC_NAME, RatingIn
from services.studies.formats import read_table
from services.studies.plan import QuestionPlan, RatingPlan, RatingsPlan, RunPlan, Snapshot, StudyFiles
from services.studies.schemas import StudyOptions
from services.validation import invalid_rows, validate_rows


def plan_ratings(
    snap: Snapshot,
    files: StudyFiles,
    options: StudyOptions,
    runs: list[RunPlan],
    questions: list[QuestionPlan],
) -> RatingsPlan | None:
    """Ratings files joined to the runs of the import (by run name, then by question id, text or position);
    InvalidItems naming the file's field for every row that cannot be placed."""
    if not files.ratings:
        return None
    if not runs:
        raise InvalidItems(
            "ratings need a run: the study files have no answers",
            [ItemError(None, "ratings", "no run in the import")],
        )
    targets = {
        run.name: [
            Target(questions[o.question].external_id, questions[o.question].question) for o in run.outputs
        ]
        for run in runs
    }
    run_index = {run.name: i for i, run in enumerate(runs)}
    output_index = {
        (run.name, questions[o.question].external_id): j for run in runs for j, o in enumerate(run.outputs)
    }
    errors: list[ItemError] = []
    all_rows: list[Row] = []
    out: list[RatingPlan] = []
    notes: list[str] = []
    received = 0
    seen: dict[tuple[str, str, str], tuple[str, int | None]] = {}
    for n, (raw, name) in enumerate(files.ratings):
        prefix = "ratings." if len(files.ratings) == 1 else f"ratings[{n}] ({name or 'file'})."
        table = read_table(raw, name, "ratings")
        notes += table.notes
        batch = Batch(table.rows, table.notes, table.columns)
        received += len(batch)
        all_rows += batch
        good, bad = validate_rows(map_columns(batch, options.ratings_columns, "ratings_columns"), RatingIn)
        errors += [ItemError(e.index, prefix + e.field, e.reason, e.line) for e in bad]
        items = {r.index: item for r, item in good}
        joined, join_errors = join_ratings(
            [Row(r.index, r.line, item.model_dump()) for r, item in good],
            targets,
            options.ratings_join,
            field_prefix=prefix,
        )
        errors += join_errors
        for r, run_name, ext in joined:
            item = items[r.index]
            rubric = item.rubric or DEFAULT_RUBRIC_NAME
            scale = snap.rubrics.get(rubric, (1, 5) if rubric == DEFAULT_RUBRIC_NAME else None)
            if scale is None:
                errors.append(ItemError(r.index, prefix + "rubric", f"unknown rubric {rubric!r}", r.line))
                continue
            if not scale[0] <= item.score <= scale[1]:
                reason = f"{item.score} is outside the scale {scale[0]}..{scale[1]} of {rubric!r}"
                errors.append(ItemError(r.index, prefix + "score", reason, r.line))
                continue
            key = (run_name, ext, item.rater)
            if key in seen:
                where = f"{seen[key][0]} line {seen[key][1]}"
                reason = (
                    f"a second rating by {item.rater!r} of question {ext!r} in run {run_name!r} ({where})"
                )
                errors.append(ItemError(r.index, prefix + "question_id", reason, r.line))
                continue
            seen[key] = (name or "ratings", r.line)
            out.append(
                RatingPlan(
                    run_index[run_name],
                    output_index[(run_name, ext)],
                    item.rater,
                    rubric,
                    item.score,
                    item.comment,
                )
            )
    for i, run in enumerate(runs):
        used = sorted({p.rubric for p in out if p.run == i})
        if len(used) > 1:
            errors.append(
                ItemError(
                    None, "ratings", f"run {run.name!r} is rated on {used}: one run is rated on one rubric"
                )
            )
    if errors:
        errors.sort(key=lambda e: (e.field.split(".")[0], e.index if e.index is not None else -1))
        raise invalid_rows("ratings", all_rows, errors)
    raters = sorted({p.rater for p in out})
    new = [r for r in raters if r not in snap.raters]
    if new:
        notes.append(f"{len(new)} rater(s) registered from the ratings: {', '.join(new)}")
    return RatingsPlan(len(files.ratings), received, out, raters, notes)
