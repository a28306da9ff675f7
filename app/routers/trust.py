"""May a metric replace the raters? Calibration onto the rubric, the Alternative Annotator Test and a
verdict per metric and per use, as JSON, Markdown or CSV."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from app.deps import CommittingRoute, RunId, SeedQuery
from app.errors import responses
from app.routers.reports import RunsQuery, _compute, _run_ids
from services.reports import trust as trust_service
from services.reports.trust_schemas import TrustRead
from services.scores.service import table_csv
from services.stats import DEFAULT_EPSILON

router = APIRouter(tags=["reports"], route_class=CommittingRoute)

EpsilonQuery = Annotated[
    float,
    Query(
        ge=0.0,
        lt=1.0,
        allow_inf_nan=False,
        description="the Alternative Annotator Test's margin: how far (in advantage probability) the metric "
        "may trail a rater and still replace one; 0.2 is the paper's guidance for skilled raters",
    ),
]
_FORMATS: Mapping[int | str, dict[str, Any]] = MappingProxyType(
    {
        200: {
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/TrustRead"}},
                "text/markdown": {},
                "text/csv": {},
            }
        }
    }
)


def _encode(result: TrustRead, fmt: str) -> Response:
    if fmt == "csv":
        return PlainTextResponse(
            table_csv(list(trust_service.CSV_HEADER), trust_service.rows(result)),
            media_type="text/csv; charset=utf-8",
        )
    if fmt == "md":
        return PlainTextResponse(trust_service.markdown(result), media_type="text/markdown; charset=utf-8")
    return JSONResponse(result.model_dump(mode="json"))


async def _trust(request: Request, run_ids: list[int], epsilon: float, seed: int, fmt: str) -> Response:
    result: TrustRead = await _compute(request, trust_service.trust, run_ids, epsilon, seed)
    return await anyio.to_thread.run_sync(_encode, result, fmt)


@router.get("/runs/{run_id}/trust", responses={**responses(404, 422), **_FORMATS}, response_model=TrustRead)
async def run_trust(
    run_id: RunId,
    request: Request,
    epsilon: EpsilonQuery = DEFAULT_EPSILON,
    seed: SeedQuery = 0,
    format: Literal["json", "md", "csv"] = "json",
) -> Response:
    """Per metric: held-out calibration onto the rubric (MAE, RMSE with jackknife-t intervals by
    question) beside the human baseline (each rater vs the others), the Alternative Annotator Test, and a
    yes / no / not yet verdict per use (item scoring, ranking system versions, pass/fail gating) with its
    rule and reason. `?format=md`: Markdown; `?format=csv`: one row per metric and use."""
    return await _trust(request, [run_id], epsilon, seed, format)


@router.get("/trust", responses={**responses(404, 422), **_FORMATS}, response_model=TrustRead)
async def pooled_trust(
    request: Request,
    runs: RunsQuery,
    epsilon: EpsilonQuery = DEFAULT_EPSILON,
    seed: SeedQuery = 0,
    format: Literal["json", "md", "csv"] = "json",
) -> Response:
    """The trust analysis over several runs of one dataset, pooled (items = outputs; folds and intervals
    by question)."""
    return await _trust(request, _run_ids(runs), epsilon, seed, format)
