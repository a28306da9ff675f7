"""Rating tasks (editors create them, viewers read them) and each rater's own queue."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, BackgroundTasks, Depends, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from app.auth import require
from app.deps import CommittingRoute, Position, SessionDep, SettingsDep, TaskId
from app.errors import responses
from app.resources import get_resources
from services.accounts.schemas import EVERYONE, RATERS, READERS, WRITERS, Identity
from services.db import run_transaction
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


@router.get("/tasks", response_model=list[TaskRead], responses=responses(401, 403))
def list_tasks(session: SessionDep, settings: SettingsDep, _: Reader) -> list[TaskRead]:
    return service.list_tasks(session, min_raters=settings.ratings.min_raters)


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
        **responses(401, 403, 404),
        200: {
            "content": {
                "application/json": {
                    "schema": {"type": "array", "items": {"$ref": "#/components/schemas/ExportRow"}}
                },
                "text/csv": {},
            }
        },
    },
)
def export(
    task_id: TaskId, session: SessionDep, _: Reader, format: Literal["json", "csv"] = "json"
) -> Response:
    """The ratings in the format POST /runs/{id}/ratings reads: question_id, rater, score, rubric, comment."""
    columns, rows = service.export(session, task_id)
    data = [r.model_dump(mode="json", include=set(columns)) for r in rows]
    if format == "csv":
        return PlainTextResponse(
            table_csv(columns, data),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="task-{task_id}-ratings.csv"'},
        )
    return JSONResponse(data)


@router.get("/me/tasks", response_model=list[TaskRead], responses=responses(401))
def my_tasks(session: SessionDep, settings: SettingsDep, identity: Anyone) -> list[TaskRead]:
    """The tasks the caller rates in."""
    if identity.user_id is None:
        return []
    tasks = service.list_tasks(session, identity.user_id, min_raters=settings.ratings.min_raters)
    return [service.hide_policy(t) for t in tasks]


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
