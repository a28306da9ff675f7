"""Jobs: progress, errors, cancel and resume."""

from __future__ import annotations

from fastapi import APIRouter

from app.deps import CommittingRoute, JobId, SessionDep, SettingsDep
from app.errors import responses
from services.jobs import service
from services.workers import JobKindRead, job_kind_read

router = APIRouter(prefix="/jobs", tags=["jobs"], route_class=CommittingRoute)


@router.get("", response_model=list[JobKindRead])
def list_jobs(session: SessionDep, status: str | None = None) -> list[JobKindRead]:
    return [job_kind_read(job) for job in service.list_jobs(session, status)]


@router.get("/{job_id}", response_model=JobKindRead, responses=responses(404))
def get_job(job_id: JobId, session: SessionDep) -> JobKindRead:
    """Status, total, done, failed, rate and ETA, per-item errors and counts by cause."""
    return job_kind_read(service.job_read(session, service.get_job(session, job_id)))


@router.post("/{job_id}/cancel", response_model=JobKindRead, responses=responses(404, 409))
def cancel_job(job_id: JobId, session: SessionDep) -> JobKindRead:
    return job_kind_read(service.cancel_job(session, job_id))


@router.post("/{job_id}/resume", response_model=JobKindRead, responses=responses(404, 409))
def resume_job(job_id: JobId, session: SessionDep, settings: SettingsDep) -> JobKindRead:
    return job_kind_read(service.resume_job(session, settings, job_id))
