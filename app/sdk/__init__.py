"""The Python client of the ragmeta service (also importable as ``ragmeta``): :class:`Client` and
:class:`AsyncClient`, the :class:`Page` of a list, and the errors (see app.sdk.errors for the tree)."""

from app.sdk.call import Call, Page
from app.sdk.client import DEFAULT_URL, PAGE_LIMIT, AsyncClient, Client
from app.sdk.errors import (
    APIError,
    BadRequest,
    Conflict,
    Forbidden,
    JobFailed,
    NotFound,
    RagmetaError,
    ServerError,
    ServiceUnreachable,
    TooManyRequests,
    Unauthorized,
)

__all__ = [
    "DEFAULT_URL",
    "PAGE_LIMIT",
    "APIError",
    "AsyncClient",
    "BadRequest",
    "Call",
    "Client",
    "Conflict",
    "Forbidden",
    "JobFailed",
    "NotFound",
    "Page",
    "RagmetaError",
    "ServerError",
    "ServiceUnreachable",
    "TooManyRequests",
    "Unauthorized",
]
