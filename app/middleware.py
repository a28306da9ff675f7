"""ASGI middleware that guards every request before it reaches a route.

- ``RequestGuard`` refuses cross-origin writes and bodies over their size limit, and checks plain JSON bodies
  (depth, NaN/Infinity, UTF-8) so that no endpoint can be reached with input that would only fail deep inside
  (a RecursionError, a NaN stored and then unreadable). Batch uploads stream through with the larger upload
  limit; their rows are checked by ``services.ingest`` in a worker thread. Text holding NUL is refused in
  the path, the query string, and JSON and form bodies (``services.nul``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute, APIRouter
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from app.auth import is_loopback
from app.resources import UploadRoute, resources_of
from app.uploads import declares_upload
from services.errors import ItemError, ServiceError
from services.ingest import check_json
from services.nul import NUL, REASON, check_pairs, nul_refusal
from services.otlp.schemas import TRACES_PATH

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Parsing a JSON body of this size or more is done in a thread rather than on the event loop.
_THREAD_PARSE_BYTES = 64 * 1024


def upload_routes(app: FastAPI) -> list[UploadRoute]:
    """Routes that read a batch upload themselves (declared by ``app.uploads.declares_upload``).

    Included routers are branches of the route tree, not flattened into ``app.routes``: each branch is
    walked with the prefix it was included under. FastAPI's own walk (``iter_route_contexts``) would give
    the same paths but builds every route's request handling to do so, which the app otherwise builds per
    router on its first request: 0.8 s of every ``create_app`` for ~100 routes."""
    return list(_declared_uploads(app.routes, ""))


def _declared_uploads(routes: Sequence[object], prefix: str) -> Iterator[UploadRoute]:
    for route in routes:
        branch = getattr(route, "original_router", None)
        include = getattr(route, "include_context", None)
        if isinstance(branch, APIRouter) and include is not None:
            yield from _declared_uploads(branch.routes, prefix + include.prefix)
        elif isinstance(route, APIRoute) and declares_upload(route.openapi_extra):
            regex, path, _ = compile_path(prefix + route.path)
            yield UploadRoute(path, regex, frozenset(route.methods or ()))


def _envelope(status: int, error: str, detail: str, items: list[ItemError]) -> JSONResponse:
    return JSONResponse(
        status_code=status,
        content={"error": error, "detail": detail, "items": [i.as_dict() for i in items]},
    )


class RequestGuard:
    def __init__(self, app: ASGIApp, fastapi_app: FastAPI) -> None:
        self.app = app
        self.fastapi_app = fastapi_app

    def _is_upload(self, method: str, path: str) -> bool:
        # Found once the routers are included (app.main.create_app), which refuses to build without any.
        uploads = resources_of(self.fastapi_app).upload_routes
        return any(method in u.methods and u.regex.match(path) for u in uploads)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        try:
            _check_nul_in_url(scope)
        except ServiceError as exc:
            await _envelope(exc.status, exc.code, exc.detail, exc.items)(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        settings = resources_of(self.fastapi_app).settings
        if not settings.auth.enabled:
            refusal = _foreign_host(headers.get("host"), settings.auth.open_hosts)
            if refusal is not None:
                await _envelope(421, "MisdirectedRequest", refusal, [ItemError(None, "Host", refusal)])(
                    scope, receive, send
                )
                return
        if method in UNSAFE:
            refusal = _cross_origin(headers, scope, settings.allowed_origins)
            if refusal is not None:
                await _envelope(403, "CrossOriginRefused", refusal, [ItemError(None, "Origin", refusal)])(
                    scope, receive, send
                )
                return
        upload = self._is_upload(method, scope["path"])
        limit = settings.max_upload_bytes if upload else settings.max_request_bytes
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await _too_large(limit, upload)(scope, receive, send)
            return
        if upload or method not in UNSAFE:
            await self.app(scope, _limited(receive, limit, upload), send)
            return
        # A plain body (JSON for every such endpoint): read it whole under the limit, check, then replay.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > limit:
                await _too_large(limit, upload)(scope, receive, send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        raw = b"".join(chunks)
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        # A compressed OTLP body is checked once inflated, by its route (services.otlp.decode).
        compressed = headers.get("content-encoding", "identity").strip().lower() not in ("", "identity")
        if compressed and scope["path"] == TRACES_PATH:
            pass
        elif raw and ctype in ("application/json", ""):
            try:
                if len(raw) >= _THREAD_PARSE_BYTES:
                    await anyio.to_thread.run_sync(check_json, raw, settings.max_json_depth)
                else:
                    check_json(raw, settings.max_json_depth)
            except ServiceError as exc:
                await _envelope(exc.status, exc.code, exc.detail, exc.items)(scope, receive, send)
                return
        elif ctype == "application/x-www-form-urlencoded" and b"%00" in raw:
            pairs = parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)
            try:
                check_pairs(pairs, "", "the form")
            except ServiceError as exc:
                await _envelope(exc.status, exc.code, exc.detail, exc.items)(scope, receive, send)
                return
        await self.app(scope, _replay(raw, receive), send)


def _check_nul_in_url(scope: Scope) -> None:
    """NUL in the path or the query string (percent-encoded: a raw one is refused by the HTTP server)."""
    if NUL in scope["path"]:
        raise nul_refusal([ItemError(None, "path", REASON)], "the path")
    query: bytes = scope.get("query_string", b"")
    if b"%00" in query:
        pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
        check_pairs(pairs, "query.", "the query string")


def _too_large(limit: int, upload: bool) -> JSONResponse:
    setting = "RAGMETA_MAX_UPLOAD_BYTES" if upload else "RAGMETA_MAX_REQUEST_BYTES"
    return _envelope(
        413,
        "PayloadTooLarge",
        f"request body exceeds the limit of {limit} bytes (setting {setting})",
        [ItemError(None, "body", f"more than {limit} bytes")],
    )


def _limited(receive: Receive, limit: int, upload: bool) -> Receive:
    size = 0

    async def wrapped() -> Message:
        nonlocal size
        message = await receive()
        size += len(message.get("body", b""))
        if size > limit:
            setting = "RAGMETA_MAX_UPLOAD_BYTES" if upload else "RAGMETA_MAX_REQUEST_BYTES"
            # Raised inside the route's body read: rendered as a 413 envelope by the HTTP error handler.
            raise StarletteHTTPException(
                413, f"request body exceeds the limit of {limit} bytes (setting {setting})"
            )
        return message

    return wrapped


def _replay(raw: bytes, receive: Receive) -> Receive:
    """The body already read, then the client's own messages (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        return await receive()

    return replay


