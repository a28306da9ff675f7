"""Rating tasks: creation with balanced random assignment, per-rater seeded order, the rater's queue and item
actions (rate, skip, flag), and the editor's dashboard (progress, disagreements, agreement) and export.

Pointwise scores are stored as ordinary ratings (so reports and agreement see them at once); pairwise
preferences stay on the task's items, stored for run A vs run B whatever side each answer was shown on.

Failure modes: NotFound (task, run, position), Forbidden (the caller is not a rater of the task), Conflict
(task name taken; a rubric other than the one the run is rated with; a score or a side-by-side preference
sent back with an answer version the answer never had; in an active task, rating an item whose output has
gone to other raters since it was skipped, flagged or released), InvalidItems (bad raters, scales, modes,
versions).
"""

from __future__ import annotations

import random
import secrets
from collections import Counter
from datetime import UTC, datetime

import numpy as np
from sqlalchemy.orm import Session

from services import stats
from services.accounts.repository import AccountRepository
from services.accounts.schemas import RATERS, Role
from services.accounts.service import rater_for
from services.errors import Conflict, Forbidden, InvalidItems, ItemError, NotFound
from services.models import Output, Question, Rating, RatingTask, Rubric, Run, TaskItem, TaskRater, User
from services.pagination import Page, PageRequest, map_page, page_in_order
from services.ratings.repository import RatingRepository
from services.ratings.service import ensure_default_rubric, rubric_read
from services.runs.repository import RunRepository
from services.runs.service import get_run, lock_run
from services.tasks import active
from services.tasks.repository import TaskRepository
from services.tasks.schemas import (
    PREFERENCE_LEVELS,
    PREFERENCE_RUBRIC_NAME,
    ActionResult,
    ActiveEstimate,
    AgreementSummary,
    Answer,
    Context,
    Dashboard,
    Disagreement,
    Estimate,
    ExportRow,
    Flag,
    ItemAction,
    ItemView,
    NextItem,
    Queue,
    QueueEntry,
    RaterProgress,
    TaskCreate,
    TaskRead,
)


def _bad(field: str, reason: str) -> InvalidItems:
    return InvalidItems(reason, [ItemError(None, field, reason)])


def _rubric(session: Session, data: TaskCreate) -> Rubric:
    repo = RatingRepository(session)
    default = ensure_default_rubric(session)
    if data.rubric is None and data.mode == "pairwise":
        rubric = repo.rubrics().get(PREFERENCE_RUBRIC_NAME)
        if rubric is None:
            rubric = Rubric(name=PREFERENCE_RUBRIC_NAME, min_score=1, max_score=5, levels=PREFERENCE_LEVELS)
            repo.add(rubric)
            repo.flush()
        return rubric
    if data.rubric is None:
        return default
    rubric = repo.rubrics().get(data.rubric)
    if rubric is None:
        raise _bad("rubric", f"unknown rubric {data.rubric!r}")
    return rubric


def assign(
    units: list[int], rater_ids: list[int], per_output: int | None, seed: int
) -> tuple[dict[int, list[int]], dict[int, int]]:
    """Which units each rater gets, in that rater's order, and each rater's order seed.

    Everyone gets every unit, or each unit goes to ``per_output`` raters chosen among the least loaded (ties
    broken at random), so loads differ by at most one. Each rater's units are then shuffled with their own
    seed, drawn from the task's seed, so the whole assignment is reproducible from the task's seed.
    """
    rng = random.Random(seed)
    given: dict[int, list[int]] = {r: [] for r in rater_ids}
    if per_output is None:
        for r in rater_ids:
            given[r] = list(units)
    else:
        load = dict.fromkeys(rater_ids, 0)
        order = list(units)
        rng.shuffle(order)
        for unit in order:
            ranked = sorted(rater_ids, key=lambda r: (load[r], rng.random()))
            for r in ranked[:per_output]:
                given[r].append(unit)
                load[r] += 1
        for r in rater_ids:
            given[r].sort()
    seeds = {r: rng.randrange(2**31) for r in sorted(rater_ids)}
    for r in rater_ids:
        random.Random(seeds[r]).shuffle(given[r])
    return given, seeds


