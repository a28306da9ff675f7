"""One request to the service, described (method, path, query, body) with how to read its answer: what each
operation builds (app.sdk.operations) and the sync and async clients send (app.sdk.client)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel, TypeAdapter

T = TypeVar("T")

# A file to upload: a path (read when the request is sent), or a name and its bytes.
Upload = Path | tuple[str, bytes]


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a paged list: its rows and the cursor of the next page (None on the last page)."""

    items: list[T]
    next_cursor: str | None


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: Mapping[str, Any] = field(default_factory=dict)
    json: Any = None
    content: bytes | None = None
    data: Mapping[str, str] | None = None
    files: Sequence[tuple[str, Upload]] = ()
    headers: Mapping[str, str] = field(default_factory=dict)


def query(**params: Any) -> dict[str, Any]:
    """The query string's parameters, those left None omitted (the service's defaults apply)."""
    return {k: v for k, v in params.items() if v is not None}


def body(value: Any) -> Any:
    """A request body given as the service's schema or as plain JSON data."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [body(v) for v in value]
    return value


def parsed(kind: Any) -> Callable[[httpx.Response], Any]:
    """Read a JSON answer into ``kind`` (a schema of the service, or a list or union of them)."""
    adapter: TypeAdapter[Any] = TypeAdapter(kind)
    return lambda resp: adapter.validate_json(resp.content)


def paged(kind: Any) -> Callable[[httpx.Response], Page[Any]]:
    """Read one page of a list: its rows, and the next page's cursor from ``X-Next-Cursor``."""
    adapter: TypeAdapter[list[Any]] = TypeAdapter(list[kind])
    return lambda resp: Page(adapter.validate_json(resp.content), resp.headers.get("x-next-cursor"))


def text(resp: httpx.Response) -> str:
    return resp.text


def raw(resp: httpx.Response) -> bytes:
    return resp.content
