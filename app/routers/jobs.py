"""Jobs: progress, errors, cancel and resume."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from app.deps import CommittingRoute, JobId, SessionDep, SettingsDep
from app.errors import responses
from app.pagination import PageDep, paged, paged_extra, paged_responses
from services.jobs import service
from services.jobs.service import JobRead

router = APIRouter(prefix="/jobs", tags=["jobs"], route_class=CommittingRoute)


@router.get(
    "",
    response_model=list[JobRead],
    responses={**responses(422), **paged_responses()},
    openapi_extra=paged_extra(),
)
def list_jobs(
    session: SessionDep, page: PageDep, request: Request, response: Response, status: str | None = None
) -> list[JobRead]:
    """The jobs, newest first, a page at a time."""
    return paged(request, response, "jobs", service.list_jobs(session, page.request("jobs"), status))


@router.get("/{job_id}", response_model=JobRead, responses=responses(404))
def get_job(job_id: JobId, session: SessionDep) -> JobRead:
    """Status, total, done, failed, rate and ETA, per-item errors and counts by cause."""
    return service.job_read(session, service.get_job(session, job_id))


@router.post("/{job_id}/cancel", response_model=JobRead, responses=responses(404, 409))
def cancel_job(job_id: JobId, session: SessionDep) -> JobRead:
    return service.cancel_job(session, job_id)


@router.post("/{job_id}/resume", response_model=JobRead, responses=responses(404, 409))
def resume_job(job_id: JobId, session: SessionDep, settings: SettingsDep) -> JobRead:
    return service.resume_job(session, settings, job_id)
