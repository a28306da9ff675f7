"""Rating tasks (editors create them, viewers read them) and each rater's own queue."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, BackgroundTasks, Depends, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from app.auth import require
from app.deps import CommittingRoute, Position, SessionDep, SettingsDep, TaskId
from app.errors import responses
from app.pagination import ExportDep, PageDep, link_next, paged, paged_extra, paged_responses
from app.resources import get_resources
from services.accounts.schemas import EVERYONE, RATERS, READERS, WRITERS, Identity
from services.db import run_transaction
from services.pagination import PageRequest, map_page, page_in_order
from services.scores.service import table_csv
from services.tasks import active, service
from services.tasks.schemas import (
    ActionResult,
    ActiveEstimate,
    Dashboard,
    ItemAction,
    ItemView,
    NextItem,
    Queue,
    TaskCreate,
    TaskRead,
)

router = APIRouter(tags=["rating tasks"], route_class=CommittingRoute)
EXPORT_ROW = "#/components/schemas/ExportRow"
Writer = Annotated[Identity, Depends(require(WRITERS))]
Reader = Annotated[Identity, Depends(require(READERS))]
Rater = Annotated[Identity, Depends(require(RATERS))]
Anyone = Annotated[Identity, Depends(require(EVERYONE))]


@router.post("/tasks", status_code=201, response_model=TaskRead, responses=responses(401, 403, 404, 409, 422))
def create_task(body: TaskCreate, session: SessionDep, settings: SettingsDep, identity: Writer) -> TaskRead:
    """A rating task on a run (pointwise) or on two runs of one dataset (pairwise): every rater rates every
    output, or `per_output` raters each, balanced at random; each rater's order is shuffled with a recorded
    seed. `warnings` says what the design cannot give (fewer raters per output than a report needs)."""
    return service.create_task(session, body, identity.user_id, min_raters=settings.ratings.min_raters)


@router.get(
    "/tasks",
    response_model=list[TaskRead],
    responses={**responses(401, 403, 422), **paged_responses()},
    openapi_extra=paged_extra(),
)
def list_tasks(
    session: SessionDep, settings: SettingsDep, _: Reader, page: PageDep, request: Request, response: Response
) -> list[TaskRead]:
    """The rating tasks in id order, a page at a time."""
    found = service.list_task_page(
        session, min_raters=settings.ratings.min_raters, page=page.request("tasks")
    )
    return paged(request, response, "tasks", found)


@router.get("/tasks/{task_id}", response_model=TaskRead, responses=responses(401, 403, 404))
def get_task(task_id: TaskId, session: SessionDep, settings: SettingsDep, _: Reader) -> TaskRead:
    return service.read_task(session, task_id, min_raters=settings.ratings.min_raters)


@router.get("/tasks/{task_id}/dashboard", response_model=Dashboard, responses=responses(401, 403, 404))
def dashboard(
    task_id: TaskId,
    session: SessionDep,
    settings: SettingsDep,
    _: Reader,
    threshold: Annotated[
        int, Query(ge=1, le=200, description="list outputs whose scores spread this much")
    ] = 2,
) -> Dashboard:
    """Per-rater progress, outputs the raters disagree on, flags and agreement (α, ICC) so far; the task's
    `warnings` say what its design cannot give."""
    return service.dashboard(session, task_id, threshold, min_raters=settings.ratings.min_raters)


@router.get(
    "/tasks/{task_id}/export",
    responses={
        **responses(401, 403, 404, 422),
        **paged_responses(
            {
                "application/json": {
                    "schema": {"type": "array", "items": {"$ref": "#/components/schemas/ExportRow"}}
                },
                "text/csv": {},
            }
        ),
    },
    openapi_extra=paged_extra(),
)
def export(
    task_id: TaskId,
    session: SessionDep,
    _: Reader,
    request: Request,
    query: ExportDep,
    format: Literal["json", "csv"] = "json",
) -> Response:
    """The ratings in the format POST /runs/{id}/ratings reads: question_id, rater, score, rubric, comment;
    in (question_id, rater) order, all of them or one page with `limit`."""
    columns, rows = service.export(session, task_id)
    wanted = query.request("export", (str, str))
    data = [r.model_dump(mode="json", include=set(columns)) for r in rows]
    found = page_in_order(data, PageRequest(query.limit or len(data), wanted.after), _export_key)
    if format == "csv":
        response: Response = PlainTextResponse(
            table_csv(columns, found.items),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="task-{task_id}-ratings.csv"'},
        )
    else:
        response = JSONResponse(found.items)
    link_next(request, response, "export", found)
    return response


def _export_key(row: dict[str, Any]) -> tuple[str, str]:
    return (str(row["question_id"]), str(row["rater"]))


@router.get(
    "/me/tasks",
    response_model=list[TaskRead],
    responses={**responses(401, 422), **paged_responses()},
    openapi_extra=paged_extra(),
)
def my_tasks(
    session: SessionDep,
    settings: SettingsDep,
    identity: Anyone,
    page: PageDep,
    request: Request,
    response: Response,
) -> list[TaskRead]:
    """The tasks the caller rates in, in id order a page at a time."""
    wanted = page.request("tasks")
    if identity.user_id is None:
        return []
    found = service.list_task_page(
        session, identity.user_id, min_raters=settings.ratings.min_raters, page=wanted
    )
    return paged(request, response, "tasks", map_page(found, service.hide_policy))


@router.post("/tasks/{task_id}/next", response_model=NextItem, responses=responses(401, 403, 404))
def next_item(task_id: TaskId, session: SessionDep, identity: Rater) -> NextItem:
    """The position of the item the caller should rate next: their open one, or in a task with the active
    policy an output drawn for them now (its inclusion probability is recorded, not shown). `position` null:
    nothing left for the caller."""
    return service.next_item(session, task_id, identity.user_id)


@router.get(
    "/tasks/{task_id}/estimate", response_model=ActiveEstimate, responses=responses(401, 403, 404, 422)
)
def active_estimate(
    task_id: TaskId,
    session: SessionDep,
    _: Reader,
    confidence: Annotated[float, Query(gt=0.5, lt=1.0, description="interval confidence")] = 0.95,
) -> ActiveEstimate:
    """An active task's estimate of the run's mean human score (active PPI: inclusion-probability weighted
    PPI++, with its design stated) beside the width uniform sampling of as many ratings would give, and the
    projected further ratings to the task's target width. 422 for a task with the fixed policy."""
    return service.active_estimate(session, task_id, confidence)


