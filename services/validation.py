"""Turning pydantic validation failures of batch rows into ItemErrors that name the row and the field."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from services.errors import ItemError
from services.ingest import Row

M = TypeVar("M", bound=BaseModel)


def loc_to_field(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(row)"


def validate_rows(rows: list[Row], model: type[M]) -> tuple[list[tuple[Row, M]], list[ItemError]]:
    """Validate every row (never stopping at the first bad one); returns the good rows and all errors."""
    good: list[tuple[Row, M]] = []
    errors: list[ItemError] = []
    for row in rows:
        if not isinstance(row.data, dict):
            errors.append(ItemError(row.index, "(row)", "must be an object", line=row.line))
            continue
        try:
            good.append((row, model.model_validate(row.data)))
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                errors.append(ItemError(row.index, loc_to_field(err["loc"]), err["msg"], line=row.line))
    return good, errors


def duplicate_errors(rows: list[tuple[Row, str]], field: str) -> list[ItemError]:
    """One error per repeated key inside a batch, naming the first occurrence."""
    first: dict[str, Row] = {}
    errors: list[ItemError] = []
    for row, key in rows:
        if key in first:
            prev = first[key]
            where = f"line {prev.line}" if prev.line is not None else f"index {prev.index}"
            errors.append(ItemError(row.index, field, f"duplicate {key!r} (first at {where})", line=row.line))
        else:
            first[key] = row
    return errors
