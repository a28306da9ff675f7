"""services.ratings: raters, rubrics, rating imports (joins, rubrics, upserts), preferences, queries."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.errors import Conflict, Forbidden, InvalidItems, NotFound
from services.models import Preference, Rater, Rating, Rubric
from services.pagination import MAX_LIMIT, PageRequest
from services.ratings import preferences
from services.ratings import service as ratings
from services.ratings.repository import PreferenceRepository, RatingRepository
from services.ratings.schemas import DEFAULT_RUBRIC_NAME, PREFERENCE_IMPORT_RUBRIC_NAME, RubricCreate
from services.runs import service as runs
from tests.unit.services.factories import dataset, raters, rows, run


def _fields(exc: pytest.ExceptionInfo[InvalidItems]) -> list[tuple[int | None, str]]:
    return [(e.index, e.field) for e in exc.value.items]


def test_raters_are_registered_once(db: Session) -> None:
    first = ratings.create_raters(db, rows({"name": "ann"}, {"name": "bob"}))
    assert (first.created, first.unchanged) == (2, 0)
    again = ratings.create_raters(db, rows({"name": "ann"}, {"name": "cy"}))
    assert (again.created, again.unchanged) == (1, 1)
    assert [r.name for r in ratings.list_raters(db, PageRequest(MAX_LIMIT)).items] == ["ann", "bob", "cy"]
    with pytest.raises(InvalidItems) as exc:
        ratings.create_raters(db, rows({"name": "dee"}, {"name": "dee"}, {"name": ""}))
    assert _fields(exc) == [(2, "name"), (1, "name")]
    assert db.scalar(select(func.count()).select_from(Rater)) == 3


def test_rubrics_default_and_created(db: Session) -> None:
    [default] = ratings.list_rubrics(db, PageRequest(MAX_LIMIT)).items
    assert (default.name, default.min, default.max, default.is_default) == (DEFAULT_RUBRIC_NAME, 1, 5, True)
    assert len(default.levels) == 5
    ratings.ensure_default_rubric(db)
    assert db.scalar(select(func.count()).select_from(Rubric)) == 1
    made = ratings.create_rubric(db, RubricCreate(name="pass", min=0, max=1, levels={"0": "no", "1": "yes"}))
    stored = db.get(Rubric, made.id)
    assert stored is not None and (stored.min_score, stored.max_score, stored.is_default) == (0, 1, False)
    with pytest.raises(Conflict) as exc:
        ratings.create_rubric(db, RubricCreate(name="pass", min=0, max=2))
    assert [e.field for e in exc.value.items] == ["name"]


def test_rating_import_upserts_and_lists(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    raters(db, "ann", "bob")
    batch = [
        {"question_id": "q1", "rater": "ann", "score": 4},
        {"question_id": "q1", "rater": "bob", "score": 2, "comment": "vague"},
        {"question_id": "q2", "rater": "ann", "score": 5},
    ]
    first = ratings.import_ratings(db, r, rows(*batch))
    assert (first.kind, first.created, first.updated, first.unchanged) == ("ratings", 3, 0, 0)
    batch[1]["score"] = 3
    again = ratings.import_ratings(db, r, rows(*batch))
    assert (again.created, again.updated, again.unchanged) == (0, 1, 2)
    listed = {
        (x.question_id, x.rater): (x.score, x.comment, x.rubric)
        for x in ratings.list_ratings(db, r, PageRequest(MAX_LIMIT)).items
    }
    assert listed == {
        ("q1", "ann"): (4, None, DEFAULT_RUBRIC_NAME),
        ("q1", "bob"): (3, "vague", DEFAULT_RUBRIC_NAME),
        ("q2", "ann"): (5, None, DEFAULT_RUBRIC_NAME),
    }
    table = ratings.rating_table(db, [r])
    assert table.raters == ["ann", "bob"] and table.rubric is not None
    q1 = next(iter(table.output_ids))
    assert table.reference("mean", 2)[q1] == (3.5, 2, False)
    assert table.reference("median", 3)[q1] == (3.5, 2, True)


def test_rows_join_by_question_text_or_position(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    raters(db, "ann")
    ratings.import_ratings(db, r, rows({"question": "  question 2? ", "rater": "ann", "score": 3}))
    with pytest.raises(InvalidItems) as exc:
        ratings.import_ratings(
            db, r, rows({"rater": "ann", "score": 1}, {"rater": "ann", "score": 2}), join="order"
        )
    [error] = exc.value.items
    assert (error.index, error.field) == (0, "question_id")
    assert "rater 'ann' has 2 row(s) without a question for run 'r1', which has 3 question(s)" in error.reason
    ratings.import_ratings(db, r, rows(*({"rater": "ann", "score": s} for s in (1, 2, 5))), join="order")
    assert {(x.question_id, x.score) for x in ratings.list_ratings(db, r, PageRequest(MAX_LIMIT)).items} == {
        ("q1", 1),
        ("q2", 2),
        ("q3", 5),
    }


def test_a_bad_rating_batch_names_every_field_and_writes_nothing(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds, answers={"q1": "a", "q2": "b"})
    raters(db, "ann")
    with pytest.raises(InvalidItems) as exc:
        ratings.import_ratings(
            db,
            r,
            rows(
                {"question_id": "q1", "rater": "zed", "score": 3},
                {"question_id": "q3", "rater": "ann", "score": 3},
                {"question_id": "q2", "rater": "ann", "score": 9},
                {"question_id": "q2", "rater": "ann", "score": 3, "rubric": "nope"},
            ),
        )
    reasons = {(e.index, e.field): e.reason for e in exc.value.items}
    assert "unknown rater 'zed'" in reasons[(0, "rater")]
    assert reasons[(1, "question_id")] == f"run {r} has no output for 'q3'"
    assert reasons[(2, "score")] == f"9 is outside the scale 1..5 of {DEFAULT_RUBRIC_NAME!r}"
    assert reasons[(3, "rubric")] == "unknown rubric 'nope'"
    assert reasons[(3, "question_id")].startswith("duplicate 'q2/ann'")
    assert db.scalar(select(func.count()).select_from(Rating)) == 0


def test_one_run_is_rated_on_one_rubric(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    raters(db, "ann")
    ratings.create_rubric(db, RubricCreate(name="pass", min=0, max=1))
    ratings.import_ratings(db, r, rows({"question_id": "q1", "rater": "ann", "score": 4}))
    with pytest.raises(InvalidItems) as exc:
        ratings.import_ratings(
            db, r, rows({"question_id": "q2", "rater": "ann", "score": 1, "rubric": "pass"})
        )
    assert [(e.field, e.reason) for e in exc.value.items] == [
        ("rubric", f"run {r} is rated with {DEFAULT_RUBRIC_NAME!r}, not 'pass'")
    ]
    # A run not rated yet takes the one rubric its batch names, for the rows that name none too.
    r2 = run(db, ds, name="r2")
    ratings.import_ratings(
        db,
        r2,
        rows(
            {"question_id": "q1", "rater": "ann", "score": 0, "rubric": "pass"},
            {"question_id": "q2", "rater": "ann", "score": 1},
        ),
    )
    assert {x.rubric for x in ratings.list_ratings(db, r2, PageRequest(MAX_LIMIT)).items} == {"pass"}


def test_a_rater_writes_only_their_own_ratings_on_a_task_run(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    raters(db, "ann", "bob")
    with pytest.raises(Forbidden, match="'ann' has no rating task on run"):
        ratings.import_ratings(db, r, rows({"question_id": "q1", "rater": "ann", "score": 4}), author="ann")
    with pytest.raises(Forbidden):
        ratings.list_ratings(db, r, PageRequest(MAX_LIMIT), author="ann", author_id=None)
    with pytest.raises(NotFound):
        ratings.list_ratings(db, 999, PageRequest(MAX_LIMIT))


def test_preferences_import_mirrored_and_listed(db: Session) -> None:
    ds = dataset(db)
    a, b = run(db, ds, name="a"), run(db, ds, name="b")
    raters(db, "ann")
    # Posted as (b, a): stored for (a, b) with the scale mirrored.
    report = preferences.import_preferences(
        db, b, a, rows({"question_id": "q1", "rater": "ann", "preference": 2})
    )
    assert (report.kind, report.created) == ("preferences", 1)
    stored = db.scalars(select(Preference)).one()
    assert (stored.run_a_id, stored.run_b_id, stored.score) == (a, b, -2)
    assert db.get(Rubric, stored.rubric_id).name == PREFERENCE_IMPORT_RUBRIC_NAME  # type: ignore[union-attr]
    assert (
        preferences.import_preferences(
            db, a, b, rows({"question_id": "q1", "rater": "ann", "preference": -2})
        ).unchanged
        == 1
    )
    [read] = preferences.list_preferences(db, b, a, PageRequest(MAX_LIMIT)).items
    assert (read.preference, read.stale) == (2, False)
    # A new answer makes the preference stale (kept, marked).
    runs.import_outputs(db, a, rows({"question_id": "q1", "answer": "changed"}))
    [read] = preferences.list_preferences(db, a, b, PageRequest(MAX_LIMIT)).items
    assert (read.preference, read.stale, read.output_a_version) == (-2, True, 1)


def test_preference_failures_name_their_field(db: Session) -> None:
    ds = dataset(db)
    a, b = run(db, ds, name="a"), run(db, ds, name="b", answers={"q1": "x"})
    other = run(db, dataset(db, name="other"), name="c")
    raters(db, "ann")
    with pytest.raises(InvalidItems) as exc:
        preferences.import_preferences(db, a, a, rows())
    assert [e.field for e in exc.value.items] == ["run_b"]
    with pytest.raises(InvalidItems) as exc:
        preferences.import_preferences(db, a, other, rows())
    assert [e.field for e in exc.value.items] == ["run_b"]
    with pytest.raises(NotFound) as nf:
        preferences.import_preferences(db, a, 999, rows())
    assert [e.field for e in nf.value.items] == ["run_b"]
    with pytest.raises(InvalidItems) as exc:
        preferences.import_preferences(
            db,
            a,
            b,
            rows(
                {"question_id": "q2", "rater": "ann", "preference": 0},
                {"question_id": "q1", "rater": "ann", "preference": 3},
            ),
        )
    assert {(e.index, e.field): e.reason for e in exc.value.items} == {
        (0, "question_id"): f"run {b} has no output for 'q2'",
        (1, "preference"): f"3 is outside the scale -2..2 of {PREFERENCE_IMPORT_RUBRIC_NAME!r}",
    }
    assert db.scalar(select(func.count()).select_from(Preference)) == 0


def test_repository_queries(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds, answers={"q2": "b", "q1": "a"})
    raters(db, "ann", "bob")
    ratings.import_ratings(
        db,
        r,
        rows(
            {"question_id": "q1", "rater": "bob", "score": 2},
            {"question_id": "q2", "rater": "ann", "score": 5},
        ),
    )
    repo = RatingRepository(db)
    assert list(repo.raters()) == ["ann", "bob"]
    assert repo.default_rubric() is not None
    assert repo.rubric_names_of_run(r) == {DEFAULT_RUBRIC_NAME}
    # Questions with an output first, in the order the outputs were imported.
    assert [(e, o is not None) for e, _, o in repo.questions_of_run(ds, r)] == [
        ("q2", True), ("q1", True), ("q3", False)
    ]  # fmt: skip
    cells = repo.scores_of_runs([r])
    assert sorted((name, score) for _, name, score, _ in cells) == [("ann", 5), ("bob", 2)]
    existing = repo.existing(r, [oid for oid, *_ in cells], [repo.raters()["ann"].id])
    assert [v[1] for v in existing.values()] == [5]
    assert PreferenceRepository(db).of_pair(r, r + 1) == []
