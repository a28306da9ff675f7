"""All SQL about rating tasks, their raters and their queues."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import aliased, selectinload

from services.models import (
    Output,
    Question,
    Rating,
    RatingHistory,
    RatingTask,
    Rubric,
    TaskDraw,
    TaskItem,
    TaskRater,
    User,
    utcnow,
)
from services.repository import Repository


class TaskRepository(Repository):
    def get(self, task_id: int) -> RatingTask | None:
        return self.session.get(RatingTask, task_id)

    def by_name(self, name: str) -> RatingTask | None:
        return self.session.scalar(select(RatingTask).where(RatingTask.name == name))

    def all(self) -> Sequence[RatingTask]:
        return self.session.scalars(select(RatingTask).order_by(RatingTask.id)).all()

    def of_user(self, user_id: int) -> Sequence[RatingTask]:
        stmt = (
            select(RatingTask)
            .join(TaskRater, TaskRater.task_id == RatingTask.id)
            .where(TaskRater.user_id == user_id)
            .order_by(RatingTask.id)
        )
        return self.session.scalars(stmt).all()

    def raters(self, task_id: int) -> list[tuple[TaskRater, User]]:
        stmt = (
            select(TaskRater, User)
            .join(User, User.id == TaskRater.user_id)
            .where(TaskRater.task_id == task_id)
            .order_by(User.name)
        )
        return [(t, u) for t, u in self.session.execute(stmt)]

    def is_rater(self, task_id: int, user_id: int) -> bool:
        stmt = select(TaskRater.id).where(TaskRater.task_id == task_id, TaskRater.user_id == user_id)
        return self.session.scalar(stmt) is not None

    def rates_run(self, run_id: int, user_id: int) -> bool:
        stmt = (
            select(TaskRater.id)
            .join(RatingTask, RatingTask.id == TaskRater.task_id)
            .where(RatingTask.run_id == run_id, RatingTask.mode == "pointwise", TaskRater.user_id == user_id)
            .limit(1)
        )
        return self.session.scalar(stmt) is not None

    def n_draws(self, task_id: int) -> int:
        return int(self.session.scalar(select(func.count()).where(TaskDraw.task_id == task_id)) or 0)

    def items(self, task_id: int, user_id: int | None = None) -> Sequence[TaskItem]:
        stmt = select(TaskItem).where(TaskItem.task_id == task_id)
        if user_id is not None:
            stmt = stmt.where(TaskItem.user_id == user_id)
        return self.session.scalars(stmt.order_by(TaskItem.user_id, TaskItem.position)).all()

    def item(self, task_id: int, user_id: int, position: int) -> TaskItem | None:
        stmt = select(TaskItem).where(
            TaskItem.task_id == task_id, TaskItem.user_id == user_id, TaskItem.position == position
        )
        return self.session.scalar(stmt)

    def questions(self, question_ids: Sequence[int]) -> dict[int, Question]:
        stmt = select(Question).where(Question.id.in_(list(question_ids)))
        return {q.id: q for q in self.session.scalars(stmt)}

    def outputs(self, output_ids: Sequence[int]) -> dict[int, Output]:
        stmt = select(Output).where(Output.id.in_(list(output_ids))).options(selectinload(Output.chunks))
        return {o.id: o for o in self.session.scalars(stmt)}

    def rating(self, output_id: int, rater_id: int) -> Rating | None:
        stmt = select(Rating).where(Rating.output_id == output_id, Rating.rater_id == rater_id)
        return self.session.scalar(stmt)

    def record_earlier_rating(
        self, output_id: int, version: int, rater_id: int, rubric_id: int, score: int, comment: str | None
    ) -> None:
        """A rating given on an earlier version of the output's answer: kept with the ratings of previous
        answers, at that version. The rater's rating of that version already there (rated before the answer
        changed, or sent again from the same page) is updated, so there is one per rater and version."""
        stmt = (
            select(RatingHistory)
            .where(
                RatingHistory.output_id == output_id,
                RatingHistory.output_version == version,
                RatingHistory.rater_id == rater_id,
            )
            .order_by(RatingHistory.id.desc())
            .limit(1)
        )
        row = self.session.scalar(stmt)
        now = utcnow()
        if row is None:
            self.session.add(
                RatingHistory(
                    output_id=output_id,
                    output_version=version,
                    rater_id=rater_id,
                    rubric_id=rubric_id,
                    score=score,
                    comment=comment,
                    created_at=now,
                    updated_at=now,
                    invalidated_at=now,
                )
            )
        else:
            row.score, row.comment, row.rubric_id, row.updated_at = score, comment, rubric_id, now

    def ratings_of_outputs(self, output_ids: Sequence[int], rater_ids: Sequence[int]) -> Sequence[Rating]:
        stmt = select(Rating).where(
            Rating.output_id.in_(list(output_ids)), Rating.rater_id.in_(list(rater_ids))
        )
        return self.session.scalars(stmt).all()

    def delete(self, obj: object) -> None:
        self.session.delete(obj)

    def pairwise_version(self, run_ids: Sequence[int]) -> tuple[str, ...]:
        """Changes with any preference given, changed or withdrawn in a pairwise task between two of these
        runs, and with such a task's creation or deletion."""
        ids = list(run_ids)
        stmt = (
            select(func.count(), func.max(TaskItem.id), func.max(TaskItem.updated_at))
            .join(RatingTask, RatingTask.id == TaskItem.task_id)
            .where(RatingTask.mode == "pairwise", RatingTask.run_id.in_(ids), RatingTask.run_b_id.in_(ids))
        )
        return tuple(str(v) for v in self.session.execute(stmt).one())

    def pairwise_preferences(
        self, run_a: int, run_b: int
    ) -> list[tuple[str, int, int, int, int, int, int, bool]]:
        """(question external id, task id, user id, preference, task's run A, rubric min, rubric max,
        stale) of every preference given in a pairwise task on these two runs, in either order. Stale:
        either answer is not the version the preference was given on (or that version was not recorded)."""
        out_a, out_b = aliased(Output), aliased(Output)
        stmt = (
            select(
                Question.external_id,
                RatingTask.id,
                TaskItem.user_id,
                TaskItem.preference,
                RatingTask.run_id,
                Rubric.min_score,
                Rubric.max_score,
                TaskItem.output_version,
                TaskItem.output_b_version,
                out_a.version,
                out_b.version,
            )
            .join(RatingTask, RatingTask.id == TaskItem.task_id)
            .join(Rubric, Rubric.id == RatingTask.rubric_id)
            .join(Question, Question.id == TaskItem.question_id)
            .join(out_a, out_a.id == TaskItem.output_id)
            .join(out_b, out_b.id == TaskItem.output_b_id)
            .where(
                RatingTask.mode == "pairwise",
                TaskItem.preference.is_not(None),
                or_(
                    and_(RatingTask.run_id == run_a, RatingTask.run_b_id == run_b),
                    and_(RatingTask.run_id == run_b, RatingTask.run_b_id == run_a),
                ),
            )
            .order_by(Question.external_id, RatingTask.id, TaskItem.user_id)
        )
        return [
            (q, t, u, p, a, lo, hi, (va, vb) != (cur_a, cur_b))
            for q, t, u, p, a, lo, hi, va, vb, cur_a, cur_b in self.session.execute(stmt)
            if p is not None
        ]
