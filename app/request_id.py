"""Every request gets an id: the caller's ``X-Request-ID`` when it is a plain token, else the trace id of a
W3C ``traceparent``, else a new one. It is answered in ``X-Request-ID``, set in the log context for
everything the request does (its threads, and the jobs it starts: services.logs), and written in one
access line per request (``ragmeta.access``: method, route template, status, duration).
"""

from __future__ import annotations

import logging
import re
import time
import uuid

from fastapi import FastAPI

from app.middleware import ASGIApp, Message, Receive, Scope, Send
from app.resources import resources_of
from services.logs import REQUEST_ID, configure_logs

HEADER = "x-request-id"
# Ids from outside are echoed and logged: only short plain tokens are taken as they are.
_TOKEN = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")
access = logging.getLogger("ragmeta.access")


def request_id_of(headers: dict[str, str]) -> str:
    given = headers.get(HEADER, "").strip()
    if _TOKEN.match(given):
        return given
    trace = _TRACEPARENT.match(headers.get("traceparent", "").strip().lower())
    if trace and trace.group(1) != "0" * 32:
        return trace.group(1)
    return uuid.uuid4().hex


class RequestId:
    """Each HTTP request's id (set for its log lines, returned in X-Request-ID), its access line, and its
    count and latency in the Prometheus families, by route template."""

    def __init__(self, app: ASGIApp, fastapi_app: FastAPI) -> None:
        self.app = app
        self.fastapi_app = fastapi_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        rid = request_id_of(headers)
        token = REQUEST_ID.set(rid)
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode("latin-1"))]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = str(getattr(scope.get("route"), "path", "")) or "unmatched"
            seconds = time.perf_counter() - started
            telemetry = resources_of(self.fastapi_app).telemetry
            telemetry.requests.inc(scope["method"], route, str(status))
            telemetry.latency.observe(seconds, scope["method"], route)
            access.info(
                "%s %s %d",
                scope["method"],
                route,
                status,
                extra={
                    "method": scope["method"],
                    "route": route,
                    "status": status,
                    "duration_ms": round(seconds * 1000, 2),
                },
            )
            REQUEST_ID.reset(token)


def install(app: FastAPI) -> None:
    """The middleware (outermost but for the metrics: every answer carries the id) and the log setup."""
    configure_logs(resources_of(app).settings)
    app.add_middleware(RequestId, fastapi_app=app)
