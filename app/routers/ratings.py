"""Raters, rubrics, human ratings of a run's outputs and inter-rater agreement."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from app.auth import require
from app.deps import CommittingRoute, RunId, SessionDep, SettingsDep, run_in_session
from app.errors import responses
from app.pagination import PageDep, paged, paged_extra, paged_responses
from app.uploads import batch_body, read_upload
from services.accounts.schemas import EVERYONE, RATERS, READERS, WRITERS, Identity, Role
from services.datasets.schemas import ImportReport
from services.errors import ItemError, MalformedInput
from services.ratings import service
from services.ratings.join import Join
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


@router.get(
    "/raters",
    response_model=list[RaterRead],
    dependencies=[Reader],
    responses={**responses(422), **paged_responses()},
    openapi_extra=paged_extra(),
)
def list_raters(session: SessionDep, page: PageDep, request: Request, response: Response) -> list[RaterRead]:
    """The raters in id order, a page at a time."""
    return paged(request, response, "raters", service.list_raters(session, page.request("raters")))


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


@router.get(
    "/rubrics",
    response_model=list[RubricRead],
    dependencies=[Anyone],
    responses={**responses(422), **paged_responses()},
    openapi_extra=paged_extra(),
)
def list_rubrics(
    session: SessionDep, page: PageDep, request: Request, response: Response
) -> list[RubricRead]:
    """The rubrics in id order, starting with the default 1-5 scale of the study (factuality and
    relevance), a page at a time."""
    return paged(request, response, "rubrics", service.list_rubrics(session, page.request("rubrics")))


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
    join: Annotated[
        Join,
        Query(
            description="auto: by question_id, else by the question's text; order: rows without either "
            "match the run's questions by position (the n-th row of a rater, the n-th output)"
        ),
    ] = "auto",
    columns: Annotated[
        str | None,
        Query(description='a JSON object field -> the file\'s column, e.g. {"question_id": "ID"}'),
    ] = None,
    register_raters: Annotated[
        bool,
        Query(description="register the raters the file names that are not registered yet (not for raters)"),
    ] = False,
) -> ImportReport:
    """Ratings `{question_id | question, rater, score, rubric?, comment?, run?}` as JSON, JSONL or CSV.

    A row is joined to the run's questions by `question_id`, else by `question` (the text: exact, then
    normalised; a text that matches two questions is refused naming both), else, with `join=order`, by
    position. A `run` column must name this run. A rater rating an output again replaces their previous
    score. Admins and editors import anyone's ratings; a rater posts only their own (`rater` = their
    account name), on runs they have a task on.
    """
    mapping = _columns(columns)
    upload = await read_upload(request, settings.max_upload_bytes, ("json", "jsonl", "csv"))
    author = identity.name if identity.role == Role.rater else None
    return await run_in_session(
        request,
        lambda s: service.import_ratings(
            s,
            run_id,
            upload.rows(),
            author=author,
            author_id=identity.user_id,
            join=join,
            columns=mapping,
            register_raters=register_raters,
        ),
    )


def _columns(value: str | None) -> dict[str, str]:
    if not value:
        return {}
    try:
        mapping = json.loads(value)
    except json.JSONDecodeError as exc:
        raise MalformedInput("columns is not JSON", [ItemError(None, "columns", exc.msg)]) from exc
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
        raise MalformedInput(
            "columns must be a JSON object of field -> column name",
            [ItemError(None, "columns", "not an object of texts")],
        )
    return {str(k): v for k, v in mapping.items()}


@router.get(
    "/runs/{run_id}/ratings",
    response_model=list[RatingRead],
    responses={**responses(404, 422), **paged_responses()},
    openapi_extra=paged_extra(),
)
def list_ratings(
    run_id: RunId,
    session: SessionDep,
    identity: Annotated[Identity, Depends(require(READERS | RATERS))],
    page: PageDep,
    request: Request,
    response: Response,
) -> list[RatingRead]:
    """Every rating of the run in (output, rater) order, a page at a time; a rater sees only their own, on
    runs they have a task on."""
    wanted = page.request("ratings", (int, int))
    if identity.role == Role.rater:
        found = service.list_ratings(
            session, run_id, wanted, author=identity.name, author_id=identity.user_id
        )
    else:
        found = service.list_ratings(session, run_id, wanted)
    return paged(request, response, "ratings", found)
