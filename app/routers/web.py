"""Server-rendered pages: sign-in, the rater's workspace (tasks, queue, one item at a time) and the editor's
task dashboard. Every page works without JavaScript; /static/rate.js only adds keyboard shortcuts. Every form
carries a CSRF token; pages answer errors as pages (the JSON API keeps the envelope)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, BackgroundTasks, FastAPI, Form, Query, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from app.auth import (
    IdentityDep,
    auth_state,
    clear_session_cookie,
    form_csrf_ok,
    login_csrf,
    login_csrf_ok,
    set_login_csrf_cookie,
    set_session_cookie,
)
from app.deps import CommittingRoute, Position, SessionDep, SettingsDep, TaskId, run_in_session
from app.resources import get_resources
from services.accounts import service as accounts
from services.accounts.schemas import RATERS, READERS, Identity, Role
from services.db import run_transaction
from services.errors import Conflict, Forbidden, InvalidItems, ServiceError, TooManyRequests, Unauthorized
from services.labels import derived_id, question_label
from services.tasks import active
from services.tasks import service as tasks
from services.tasks.schemas import Estimate, ItemAction, ItemView
from services.types import MAX_INT

APP_DIR = Path(__file__).resolve().parent.parent
templates = Jinja2Templates(directory=APP_DIR / "templates")
templates.env.filters["derived_id"] = derived_id
templates.env.filters["question_label"] = question_label


TITLES = {403: "Not allowed", 404: "Not found", 422: "Invalid request", 429: "Too many attempts"}


class _LoginRequired(Exception):
    pass


class HtmlRoute(CommittingRoute):
    """Errors of a page are rendered as a page; a missing sign-in redirects to the login form."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def wrapped(request: Request) -> Response:
            try:
                return await handler(request)
            except _LoginRequired:
                return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)
            except ServiceError as exc:
                response = templates.TemplateResponse(
                    request,
                    "error.html",
                    {
                        "identity": None,
                        "status": exc.status,
                        "title": TITLES.get(exc.status, "Error"),
                        "detail": exc.detail,
                    },
                    status_code=exc.status,
                )
                if isinstance(exc, TooManyRequests):
                    response.headers["Retry-After"] = str(exc.retry_after)
                return response

        return wrapped


router = APIRouter(include_in_schema=False, route_class=HtmlRoute)


def mount_static(app: FastAPI) -> None:
    app.mount("/static", StaticFiles(directory=APP_DIR / "static"), name="static")


def _signed_in(identity: Identity | None, roles: frozenset[Role]) -> Identity:
    if identity is None or identity.user_id is None:
        raise _LoginRequired()
    if identity.role not in roles:
        raise Forbidden(f"the {identity.role.value} role cannot open this page")
    return identity


def _page(
    request: Request, template: str, identity: Identity | None, status: int = 200, **ctx: Any
) -> HTMLResponse:
    csrf = auth_state(request).csrf(identity) if identity else None
    return templates.TemplateResponse(
        request, template, {"identity": identity, "csrf": csrf, **ctx}, status_code=status
    )


def _safe_next(value: str | None, identity: Identity) -> str:
    if value and value.startswith("/") and not value.startswith("//") and not value.startswith("/login"):
        return value
    return "/rate" if identity.role == Role.rater else "/"


def _login_page(request: Request, status: int, next: str, name: str, error: str | None) -> HTMLResponse:
    token, cookie = login_csrf(request)
    response = _page(request, "login.html", None, status, next=next, name=name, error=error, login_csrf=token)
    set_login_csrf_cookie(request, response, cookie)
    return response


@router.get("/login")
def login_form(request: Request, next: str = "") -> HTMLResponse:
    return _login_page(request, 200, next, "", None)


