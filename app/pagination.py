"""Paged lists and streamed exports over HTTP (the keyset rules are in ``services.pagination``).

- A list (``GET /datasets``, ``/runs/{id}/outputs``, ``/jobs`` ...) answers at most ``limit`` rows (default
  100, at most 1000) as the JSON array it always was; when more follow, the response says where the next page
  starts with ``Link: <url>; rel="next"`` (RFC 8288, the URL with its ``cursor``) and ``X-Next-Cursor``.
  The last page has neither. A body that stays an array keeps every client that read these lists working.
- An export (documents, questions, scores, a task's ratings; JSON, JSONL or CSV) without ``limit`` is the
  whole export, streamed: read from the database in batches of ``EXPORT_BATCH`` rows, each batch in a short
  read transaction of its own in a worker thread (no transaction spans the sends in between), so the memory
  it takes does not grow with the export. With ``limit`` it is one page, with the same headers as a list.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import anyio
from fastapi import Depends, Query, Request, Response
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session

from app.resources import get_resources
from services.db import run_transaction
from services.pagination import (
    DEFAULT_LIMIT,
    EXPORT_BATCH,
    MAX_CURSOR_CHARS,
    MAX_LIMIT,
    Key,
    Page,
    PageRequest,
    decode_cursor,
    encode_cursor,
)

T = TypeVar("T")
CURSOR_HELP = "where the page starts: the `cursor` of the previous page's Link / X-Next-Cursor header"


def paged_responses(content: dict[str, Any] | None = None) -> dict[int | str, dict[str, Any]]:
    """The 200 response of a paged operation: its headers declared, and ``x-paginated`` for the contract
    test that walks the schema (tests/contract/test_pagination.py)."""
    headers = {
        "Link": {
            "description": 'when more rows follow: `<url of the next page>; rel="next"`',
            "schema": {"type": "string"},
        },
        "X-Next-Cursor": {
            "description": "when more rows follow: the `cursor` of the next page",
            "schema": {"type": "string"},
        },
    }
    ok: dict[str, Any] = {"headers": headers}
    if content is not None:
        ok["content"] = content
    return {200: ok}


def paged_extra() -> dict[str, Any]:
    """The ``openapi_extra`` of a paged operation."""
    return {"x-paginated": True}


@dataclass(frozen=True)
class PageQuery:
    limit: int
    cursor: str | None

    def request(self, list_name: str, shape: tuple[type, ...] = (int,)) -> PageRequest:
        return PageRequest(self.limit, decode_cursor(list_name, self.cursor, shape))


@dataclass(frozen=True)
class ExportQuery:
    limit: int | None
    cursor: str | None

    def request(self, list_name: str, shape: tuple[type, ...] = (int,)) -> PageRequest:
        return PageRequest(self.limit or EXPORT_BATCH, decode_cursor(list_name, self.cursor, shape))


def _page_query(
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="rows per page")] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=MAX_CURSOR_CHARS, description=CURSOR_HELP)] = None,
) -> PageQuery:
    return PageQuery(limit, cursor)


def _export_query(
    limit: Annotated[
        int | None, Query(ge=1, le=MAX_LIMIT, description="rows of one page; without it the whole export")
    ] = None,
    cursor: Annotated[str | None, Query(max_length=MAX_CURSOR_CHARS, description=CURSOR_HELP)] = None,
) -> ExportQuery:
    return ExportQuery(limit, cursor)


PageDep = Annotated[PageQuery, Depends(_page_query)]
ExportDep = Annotated[ExportQuery, Depends(_export_query)]


def link_next(request: Request, response: Response, list_name: str, page: Page[Any]) -> None:
    """Say where the next page starts, when there is one."""
    if page.next_key is None:
        return
    cursor = encode_cursor(list_name, page.next_key)
    url = request.url.include_query_params(cursor=cursor)
    response.headers["Link"] = f'<{url}>; rel="next"'
    response.headers["X-Next-Cursor"] = cursor


def paged(request: Request, response: Response, list_name: str, page: Page[T]) -> list[T]:
    link_next(request, response, list_name, page)
    return page.items


# Reads one batch: (session, after, limit) -> the batch's rows already encoded, and the key after them.
Fetch = Callable[[Session, Key | None, int], Page[str]]


async def _stream(
    request: Request, fetch: Fetch, after: Key | None, head: str, sep: str, tail: str
) -> AsyncIterator[bytes]:
    resources = get_resources(request)
    factory = resources.read_session_factory
    first = True
    yield head.encode()
    while True:
        async with resources.db_slots.sessions:
            batch = await anyio.to_thread.run_sync(run_transaction, factory, fetch, after, EXPORT_BATCH)
        if batch.items:
            text = sep.join(batch.items)
            yield ((sep if not first else "") + text).encode()
            first = False
        if batch.next_key is None:
            break
        after = batch.next_key
    yield tail.encode()


def export_response(
    request: Request,
    session: Session,
    query: ExportQuery,
    list_name: str,
    fetch: Fetch,
    media_type: str,
    *,
    head: str = "",
    sep: str = "",
    tail: str = "",
    headers: dict[str, str] | None = None,
    shape: tuple[type, ...] = (int,),
) -> Response:
    """One page read now (``limit`` given: at most ``MAX_LIMIT`` rows), or the whole export streamed.

    Each row is encoded by ``fetch``; the body is ``head``, the rows joined by ``sep``, then ``tail`` (a
    JSON array: ``[``, ``,``, ``]``; JSONL and CSV rows end with their own newline)."""
    page_request = query.request(list_name, shape)
    if query.limit is not None:
        page = fetch(session, page_request.after, page_request.limit)
        response = Response(head + sep.join(page.items) + tail, media_type=media_type, headers=headers)
        link_next(request, response, list_name, page)
        return response
    return StreamingResponse(
        _stream(request, fetch, page_request.after, head, sep, tail), media_type=media_type, headers=headers
    )
