"""The `active` sampling policy of rating tasks: the stream of draws, serving the next item, refits and the
stopping rule, and the active PPI estimate of the run's mean human score (statistics in services.active_ppi).

Concurrency: every draw and every refit first locks the task's row (PostgreSQL ``SELECT ... FOR UPDATE``;
SQLite serialises writers with BEGIN IMMEDIATE), so concurrent raters decide the stream one after the other:
no output is served to more raters than the task asks, and each decision reads the fit in use. A draw and
the item it serves are written in one transaction: a crash before the commit leaves the output undecided;
after it, the item is open in the rater's queue, served again to them, and counted only once rated. An item
left unrated longer than the task's lease (``lease_minutes``) is released when a rater next needs an item:
its slot is free and the output may be served to another rater; the released item keeps its draw and
probability and is never counted. Taking a slot back (rating a skipped, flagged or released item) checks,
under the same lock, that no other rater holds it.

Failure modes: NotFound (task), Forbidden (not a rater), InvalidItems (settings, field ``active.*``).
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services import active_ppi
from services.accounts.repository import AccountRepository
from services.errors import InvalidItems, ItemError
from services.models import Output, Rating, RatingTask, TaskDraw, TaskFit, TaskItem
from services.ppi import MIN_RATED
from services.scores.repository import ScoreRepository
from services.tasks.schemas import (
    ActiveCorrelation,
    ActiveEstimate,
    ActiveInterval,
    ActivePolicy,
    CorrelationInterval,
    NextItem,
)

ACTIVE_METHOD = (
    "active PPI: lambda' mean(metric over all outputs) + sum_R w (human - lambda' metric) / sum_R w, "
    "w = 1 / inclusion probability recorded at the draw, lambda' = weighted Cov(human, metric) / "
    "Var(metric) (PPI++'s tuned lambda times 1 + n/N); interval t(n - 1) with the two-sample weighted "
    "delete-one jackknife SE (lambda' re-tuned in each leave-one-out)"
)
ACTIVE_DESIGN = (
    "sequential Poisson sampling on a seeded order of the run's outputs, each included with the probability "
    "recorded when it was decided (proportional to the predicted residual SD of the human score given the "
    "metric, floored); outputs not yet decided count as unrated"
)
UNIFORM_DESIGN = (
    "uniform random sampling of the same number of outputs (services.ppi PPI++), width projected from the "
    "weighted moments of these ratings (plug-in variance)"
)
CORR_METHOD = (
    "inclusion-probability weighted Pearson r: every moment (means, variances, covariance of metric and "
    "human score) a Hajek moment over the rated outputs with w = 1 / inclusion probability (Pearson's r "
    "when the probabilities are equal); interval tanh(atanh r -+ t(n - 1) SE_J), SE_J the delete-one "
    "jackknife SE of atanh r over the rated outputs, each left out with its weight"
)
UNIFORM_CORR_DESIGN = (
    "uniform random sampling of the same number of outputs: Fisher's interval "
    "tanh(atanh r -+ z / sqrt(n - 3)) at this estimate (width projected)"
)
ASSUMPTIONS = (
    "Only this task's ratings of its drawn outputs are used, with the probabilities they were drawn with; "
    "ratings gathered outside the policy (imports, other tasks) have no known design here and are left out.",
    "An output drawn but not rated (open, skipped, flagged) counts as not rated: valid if why it went "
    "unrated does not depend on its score.",
    "The estimate is of the expected per-output human score (the mean of the task's ratings of an output) "
    "of this system on questions like the dataset's.",
    "Stopping at a target width is a data-dependent stopping time: the interval at the stop is not "
    "guaranteed its nominal coverage in the strict sequential sense (bench/active_rating.py measures "
    "fixed budgets).",
)


def _bad(field: str, reason: str) -> InvalidItems:
    return InvalidItems(reason, [ItemError(None, field, reason)])


def active_rated_tasks(session: Session, run_id: int) -> list[int]:
    """Ids of the run's active tasks with at least one rated item (their ratings are not a uniform sample)."""
    stmt = (
        select(RatingTask.id)
        .join(TaskItem, TaskItem.task_id == RatingTask.id)
        .where(RatingTask.run_id == run_id, RatingTask.policy == "active", TaskItem.status == "rated")
        .distinct()
        .order_by(RatingTask.id)
    )
    return list(session.scalars(stmt))


