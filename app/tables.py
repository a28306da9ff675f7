"""Responses of the analyses beside the report: a pydantic model as JSON, or its rows as a CSV download."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel

from services.scores.service import table_csv


def csv_response(rows: list[dict[str, Any]], name: str) -> PlainTextResponse:
    """The rows as a CSV attachment ``name.csv`` (header: the first row's keys)."""
    header = list(rows[0]) if rows else ["metric"]
    return PlainTextResponse(
        table_csv(header, rows),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
    )


def table_response(
    model: BaseModel, rows_of: Callable[[Any], list[dict[str, Any]]], name: str, fmt: str
) -> Response:
    """``model`` as JSON, or ``rows_of(model)`` as CSV when ``fmt`` is csv. CPU work: call it in a thread."""
    if fmt == "csv":
        return csv_response(rows_of(model), name)
    return JSONResponse(model.model_dump(mode="json"))
