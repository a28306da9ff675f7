"""A judge's own stability on a run: test-retest across the judge repeats of a scoring job, and the
metric-human correlation corrected for both sides' noise, as JSON, CSV or Markdown."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from app.deps import CommittingRoute, RunId
from app.errors import responses
from app.routers.reports import _compute
from services.reports.stability import (
    STABILITY_CSV_HEADER,
    StabilityReport,
    markdown,
    stability,
    stability_rows,
)
from services.scores.service import table_csv

router = APIRouter(tags=["reports"], route_class=CommittingRoute)

_FORMATS: Mapping[int | str, dict[str, Any]] = MappingProxyType(
    {
        200: {
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/StabilityReport"}},
                "text/csv": {},
                "text/markdown": {},
            }
        }
    }
)


def _encode(result: StabilityReport, fmt: str) -> Response:
    name = f"stability-{result.run_id}"
    if fmt == "csv":
        return PlainTextResponse(
            table_csv(STABILITY_CSV_HEADER, stability_rows(result)),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
        )
    if fmt == "md":
        return PlainTextResponse(
            markdown(result),
            media_type="text/markdown; charset=utf-8",
            headers={"Content-Disposition": f'inline; filename="{name}.md"'},
        )
    return JSONResponse(result.model_dump(mode="json"))


@router.get(
    "/runs/{run_id}/stability",
    response_model=StabilityReport,
    responses={**responses(404, 422), **_FORMATS},
)
async def run_stability(
    run_id: RunId, request: Request, format: Literal["json", "csv", "md"] = "json"
) -> Response:
    """Per judge metric: ICC(A,1) across the repeats a scoring job with `repeats >= 2` stored, the
    within-output SD and the Spearman-Brown reliability of the repeat mean, each with a jackknife-t
    interval by question; beside the raw Pearson r with the mean rating, the same r divided by
    sqrt(ICC(A,k) of the raters x reliability of the repeat mean), with a BCa interval by question, capped
    at 1 and flagged when the correction exceeds it. A metric scored once per output says so instead of
    giving figures. `?format=csv`: one row per metric x figure; `?format=md`: Markdown."""
    result: StabilityReport = await _compute(request, stability, run_id)
    # Encoding is CPU work: off the event loop.
    return await anyio.to_thread.run_sync(_encode, result, format)
