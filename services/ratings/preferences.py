"""Preference ratings imported from a file: one rater's preference between two runs' answers to one question,
on a preference rubric (default -2..2, positive = run B's answer better). The pairwise report reads them
beside the side-by-side preferences of pairwise rating tasks.

Each preference records the versions of the two outputs it was given on: the current ones at import. When
either answer changes later, the preference is stale: kept and listed, left out of the pairwise report and
counted there. Re-importing a row unchanged on unchanged answers changes nothing (idempotent); re-importing
it after an answer changed restates it for the current answers (counted as updated, and said in the notes).

Batches follow the import rules: validated whole, every bad row listed with its field, nothing half written.
Stored for run_a_id < run_b_id: a batch for (B, A) is stored mirrored (score -> min + max - score).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from services.datasets.schemas import ImportReport
from services.errors import InvalidItems, ItemError, NotFound
from services.ingest import Row, notes_of
from services.models import Rater, Rubric, Run
from services.pagination import Page, PageRequest, take
from services.ratings.repository import PreferenceRepository, RatingRepository
from services.ratings.schemas import (
    PREFERENCE_IMPORT_LEVELS,
    PREFERENCE_IMPORT_RUBRIC_NAME,
    PreferenceIn,
    PreferenceRead,
)
from services.ratings.service import (
    implied_rubric,
    register_named_raters,
    registered_note,
    rubric_errors,
    unknown_rater,
)
from services.runs.repository import RunRepository
from services.validation import duplicate_errors, invalid_rows, validate_rows


def _bad(field: str, message: str, reason: str | None = None) -> InvalidItems:
    return InvalidItems(message, [ItemError(None, field, reason or message)])


def _run(session: Session, run_id: int, field: str, lock: bool = False) -> Run:
    repo = RunRepository(session)
    run = repo.get_for_update(run_id) if lock else repo.get(run_id)
    if run is None:
        raise NotFound(
            f"run {run_id} does not exist", [ItemError(None, field, f"run {run_id} does not exist")]
        )
    return run


def _pair(session: Session, run_a: int, run_b: int, lock: bool = False) -> tuple[Run, Run]:
    """The two runs (locked in id order for a write, as every writer locks runs); 404/422 naming the field."""
    if run_a == run_b:
        raise _bad("run_b", "compare two different runs", f"run_b is run_a ({run_a})")
    fields = {run_a: "run_a", run_b: "run_b"}
    runs = {rid: _run(session, rid, fields[rid], lock) for rid in sorted(fields)}
    ra, rb = runs[run_a], runs[run_b]
    if ra.dataset_id != rb.dataset_id:
        raise _bad(
            "run_b",
            "the two runs must belong to one dataset",
            f"run {run_b} is of dataset {rb.dataset_id}, run {run_a} of dataset {ra.dataset_id}",
        )
    return ra, rb


def ensure_import_rubric(session: Session) -> Rubric:
    repo = RatingRepository(session)
    rubric = repo.rubrics().get(PREFERENCE_IMPORT_RUBRIC_NAME)
    if rubric is None:
        rubric = Rubric(
            name=PREFERENCE_IMPORT_RUBRIC_NAME, min_score=-2, max_score=2, levels=PREFERENCE_IMPORT_LEVELS
        )
        repo.add(rubric)
        repo.flush()
    return rubric


_Resolved = tuple[PreferenceIn, int, int, int, Rater, Rubric]


def import_preferences(
    session: Session, run_a: int, run_b: int, rows: list[Row], register_raters: bool = False
) -> ImportReport:
    """Upsert preferences of raters between the answers of runs ``run_a`` and ``run_b``; with
    ``register_raters``, the raters the rows name are registered when missing (said in the notes).

    A row without a rubric is on the pair's rubric (for a pair not rated yet: the one rubric the batch
    names, else the -2..2 import rubric). Fails (InvalidItems, naming the field) on unknown raters,
    questions or rubrics, a question either run did not answer, a preference outside the rubric's scale,
    two rows of one rater on one question, or a rubric other than the one the pair is already rated with.
    """
    ra, rb = _pair(session, run_a, run_b, lock=True)
    fallback = ensure_import_rubric(session)
    good, errors = validate_rows(rows, PreferenceIn)
    registered = register_named_raters(session, {i.rater for _, i in good}) if register_raters else []
    resolved = _resolve(session, ra, rb, good, errors, fallback)
    if errors:
        errors.sort(key=lambda e: (e.index if e.index is not None else -1, e.field))
        raise invalid_rows("preferences", rows, errors)
    created, updated, unchanged, restated = _store(session, run_a, run_b, resolved)
    notes = notes_of(rows)
    if restated:
        notes.append(
            f"{restated} preference(s) were stored for an earlier answer of either run and now apply to the "
            "current answers"
        )
    return ImportReport(
        kind="preferences",
        received=len(rows),
        created=created,
        updated=updated,
        unchanged=unchanged,
        notes=notes + registered_note(registered),
    )


def _resolve(
    session: Session,
    ra: Run,
    rb: Run,
    good: list[tuple[Row, PreferenceIn]],
    errors: list[ItemError],
    fallback: Rubric,
) -> list[_Resolved]:
    """Each valid row with its question, the two outputs, its rater and rubric; what does not resolve is
    added to ``errors``."""
    run_a, run_b = ra.id, rb.id
    lo, hi = sorted((run_a, run_b))
    ratings, prefs = RatingRepository(session), PreferenceRepository(session)
    raters, rubrics = ratings.raters(), ratings.rubrics()
    pair_rubrics = prefs.rubric_names(lo, hi)
    implied = implied_rubric(pair_rubrics, [item.rubric for _, item in good], rubrics, fallback.name)
    wanted = {item.question_id for _, item in good}
    runs = RunRepository(session)
    targets = {r.id: runs.output_ids_by_question(ra.dataset_id, r.id, wanted) for r in (ra, rb)}
    errors += duplicate_errors([(r, f"{x.question_id}/{x.rater}") for r, x in good], "question_id")
    resolved: list[_Resolved] = []
    for row, item in good:
        bad = len(errors)
        rubric_name = item.rubric or implied
        rubric, rater = rubrics.get(rubric_name), raters.get(item.rater)
        if rater is None:
            errors.append(unknown_rater(row, item.rater))
        target_a, target_b = targets[run_a].get(item.question_id), targets[run_b].get(item.question_id)
        if target_a is None or target_b is None:
            errors.append(
                ItemError(row.index, "question_id", f"unknown question {item.question_id!r}", row.line)
            )
        else:
            for run_id, target in ((run_a, target_a), (run_b, target_b)):
                if target[1] is None:
                    errors.append(
                        ItemError(
                            row.index,
                            "question_id",
                            f"run {run_id} has no output for {item.question_id!r}",
                            row.line,
                        )
                    )
        scale_errors = rubric_errors(row, "preference", item.preference, rubric, rubric_name)
        errors.extend(scale_errors)
        if rubric is not None and not scale_errors and pair_rubrics and rubric.name not in pair_rubrics:
            errors.append(
                ItemError(
                    row.index,
                    "rubric",
                    f"runs {lo} and {hi} are compared on {sorted(pair_rubrics)[0]!r}, not {rubric.name!r}",
                    row.line,
                )
            )
        if len(errors) == bad and rater and rubric and target_a and target_b and target_a[1] and target_b[1]:
            resolved.append((item, target_a[0], target_a[1], target_b[1], rater, rubric))
    if len({rubric.name for *_, rubric in resolved} | pair_rubrics) > 1 and not errors:
        errors.append(
            ItemError(None, "rubric", "one pair of runs is rated on one rubric; this batch mixes several")
        )
    return resolved


def _store(session: Session, run_a: int, run_b: int, resolved: list[_Resolved]) -> tuple[int, int, int, int]:
    """Insert the new preferences and update the changed ones (stored for run_a_id < run_b_id, mirrored when
    given for (B, A)); (created, updated, unchanged, restated for a changed answer)."""
    lo, hi = sorted((run_a, run_b))
    mirrored = run_a > run_b
    prefs = PreferenceRepository(session)
    versions = RunRepository(session).output_versions([o for *_, oa, ob, _, _ in resolved for o in (oa, ob)])
    existing = prefs.existing(lo, hi, {rater.id for *_, rater, _ in resolved})
    new: list[dict[str, object]] = []
    changed: list[dict[str, object]] = []
    unchanged = restated = 0
    for item, question_id, out_a, out_b, rater, rubric in resolved:
        score = rubric.min_score + rubric.max_score - item.preference if mirrored else item.preference
        lo_out, hi_out = (out_b, out_a) if mirrored else (out_a, out_b)
        values = {
            "score": score,
            "comment": item.comment,
            "rubric_id": rubric.id,
            "output_a_version": versions[lo_out],
            "output_b_version": versions[hi_out],
        }
        stored = existing.get((question_id, rater.id))
        if stored is None:
            new.append(
                {
                    "run_a_id": lo,
                    "run_b_id": hi,
                    "question_id": question_id,
                    "output_a_id": lo_out,
                    "output_b_id": hi_out,
                    "rater_id": rater.id,
                    **values,
                }
            )
        elif stored[1:] == tuple(values.values()):
            unchanged += 1
        else:
            restated += stored[4:] != (versions[lo_out], versions[hi_out])
            changed.append({"id": stored[0], **values})
    prefs.insert_many(new)
    prefs.update_many(changed)
    return len(new), len(changed), unchanged, restated


def list_preferences(session: Session, run_a: int, run_b: int, page: PageRequest) -> Page[PreferenceRead]:
    """The imported preferences of the pair in (question id, rater) order, oriented for (run_a, run_b),
    stale ones included and marked."""
    _pair(session, run_a, run_b)
    lo, hi = sorted((run_a, run_b))
    after = (str(page.after[0]), str(page.after[1])) if page.after else None
    rows = PreferenceRepository(session).of_pair(lo, hi, after=after, limit=page.limit + 1)
    found = take(rows, page.limit, lambda r: (r[0], r[1]))
    out = []
    for row in found.items:
        q, rater, score, rubric, rmin, rmax, comment, va, vb, cur_a, cur_b, created, updated = row
        stale = (va, vb) != (cur_a, cur_b)
        if run_a > run_b:
            score, va, vb = rmin + rmax - score, vb, va
        out.append(
            PreferenceRead(
                question_id=q,
                rater=rater,
                preference=score,
                rubric=rubric,
                comment=comment,
                output_a_version=va,
                output_b_version=vb,
                stale=stale,
                created_at=created,
                updated_at=updated,
            )
        )
    return Page(out, found.next_key)
