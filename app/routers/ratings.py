"""Raters, rubrics, human ratings of a run's outputs and inter-rater agreement."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from app.auth import require
from app.deps import CommittingRoute, RunId, SessionDep, SettingsDep, run_in_session
from app.errors import responses
from app.uploads import batch_body, read_upload
from services.accounts.schemas import EVERYONE, RATERS, READERS, WRITERS, Identity, Role
from services.datasets.schemas import ImportReport
from services.ratings import service
from services.ratings.schemas import RaterRead, RatingRead, RubricCreate, RubricRead

router = APIRouter(tags=["ratings"], route_class=CommittingRoute)
Writer = Depends(require(WRITERS))
Reader = Depends(require(READERS))
Anyone = Depends(require(EVERYONE))


@router.post(
    "/raters",
    response_model=ImportReport,
    responses=responses(400, 413, 415, 422),
    openapi_extra=batch_body({"$ref": "#/components/schemas/RaterCreate"}, csv=True),
    dependencies=[Writer],
)
async def create_raters(request: Request, settings: SettingsDep) -> ImportReport:
    """Register raters by name (`[{"name": "alice"}]`); names already registered are left unchanged."""
    upload = await read_upload(request, settings.max_upload_bytes, ("json", "jsonl", "csv"))
    return await run_in_session(request, lambda s: service.create_raters(s, upload.rows()))


@router.get("/raters", response_model=list[RaterRead], dependencies=[Reader])
def list_raters(session: SessionDep) -> list[RaterRead]:
    return service.list_raters(session)


@router.post(
    "/rubrics",
    status_code=201,
    response_model=RubricRead,
    responses=responses(409, 422),
    dependencies=[Writer],
)
def create_rubric(body: RubricCreate, session: SessionDep) -> RubricRead:
    """Any integer scale (1..5, 0..3, -2..2) with level descriptions."""
    return service.create_rubric(session, body)


@router.get("/rubrics", response_model=list[RubricRead], dependencies=[Anyone])
def list_rubrics(session: SessionDep) -> list[RubricRead]:
    """The rubrics, starting with the default 1-5 scale of the study (factuality and relevance)."""
    return service.list_rubrics(session)


@router.post(
    "/runs/{run_id}/ratings",
    response_model=ImportReport,
    responses=responses(400, 404, 413, 415, 422),
    openapi_extra=batch_body({"$ref": "#/components/schemas/RatingIn"}, csv=True),
)
async def import_ratings(
    run_id: RunId,
    request: Request,
    settings: SettingsDep,
    identity: Annotated[Identity, Depends(require(RATERS))],
) -> ImportReport:
    """Ratings `{question_id, rater, score, rubric?, comment?}` as JSON, JSONL or CSV.

    A rater rating an output again replaces their previous score. Admins and editors import anyone's
    ratings; a rater posts only their own (`rater` = their account name), on runs they have a task on.
    """
    upload = await read_upload(request, settings.max_upload_bytes, ("json", "jsonl", "csv"))
    author = identity.name if identity.role == Role.rater else None
    return await run_in_session(
        request,
        lambda s: service.import_ratings(s, run_id, upload.rows(), author=author, author_id=identity.user_id),
    )


@router.get("/runs/{run_id}/ratings", response_model=list[RatingRead], responses=responses(404))
def list_ratings(
    run_id: RunId, session: SessionDep, identity: Annotated[Identity, Depends(require(READERS | RATERS))]
) -> list[RatingRead]:
    """Every rating of the run; a rater sees only their own, on runs they have a task on."""
    if identity.role == Role.rater:
        return service.list_ratings(session, run_id, author=identity.name, author_id=identity.user_id)
    return service.list_ratings(session, run_id)
