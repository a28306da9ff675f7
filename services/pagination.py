"""Keyset pagination: the one way every list of the service is read page by page.

A page is asked for with a ``limit`` and the opaque ``cursor`` the previous page gave; the cursor holds the
sort key of that page's last row (and the name of the list it belongs to), so the next page starts right
after it whatever was written in between: no row is skipped or given twice when rows are added, and no
``OFFSET`` scan grows with the page number. Every list has a total order on a unique key (an id, or a pair
ending in one), which is what makes a page boundary well defined.

Failure modes: ``decode_cursor`` raises ``InvalidItems`` (422, field ``cursor``) for a cursor that is not
one of ours or that belongs to another list.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from services.errors import InvalidItems, ItemError
from services.types import MAX_ID

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
# Rows read per database round when an export is streamed whole.
EXPORT_BATCH = 500
MAX_CURSOR_CHARS = 400

Key = tuple[Any, ...]


@dataclass(frozen=True)
class PageRequest:
    """``limit`` rows after the row whose sort key is ``after`` (None: from the start)."""

    limit: int
    after: Key | None = None


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of ``items`` and the sort key of its last row when more rows follow (else None)."""

    items: list[T]
    next_key: Key | None


def encode_cursor(list_name: str, key: Key) -> str:
    raw = json.dumps([list_name, list(key)], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(list_name: str, cursor: str | None, shape: tuple[type, ...] = (int,)) -> Key | None:
    if cursor is None or cursor == "":
        return None

    def bad(reason: str) -> InvalidItems:
        return InvalidItems(f"invalid cursor: {reason}", [ItemError(None, "cursor", reason)])

    if len(cursor) > MAX_CURSOR_CHARS:
        raise bad(f"longer than {MAX_CURSOR_CHARS} characters")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        name, key = json.loads(raw)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise bad("not a cursor this service gave (use the `next` of the previous page)") from exc
    if name != list_name or not isinstance(key, list) or not key:
        raise bad(f"a cursor of another list ({name!r}), not of {list_name!r}")
    fits = len(key) == len(shape) and all(
        isinstance(k, t) and not isinstance(k, bool) for k, t in zip(key, shape, strict=True)
    )
    # An id out of the database's range would reach it as an unbindable parameter.
    fits = fits and all(0 <= k <= MAX_ID for k in key if isinstance(k, int))
    if not fits:
        raise bad("not a cursor this service gave (use the `next` of the previous page)")
    return tuple(key)


def take(rows: Sequence[R], limit: int, key: Callable[[R], Key]) -> Page[R]:
    """A page from ``rows`` read with ``limit + 1``: the extra row only says that more follow."""
    if len(rows) > limit:
        kept = list(rows[:limit])
        return Page(kept, key(kept[-1]))
    return Page(list(rows), None)


def page_in_order(items: Sequence[R], page: PageRequest, key: Callable[[R], Key]) -> Page[R]:
    """Keyset paging of a list already read whole and sorted by ``key`` (the short lists: accounts, keys,
    raters, rubrics, tasks): the same cursors and guarantees as a paged query, without its memory bound."""
    after = page.after
    start = [i for i in items if after is None or key(i) > after]
    return take(start[: page.limit + 1], page.limit, key)


def map_page(page: Page[R], fn: Callable[[R], T]) -> Page[T]:
    return Page([fn(r) for r in page.items], page.next_key)
