"""Parsing of uploaded batches: JSON, JSONL and CSV bytes into rows, with precise error positions.

Every function raises MalformedInput (400) for bytes that cannot be read, naming the line (1-based) or the
byte offset, and never returns a partial batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from services.csvread import read_csv
from services.errors import ItemError, MalformedInput, UnsupportedMediaType
from services.nul import REASON, check_body, may_hold_nul, nul_fields, nul_refusal

Format = Literal["json", "jsonl", "csv"]


@dataclass(frozen=True)
class Row:
    """One parsed item: its 0-based index in the batch, its 1-based line in a file (when known), its data."""

    index: int
    line: int | None
    data: Any


class Batch(list[Row]):
    """Parsed rows, plus what reading them had to assume (said in the import's answer, never silent) and,
    for a CSV file, its normalised column names (matched against the accepted names of each field)."""

    def __init__(
        self, rows: list[Row] | None = None, notes: list[str] | None = None, columns: list[str] | None = None
    ) -> None:
        super().__init__(rows or [])
        self.notes = list(notes or [])
        self.columns = columns


def notes_of(rows: list[Row]) -> list[str]:
    return list(rows.notes) if isinstance(rows, Batch) else []


def decode_utf8(raw: bytes, field: str = "body") -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise MalformedInput(
            f"{field} is not valid UTF-8",
            [
                ItemError(
                    index=None, field=field, line=line, reason=f"invalid UTF-8 byte at offset {exc.start}"
                )
            ],
        ) from exc
    # A BOM from spreadsheet exports is not part of the data.
    return text.removeprefix("\ufeff")


MAX_JSON_DEPTH = 32


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows (NaN and Infinity are refused)")


def json_depth_exceeds(data: Any, limit: int) -> bool:
    """Whether lists/objects nest deeper than ``limit`` (iterative: no recursion on hostile input)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def load_json(text: str, field: str = "body", max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` for untrusted input: NaN/Infinity and nesting deeper than ``max_depth`` are refused
    (MalformedInput naming the line), never passed on to fail later."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise MalformedInput(
            f"{field} is not valid JSON",
            [ItemError(index=None, field=field, line=exc.lineno, reason=f"{exc.msg} (column {exc.colno})")],
        ) from exc
    except ValueError as exc:
        raise MalformedInput(f"{field} is not valid JSON", [ItemError(None, field, str(exc))]) from exc
    except RecursionError:
        data = None
        deep = True
    else:
        deep = isinstance(data, dict | list) and json_depth_exceeds(data, max_depth)
    if deep:
        raise MalformedInput(
            f"{field} nests lists/objects deeper than {max_depth} levels",
            [ItemError(None, field, f"nesting deeper than {max_depth}")],
        )
    return data


def check_json(raw: bytes, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse a JSON request body that is not UTF-8, not JSON, too deep, or holds NaN/Infinity (400), or
    whose text holds NUL (422, naming where)."""
    text = decode_utf8(raw)
    data = load_json(text, "body", max_depth)
    if may_hold_nul(text):
        check_body(data)


def guess_format(content_type: str | None, filename: str | None) -> Format:
    name = (filename or "").lower()
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.endswith(".json"):
        return "json"
    if name.endswith(".csv"):
        return "csv"
    ctype = (content_type or "").split(";")[0].strip().lower()
    if ctype in ("application/json", ""):
        return "json"
    if ctype in (
        "application/x-ndjson",
        "application/jsonl",
        "application/x-jsonlines",
        "application/ndjson",
    ):
        return "jsonl"
    if ctype in ("text/csv", "application/csv"):
        return "csv"
    raise UnsupportedMediaType(
        f"cannot read content type {ctype!r}{f' (file {filename!r})' if filename else ''}: "
        "send application/json, application/x-ndjson (JSONL), text/csv, or a multipart file "
        "named *.json, *.jsonl or *.csv",
        [
            ItemError(None, "file", f"{filename!r} of type {ctype!r} is not readable")
            if filename
            else ItemError(None, "content-type", f"{ctype!r} is not readable")
        ],
    )


def parse_rows(
    raw: bytes,
    fmt: Format,
    field: str = "body",
    list_keys: tuple[str, ...] = ("items", "results", "samples", "testCases", "test_cases", "test_results"),
) -> list[Row]:
    """Parse a batch. JSON may be a list or an object holding the list under one of ``list_keys``.

    CSV is read as spreadsheets write it (services.csvread); the result is then a Batch with notes."""
    if fmt == "csv":
        return _parse_csv(raw, field)
    text = decode_utf8(raw, field)
    if fmt == "jsonl":
        rows = _parse_jsonl(text, field)
        if may_hold_nul(text):
            _refuse_nul(rows, field)
        return rows
    data = load_json(text, field)
    if isinstance(data, dict):
        data = next((data[k] for k in list_keys if isinstance(data.get(k), list)), data)
    if not isinstance(data, list):
        raise MalformedInput(
            f"{field} must be a JSON list of items (or an object with a list under {' or '.join(list_keys)})",
            [ItemError(index=None, field=field, reason=f"got {type(data).__name__}")],
        )
    if not data:
        raise MalformedInput(
            f"{field} is an empty list: nothing to import", [ItemError(None, field, "no items")]
        )
    rows = [Row(index=i, line=None, data=item) for i, item in enumerate(data)]
    if may_hold_nul(text):
        _refuse_nul(rows, field)
    return rows


def _refuse_nul(rows: list[Row], field: str) -> None:
    errors = [
        ItemError(row.index, place or "(row)", REASON, line=row.line)
        for row in rows
        for place in nul_fields(row.data)
    ]
    if errors:
        raise nul_refusal(errors, field)


def _parse_jsonl(text: str, field: str) -> list[Row]:
    rows: list[Row] = []
    errors: list[ItemError] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(Row(index=len(rows), line=lineno, data=load_json(line, field)))
        except MalformedInput as exc:
            reason = exc.items[0].reason if exc.items else exc.detail
            errors.append(ItemError(index=None, field=field, line=lineno, reason=f"invalid JSON: {reason}"))
    if errors:
        raise MalformedInput(f"{field} has {len(errors)} malformed JSONL line(s)", errors)
    return rows


def _parse_csv(raw: bytes, field: str) -> Batch:
    table = read_csv(raw, field)
    rows = [Row(index=i, line=line, data=record) for i, (line, record) in enumerate(table.records)]
    if not rows:
        raise MalformedInput(
            f"{field} has a CSV header but no rows: nothing to import", [ItemError(None, field, "no rows")]
        )
    return Batch(rows, table.notes, table.columns)