def create_task(session: Session, data: TaskCreate, created_by: int | None, *, min_raters: int) -> TaskRead:
    repo = TaskRepository(session)
    if repo.by_name(data.name) is not None:
        raise Conflict(f"a task named {data.name!r} exists", [ItemError(None, "name", "already taken")])
    _check_policy(data)
    run, run_b = _runs(session, data)
    rubric = _rubric(session, data)
    if data.mode == "pointwise":
        _check_run_rubric(session, run, rubric)
    users = _rater_accounts(session, data)

    outputs_a = {o.question_id: o for o in RunRepository(session).outputs(run.id) if o.answer is not None}
    outputs_b = (
        {o.question_id: o for o in RunRepository(session).outputs(run_b.id) if o.answer is not None}
        if run_b
        else {}
    )
    units = sorted(q for q in outputs_a if run_b is None or q in outputs_b)
    if not units:
        raise _bad("run_id", "no output with an answer to rate" + (" in both runs" if run_b else ""))

    seed = data.seed if data.seed is not None else secrets.randbelow(2**31)
    task = RatingTask(
        name=data.name,
        mode=data.mode,
        run_id=run.id,
        run_b_id=run_b.id if run_b else None,
        rubric_id=rubric.id,
        per_output=data.per_output,
        show_reference=data.show_reference,
        show_contexts=data.show_contexts,
        seed=seed,
        created_by=created_by,
        policy=data.policy,
        policy_params=data.active.model_dump() if data.active is not None else None,
    )
    repo.add(task)
    repo.flush()
    rater_ids = [users[name].id for name in data.raters]
    if data.active is not None:
        # No queues up front: outputs are drawn one at a time as raters ask (services.tasks.active).
        active.create_stream(session, task, outputs_a, units, data.active)
        order_rng = random.Random(seed)
        for uid in rater_ids:
            rater_for(session, uid)
            repo.add(TaskRater(task_id=task.id, user_id=uid, order_seed=order_rng.randrange(2**31)))
        repo.flush()
        return task_read(session, task, min_raters=min_raters)
    _fill_queues(session, task, (run_b, seed, data.per_output), rater_ids, units, (outputs_a, outputs_b))
    return task_read(session, task, min_raters=min_raters)


def _check_policy(data: TaskCreate) -> None:
    if data.policy == "active" and data.active is None:
        raise _bad("active", "an active task needs its settings: metric and budget")
    if data.policy == "active" and data.mode != "pointwise":
        raise _bad("policy", "the active policy draws the outputs of one run: mode must be pointwise")
    if data.policy != "active" and data.active is not None:
        raise _bad("active", "only a task with policy 'active' takes active settings")


def _runs(session: Session, data: TaskCreate) -> tuple[Run, Run | None]:
    """The task's run and, for a pairwise task, the other run (of the same dataset)."""
    run = get_run(session, data.run_id)
    run_b = None
    if data.mode == "pairwise":
        if data.run_b_id is None:
            raise _bad("run_b_id", "a pairwise task compares two runs: give run_b_id")
        run_b = get_run(session, data.run_b_id)
        if run_b.id == run.id or run_b.dataset_id != run.dataset_id:
            raise _bad("run_b_id", "run_b_id must be another run of the same dataset")
    elif data.run_b_id is not None:
        raise _bad("run_b_id", "only a pairwise task has a second run")
    return run, run_b


def _check_run_rubric(session: Session, run: Run, rubric: Rubric) -> None:
    """One run is rated on one rubric: Conflict when its ratings use another."""
    rated_with = {r.name for *_, r in RatingRepository(session).ratings_of_runs([run.id])}
    if rated_with and rubric.name not in rated_with:
        raise Conflict(
            f"run {run.id} is rated with {sorted(rated_with)[0]!r}; one run is rated on one rubric",
            [ItemError(None, "rubric", f"the run is rated with {sorted(rated_with)[0]}")],
        )


