"""Creating jobs and reading their progress."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from services.config import Settings
from services.errors import Conflict, NotFound
from services.jobs.connection import uses_queue
from services.jobs.queue import dispatch
from services.jobs.repository import JobRepository
from services.logs import current_request_id
from services.models import Job, utcnow
from services.pagination import Page, PageRequest, map_page, take


class ItemErrorRead(BaseModel):
    item: str
    error: str


class JobParams(BaseModel):
    """What every job kind's params may carry beside its own."""

    request_id: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="the request id (X-Request-ID or traceparent) of the request that started the job",
    )


class JobProgress(BaseModel):
    """What every job reports whatever its kind. Each domain reads its own kinds with a subclass that adds
    ``kind`` (a literal), ``params`` and ``summary`` as typed models (``services.workers.JobKindRead``
    is their union, the API's job schema)."""

    id: int
    status: str
    total: int
    done: int
    failed: int
    pending: int
    started_at: datetime | None
    finished_at: datetime | None
    rate_per_s: float | None
    eta_s: float | None
    errors_by_cause: dict[str, int]
    errors: list[ItemErrorRead]
    error: str | None


class JobRead(JobProgress):
    """A job as this package stores it: ``params`` and ``summary`` are what its domain wrote, read as
    typed models by the domain (``typed``) before they leave the service."""

    kind: str
    params: dict[str, Any]
    summary: dict[str, Any]


TypedJobRead = TypeVar("TypedJobRead", bound=JobProgress)


def typed(read: JobRead, model: type[TypedJobRead]) -> TypedJobRead:
    """``read`` as the domain's typed model of its kind; a stored job that does not fit is a
    ValidationError (a job written by code that no longer knows its kind)."""
    return model.model_validate(read.model_dump())


def cause_of(error: str) -> str:
    """Errors are written "cause: message"; the cause groups them in the job summary."""
    head, sep, _ = error.partition(":")
    return head.strip() if sep and head.strip() and " " not in head.strip() else "error"


def create_job(
    session: Session,
    kind: str,
    params: dict[str, Any],
    keys: list[str],
    summary: dict[str, Any],
    *,
    settings: Settings,
) -> Job:
    """A job with one item per key. On PostgreSQL its batches are deferred to the queue in the same
    transaction (services.jobs.queue); on SQLite the lease loop finds its items."""
    repo = JobRepository(session)
    request_id = current_request_id()
    if request_id is not None:
        # Carried into the job's log lines, in whichever worker runs its batches (services.logs).
        params = {**params, "request_id": request_id}
    job = Job(kind=kind, params=params, total=len(keys), summary=summary, status="queued" if keys else "done")
    if not keys:
        job.finished_at = utcnow()
    repo.add(job)
    repo.flush()
    repo.add_items(job.id, keys)
    repo.flush()
    if keys and uses_queue(settings.database_url):
        dispatch(session, settings, job.id, kind)
    return job


def get_job(session: Session, job_id: int) -> Job:
    job = JobRepository(session).get(job_id)
    if job is None:
        raise NotFound(f"job {job_id} does not exist")
    return job


def job_read(session: Session, job: Job) -> JobRead:
    repo = JobRepository(session)
    counts = repo.counts(job.id)
    done, failed = counts.get("done", 0), counts.get("failed", 0)
    pending = counts.get("pending", 0) + counts.get("claimed", 0)
    rate = eta = None
    if job.started_at is not None:
        end = job.finished_at or utcnow()
        started = job.started_at if job.started_at.tzinfo else job.started_at.replace(tzinfo=end.tzinfo)
        elapsed = max((end - started).total_seconds(), 1e-6)
        if done + failed:
            rate = (done + failed) / elapsed
            eta = pending / rate if pending else 0.0
    errors = [ItemErrorRead(item=i.key, error=i.error or "") for i in repo.failed_items(job.id)]
    by_cause = Counter(cause_of(e) for e in repo.item_errors(job.id))
    return JobRead(
        id=job.id,
        kind=job.kind,
        status=job.status,
        params=job.params,
        total=job.total,
        done=done,
        failed=failed,
        pending=pending,
        started_at=job.started_at,
        finished_at=job.finished_at,
        rate_per_s=rate,
        eta_s=eta,
        summary=job.summary or {},
        errors_by_cause=dict(by_cause),
        errors=errors,
        error=job.error,
    )


def list_jobs(session: Session, page: PageRequest, status: str | None = None) -> Page[JobRead]:
    """Newest first."""
    before = page.after[0] if page.after else None
    jobs = take(JobRepository(session).recent(status, page.limit + 1, before), page.limit, lambda j: (j.id,))
    return map_page(jobs, lambda j: job_read(session, j))


def cancel_job(session: Session, job_id: int) -> JobRead:
    job = get_job(session, job_id)
    if job.status in ("done", "failed", "cancelled"):
        raise Conflict(f"job {job_id} is already {job.status}")
    job.status = "cancelled"
    job.finished_at = utcnow()
    return job_read(session, job)


def resume_job(session: Session, settings: Settings, job_id: int) -> JobRead:
    """Put a cancelled job back in the queue; its remaining items are taken again."""
    job = get_job(session, job_id)
    if job.status != "cancelled":
        raise Conflict(f"job {job_id} is {job.status}, only a cancelled job can be resumed")
    job.status = "queued"
    job.finished_at = None
    session.flush()
    if uses_queue(settings.database_url):
        dispatch(session, settings, job.id, job.kind)
    return job_read(session, job)
