"""Jobs: progress, errors, cancel and resume."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from app.deps import CommittingRoute, JobId, SessionDep, SettingsDep
from app.errors import responses
from app.pagination import PageDep, paged, paged_extra, paged_responses
from services.jobs import service
from services.pagination import map_page
from services.workers import JobKindRead, job_kind_read

router = APIRouter(prefix="/jobs", tags=["jobs"], route_class=CommittingRoute)


@router.get(
    "",
    response_model=list[JobKindRead],
    responses={**responses(422), **paged_responses()},
    openapi_extra=paged_extra(),
)
def list_jobs(
    session: SessionDep, page: PageDep, request: Request, response: Response, status: str | None = None
) -> list[JobKindRead]:
    """The jobs, newest first, a page at a time."""
    found = service.list_jobs(session, page.request("jobs"), status)
    return paged(request, response, "jobs", map_page(found, job_kind_read))


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