def _rater_accounts(session: Session, data: TaskCreate) -> dict[str, User]:
    """The raters' accounts by name; InvalidItems naming every rater listed twice, unknown or not a rater,
    and a per_output over the raters listed."""
    errors = []
    users = AccountRepository(session).users_by_name(data.raters)
    for i, name in enumerate(data.raters):
        user = users.get(name)
        if data.raters.index(name) != i:
            errors.append(ItemError(i, "raters", f"{name!r} is listed twice"))
        elif user is None:
            errors.append(ItemError(i, "raters", f"no account named {name!r}"))
        elif Role(user.role) not in RATERS or not user.active:
            errors.append(ItemError(i, "raters", f"{name!r} ({user.role}) cannot be given a rating queue"))
    if data.per_output is not None and data.per_output > len(data.raters):
        errors.append(ItemError(None, "per_output", f"more than the {len(data.raters)} rater(s) listed"))
    if errors:
        raise InvalidItems(f"{len(errors)} problem(s) with the task's raters", errors)
    return users


def _fill_queues(
    session: Session,
    task: RatingTask,
    design: tuple[Run | None, int, int | None],
    rater_ids: list[int],
    units: list[int],
    outputs: tuple[dict[int, Output], dict[int, Output]],
) -> None:
    """Each rater's queue up front (every output, or ``per_output`` raters each), in that rater's order.
    ``design``: the other run of a pairwise task, the task's seed, per_output; ``outputs``: each run's
    answered outputs by question."""
    repo = TaskRepository(session)
    run_b, seed, per_output = design
    outputs_a, outputs_b = outputs
    given, seeds = assign(units, rater_ids, per_output, seed)
    for uid in rater_ids:
        if task.mode == "pointwise":
            rater_for(session, uid)  # link the account's rater now, not on its first rating
        repo.add(TaskRater(task_id=task.id, user_id=uid, order_seed=seeds[uid]))
        sides = random.Random(seeds[uid] + 1)
        for position, qid in enumerate(given[uid], start=1):
            repo.add(
                TaskItem(
                    task_id=task.id,
                    user_id=uid,
                    position=position,
                    question_id=qid,
                    output_id=outputs_a[qid].id,
                    output_b_id=outputs_b[qid].id if run_b else None,
                    b_on_left=bool(sides.getrandbits(1)) if run_b else False,
                    status="pending",
                )
            )
    repo.flush()


def design_warnings(mode: str, per_output: int | None, n_raters: int, min_raters: int) -> list[str]:
    """What the task's design cannot give, said when it is created and on its dashboard: a report counts an
    output as rated only with ratings from ``min_raters`` raters, so a pointwise task giving each output
    fewer raters collects ratings that no report uses."""
    if mode != "pointwise":
        return []
    each = per_output if per_output is not None else n_raters
    if each >= min_raters:
        return []
    setting = (
        f"per_output={per_output}"
        if per_output is not None
        else f"{n_raters} rater(s) listed in raters (everyone rates every output)"
    )
    return [
        f"each output gets {each} rater(s) ({setting}), but a report uses only outputs rated by at least "
        f"{min_raters} raters (setting ratings.min_raters, RAGMETA_RATINGS__MIN_RATERS): the ratings of this "
        f"task alone enter no report; give each output {min_raters} raters (per_output={min_raters} with "
        f"at least {min_raters} raters listed)"
    ]


def _progress(items: list[TaskItem]) -> Counter[str]:
    return Counter(i.status for i in items)


