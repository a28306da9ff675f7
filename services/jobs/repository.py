"""All SQL about jobs and job items, including the atomic claim used by concurrent workers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, insert, or_, select, update

from services.models import Job, JobItem, utcnow
from services.repository import Repository


class JobRepository(Repository):
    def get(self, job_id: int) -> Job | None:
        return self.session.get(Job, job_id)

    def params(self, job_id: int) -> dict[str, Any] | None:
        """The job's parameters (None: the job was deleted), for handlers that get only its id."""
        params = self.session.scalar(select(Job.params).where(Job.id == job_id))
        return None if params is None else dict(params)

    def recent(self, status: str | None = None, limit: int = 100, before: int | None = None) -> Sequence[Job]:
        """Newest first, older than the id ``before`` when given."""
        stmt = select(Job).order_by(Job.id.desc()).limit(limit)
        if before is not None:
            stmt = stmt.where(Job.id < before)
        if status:
            stmt = stmt.where(Job.status == status)
        return self.session.scalars(stmt).all()

    def scoring_jobs_of_runs(self, run_ids: Sequence[int]) -> list[Job]:
        """Scoring jobs of these runs, newest first (the run id lives in the job's JSON params)."""
        wanted = set(run_ids)
        jobs = self.session.scalars(select(Job).where(Job.kind == "scoring").order_by(Job.id.desc())).all()
        return [j for j in jobs if (j.params or {}).get("run_id") in wanted]

    def add_items(self, job_id: int, keys: Sequence[str]) -> None:
        """One pending item per key, in one executemany (the ORM's flush of new objects inserts them one
        statement each on SQLite, to read each id back); ids follow the keys' order."""
        if keys:
            self.session.execute(
                insert(JobItem),
                [{"job_id": job_id, "key": k, "status": "pending", "attempts": 0} for k in keys],
            )

    @staticmethod
    def _claimable(lease_s: float, now: datetime) -> object:
        expired = now - timedelta(seconds=lease_s)
        return or_(
            JobItem.status == "pending",
            and_(JobItem.status == "claimed", JobItem.claimed_at < expired),
        )

    def next_job_with_work(self, lease_s: float) -> Job | None:
        now = utcnow()
        stmt = (
            select(Job)
            .where(Job.status.in_(("queued", "running")))
            .where(select(JobItem.id).where(JobItem.job_id == Job.id, self._claimable(lease_s, now)).exists())  # type: ignore[arg-type]
            .order_by(Job.id)
            .limit(1)
        )
        return self.session.scalar(stmt)

    def claim(self, job_id: int, token: str, limit: int, lease_s: float) -> list[JobItem]:
        """Claim up to ``limit`` items for ``token``; safe against concurrent workers.

        The status condition is re-checked by the UPDATE itself, so two workers racing for one row cannot
        both take it (PostgreSQL re-evaluates it on the locked row; SQLite serialises writers).
        """
        claimable = self._claimable(lease_s, utcnow())
        ids = select(JobItem.id).where(JobItem.job_id == job_id, claimable).order_by(JobItem.id).limit(limit)  # type: ignore[arg-type]
        return self._take(token, JobItem.id.in_(ids.scalar_subquery()), claimable)

    def _take(self, token: str, *where: Any) -> list[JobItem]:
        """Mark the items matching ``where`` claimed by ``token`` (one UPDATE) and return every item
        ``token`` holds, in id order. The caller commits the claim before running the batch."""
        self.session.execute(
            update(JobItem)
            .where(*where)
            .values(status="claimed", worker_id=token, claimed_at=utcnow(), attempts=JobItem.attempts + 1)
            .execution_options(synchronize_session=False)
        )
        stmt = (
            select(JobItem)
            .where(JobItem.worker_id == token, JobItem.status == "claimed")
            .order_by(JobItem.id)
        )
        return list(self.session.scalars(stmt))

    def claimable_ids(self, job_id: int, lease_s: float) -> list[int]:
        """Ids of the job's items nobody holds (pending, or claimed under an expired lease), in order."""
        stmt = (
            select(JobItem.id)
            .where(JobItem.job_id == job_id, self._claimable(lease_s, utcnow()))  # type: ignore[arg-type]
            .order_by(JobItem.id)
        )
        return list(self.session.scalars(stmt))

    def claim_range(self, job_id: int, first: int, last: int, token: str, lease_s: float) -> list[JobItem]:
        """Claim the job's items with ids in [first, last] that nobody holds, or that ``token`` already holds
        (a batch run again after its worker died takes its own items back); safe against concurrent workers
        like ``claim``."""
        free: Any = self._claimable(lease_s, utcnow())
        takeable = or_(free, and_(JobItem.status == "claimed", JobItem.worker_id == token))
        return self._take(token, JobItem.job_id == job_id, JobItem.id >= first, JobItem.id <= last, takeable)

    def holds_live_claim(self, token: str, lease_s: float) -> bool:
        """Whether ``token`` holds items whose claim was renewed within ``lease_s``."""
        recent = utcnow() - timedelta(seconds=lease_s)
        stmt = select(JobItem.id).where(
            JobItem.worker_id == token, JobItem.status == "claimed", JobItem.claimed_at >= recent
        )
        return self.session.scalar(stmt.limit(1)) is not None

    def release(self, token: str) -> int:
        """Put the items ``token`` holds back to pending (a batch that will not run them now)."""
        result = self.session.execute(
            update(JobItem)
            .where(JobItem.worker_id == token, JobItem.status == "claimed")
            .values(status="pending", worker_id=None)
            .execution_options(synchronize_session=False)
        )
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    def renew(self, token: str) -> None:
        self.session.execute(
            update(JobItem)
            .where(JobItem.worker_id == token, JobItem.status == "claimed")
            .values(claimed_at=utcnow())
            .execution_options(synchronize_session=False)
        )

    def count_by_status(self) -> list[tuple[str, int]]:
        """(status, number of jobs) over every job."""
        stmt = select(Job.status, func.count()).group_by(Job.status)
        return [(str(status), int(n)) for status, n in self.session.execute(stmt)]

    def count_items_by_status(self) -> list[tuple[str, int]]:
        """(status, number of job items) over every job."""
        stmt = select(JobItem.status, func.count()).group_by(JobItem.status)
        return [(str(status), int(n)) for status, n in self.session.execute(stmt)]

    def counts(self, job_id: int) -> dict[str, int]:
        stmt = select(JobItem.status, func.count()).where(JobItem.job_id == job_id).group_by(JobItem.status)
        return {status: int(n) for status, n in self.session.execute(stmt)}

    def failed_items(self, job_id: int, limit: int = 50) -> Sequence[JobItem]:
        stmt = (
            select(JobItem)
            .where(JobItem.job_id == job_id, JobItem.error.is_not(None))
            .order_by(JobItem.id)
            .limit(limit)
        )
        return self.session.scalars(stmt).all()

    def item_errors(self, job_id: int) -> Sequence[str]:
        stmt = select(JobItem.error).where(JobItem.job_id == job_id, JobItem.status == "failed")
        return [e for e in self.session.scalars(stmt) if e]