def _foreign_host(host: str | None, allowed: list[str]) -> str | None:
    """Why the open demo (authentication off) must not answer a request for this Host, or None.

    A page of any site can have its name resolve to 127.0.0.1 and then call the demo from the browser as
    its own origin (DNS rebinding): the Origin checks pass, only the Host header still names that site."""
    if not host:
        return "a request without a Host header is refused while authentication is off"
    value = host.strip().lower()
    if value.startswith("["):
        name = value[1 : value.find("]")] if "]" in value else value
    else:
        name, _, port = value.rpartition(":")
        if not name or not port.isdigit():
            name = value
    if is_loopback(name) or value in {a.lower() for a in allowed} or name in {a.lower() for a in allowed}:
        return None
    return (
        f"Host {host!r} is not a loopback name: with authentication off only localhost, 127.0.0.1 and [::1] "
        "are answered (setting RAGMETA_AUTH__OPEN_HOSTS allows others)"
    )


def _origin_of(url: str) -> str | None:
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}".lower()


def _cross_origin(headers: dict[str, str], scope: Scope, allowed: list[str]) -> str | None:
    """Why a write from a browser page of another origin is refused, or None.

    Clients that are not browsers (the CLI, curl, SDKs) send neither ``Origin`` nor ``Sec-Fetch-Site`` and
    pass. A browser sends at least one of them with every cross-origin POST, including the "simple" ones
    (form posts, text/plain, multipart) that skip CORS preflight.
    """
    host = headers.get("host", "")
    scheme = scope.get("scheme", "http")
    own = f"{scheme}://{host}".lower()
    origin = headers.get("origin")
    if origin and origin != "null":
        if origin.lower() == own or origin.lower() in {a.lower().rstrip("/") for a in allowed}:
            return None
        return (
            f"cross-origin write from {origin} refused "
            "(allowed: this service's own pages and RAGMETA_ALLOWED_ORIGINS)"
        )
    if origin == "null":
        return "write from an opaque origin (a sandboxed page or a file) refused"
    if headers.get("sec-fetch-site") == "cross-site":
        return "cross-site write refused"
    referer = headers.get("referer")
    if referer:
        ref = _origin_of(referer)
        if ref is not None and ref != own and ref not in {a.lower().rstrip("/") for a in allowed}:
            return f"cross-origin write from {ref} refused"
    return None