@router.post("/login")
async def login(
    request: Request,
    settings: SettingsDep,
    name: Annotated[str, Form(max_length=200)] = "",
    key: Annotated[str, Form(max_length=300)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
    next: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    """Sign in with an account name and one of its keys; failures are counted and rate-limited.

    Three steps, none holding a transaction while another runs: the failed-login limits are read, the key
    is checked as an API key is (``KeyChecks``: a read session, one Argon2 check for concurrent uses of one
    key), and a short write records the failure or opens the session.
    """

    def again(error: str, status: int) -> HTMLResponse:
        return _login_page(request, status, next, name, error)

    if not login_csrf_ok(request, csrf):
        return again("The form expired or did not come from this site; please sign in again.", 403)
    client = request.client.host if request.client else "unknown"
    account = accounts.login_name(name)
    async with auth_state(request).signing_in_as(account):
        try:
            limits = (settings.auth, name, client)
            await run_in_session(request, accounts.check_login_limits, *limits, read=True)
        except TooManyRequests as exc:
            page = again(f"Too many failed sign-ins. {exc.detail[0].upper()}{exc.detail[1:]}.", 429)
            page.headers["Retry-After"] = str(exc.retry_after)
            return page
        identity = await _key_identity(request, key)
        try:
            if identity is None or identity.key_id is None or identity.name != account:
                raise Unauthorized("unknown account name or key")
            hours = settings.auth.session_hours
            token = await run_in_session(request, accounts.open_login_session, identity.key_id, hours)
        except Unauthorized:
            await run_in_session(request, accounts.record_login_failure, settings.auth, name, client)
            return again("Unknown account name or key.", 401)
    response = RedirectResponse(_safe_next(next, identity), status_code=303)
    set_session_cookie(request, response, token)
    return response


async def _key_identity(request: Request, key: str) -> Identity | None:
    """The identity of an API key as the API checks it (``KeyChecks``), None when it is not a valid key."""
    state = auth_state(request)
    try:
        return await state.key_checks.identity(request, state.hasher, key)
    except Unauthorized:
        return None


@router.post("/logout")
def logout(
    request: Request,
    session: SessionDep,
    identity: IdentityDep,
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    if identity is not None and identity.session_token and form_csrf_ok(request, identity, csrf):
        accounts.close_session(session, identity.session_token)
    elif identity is not None and identity.via == "session":
        raise Forbidden("the sign-out form did not carry its CSRF token")
    response = RedirectResponse("/login", status_code=303)
    clear_session_cookie(request, response)
    return response


@router.get("/rate")
def my_tasks(
    request: Request, session: SessionDep, settings: SettingsDep, identity: IdentityDep
) -> HTMLResponse:
    me = _signed_in(identity, RATERS)
    mine = tasks.list_tasks(session, me.user_id, min_raters=settings.ratings.min_raters)
    return _page(request, "my_tasks.html", me, tasks=mine)


@router.get("/rate/{task_id}")
def queue_page(task_id: TaskId, request: Request, session: SessionDep, identity: IdentityDep) -> HTMLResponse:
    me = _signed_in(identity, RATERS)
    return _page(request, "queue.html", me, q=tasks.queue(session, task_id, me.user_id))


STALE = (
    "An answer changed while this page was open. Your rating was saved for the answer you read, which no "
    "longer counts in reports; the answer as it is now is shown below: rate it to count."
)


def _levels(view: ItemView) -> list[dict[str, Any]]:
    r = view.rubric
    out = []
    for i, score in enumerate(range(r.min, r.max + 1)):
        key = str(i + 1) if i < 9 else ("0" if i == 9 else "")
        out.append({"score": score, "key": key, "text": r.levels.get(str(score), "")})
    return out


def _item_page(
    request: Request,
    session: Any,
    me: Identity,
    task_id: int,
    position: int,
    error: str | None,
    status: int,
    notice: str | None = None,
) -> HTMLResponse:
    view = tasks.item_view(session, task_id, me.user_id, position)
    return _page(request, "item.html", me, status, v=view, levels=_levels(view), error=error, notice=notice)


@router.post("/rate/{task_id}/next")
def next_page(
    task_id: TaskId,
    request: Request,
    session: SessionDep,
    identity: IdentityDep,
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    """The next item of the caller's queue; in an active task one drawn for them now (POST: a draw is a
    write). Nothing left: the queue page, saying so."""
    me = _signed_in(identity, RATERS)
    if not form_csrf_ok(request, me, csrf):
        raise Forbidden("the form did not carry a valid CSRF token; reload the page and try again")
    nxt = tasks.next_item(session, task_id, me.user_id)
    if nxt.position is not None:
        return RedirectResponse(f"/rate/{task_id}/{nxt.position}", status_code=303)
    q = tasks.queue(session, task_id, me.user_id)
    return _page(request, "queue.html", me, q=q, notice=nxt.reason)


@router.get("/rate/{task_id}/{position}")
def item_page(
    task_id: TaskId, position: Position, request: Request, session: SessionDep, identity: IdentityDep
) -> HTMLResponse:
    me = _signed_in(identity, RATERS)
    return _item_page(request, session, me, task_id, position, None, 200)


@router.post("/rate/{task_id}/{position}")
def item_action(
    task_id: TaskId,
    position: Position,
    request: Request,
    session: SessionDep,
    identity: IdentityDep,
    background: BackgroundTasks,
    csrf: Annotated[str, Form(max_length=200)] = "",
    action: Annotated[str, Form(max_length=10)] = "rate",
    score: Annotated[str, Form(max_length=10)] = "",
    comment: Annotated[str, Form(max_length=5000)] = "",
    reason: Annotated[str, Form(max_length=1000)] = "",
    left_version: Annotated[str, Form(max_length=12)] = "",
    right_version: Annotated[str, Form(max_length=12)] = "",
    version: Annotated[str, Form(max_length=12)] = "",
) -> Response:
    """The form carries back the version of the answer it showed (side by side, of the two answers) in
    hidden fields, so the rating is recorded on what the rater read even if an answer changed while the page
    was open."""
    me = _signed_in(identity, RATERS)
    if not form_csrf_ok(request, me, csrf):
        raise Forbidden("the form did not carry a valid CSRF token; reload the page and try again")
    if action not in ("rate", "skip", "flag"):
        return _item_page(request, session, me, task_id, position, f"unknown action {action!r}", 422)
    try:
        value = int(score) if score.strip() else None
    except ValueError:
        return _item_page(request, session, me, task_id, position, "the score must be a whole number", 422)
    if value is not None and not -MAX_INT <= value <= MAX_INT:
        return _item_page(
            request, session, me, task_id, position, "the score is not a level of the scale", 422
        )
    versions: dict[str, int | None] = {}
    for field, text in (
        ("left_version", left_version),
        ("right_version", right_version),
        ("version", version),
    ):
        number = text.strip()
        if number and not (number.isascii() and number.isdigit() and 1 <= int(number) <= MAX_INT):
            error = f"{field}: {text!r} is not an answer version (a whole number from 1); reload the page"
            return _item_page(request, session, me, task_id, position, error, 422)
        versions[field] = int(number) if number else None
    try:
        result = tasks.act(
            session,
            task_id,
            me.user_id,
            position,
            ItemAction(action=action, score=value, comment=comment, reason=reason, **versions),
        )
    except InvalidItems as exc:
        return _item_page(request, session, me, task_id, position, exc.detail, 422)
    except Conflict as exc:  # the page showed a version the answer never had: show the answers as they are
        return _item_page(request, session, me, task_id, position, exc.detail, 409)
    if active.refit_due(session, task_id):  # after the response, as the API does
        background.add_task(run_transaction, get_resources(request).session_factory, active.refit, task_id)
    if result.stale:  # saved, on the text the rater read; show the answers as they are now
        return _item_page(request, session, me, task_id, position, None, 200, notice=STALE)
    target = result.next_position
    return RedirectResponse(f"/rate/{task_id}/{target}" if target else f"/rate/{task_id}", status_code=303)


@router.get("/tasks.html")
def tasks_page(
    request: Request, session: SessionDep, settings: SettingsDep, identity: IdentityDep
) -> HTMLResponse:
    me = _signed_in(identity, READERS)
    return _page(
        request, "tasks.html", me, tasks=tasks.list_tasks(session, min_raters=settings.ratings.min_raters)
    )


def _num(x: float) -> str:
    return f"{x:.2f}".replace("-0.00", "0.00")


# The dashboard page prints agreement intervals from this many outputs rated by two raters: with 3 items an
# ICC interval ran from -1.85 to 0.96 and a bootstrap alpha interval ended at its estimate (noise, not news).
INTERVALS_FROM = 10


def _fmt(e: Estimate | None, with_interval: bool = True) -> str:
    if e is None or e.estimate is None:
        return "undefined"
    lo, hi = e.ci_low, e.ci_high
    if lo is None or hi is None or not with_interval:
        return _num(e.estimate)
    # With a handful of items McGraw & Wong's F-based ICC intervals can come out inverted or not containing
    # the estimate; such an interval says nothing, so the page says so instead of printing it.
    if lo > hi or not lo - 1e-9 <= e.estimate <= hi + 1e-9:
        return f"{_num(e.estimate)} (no usable interval yet)"
    return f"{_num(e.estimate)} [{_num(lo)}, {_num(hi)}]"


@router.get("/tasks/{task_id}/dashboard.html")
def dashboard_page(
    task_id: TaskId,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    identity: IdentityDep,
    threshold: Annotated[int, Query(ge=1, le=200)] = 2,
) -> HTMLResponse:
    me = _signed_in(identity, READERS)
    d = tasks.dashboard(session, task_id, threshold, min_raters=settings.ratings.min_raters)
    now = datetime.now(UTC).strftime("%H:%M:%S UTC")
    return _page(request, "dashboard.html", me, d=d, fmt=_fmt, now=now, intervals_from=INTERVALS_FROM)