@router.get("/tasks/{task_id}/queue", response_model=Queue, responses=responses(401, 403, 404))
def my_queue(task_id: TaskId, session: SessionDep, identity: Rater) -> Queue:
    """The caller's own queue in their order, with their own scores only."""
    return service.queue(session, task_id, identity.user_id)


@router.get("/tasks/{task_id}/queue/{position}", response_model=ItemView, responses=responses(401, 403, 404))
def my_item(task_id: TaskId, position: Position, session: SessionDep, identity: Rater) -> ItemView:
    """One item of the caller's queue: question, answer(s), contexts and reference if the task shows them."""
    return service.item_view(session, task_id, identity.user_id, position)


@router.put(
    "/tasks/{task_id}/queue/{position}",
    response_model=ActionResult,
    responses=responses(401, 403, 404, 409, 422),
)
def act(
    task_id: TaskId,
    position: Position,
    body: ItemAction,
    session: SessionDep,
    identity: Rater,
    request: Request,
    background: BackgroundTasks,
) -> ActionResult:
    """Rate (`score`, `comment`), skip, or flag as unratable (`reason`) one item of the caller's queue.

    Send back the `version` of the answer as served by GET (`version`; side by side, each answer's as
    `left_version` and `right_version`): the rating is recorded on that version, so a score given on an answer
    that changed while the item was open is kept with the ratings of previous answers (counted, left out of
    the reports) and a preference counts as stale in the pairwise report. A version newer than the answer's
    current one is refused (409, naming the field). Without them (older clients), the versions current at
    submission are recorded.

    In an active task, a rating that makes a refit of the policy due schedules it after the response (its
    own transaction), never on the request path."""
    result = service.act(session, task_id, identity.user_id, position, body)
    if active.refit_due(session, task_id):
        background.add_task(run_transaction, get_resources(request).session_factory, active.refit, task_id)
    return result
