"""Headers that every response carries so that browsers refuse what the service never means to allow: its
pages framed by another site (click-jacking a rater's keys), content sniffed into another type, scripts
other than its own files, and its URLs (ids, query filters) sent to other sites as the Referer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from types import MappingProxyType
from typing import Any, TypeVar

from starlette.responses import Response

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# The pages load only the service's own scripts and stylesheets (app/static) and post only to it.
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# Report pages and figures: the SVG figure is drawn with the style attributes matplotlib writes, and the page
# carries its stylesheet so that a saved copy is whole. Inline styles only; still no script at all.
INLINE_STYLE_POLICY = PAGE_POLICY.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")

HEADERS: Mapping[bytes, bytes] = MappingProxyType(
    {
        b"x-content-type-options": b"nosniff",
        b"x-frame-options": b"DENY",
        b"referrer-policy": b"same-origin",
        b"content-security-policy": PAGE_POLICY.encode(),
    }
)

R = TypeVar("R", bound=Response)


def with_inline_styles(response: R) -> R:
    """The response under the report pages' policy (inline styles allowed, scripts not)."""
    response.headers["Content-Security-Policy"] = INLINE_STYLE_POLICY
    return response


class SecurityHeaders:
    """Adds ``HEADERS`` to every HTTP response; a policy a route set itself (API docs, reports) is kept."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(k, v) for k, v in HEADERS.items() if k not in present]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)