def task_read(session: Session, task: RatingTask, *, min_raters: int) -> TaskRead:
    repo = TaskRepository(session)
    rubric = task.rubric
    items = repo.items(task.id)
    by_user: dict[int, list[TaskItem]] = {}
    for it in items:
        by_user.setdefault(it.user_id, []).append(it)
    raters = []
    for tr, user in repo.raters(task.id):
        mine = by_user.get(user.id, [])
        c = _progress(mine)
        raters.append(
            RaterProgress(
                name=user.name,
                order_seed=tr.order_seed,
                assigned=len(mine),
                rated=c["rated"],
                skipped=c["skipped"],
                flagged=c["flagged"],
                pending=c["pending"],
            )
        )
    created = task.created_at if task.created_at.tzinfo else task.created_at.replace(tzinfo=UTC)
    return TaskRead(
        id=task.id,
        name=task.name,
        mode=task.mode,
        run_id=task.run_id,
        run_b_id=task.run_b_id,
        rubric=rubric_read(rubric),
        per_output=task.per_output,
        show_reference=task.show_reference,
        show_contexts=task.show_contexts,
        seed=task.seed,
        n_outputs=repo.n_draws(task.id) if task.policy == "active" else len({i.output_id for i in items}),
        raters=raters,
        created_at=created,
        policy="active" if task.policy == "active" else "fixed",
        active=active.policy_of(task) if task.policy == "active" else None,
        closed_at=task.closed_at,
        closed_reason=task.closed_reason,
        warnings=design_warnings(
            task.mode, task.per_output or (1 if task.policy == "active" else None), len(raters), min_raters
        ),
    )


def get_task(session: Session, task_id: int) -> RatingTask:
    task = TaskRepository(session).get(task_id)
    if task is None:
        raise NotFound(f"task {task_id} does not exist")
    return task


def read_task(session: Session, task_id: int, *, min_raters: int) -> TaskRead:
    return task_read(session, get_task(session, task_id), min_raters=min_raters)


def list_tasks(
    session: Session, user_id: int | None = None, *, min_raters: int, page: PageRequest | None = None
) -> list[TaskRead]:
    return list_task_page(session, user_id, min_raters=min_raters, page=page).items


def list_task_page(
    session: Session, user_id: int | None = None, *, min_raters: int, page: PageRequest | None = None
) -> Page[TaskRead]:
    """The tasks (a rater's own with ``user_id``) in id order; with ``page``, one page of them."""
    repo = TaskRepository(session)
    tasks = repo.all() if user_id is None else repo.of_user(user_id)
    found = page_in_order(tasks, page, lambda t: (t.id,)) if page else Page(list(tasks), None)
    return map_page(found, lambda t: task_read(session, t, min_raters=min_raters))


def _member_task(session: Session, task_id: int, user_id: int | None) -> RatingTask:
    task = get_task(session, task_id)
    if user_id is None or not TaskRepository(session).is_rater(task_id, user_id):
        raise Forbidden(f"you are not a rater of task {task_id}")
    return task


def _shown_score(task: RatingTask, item: TaskItem, rating: Rating | None, rubric: Rubric) -> int | None:
    if task.mode == "pairwise":
        if item.preference is None:
            return None
        # Stored for run A vs run B; shown for left vs right.
        return rubric.min_score + rubric.max_score - item.preference if item.b_on_left else item.preference
    return rating.score if rating is not None else None


def _own_ratings(
    session: Session, task: RatingTask, user_id: int, items: list[TaskItem]
) -> dict[int, Rating]:
    if task.mode != "pointwise":
        return {}
    rater = AccountRepository(session).rater_of_user(user_id)
    if rater is None:
        return {}
    rows = TaskRepository(session).ratings_of_outputs([i.output_id for i in items], [rater.id])
    return {r.output_id: r for r in rows}


def _next_position(items: list[TaskItem], after: int) -> int | None:
    """The next pending item after ``after``, wrapping around, then the first skipped one; None when done."""
    pending = [i.position for i in items if i.status == "pending"]
    later = [p for p in pending if p > after]
    if later or pending:
        return (later or pending)[0]
    skipped = [i.position for i in items if i.status == "skipped" and i.position != after]
    return skipped[0] if skipped else None


def next_item(session: Session, task_id: int, user_id: int | None) -> NextItem:
    """The item the caller should rate next: their first open one; in an active task, when none is open,
    an output drawn for them now (with its inclusion probability recorded; they are not told it)."""
    task = _member_task(session, task_id, user_id)
    assert user_id is not None
    if task.policy == "active":
        return active.next_item(session, task, user_id)
    items = list(TaskRepository(session).items(task_id, user_id))
    position = _next_position(items, 0)
    return NextItem(position=position, reason=None if position is not None else "your queue is done")


def hide_policy(read: TaskRead) -> TaskRead:
    """The task as its raters see it: not the policy nor the metric that guides it."""
    return read.model_copy(update={"policy": None, "active": None})


