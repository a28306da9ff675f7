"""Domain errors, rendered by the HTTP layer into one JSON envelope.

ServiceError(message, status)            base; ``code`` names the error in the envelope
├── Unauthorized              401        no credential, or one that is not valid
├── Forbidden                 403        a valid credential whose role or account may not do this
├── NotFound                  404        an id in the path does not exist
├── Conflict                  409        a unique name is taken
├── PayloadTooLarge           413        an upload over the configured limit
├── UnsupportedMediaType      415        a body or file of a kind the endpoint does not read
├── MalformedInput            400        bytes that cannot be parsed (non-UTF-8, bad JSON/JSONL/CSV line)
├── InvalidItems              422        parsed rows that break a rule; every bad row is listed
│   └── WrongKind             422        a file of another kind than the endpoint reads ("this looks like")
├── TooManyRequests           429        too many failed logins; ``retry_after`` seconds to wait
├── UpstreamError             502        the configured LLM failed after its retries
└── Unavailable               503        the service is not allowed to answer this (open mode off loopback)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ItemError:
    """One bad row: its 0-based index in the batch (or 1-based line in a file), the field and the reason."""

    index: int | None
    field: str
    reason: str
    line: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None or k == "index"}


class ServiceError(Exception):
    status = 400
    code = "BadRequest"

    def __init__(self, detail: str, items: list[ItemError] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.items = items or []

    def __reduce__(self) -> tuple[type[ServiceError], tuple[str, list[ItemError]]]:
        # Raised in a report worker process and re-raised in the API: keep the items.
        return (type(self), (self.detail, self.items))


class Unauthorized(ServiceError):
    status = 401
    code = "Unauthorized"


class Forbidden(ServiceError):
    status = 403
    code = "Forbidden"


class NotFound(ServiceError):
    status = 404
    code = "NotFound"


class Conflict(ServiceError):
    status = 409
    code = "Conflict"


class PayloadTooLarge(ServiceError):
    status = 413
    code = "PayloadTooLarge"


class UnsupportedMediaType(ServiceError):
    status = 415
    code = "UnsupportedMediaType"


class MalformedInput(ServiceError):
    status = 400
    code = "MalformedInput"


class InvalidItems(ServiceError):
    status = 422
    code = "InvalidItems"


class WrongKind(InvalidItems):
    code = "WrongKind"


class UpstreamError(ServiceError):
    status = 502
    code = "UpstreamError"


class TooManyRequests(ServiceError):
    status = 429
    code = "TooManyRequests"

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail)
        self.retry_after = retry_after


class Unavailable(ServiceError):
    status = 503
    code = "Unavailable"