def metric_values(session: Session, run_id: int, metric: str, output_ids: list[int]) -> dict[int, float]:
    """Output id -> the mean of the metric's stored values on it (over configurations and repeats)."""
    values: dict[int, list[float]] = {}
    for s in ScoreRepository(session).of_runs([run_id], [metric]):
        if s.value is not None and math.isfinite(s.value):
            values.setdefault(s.output_id, []).append(float(s.value))
    wanted = set(output_ids)
    return {o: float(np.mean(v)) for o, v in values.items() if o in wanted}


def create_stream(
    session: Session, task: RatingTask, outputs: dict[int, Output], units: list[int], policy: ActivePolicy
) -> None:
    """The task's stream: its outputs in the order its seed fixes, each with the metric value the policy and
    the estimate read (outputs without one get the mean of the others, flagged ``metric_imputed``)."""
    ids = [outputs[q].id for q in units]
    values = metric_values(session, task.run_id, policy.metric, ids)
    if len(values) < active_ppi.MIN_FIT:
        raise _bad(
            "active.metric",
            f"metric {policy.metric!r} has a value on {len(values)} output(s) of run {task.run_id}; the "
            f"active policy needs it on at least {active_ppi.MIN_FIT} (score the run first)",
        )
    if policy.budget >= len(units):
        raise _bad(
            "active.budget", f"a budget of {policy.budget} rates every one of the {len(units)} outputs"
        )
    fill = float(np.mean(list(values.values())))
    order = active_ppi.stream_order(len(units), task.seed)
    session.add_all(
        [
            TaskDraw(
                task_id=task.id,
                stream_index=pos,
                output_id=outputs[units[i]].id,
                question_id=units[i],
                metric_value=values.get(outputs[units[i]].id, fill),
                metric_imputed=outputs[units[i]].id not in values,
            )
            for pos, i in enumerate(order)
        ]
    )


def policy_of(task: RatingTask) -> ActivePolicy:
    return ActivePolicy.model_validate(task.policy_params or {})