def active_estimate(session: Session, task_id: int, confidence: float = 0.95) -> ActiveEstimate:
    """The active PPI estimate of an active task's run mean. InvalidItems (field ``task_id``) for a task
    with the fixed policy: its ratings are estimated by GET /runs/{id}/estimate."""
    task = get_task(session, task_id)
    if task.policy != "active":
        raise _bad("task_id", f"task {task_id} has the fixed policy: see GET /runs/{task.run_id}/estimate")
    return active.estimate(session, task, confidence)


def queue(session: Session, task_id: int, user_id: int | None) -> Queue:
    """The caller's own queue, in their order, with their own scores only."""
    task = _member_task(session, task_id, user_id)
    assert user_id is not None
    repo = TaskRepository(session)
    items = list(repo.items(task_id, user_id))
    questions = repo.questions([i.question_id for i in items])
    ratings = _own_ratings(session, task, user_id, items)
    rubric = task.rubric
    user = AccountRepository(session).user(user_id)
    assert user is not None
    entries = [
        QueueEntry(
            position=i.position,
            question_id=questions[i.question_id].external_id,
            question=questions[i.question_id].question,
            status=i.status,
            score=_shown_score(task, i, ratings.get(i.output_id), rubric),
            flag_reason=i.flag_reason,
        )
        for i in items
    ]
    done = sum(1 for i in items if i.status in ("rated", "flagged"))
    return Queue(
        task_id=task.id,
        task=task.name,
        mode=task.mode,
        rater=user.name,
        total=len(items),
        done=done,
        next_position=_next_position(items, 0),
        entries=entries,
        more_on_request=task.policy == "active" and task.closed_at is None,
    )


def _contexts(output: Output) -> list[Context]:
    return [Context(rank=c.rank, text=c.text) for c in output.chunks]


def item_view(session: Session, task_id: int, user_id: int | None, position: int) -> ItemView:
    """One item of the caller's queue: what the task shows, never metric scores or other raters' ratings."""
    task = _member_task(session, task_id, user_id)
    assert user_id is not None
    repo = TaskRepository(session)
    items = list(repo.items(task_id, user_id))
    item = next((i for i in items if i.position == position), None)
    if item is None:
        raise NotFound(f"your queue of task {task_id} has no position {position} (1..{len(items)})")
    question = repo.questions([item.question_id])[item.question_id]
    wanted = [item.output_id] + ([item.output_b_id] if item.output_b_id else [])
    outputs = repo.outputs(wanted)
    rubric = task.rubric
    rating = _own_ratings(session, task, user_id, [item]).get(item.output_id)

    def answer(output: Output, side: str) -> Answer:
        return Answer(
            side=side,
            answer=output.answer or "",
            contexts=_contexts(output) if task.show_contexts else None,
            version=output.version,
        )

    if task.mode == "pairwise":
        assert item.output_b_id is not None
        a, b = outputs[item.output_id], outputs[item.output_b_id]
        left, right = (b, a) if item.b_on_left else (a, b)
        answers = [answer(left, "left"), answer(right, "right")]
    else:
        answers = [answer(outputs[item.output_id], "single")]
    earlier = [i.position for i in items if i.position < position]
    return ItemView(
        task_id=task.id,
        task=task.name,
        mode=task.mode,
        position=position,
        total=len(items),
        done=sum(1 for i in items if i.status in ("rated", "flagged")),
        status=item.status,
        question_id=question.external_id,
        question=question.question,
        reference_answer=question.reference_answer if task.show_reference else None,
        answers=answers,
        rubric=rubric_read(rubric),
        score=_shown_score(task, item, rating, rubric),
        comment=(rating.comment if rating else None) if task.mode == "pointwise" else item.comment,
        flag_reason=item.flag_reason,
        prev_position=earlier[-1] if earlier else None,
        next_position=_next_position(items, position),
    )


