"""Undo: delete what an import or a job made. Refused (409, dependants listed) unless `cascade=true`."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, BackgroundTasks, Query, Request

from app.deps import CommittingRoute, DatasetId, JobId, RunId, SessionDep, SettingsDep, run_in_session
from app.errors import responses
from app.resources import AppResources, ResourcesDep
from services.deletion import service
from services.deletion.service import DeleteReport

router = APIRouter(route_class=CommittingRoute)
Cascade = Query(False, description="also delete what depends on it (listed in the 409 otherwise)")


def _deleting(resources: AppResources, after: BackgroundTasks) -> None:
    """No report computed before this deletion is served stale again (services.reports.cache): counted now,
    before the transaction commits, and again once the response is sent, after it has (a report begun in
    between may have read the rows being deleted)."""
    for cache in (resources.report_cache, resources.section_cache):
        cache.deleted()
        after.add_task(cache.deleted)
    if resources.page_store is not None:
        # After the counts above: a page kept from now on was checked against them (page_store).
        resources.page_store.clear()
        after.add_task(resources.page_store.clear)


@router.delete(
    "/datasets/{dataset_id}", response_model=DeleteReport, responses=responses(404, 409), tags=["datasets"]
)
async def delete_dataset(
    dataset_id: DatasetId,
    request: Request,
    settings: SettingsDep,
    resources: ResourcesDep,
    after: BackgroundTasks,
    cascade: bool = Cascade,
) -> DeleteReport:
    """Delete a dataset; with `cascade=true` its documents, questions, runs and everything under them too.
    Its loaded index is dropped from memory and its index files removed once the rows are gone
    (committed)."""
    _deleting(resources, after)
    report = await run_in_session(request, service.delete_dataset, dataset_id, cascade)
    note = await anyio.to_thread.run_sync(
        service.remove_index, settings.data_dir, resources.indexes, dataset_id
    )
    report.notes += [note] if note else []
    return report


@router.delete("/runs/{run_id}", response_model=DeleteReport, responses=responses(404, 409), tags=["runs"])
def delete_run(
    run_id: RunId,
    session: SessionDep,
    resources: ResourcesDep,
    after: BackgroundTasks,
    cascade: bool = Cascade,
) -> DeleteReport:
    """Delete a run; with `cascade=true` its outputs, their ratings and scores, and its jobs too."""
    _deleting(resources, after)
    return service.delete_run(session, run_id, cascade)


@router.delete(
    "/runs/{run_id}/ratings", response_model=DeleteReport, responses=responses(404, 422), tags=["ratings"]
)
def delete_ratings(
    run_id: RunId,
    session: SessionDep,
    resources: ResourcesDep,
    after: BackgroundTasks,
    rater: str = Query(min_length=1, description="the rater's name"),
) -> DeleteReport:
    """Delete one rater's ratings on this run (the rater stays registered)."""
    _deleting(resources, after)
    return service.delete_ratings(session, run_id, rater)


@router.delete(
    "/runs/{run_id}/scores/{metric}",
    response_model=DeleteReport,
    responses=responses(404, 422),
    tags=["scoring"],
)
def delete_scores(
    run_id: RunId, metric: str, session: SessionDep, resources: ResourcesDep, after: BackgroundTasks
) -> DeleteReport:
    """Delete an imported metric's scores (`external.*`) on this run."""
    _deleting(resources, after)
    return service.delete_scores(session, run_id, metric)


@router.delete(
    "/jobs/{job_id}/results", response_model=DeleteReport, responses=responses(404, 409, 422), tags=["jobs"]
)
def delete_job_results(
    job_id: JobId,
    session: SessionDep,
    resources: ResourcesDep,
    after: BackgroundTasks,
    cascade: bool = Cascade,
) -> DeleteReport:
    """Delete what a job produced: a scoring job's scores, or a generation job's outputs (with
    `cascade=true`, their ratings and scores too). The job's record stays."""
    _deleting(resources, after)
    return service.delete_job_results(session, job_id, cascade)
