"""The errors a ragmeta client raises, one tree under :class:`RagmetaError`::

RagmetaError
├── ServiceUnreachable      the request never got an answer (connection refused, DNS, timeout)
├── APIError                the service answered 4xx/5xx; carries its JSON envelope (error, detail, items)
│   ├── BadRequest          400, 413, 415, 422: the request's bytes or fields (every bad field in items)
│   ├── Unauthorized        401: no credential, or not a valid one
│   ├── Forbidden           403: not allowed for this role or account
│   ├── NotFound            404: unknown id
│   ├── Conflict            409: conflict with stored data
│   ├── TooManyRequests     429: see retry_after
│   └── ServerError         5xx: the judge failed, the database is busy (retry_after), a bug
└── JobFailed               a waited-for job ended failed or cancelled; carries the job
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    # The envelope's schema is the API's own (app.errors); imported when an error is read, not with the
    # client (app.errors brings FastAPI, which a command never needs).
    from app.errors import ErrorEnvelope, ErrorItem


class RagmetaError(Exception):
    """Base of every error the client raises."""


class ServiceUnreachable(RagmetaError):
    """No answer from the service at ``url`` (the transport error is the ``__cause__``)."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"cannot reach the service at {url}: {reason}")
        self.url = url
        self.reason = reason


class APIError(RagmetaError):
    """The service refused the request. ``envelope`` is its JSON error body (None when the body was not the
    envelope: a proxy's page, say); ``str()`` is one line, then one line per bad field (the first 20)."""

    def __init__(self, status_code: int, envelope: ErrorEnvelope | None, text: str = "") -> None:
        self.status_code = status_code
        self.envelope = envelope
        self.retry_after: str | None = None
        super().__init__(self._message(text))

    @property
    def error(self) -> str | None:
        return self.envelope.error if self.envelope else None

    @property
    def detail(self) -> str | None:
        return self.envelope.detail if self.envelope else None

    @property
    def items(self) -> list[ErrorItem]:
        return list(self.envelope.items) if self.envelope else []

    def _message(self, text: str) -> str:
        if self.envelope is None:
            return f"{self.status_code}: {text[:500]}"
        lines = "".join(
            f"\n  - {i.field}"
            + (f" (row {i.index})" if i.index is not None else "")
            + (f" (line {i.line})" if i.line is not None else "")
            + f": {i.reason}"
            for i in self.envelope.items[:20]
        )
        return f"{self.status_code} {self.envelope.error}: {self.envelope.detail}{lines}"


class BadRequest(APIError):
    """400, 413, 415 or 422: the request cannot be carried out as sent."""


class Unauthorized(APIError):
    """401."""


class Forbidden(APIError):
    """403."""


class NotFound(APIError):
    """404."""


class Conflict(APIError):
    """409."""


class TooManyRequests(APIError):
    """429."""


class ServerError(APIError):
    """5xx."""


class JobFailed(RagmetaError):
    """A job waited for ended ``failed`` or ``cancelled``; ``job`` is its last state."""

    def __init__(self, job: Any) -> None:
        super().__init__(f"job {job.id} ended {job.status}")
        self.job = job


_BY_STATUS: tuple[tuple[int, type[APIError]], ...] = (
    (400, BadRequest),
    (401, Unauthorized),
    (403, Forbidden),
    (404, NotFound),
    (409, Conflict),
    (413, BadRequest),
    (415, BadRequest),
    (422, BadRequest),
    (429, TooManyRequests),
)


def error_for(resp: httpx.Response) -> APIError:
    """The exception for an error response, its envelope parsed when the body is one."""
    from app.errors import ErrorEnvelope

    envelope: ErrorEnvelope | None
    try:
        envelope = ErrorEnvelope.model_validate(resp.json())
    except ValueError:
        envelope = None
    cls = dict(_BY_STATUS).get(resp.status_code, ServerError if resp.status_code >= 500 else APIError)
    exc = cls(resp.status_code, envelope, resp.text)
    exc.retry_after = resp.headers.get("retry-after")
    return exc