def _seen_versions(
    session: Session, task: RatingTask, item: TaskItem, action: ItemAction
) -> tuple[tuple[int, int], bool] | None:
    """The versions of run A's and run B's answers a side-by-side preference is given on: the ones served
    with the item (``left_version`` / ``right_version``, sent back by the page), or when the client sends
    neither, the current ones; and whether either is earlier than its answer's current version (the
    preference is then stale from the start). A version the answer has not had (newer than its current one)
    is refused: the client cannot have been shown it. None for a pointwise item."""
    lv, rv = action.left_version, action.right_version
    if task.mode != "pairwise":
        if lv is not None or rv is not None:
            field = "left_version" if lv is not None else "right_version"
            raise _bad(field, "a pointwise item shows one answer; send its version as version")
        return None
    if action.version is not None:
        raise _bad("version", "a side-by-side item shows two answers; send left_version and right_version")
    assert item.output_b_id is not None
    current = RunRepository(session).output_versions([item.output_id, item.output_b_id])
    if lv is None and rv is None:
        return (current[item.output_id], current[item.output_b_id]), False
    if lv is None or rv is None:
        field = "left_version" if lv is None else "right_version"
        raise _bad(field, "give both left_version and right_version as served with the item, or neither")
    left, right = (item.output_b_id, item.output_id) if item.b_on_left else (item.output_id, item.output_b_id)
    for field, version, output_id in (("left_version", lv, left), ("right_version", rv, right)):
        if version > current[output_id]:
            reason = (
                f"the {field.split('_')[0]} answer has never had version {version} (it is at version"
                f" {current[output_id]}); reload the item"
            )
            raise Conflict(f"{field}: {reason}", [ItemError(None, field, reason)])
    seen = {left: lv, right: rv}
    return (seen[item.output_id], seen[item.output_b_id]), lv < current[left] or rv < current[right]


def _seen_version(session: Session, item: TaskItem, action: ItemAction) -> tuple[int, int]:
    """The version of the answer a pointwise score is given on (``version``, sent back by the page; the
    current one when the client sends none) and the answer's current version. A version the answer has not
    had (newer than its current one) is refused: the client cannot have been shown it."""
    current = RunRepository(session).output_versions([item.output_id])[item.output_id]
    if action.version is None:
        return current, current
    if action.version > current:
        reason = (
            f"the answer has never had version {action.version} (it is at version {current}); reload the item"
        )
        raise Conflict(f"version: {reason}", [ItemError(None, "version", reason)])
    return action.version, current


