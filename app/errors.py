"""One JSON error envelope for every 4xx/5xx, declared in OpenAPI."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic import BaseModel
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from services.errors import ServiceError, TooManyRequests, Unauthorized
from services.validation import loc_to_field

log = logging.getLogger("ragmeta")


class ErrorItem(BaseModel):
    index: int | None = None
    line: int | None = None
    field: str
    reason: str


class ErrorEnvelope(BaseModel):
    error: str
    detail: str
    items: list[ErrorItem] = []


_DESCRIPTIONS = {
    400: "Malformed input (bytes that cannot be parsed)",
    401: "No credential, or not a valid one",
    403: "Not allowed for this role or account (or a missing CSRF token)",
    404: "Unknown id",
    409: "Conflict with stored data",
    413: "Upload over the configured size limit",
    415: "Unsupported content type",
    422: "Invalid items; every bad row is listed",
    429: "Too many failed logins; see Retry-After",
    502: "The configured LLM failed after its retries",
    503: "A required component is not available, or the database is overloaded; see Retry-After",
}


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entries for the error envelope."""
    return {code: {"model": ErrorEnvelope, "description": _DESCRIPTIONS.get(code, "Error")} for code in codes}


def _envelope(
    status: int,
    error: str,
    detail: str,
    items: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        status_code=status, content={"error": error, "detail": detail, "items": items or []}, headers=headers
    )


_HTTP_NAMES = {404: "NotFound", 405: "MethodNotAllowed", 413: "PayloadTooLarge", 415: "UnsupportedMediaType"}


# How long a client should wait before retrying a request refused because the database was overloaded.
DB_BUSY_RETRY_AFTER_S = 5
# PostgreSQL SQLSTATEs of an overloaded server: too many connections, a lock not obtained in time.
_BUSY_SQLSTATES = {"53300", "55P03"}


def database_busy(exc: BaseException) -> str | None:
    """Why the database could not take this request now (pool exhausted, SQLite's write lock or PostgreSQL's
    locks or connections not obtained in time), or None when ``exc`` is not such an overload."""
    if isinstance(exc, PoolTimeout):
        return "no database connection became free in time (the connection pool is exhausted)"
    if isinstance(exc, DBAPIError):
        if "database is locked" in str(exc.orig):
            return "the database's write lock was not obtained in time (SQLite: database is locked)"
        sqlstate = getattr(exc.orig, "sqlstate", None)
        if sqlstate in _BUSY_SQLSTATES:
            return f"the database is overloaded (PostgreSQL SQLSTATE {sqlstate})"
    return None


def _quality(accept: str, media: str) -> float:
    """The q of ``media`` named in an Accept header (0 when it is not named; ``*/*`` names nothing)."""
    for part in accept.split(","):
        kind, *params = (p.strip() for p in part.split(";"))
        if kind.lower() == media:
            for param in params:
                name, _, value = param.partition("=")
                if name.strip().lower() == "q":
                    try:
                        return float(value)
                    except ValueError:
                        return 0.0
            return 1.0
    return 0.0


def browser_navigation(request: Request) -> bool:
    """A signed-out browser opening a page: a GET with no Authorization header whose Accept prefers HTML to
    JSON (a page load sends ``text/html,...``; fetch() and API clients send ``*/*`` or JSON)."""
    if request.method not in ("GET", "HEAD") or "authorization" in request.headers:
        return False
    accept = request.headers.get("accept", "")
    return _quality(accept, "text/html") > max(0.0, _quality(accept, "application/json"))


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError) -> Response:
        if isinstance(exc, Unauthorized) and browser_navigation(request):
            # Pages of the web routes redirect themselves; this is every other page (reports, figures, item
            # tables) opened in a browser: the login form, then back here.
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"/login?next={quote(target)}", status_code=303)
        response = _envelope(exc.status, exc.code, exc.detail, [i.as_dict() for i in exc.items])
        if isinstance(exc, Unauthorized):
            response.headers["WWW-Authenticate"] = "Bearer"
        if isinstance(exc, TooManyRequests):
            response.headers["Retry-After"] = str(exc.retry_after)
        return response

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        items = []
        for err in exc.errors():
            loc = tuple(err.get("loc", ()))
            # ("body", 3, "passages", 0, "end") -> index 3, field passages[0].end
            index = None
            if len(loc) >= 2 and loc[0] == "body" and isinstance(loc[1], int):
                index, loc = loc[1], loc[2:]
            elif loc and loc[0] == "body":
                loc = loc[1:]
            items.append({"index": index, "field": loc_to_field(loc), "reason": err.get("msg", "invalid")})
        return _envelope(422, "InvalidRequest", "the request does not match the schema", items)

    @app.exception_handler(IntegrityError)
    async def _integrity_error(_: Request, exc: IntegrityError) -> JSONResponse:
        # Validation runs before writing, so this is a concurrent request that wrote the same items first.
        log.warning("integrity error: %s", exc.orig)
        return _envelope(
            409, "Conflict", "a concurrent request changed the same items; nothing was written, retry"
        )

    @app.exception_handler(PoolTimeout)
    @app.exception_handler(DBAPIError)
    async def _database_busy(request: Request, exc: Exception) -> JSONResponse:
        # The request's transaction was rolled back before this is answered: nothing of it is stored.
        cause = database_busy(exc)
        if cause is None:
            return await _unexpected(request, exc)
        log.warning("database busy, answered 503: %s", exc)
        return _envelope(
            503,
            "DatabaseBusy",
            f"{cause}; nothing was written, retry after {DB_BUSY_RETRY_AFTER_S} s",
            headers={"Retry-After": str(DB_BUSY_RETRY_AFTER_S)},
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        name = _HTTP_NAMES.get(exc.status_code, "HTTPError")
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            # Every method of every route at this path (RFC 9110), not only the first route's.
            methods = {
                method
                for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
                if any(
                    route.matches({**request.scope, "method": method})[0] == Match.FULL
                    for route in request.app.routes
                )
            }
            if methods:
                headers["Allow"] = ", ".join(sorted(methods))
        return _envelope(exc.status_code, name, str(exc.detail), headers=headers or None)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return _envelope(500, "InternalError", "unexpected server error; see the service log")
