"""Preference ratings between two runs' answers imported from a file (the pairwise report reads them beside
the side-by-side preferences of pairwise rating tasks)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from app.deps import CommittingRoute, SessionDep, SettingsDep, run_in_session
from app.errors import responses
from app.pagination import PageDep, paged, paged_extra, paged_responses
from app.uploads import batch_body, read_upload
from services.datasets.schemas import ImportReport
from services.ratings import preferences
from services.ratings.schemas import PreferenceRead
from services.types import MAX_ID

router = APIRouter(tags=["ratings"], route_class=CommittingRoute)

RunA = Annotated[int, Query(ge=1, le=MAX_ID, description="the service's id of run A")]
RunB = Annotated[
    int, Query(ge=1, le=MAX_ID, description="the service's id of run B (the high end of the scale)")
]


@router.post(
    "/preferences",
    response_model=ImportReport,
    responses=responses(400, 404, 413, 415, 422),
    openapi_extra=batch_body({"$ref": "#/components/schemas/PreferenceIn"}, csv=True),
)
async def import_preferences(
    request: Request,
    settings: SettingsDep,
    run_a: RunA,
    run_b: RunB,
    register_raters: Annotated[
        bool, Query(description="register the raters the file names that are not registered yet")
    ] = False,
) -> ImportReport:
    """Preference ratings `{question_id, rater, preference, rubric?, comment?}` between run A's and run B's
    answers, as JSON, JSONL or CSV: on the rubric's scale, its high end for run B (default rubric
    `preference-b-over-a`, -2..2: -2 = A much better, 2 = B much better).

    Each preference is recorded on the current versions of the two answers; once either changes it is stale
    (kept, left out of GET /reports/pairwise, counted there). Re-importing the same rows changes nothing; a
    rater's row on a question replaces their previous preference."""
    upload = await read_upload(request, settings.max_upload_bytes, ("json", "jsonl", "csv"))
    return await run_in_session(
        request,
        lambda s: preferences.import_preferences(
            s, run_a, run_b, upload.rows(), register_raters=register_raters
        ),
    )


@router.get(
    "/preferences",
    response_model=list[PreferenceRead],
    responses={**responses(404, 422), **paged_responses()},
    openapi_extra=paged_extra(),
)
def list_preferences(
    session: SessionDep, run_a: RunA, run_b: RunB, page: PageDep, request: Request, response: Response
) -> list[PreferenceRead]:
    """The imported preferences of the two runs, oriented for (run_a, run_b), stale ones marked, in
    (question id, rater) order a page at a time."""
    found = preferences.list_preferences(session, run_a, run_b, page.request("preferences", (str, str)))
    return paged(request, response, "preferences", found)