def act(
    session: Session, task_id: int, user_id: int | None, position: int, action: ItemAction
) -> ActionResult:
    """Rate, skip or flag one item of the caller's queue; the rating is recorded under the caller's rater.

    A rating records the version of the answer it was given on: the one the client sends back from the item
    it was served (``version``; side by side ``left_version`` / ``right_version`` for the two answers), else
    the current one. A score given on an earlier version than the answer's current one (it changed while the
    item was open) is kept where the ratings of previous answers are (``rating_history``, at that version):
    counted, and left out of reports and agreement, exactly as a rating of that version retired by the
    re-import would be. The caller's rating of the current answer, if any, stays: it was given on other text.
    """
    task = _member_task(session, task_id, user_id)
    assert user_id is not None
    if task.mode == "pointwise":
        lock_run(session, task.run_id)  # as every rating write: a concurrent re-import waits, or we do
    if task.policy == "active":  # the item's status is read after a release that may be under way
        active.lock_task(session, task.id)
    repo = TaskRepository(session)
    item = repo.item(task_id, user_id, position)
    if item is None:
        raise NotFound(f"your queue of task {task_id} has no position {position}")
    rubric = task.rubric
    rater = rater_for(session, user_id) if task.mode == "pointwise" else None
    existing = repo.rating(item.output_id, rater.id) if rater else None
    stale = False
    taken_back = (
        task.policy == "active" and action.action == "rate" and item.status not in ("pending", "rated")
    )
    if taken_back and not active.slot_free(session, task, item):
        reason = (
            f"this {item.status} item's output has gone to {task.per_output or 1} other rater(s) since; "
            "ask for the next output"
        )
        raise Conflict(f"position: {reason}", [ItemError(None, "position", reason)])
    if action.action == "rate":
        if action.score is None or not rubric.min_score <= action.score <= rubric.max_score:
            raise _bad("score", f"give a score in {rubric.min_score}..{rubric.max_score} ({rubric.name})")
        sides = _seen_versions(session, task, item, action)
        if sides is not None:
            item.preference = (
                rubric.min_score + rubric.max_score - action.score if item.b_on_left else action.score
            )
            item.comment = action.comment
            # The answers the preference is given on: once either changes, the preference is stale.
            (item.output_version, item.output_b_version), stale = sides
        else:
            assert rater is not None
            version, current = _seen_version(session, item, action)
            stale = version < current
            if stale:  # the answer changed while the item was open: the score is on the old text
                repo.record_earlier_rating(
                    item.output_id, version, rater.id, rubric.id, action.score, action.comment
                )
            elif existing is None:
                repo.add(
                    Rating(
                        output_id=item.output_id,
                        rater_id=rater.id,
                        rubric_id=rubric.id,
                        score=action.score,
                        comment=action.comment,
                    )
                )
            else:
                existing.score, existing.comment, existing.rubric_id = action.score, action.comment, rubric.id
        item.status, item.flag_reason = "rated", None
    elif action.action == "flag":
        if not action.reason:
            raise _bad("reason", "say why the output cannot be rated")
        if existing is not None:
            repo.delete(existing)
        item.status, item.flag_reason, item.preference = "flagged", action.reason, None
        item.output_version = item.output_b_version = None
    elif item.status in ("pending", "released"):
        item.status = "skipped"
    item.updated_at = datetime.now(UTC)
    repo.flush()
    items = list(repo.items(task_id, user_id))
    return ActionResult(
        position=position, status=item.status, next_position=_next_position(items, position), stale=stale
    )


def _estimate(est: float | None, low: float | None, high: float | None) -> Estimate:
    return Estimate(estimate=est, ci_low=low, ci_high=high)


def _scores(session: Session, task: RatingTask) -> tuple[list[str], dict[int, dict[str, int]]]:
    """The task's raters (names) and their scores by unit (question id) and rater."""
    repo = TaskRepository(session)
    raters = repo.raters(task.id)
    names = {u.id: u.name for _, u in raters}
    items = repo.items(task.id)
    outputs = {i.question_id: i.output_id for i in items}
    scores: dict[int, dict[str, int]] = {}
    if task.mode == "pairwise":
        for i in items:
            if i.preference is not None:
                scores.setdefault(i.question_id, {})[names[i.user_id]] = i.preference
        return sorted(names.values()), scores
    accounts = AccountRepository(session)
    rater_names = {}
    for uid, name in names.items():
        rater = accounts.rater_of_user(uid)
        if rater is not None:
            rater_names[rater.id] = name
    by_output = {o: q for q, o in outputs.items()}
    assigned = {(i.user_id, i.question_id) for i in items}
    users_of = {name: uid for uid, name in names.items()}
    for r in repo.ratings_of_outputs(list(by_output), list(rater_names)):
        name, qid = rater_names[r.rater_id], by_output[r.output_id]
        if (users_of[name], qid) in assigned:
            scores.setdefault(qid, {})[name] = r.score
    return sorted(names.values()), scores


