"""Text holding NUL (U+0000) is refused wherever it comes in.

PostgreSQL's text types cannot hold NUL (psycopg refuses the parameter), while SQLite stores it: accepted,
such text is a 500 on one database and, on the other, a study that can no longer move to PostgreSQL. It is
refused on both, as a 422 naming the field, where input is read: the request guard (path, query string,
JSON and form bodies), batch parsing (JSON, JSONL, CSV cells and headers), and row validation
(``services.validation.validate_rows``: JSON decoded from a CSV cell, rows a caller made such as archive
members). Every engine still refuses a statement whose text holds NUL (``services.db``), naming the column:
the last guard, for text that reaches the store by another way (form options read into a model).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from services.errors import InvalidItems, ItemError

NUL = "\x00"
REASON = "contains the NUL character (U+0000), which the store cannot hold"


def may_hold_nul(text: str) -> bool:
    """Whether JSON or CSV ``text`` may decode to a string holding NUL: a scan at C speed, so that only such
    input is walked (JSON writes NUL as the escape \\u0000; hex digits 0 have no case)."""
    return NUL in text or "\\u0000" in text


def nul_fields(data: Any, where: str = "") -> list[str]:
    """The places in parsed JSON (or a CSV record) whose text holds NUL, in document order: ``a.b[2]``; a key
    holding NUL is named by itself; ``where`` is the top's name. Iterative, for hostile nesting."""
    found: list[str] = []
    stack: list[tuple[Any, str]] = [(data, where)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, str):
            if NUL in node:
                found.append(at)
        elif isinstance(node, dict):
            children = []
            for key, value in node.items():
                name = f"{at}.{key}" if at else str(key)
                if isinstance(key, str) and NUL in key:
                    found.append(name)
                else:
                    children.append((value, name))
            stack.extend(reversed(children))
        elif isinstance(node, list | tuple):
            stack.extend(reversed([(value, f"{at}[{i}]") for i, value in enumerate(node)]))
    return found


def nul_refusal(items: Iterable[ItemError], what: str = "the request") -> InvalidItems:
    errors = list(items)
    return InvalidItems(
        f"{what} holds the NUL character (U+0000) in {len(errors)} place{'s' if len(errors) != 1 else ''}, "
        "which the store cannot hold on PostgreSQL: remove it",
        errors,
    )


def check_body(data: Any, field: str = "body") -> None:
    """Refuse a parsed JSON body holding NUL; in a list, each item is named by its index, as validation
    errors are."""
    errors = []
    for place in nul_fields(data):
        if place.startswith("["):
            index, _, rest = place[1:].partition("]")
            errors.append(ItemError(int(index), rest.removeprefix(".") or "(row)", REASON))
        else:
            errors.append(ItemError(None, place or field, REASON))
    if errors:
        raise nul_refusal(errors)


def check_pairs(pairs: Iterable[tuple[str, str]], prefix: str, what: str) -> None:
    """Refuse decoded name/value pairs (a query string, a form) holding NUL, each named ``prefix`` + name."""
    errors = [ItemError(None, f"{prefix}{name}", REASON) for name, value in pairs if NUL in name + value]
    if errors:
        raise nul_refusal(errors, what)
