"""services.tasks: rating tasks (assignment, queues, actions, versions), dashboard, export, the repository."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.accounts import service as accounts
from services.accounts.schemas import Role, UserCreate
from services.errors import Conflict, Forbidden, InvalidItems, NotFound, ServiceError
from services.models import Rating, RatingHistory, TaskItem, TaskRater
from services.pagination import MAX_LIMIT, PageRequest
from services.ratings import service as ratings
from services.ratings.schemas import DEFAULT_RUBRIC_NAME, RubricCreate
from services.runs import service as runs
from services.runs.schemas import RunCreate
from services.tasks import service as tasks
from services.tasks.repository import TaskRepository
from services.tasks.schemas import PREFERENCE_RUBRIC_NAME, ItemAction, TaskCreate
from tests.unit.services.factories import dataset, rows, run


def _users(db: Session, *names: str, role: Role = Role.rater) -> dict[str, int]:
    return {n: accounts.create_user(db, UserCreate(name=n, role=role)).id for n in names}


def _task(db: Session, run_id: int, **kw: object) -> int:
    data = {"name": "t", "run_id": run_id, "raters": ["ann", "bob"], "seed": 7, **kw}
    return tasks.create_task(db, TaskCreate.model_validate(data), None, min_raters=2).id


def test_create_task_assigns_every_output_to_every_rater(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    _users(db, "ann", "bob")
    read = tasks.create_task(
        db, TaskCreate(name="t", run_id=r, raters=["ann", "bob"], seed=7), None, min_raters=2
    )
    assert (read.mode, read.seed, read.n_outputs, read.rubric.name) == (
        "pointwise",
        7,
        3,
        DEFAULT_RUBRIC_NAME,
    )
    assert [(p.name, p.assigned, p.pending) for p in read.raters] == [("ann", 3, 3), ("bob", 3, 3)]
    items = db.scalars(select(TaskItem).order_by(TaskItem.user_id, TaskItem.position)).all()
    assert len(items) == 6 and {i.position for i in items} == {1, 2, 3}
    # Accounts get their rater when the task is made; the order is reproducible from the seed.
    assert {r.name for r in ratings.list_raters(db, PageRequest(MAX_LIMIT)).items} == {"ann", "bob"}
    seeds = {tr.user_id: tr.order_seed for tr in db.scalars(select(TaskRater))}
    given, again = (
        tasks.assign([1, 2, 3], sorted(seeds), None, 7),
        tasks.assign([1, 2, 3], sorted(seeds), None, 7),
    )
    assert given == again and given[1] == seeds


def test_per_output_balances_the_load() -> None:
    given, _ = tasks.assign(list(range(10)), [1, 2, 3], 2, seed=1)
    loads = sorted(len(v) for v in given.values())
    assert sum(loads) == 20 and loads[-1] - loads[0] <= 1
    assert all(len({u for u in v}) == len(v) for v in given.values())


def test_task_failures_name_their_field(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    other = run(db, dataset(db, name="other"), name="x")
    _users(db, "ann", "bob")
    _users(db, "vic", role=Role.viewer)
    _task(db, r)
    cases: list[tuple[dict[str, object], type[Exception], str]] = [
        ({}, Conflict, "name"),
        ({"name": "p", "mode": "pairwise"}, InvalidItems, "run_b_id"),
        ({"name": "p", "mode": "pairwise", "run_b_id": r}, InvalidItems, "run_b_id"),
        ({"name": "p", "mode": "pairwise", "run_b_id": other}, InvalidItems, "run_b_id"),
        ({"name": "p", "run_b_id": other}, InvalidItems, "run_b_id"),
        ({"name": "p", "rubric": "nope"}, InvalidItems, "rubric"),
        ({"name": "p", "raters": ["ann", "ann", "zed", "vic"]}, InvalidItems, "raters"),
        ({"name": "p", "per_output": 3}, InvalidItems, "per_output"),
    ]
    for kw, error, field in cases:
        with pytest.raises(error) as caught:
            _task(db, r, **kw)
        assert isinstance(caught.value, ServiceError)
        assert {e.field for e in caught.value.items} == {field}, kw
    with pytest.raises(InvalidItems) as exc:
        _task(db, r, name="p", raters=["ann", "ann", "zed", "vic"])
    assert [(e.index, e.reason) for e in exc.value.items] == [
        (1, "'ann' is listed twice"),
        (2, "no account named 'zed'"),
        (3, "'vic' (viewer) cannot be given a rating queue"),
    ]  # fmt: skip
    with pytest.raises(NotFound):
        _task(db, 999, name="p")
    empty = runs.create_run(db, ds, RunCreate(name="empty")).id
    with pytest.raises(InvalidItems) as exc:
        _task(db, empty, name="p")
    assert [e.field for e in exc.value.items] == ["run_id"]
    # One run, one rubric: a run rated already takes no task on another rubric.
    ratings.create_rubric(db, RubricCreate(name="pass", min=0, max=1))
    ratings.import_ratings(db, r, rows({"question_id": "q1", "rater": "ann", "score": 4}))
    with pytest.raises(Conflict) as conflict:
        _task(db, r, name="p", rubric="pass")
    assert [e.field for e in conflict.value.items] == ["rubric"]


def test_rate_skip_flag_and_the_queue(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    users = _users(db, "ann", "bob", "cy")
    t = _task(db, r)
    ann = users["ann"]
    assert tasks.act(db, t, ann, 1, ItemAction(action="rate", score=4, comment="ok")).next_position == 2
    skipped = tasks.act(db, t, ann, 2, ItemAction(action="skip"))
    assert (skipped.status, skipped.next_position) == ("skipped", 3)
    flagged = tasks.act(db, t, ann, 3, ItemAction(action="flag", reason="garbled"))
    assert (flagged.status, flagged.next_position) == ("flagged", 2)  # back to the skipped one
    q = tasks.queue(db, t, ann)
    assert (q.rater, q.total, q.done) == ("ann", 3, 2)
    assert [(e.position, e.status, e.score) for e in q.entries] == [
        (1, "rated", 4),
        (2, "skipped", None),
        (3, "flagged", None),
    ]
    rating = db.scalars(select(Rating)).one()
    assert (rating.score, rating.comment) == (4, "ok")
    # Rating the same item again replaces the score; flagging it removes the rating.
    tasks.act(db, t, ann, 1, ItemAction(action="rate", score=2))
    assert db.scalar(select(Rating.score)) == 2
    tasks.act(db, t, ann, 1, ItemAction(action="flag", reason="unsure"))
    assert db.scalar(select(func.count()).select_from(Rating)) == 0

    view = tasks.item_view(db, t, ann, 1)
    assert (view.status, view.flag_reason, view.prev_position, view.reference_answer) == (
        "flagged",
        "unsure",
        None,
        None,
    )
    assert [a.side for a in view.answers] == ["single"] and view.answers[0].contexts is not None

    with pytest.raises(InvalidItems) as exc:
        tasks.act(db, t, ann, 2, ItemAction(action="rate", score=9))
    assert [e.field for e in exc.value.items] == ["score"]
    with pytest.raises(InvalidItems) as exc:
        tasks.act(db, t, ann, 2, ItemAction(action="flag"))
    assert [e.field for e in exc.value.items] == ["reason"]
    with pytest.raises(NotFound):
        tasks.act(db, t, ann, 99, ItemAction(action="skip"))
    with pytest.raises(NotFound):
        tasks.item_view(db, t, ann, 99)
    with pytest.raises(Forbidden):
        tasks.queue(db, t, users["cy"])
    with pytest.raises(NotFound):
        tasks.queue(db, 999, ann)


def test_a_score_on_an_earlier_answer_goes_to_history(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    users = _users(db, "ann", "bob")
    t = _task(db, r)
    view = tasks.item_view(db, t, users["ann"], 1)
    assert view.answers[0].version == 1
    runs.import_outputs(db, r, rows({"question_id": view.question_id, "answer": "changed"}))
    result = tasks.act(db, t, users["ann"], 1, ItemAction(action="rate", score=3, version=1))
    assert result.stale
    assert db.scalar(select(func.count()).select_from(Rating)) == 0
    history = db.scalars(select(RatingHistory)).one()
    assert (history.output_version, history.score) == (1, 3)
    with pytest.raises(Conflict) as exc:
        tasks.act(db, t, users["ann"], 1, ItemAction(action="rate", score=3, version=5))
    assert [e.field for e in exc.value.items] == ["version"]
    with pytest.raises(InvalidItems) as inv:
        tasks.act(db, t, users["ann"], 1, ItemAction(action="rate", score=3, left_version=1))
    assert [e.field for e in inv.value.items] == ["left_version"]


def test_pairwise_preferences_are_stored_for_run_a(db: Session) -> None:
    ds = dataset(db)
    qids = ("q1", "q2", "q3")
    a = run(db, ds, name="a", answers={q: f"a-{q}" for q in qids})
    b = run(db, ds, name="b", answers={q: f"b-{q}" for q in qids})
    _users(db, "ann", "bob")
    t = _task(db, a, mode="pairwise", run_b_id=b, per_output=1)
    read = tasks.read_task(db, t, min_raters=2)
    assert (read.rubric.name, sum(p.assigned for p in read.raters)) == (PREFERENCE_RUBRIC_NAME, 3)
    repo = TaskRepository(db)
    items = list(repo.items(t))
    # The seed puts run B's answer on the left for some items and on the right for others: both cases run.
    assert {i.b_on_left for i in items} == {True, False}
    for item in items:
        view = tasks.item_view(db, t, item.user_id, item.position)
        assert [x.side for x in view.answers] == ["left", "right"]
        left = view.answers[0].answer
        assert left == f"{'b' if item.b_on_left else 'a'}-{view.question_id}"
        tasks.act(
            db,
            t,
            item.user_id,
            item.position,
            ItemAction(action="rate", score=5, left_version=1, right_version=1),
        )
    for item in items:
        db.refresh(item)
        # 5 = the right answer much better, stored for run A vs run B (high = B better): 1 when B was left.
        assert item.preference == (1 if item.b_on_left else 5)
        assert (item.output_version, item.output_b_version) == (1, 1)
        # Shown back as given, on the left/right scale.
        [entry] = [e for e in tasks.queue(db, t, item.user_id).entries if e.position == item.position]
        assert entry.score == 5
    first = items[0]
    with pytest.raises(InvalidItems) as exc:
        tasks.act(db, t, first.user_id, first.position, ItemAction(action="rate", score=3, left_version=1))
    assert [e.field for e in exc.value.items] == ["right_version"]
    with pytest.raises(InvalidItems) as exc:
        tasks.act(db, t, first.user_id, first.position, ItemAction(action="rate", score=3, version=1))
    assert [e.field for e in exc.value.items] == ["version"]
    headers, exported = tasks.export(db, t)
    assert headers[-2:] == ["run_a", "run_b"]
    assert sorted((x.score, x.run_a, x.run_b) for x in exported) == sorted(
        (i.preference, a, b) for i in items
    )


def test_dashboard_and_export(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    users = _users(db, "ann", "bob")
    t = _task(db, r)
    repo = TaskRepository(db)
    for name, score in (("ann", 1), ("bob", 5)):
        for position in (1, 2, 3):
            item = repo.item(t, users[name], position)
            assert item is not None
            s = score if item.question_id == min(i.question_id for i in repo.items(t)) else 3
            tasks.act(db, t, users[name], position, ItemAction(action="rate", score=s, comment=name))
    board = tasks.dashboard(db, t, threshold=2, min_raters=2)
    assert [(d.question_id, d.scores, d.spread) for d in board.disagreements] == [
        ("q1", {"ann": 1, "bob": 5}, 4)
    ]
    assert (board.agreement.n_items, board.agreement.raters) == (3, ["ann", "bob"])
    assert [p.rated for p in board.task.raters] == [3, 3]
    headers, exported = tasks.export(db, t)
    assert headers == tasks.POINTWISE_COLUMNS
    assert [(x.question_id, x.rater, x.score, x.comment) for x in exported][:2] == [
        ("q1", "ann", 1, "ann"),
        ("q1", "bob", 5, "bob"),
    ]
    # The export is what the ratings import reads: importing it back changes nothing.
    report = ratings.import_ratings(db, r, rows(*(x.model_dump(exclude_none=True) for x in exported)))
    assert (report.created, report.updated, report.unchanged) == (0, 0, 6)


def test_repository_queries(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    users = _users(db, "ann", "bob", "cy")
    t = _task(db, r)
    repo = TaskRepository(db)
    assert repo.by_name("t") is not None and repo.by_name("u") is None
    assert [x.id for x in repo.of_user(users["ann"])] == [t] and repo.of_user(users["cy"]) == []
    assert [u.name for _, u in repo.raters(t)] == ["ann", "bob"]
    assert repo.is_rater(t, users["bob"]) and not repo.is_rater(t, users["cy"])
    assert repo.rates_run(r, users["ann"]) and not repo.rates_run(r, users["cy"])
    assert [i.position for i in repo.items(t, users["ann"])] == [1, 2, 3]
    assert len(repo.items(t)) == 6
    assert [x.id for x in tasks.list_tasks(db, users["cy"], min_raters=2)] == [] and len(
        tasks.list_tasks(db, min_raters=2)
    ) == 1