def _agreement(raters: list[str], scores: dict[int, dict[str, int]], rubric: Rubric) -> AgreementSummary:
    units = sorted(scores)
    empty = AgreementSummary(
        raters=raters,
        n_items=len(units),
        n_items_used=0,
        alpha_ordinal=None,
        alpha_interval=None,
        icc_a1=None,
        icc_ak=None,
        kappa_quadratic=None,
        undefined_reason=None,
    )
    if len(raters) < 2:
        return empty.model_copy(update={"undefined_reason": "agreement needs at least two raters"})
    if sum(1 for u in units if len(scores[u]) >= 2) < 2:
        return empty.model_copy(update={"undefined_reason": "fewer than two outputs rated by two raters yet"})
    matrix = np.array([[scores[u].get(r, np.nan) for u in units] for r in raters], dtype=np.float64)
    # Raters who each give one constant score make the ICC formulas divide 0 by 0; the ICC is then undefined
    # (NaN), which stats.agreement reports, so the warning is noise here.
    with np.errstate(invalid="ignore", divide="ignore"):
        res = stats.agreement(matrix, raters, rubric.min_score, rubric.max_score, n_resamples=500)
    alpha = res.alpha
    icc = res.icc

    def a(level: str) -> Estimate | None:
        x = alpha.get(level)
        return _estimate(x.estimate, x.ci_low, x.ci_high) if x else None

    def i(kind: str) -> Estimate | None:
        x = icc.get(kind)
        return _estimate(x.estimate, x.ci_low, x.ci_high) if x else None

    return AgreementSummary(
        raters=raters,
        n_items=res.n_items,
        n_items_used=res.n_items_used,
        alpha_ordinal=a("ordinal"),
        alpha_interval=a("interval"),
        icc_a1=i("ICC(A,1)"),
        icc_ak=i("ICC(A,k)"),
        kappa_quadratic=res.kappa_quadratic,
        undefined_reason=res.icc_undefined_reason,
    )


def dashboard(session: Session, task_id: int, threshold: int, *, min_raters: int) -> Dashboard:
    """Progress per rater, outputs whose scores spread by at least ``threshold``, flags, agreement so far."""
    task = get_task(session, task_id)
    rubric = task.rubric
    raters, scores = _scores(session, task)
    repo = TaskRepository(session)
    items = repo.items(task.id)
    questions: dict[int, Question] = repo.questions(list({i.question_id for i in items}))
    names = {u.id: u.name for _, u in repo.raters(task.id)}
    disagreements = [
        Disagreement(
            question_id=questions[q].external_id,
            question=questions[q].question,
            scores=dict(sorted(s.items())),
            spread=max(s.values()) - min(s.values()),
        )
        for q, s in scores.items()
        if len(s) >= 2 and max(s.values()) - min(s.values()) >= threshold
    ]
    disagreements.sort(key=lambda d: (-d.spread, d.question_id))
    flags = [
        Flag(
            question_id=questions[i.question_id].external_id,
            question=questions[i.question_id].question,
            rater=names[i.user_id],
            reason=i.flag_reason,
        )
        for i in items
        if i.status == "flagged"
    ]
    return Dashboard(
        task=task_read(session, task, min_raters=min_raters),
        threshold=threshold,
        agreement=_agreement(raters, scores, rubric),
        disagreements=disagreements,
        flagged=flags,
        active_estimate=active.estimate(session, task) if task.policy == "active" else None,
    )


POINTWISE_COLUMNS = ["question_id", "rater", "score", "rubric", "comment"]


def export(session: Session, task_id: int) -> tuple[list[str], list[ExportRow]]:
    """The columns and rows of the task's ratings: pointwise exactly what POST /runs/{id}/ratings imports;
    pairwise adds run_a and run_b (scores for run A vs run B, low = A better)."""
    task = get_task(session, task_id)
    rubric = task.rubric
    _, scores = _scores(session, task)
    questions = TaskRepository(session).questions(list(scores))
    comments: dict[tuple[int, str], str | None] = {}
    if task.mode == "pointwise":
        for rating, output, rater, _ in RatingRepository(session).ratings_of_runs([task.run_id]):
            comments[(output.question_id, rater.name)] = rating.comment
    else:
        names = {u.id: u.name for _, u in TaskRepository(session).raters(task.id)}
        for i in TaskRepository(session).items(task.id):
            comments[(i.question_id, names[i.user_id])] = i.comment
    rows = []
    for qid in sorted(scores, key=lambda q: questions[q].external_id):
        for name, score in sorted(scores[qid].items()):
            rows.append(
                ExportRow(
                    question_id=questions[qid].external_id,
                    rater=name,
                    score=score,
                    rubric=rubric.name,
                    comment=comments.get((qid, name)),
                    run_a=task.run_id if task.mode == "pairwise" else None,
                    run_b=task.run_b_id,
                )
            )
    return POINTWISE_COLUMNS + (["run_a", "run_b"] if task.mode == "pairwise" else []), rows
