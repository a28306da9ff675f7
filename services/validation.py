"""Turning pydantic validation failures of batch rows into ItemErrors that name the row and the field.

Rows read from a CSV file are first matched to the model by header name (the accepted names listed in
services.kinds), and their numeric, yes/no and list cells read as spreadsheets write them (decimal comma,
TRUE/FALSE, Python-literal lists), so that the models' booleans can be strict for JSON. A batch whose rows
are of another kind altogether is refused with one sentence saying what it looks like.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from services import kinds
from services.csvread import bool_cell, list_cell, number_cell
from services.errors import InvalidItems, ItemError, WrongKind
from services.ingest import Batch, Row
from services.nul import NUL, REASON, may_hold_nul, nul_fields

M = TypeVar("M", bound=BaseModel)

_LABELS = {
    "NativeOutput": "outputs",
    "RagasOutput": "outputs",
    "RagCheckerOutput": "outputs",
    "RatingIn": "ratings",
    "StudyPreferenceIn": "pairwise preferences",
    "RaterCreate": "raters",
    "ExternalScoreIn": "scores",
    "DocumentCreate": "documents",
    "QuestionCreate": "questions",
}


def loc_to_field(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(row)"


def invalid_rows(what: str, rows: Sequence[Row], errors: list[ItemError]) -> InvalidItems:
    """The refusal of a batch, counting rows and errors apart: "outputs: 6 rows, 24 errors in 6 of them"."""
    bad = len({e.index for e in errors if e.index is not None})
    where = f" in {bad} of them" if bad else ""
    return InvalidItems(
        f"{what}: {len(rows)} rows, {len(errors)} error{'s' if len(errors) != 1 else ''}{where}; "
        "nothing was imported",
        errors,
    )


def _shape(annotation: Any) -> set[str]:
    """'number', 'bool' and/or 'list' for a field annotation (through Optional/Union)."""
    out: set[str] = set()
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _shape(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            out |= _shape(arg)
    elif origin is list or annotation is list:
        out.add("list")
    elif annotation in (int, float):
        out.add("number")
    elif annotation is bool:
        out.add("bool")
    return out


def _wrong_kind(keys: set[str], model: type[BaseModel]) -> WrongKind | None:
    found = kinds.detect(keys)
    accepted = kinds.ACCEPTS.get(model.__name__)
    if found is None or accepted is None or found[0].name in accepted:
        return None
    kind, evidence = found
    message = kinds.wrong_kind_message(kind, evidence, _LABELS.get(model.__name__, model.__name__))
    return WrongKind(message, [ItemError(None, "(file)", message)])


def _csv_rows(rows: Batch, model: type[M]) -> list[Row]:
    """Rename CSV columns to the model's fields and read spreadsheet-style numbers and lists."""
    columns = list(rows.columns or [])
    accepted = kinds.ACCEPTED.get(model.__name__, {})
    rename: dict[str, str] = {}
    missing: list[tuple[str, tuple[str, ...]]] = []
    for name, info in model.model_fields.items():
        names = accepted.get(name, (name,))
        present = next((c for c in names if c in columns), None)
        if present is not None:
            rename[present] = name
        elif info.is_required():
            missing.append((name, names))
    if missing:
        wrong = _wrong_kind(set(columns), model)
        if wrong is not None:
            raise wrong
        raise InvalidItems(
            f"the CSV header has no column for {', '.join(m for m, _ in missing)}",
            [
                ItemError(
                    None,
                    name,
                    f"no column named {' or '.join(names)} (names compare ignoring case); "
                    f"the header has: {', '.join(columns) or 'nothing'}",
                )
                for name, names in missing
            ],
        )
    shapes = {name: _shape(info.annotation) for name, info in model.model_fields.items()}
    optional = {name for name, info in model.model_fields.items() if not info.is_required()}
    out = []
    for row in rows:
        data = {rename.get(k, k): v for k, v in row.data.items()}
        # An empty cell of an optional field is no value (its default), as in the spreadsheet it came from.
        data = {k: v for k, v in data.items() if not (k in optional and isinstance(v, str) and not v.strip())}
        for key, value in data.items():
            shape = shapes.get(key, set())
            try:
                if "list" in shape:
                    data[key] = list_cell(value)
                elif "number" in shape:
                    data[key] = number_cell(value)
                elif "bool" in shape:
                    data[key] = bool_cell(value)
            except ValueError:
                pass  # left as text: the model's own validation names the field and the reason
        out.append(Row(row.index, row.line, data))
    return out


def validate_rows(rows: list[Row], model: type[M]) -> tuple[list[tuple[Row, M]], list[ItemError]]:
    """Validate every row (never stopping at the first bad one); returns the good rows and all errors.

    Raises WrongKind when no row is valid and the rows look like another kind of file."""
    original_keys = kinds.keys_of(r.data for r in rows)
    # Text decoded here (a JSON list in a CSV cell) or made by the caller (an archive member) has not met
    # the parsers' NUL check: a row that may hold NUL is walked and refused naming the field, as the
    # parsers do, before the store would see it.
    suspects: set[int] = set()
    if isinstance(rows, Batch) and rows.columns is not None:
        suspects = {r.index for r in rows if isinstance(r.data, dict) and _may_hold_nul(r.data, escaped=True)}
        rows = _csv_rows(rows, model)
    good: list[tuple[Row, M]] = []
    errors: list[ItemError] = []
    for row in rows:
        if not isinstance(row.data, dict):
            errors.append(ItemError(row.index, "(row)", "must be an object", line=row.line))
            continue
        held = nul_fields(row.data) if row.index in suspects or _may_hold_nul(row.data) else []
        if held:
            errors.extend(ItemError(row.index, place, REASON, line=row.line) for place in held)
            continue
        try:
            good.append((row, model.model_validate(row.data)))
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                errors.append(ItemError(row.index, loc_to_field(err["loc"]), err["msg"], line=row.line))
    if rows and not good:
        wrong = _wrong_kind(original_keys, model)
        if wrong is not None:
            raise wrong
    return good, errors


def _may_hold_nul(data: dict[str, Any], escaped: bool = False) -> bool:
    """Whether a row's top-level text holds NUL (or, ``escaped``, JSON's escape of it): a scan at C speed
    per value; nested values of JSON bodies were checked when the body was parsed."""
    for value in data.values():
        if isinstance(value, str) and (may_hold_nul(value) if escaped else NUL in value):
            return True
    return False


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