def lock_task(session: Session, task_id: int) -> RatingTask | None:
    """The task, row-locked until the transaction ends (PostgreSQL; SQLite's writers are serialised)."""
    return session.scalar(
        select(RatingTask)
        .where(RatingTask.id == task_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


def _latest_fit(session: Session, task_id: int) -> TaskFit | None:
    return session.scalar(
        select(TaskFit).where(TaskFit.task_id == task_id).order_by(TaskFit.id.desc()).limit(1)
    )


def _fit_of(row: TaskFit | None) -> active_ppi.UncertaintyFit:
    if row is None:
        return active_ppi.UncertaintyFit(n=0)
    p = row.params
    return active_ppi.UncertaintyFit(
        n=int(p["n"]),
        a=float(p["a"]),
        b=float(p["b"]),
        c0=float(p["c0"]),
        c1=float(p["c1"]),
        c2=float(p["c2"]),
        floor=float(p["floor"]),
        uniform=bool(p["uniform"]),
    )


def _coin(seed: int, stream_index: int) -> float:
    """The uniform number a stream position's decision compares with its pi: fixed by the task's seed, so
    the stream can be replayed from the recorded probabilities."""
    return random.Random(f"{seed}:{stream_index}").random()


def release_expired(session: Session, task: RatingTask, now: datetime) -> int:
    """Mark the task's items served longer ago than its lease and still unrated ``released`` (their draw and
    inclusion probability stay; they are never counted by the estimate): their outputs' slots are free again.
    Called under the task's lock. Returns how many were released."""
    cutoff = now - timedelta(minutes=policy_of(task).lease_minutes)
    expired = list(
        session.scalars(
            select(TaskItem).where(
                TaskItem.task_id == task.id,
                TaskItem.status == "pending",
                TaskItem.draw_id.is_not(None),
                TaskItem.served_at.is_not(None),
                TaskItem.served_at < cutoff,
            )
        )
    )
    for item in expired:
        item.status, item.released_at = "released", now
    session.flush()
    return len(expired)


def slot_free(session: Session, task: RatingTask, item: TaskItem) -> bool:
    """Whether an item that does not hold its output's slot (skipped, flagged, released) may take it back to
    be rated: fewer other items of its draw are open or rated than the task asks. Locks the task first, so
    that a draw serving the slot to someone else waits, or this does."""
    lock_task(session, task.id)
    if item.draw_id is None:
        return True
    others = session.scalar(
        select(func.count()).where(
            TaskItem.draw_id == item.draw_id,
            TaskItem.id != item.id,
            TaskItem.status.in_(("pending", "rated")),
        )
    )
    return int(others or 0) < (task.per_output or 1)


def _serve(session: Session, task: RatingTask, user_id: int, draw: TaskDraw, position: int) -> TaskItem:
    item = TaskItem(
        task_id=task.id,
        user_id=user_id,
        position=position,
        question_id=draw.question_id,
        output_id=draw.output_id,
        status="pending",
        draw_id=draw.id,
        inclusion_probability=draw.pi,
        served_at=datetime.now(UTC),
    )
    session.add(item)
    session.flush()
    return item


def next_item(session: Session, task: RatingTask, user_id: int) -> NextItem:
    """The caller's open item, else an output drawn earlier that still needs raters, else the next output
    the stream includes (deciding the positions before it). Locks the task first."""
    locked = lock_task(session, task.id)
    assert locked is not None
    task = locked
    mine = list(
        session.scalars(
            select(TaskItem)
            .where(TaskItem.task_id == task.id, TaskItem.user_id == user_id)
            .order_by(TaskItem.position)
        )
    )
    pending = [i for i in mine if i.status == "pending"]
    now = datetime.now(UTC)
    if pending:
        pending[0].served_at = now  # back at it: the lease starts again
        return NextItem(position=pending[0].position)
    if task.closed_at is not None:
        return NextItem(position=None, reason=f"the task is closed: {task.closed_reason}")
    release_expired(session, task, now)
    seen = {i.question_id for i in mine}
    position = (mine[-1].position if mine else 0) + 1
    wanted = task.per_output or 1
    served = dict(
        session.execute(
            select(TaskItem.draw_id, func.count())
            .where(TaskItem.task_id == task.id, TaskItem.status.in_(("pending", "rated")))
            .group_by(TaskItem.draw_id)
        ).all()
    )
    draws = list(
        session.scalars(select(TaskDraw).where(TaskDraw.task_id == task.id).order_by(TaskDraw.stream_index))
    )
    for d in draws:
        if d.included and served.get(d.id, 0) < wanted and d.question_id not in seen:
            _serve(session, task, user_id, d, position)
            return NextItem(position=position)
    policy = policy_of(task)
    fit_row = _latest_fit(session, task.id)
    u = _fit_of(fit_row).score(np.array([d.metric_value for d in draws], dtype=np.float64))
    u_mean = float(u.mean())
    total = len(draws)
    least = active_ppi.pi_min(policy.budget, total, policy.floor)
    for k, d in enumerate(draws):
        if d.pi is not None:
            continue
        d.pi = active_ppi.inclusion_probability(float(u[k]), u_mean, policy.budget, total, least)
        d.included = _coin(task.seed, d.stream_index) < d.pi
        d.fit_id = fit_row.id if fit_row is not None else None
        d.decided_at = now
        if d.included and d.question_id not in seen:
            _serve(session, task, user_id, d, position)
            return NextItem(position=position)
    session.flush()
    rated = dict(
        session.execute(
            select(TaskItem.draw_id, func.count())
            .where(TaskItem.task_id == task.id, TaskItem.status == "rated")
            .group_by(TaskItem.draw_id)
        ).all()
    )
    # Closed once every drawn output has its raters' ratings: an open item may still be released.
    if all(d.pi is not None for d in draws) and all(
        not d.included or rated.get(d.id, 0) >= wanted for d in draws
    ):
        task.closed_at, task.closed_reason = now, "every output of the stream is decided and rated"
    return NextItem(position=None, reason="no output left to draw for you")


def _rated(session: Session, task: RatingTask) -> dict[int, float]:
    """Draw id -> the mean of the scores its rated items of this task got (current ratings only)."""
    accounts = AccountRepository(session)
    rows = session.execute(
        select(TaskItem.draw_id, TaskItem.user_id, TaskItem.output_id).where(
            TaskItem.task_id == task.id, TaskItem.status == "rated", TaskItem.draw_id.is_not(None)
        )
    ).all()
    rater_of: dict[int, int] = {}
    for _, uid, _ in rows:
        if uid not in rater_of:
            r = accounts.rater_of_user(uid)
            if r is not None:
                rater_of[uid] = r.id
    if not rows:
        return {}
    scores = {
        (r.output_id, r.rater_id): r.score
        for r in session.scalars(
            select(Rating).where(
                Rating.output_id.in_([o for *_, o in rows]), Rating.rater_id.in_(list(rater_of.values()))
            )
        )
    }
    by_draw: dict[int, list[float]] = {}
    for draw_id, uid, oid in rows:
        score = scores.get((oid, rater_of.get(uid, -1)))
        if score is not None and draw_id is not None:
            by_draw.setdefault(draw_id, []).append(float(score))
    return {d: float(np.mean(v)) for d, v in by_draw.items()}


def refit_due(session: Session, task_id: int) -> bool:
    """Whether an active task has ``refit_every`` new rated items since its last fit (a cheap count)."""
    task = session.get(RatingTask, task_id)
    if task is None or task.policy != "active":
        return False
    rated = session.scalar(
        select(func.count()).where(TaskItem.task_id == task_id, TaskItem.status == "rated")
    )
    last = _latest_fit(session, task_id)
    return int(rated or 0) - (last.n_ratings if last else 0) >= policy_of(task).refit_every


def refit(session: Session, task_id: int) -> TaskFit | None:
    """Refit the task's uncertainty model on its ratings so far and record it; then apply the stopping
    rule. Run off the request path (after the rating's response), under the task's lock; a no-op when another
    refit got there first or the task is gone."""
    task = lock_task(session, task_id)
    if task is None or task.policy != "active" or not refit_due(session, task_id):
        return None
    rated_items = session.scalar(
        select(func.count()).where(TaskItem.task_id == task_id, TaskItem.status == "rated")
    )
    y_of = _rated(session, task)
    draws = {d.id: d for d in session.scalars(select(TaskDraw).where(TaskDraw.task_id == task_id))}
    ids = sorted(y_of)
    fit = active_ppi.fit_uncertainty([y_of[i] for i in ids], [draws[i].metric_value for i in ids])
    row = TaskFit(task_id=task_id, n_ratings=int(rated_items or 0), params=fit.as_dict())
    session.add(row)
    session.flush()
    policy = policy_of(task)
    if policy.target_width is not None and task.closed_at is None:
        est = estimate(session, task)
        if est.active is not None and est.active.width <= policy.target_width:
            task.closed_at = datetime.now(UTC)
            task.closed_reason = (
                f"target width {policy.target_width:g} reached (interval width {est.active.width:.3g} "
                f"with {est.n_rated} rated outputs)"
            )
    return row


def estimate(session: Session, task: RatingTask, confidence: float = 0.95) -> ActiveEstimate:
    """Active PPI estimate of the run's mean human score from the task's ratings, beside the width uniform
    sampling of as many ratings would give, with the projected ratings to the target width."""
    policy = policy_of(task)
    draws = list(
        session.scalars(select(TaskDraw).where(TaskDraw.task_id == task.id).order_by(TaskDraw.stream_index))
    )
    y_of = _rated(session, task)
    rated = [d for d in draws if d.id in y_of and d.pi is not None]
    rated_ids = {d.id for d in rated}
    n_drawn = sum(1 for d in draws if d.included)
    n_refits = int(session.scalar(select(func.count()).where(TaskFit.task_id == task.id)) or 0)
    base = {
        "task_id": task.id,
        "run_id": task.run_id,
        "metric": policy.metric,
        "seed": task.seed,
        "confidence": confidence,
        "n_outputs": len(draws),
        "n_decided": sum(1 for d in draws if d.pi is not None),
        "n_drawn": n_drawn,
        "n_rated": len(rated),
        "n_open": n_drawn - len(rated),
        "n_refits": n_refits,
        "target_width": policy.target_width,
        "closed_at": task.closed_at,
        "assumptions": list(ASSUMPTIONS),
    }
    if len(rated) < MIN_RATED:
        return ActiveEstimate(
            **base,
            active=None,
            uniform_same_n=None,
            more_ratings=None,
            reached=False,
            undefined_reason=f"{len(rated)} rated output(s); at least {MIN_RATED} are needed",
        )
    y = np.array([y_of[d.id] for d in rated])
    f = np.array([d.metric_value for d in rated])
    pi = np.array([d.pi for d in rated], dtype=np.float64)
    fu = np.array([d.metric_value for d in draws if d.id not in rated_ids])
    res = active_ppi.active_mean(y, f, pi, fu, confidence=confidence)
    active = ActiveInterval(
        estimate=res.estimate,
        ci_low=res.ci_low,
        ci_high=res.ci_high,
        width=res.width,
        se=res.se,
        n_rated=len(rated),
        method=ACTIVE_METHOD,
        design=ACTIVE_DESIGN,
    )
    all_f = np.array([d.metric_value for d in draws])
    uni_w = active_ppi.uniform_width(len(rated), len(draws), y, f, 1.0 / pi, all_f, confidence)
    uniform = ActiveInterval(
        estimate=None,
        ci_low=None,
        ci_high=None,
        width=uni_w,
        se=None,
        n_rated=len(rated),
        method="PPI++ (services.ppi), projected",
        design=UNIFORM_DESIGN,
    )
    more = None
    target = policy.target_width
    if target is not None:
        left = len(draws) - len(rated)
        more = next((m for m in range(0, left + 1) if active_ppi.width_after(m, res) <= target), None)
    return ActiveEstimate(
        **base,
        active=active,
        uniform_same_n=uniform,
        more_ratings=more,
        reached=target is not None and res.width <= target,
        correlation=correlation(policy.metric, y, f, pi, confidence),
    )


def correlation(
    metric: str, y: np.ndarray, f: np.ndarray, pi: np.ndarray, confidence: float
) -> ActiveCorrelation:
    """The metric-human correlation from the rated draws (active_ppi.active_correlation), beside the width
    of the Fisher interval as many uniformly sampled ratings would give at the same r."""
    res = active_ppi.active_correlation(y, f, pi, confidence=confidence)
    if isinstance(res, str):
        return ActiveCorrelation(metric=metric, active=None, uniform_same_n=None, undefined_reason=res)
    active = CorrelationInterval(
        estimate=res.estimate,
        ci_low=res.ci_low,
        ci_high=res.ci_high,
        width=res.width,
        se_z=res.se_z,
        n_rated=res.n_rated,
        method=CORR_METHOD,
        design=ACTIVE_DESIGN,
    )
    width = active_ppi.fisher_width(res.estimate, res.n_rated, confidence)
    uniform = (
        None
        if width is None
        else CorrelationInterval(
            estimate=None,
            ci_low=None,
            ci_high=None,
            width=width,
            se_z=1.0 / math.sqrt(res.n_rated - 3),
            n_rated=res.n_rated,
            method="Pearson r with Fisher's interval (docs/statistics.md section 1), projected",
            design=UNIFORM_CORR_DESIGN,
        )
    )
    return ActiveCorrelation(metric=metric, active=active, uniform_same_n=uniform)
