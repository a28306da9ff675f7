"""Single-run estimates beside the report: the run's human score from a few ratings (prediction-powered) and
judge sensitivity (the same judge metrics under two judge configurations)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from app.deps import CommittingRoute, RunId
from app.errors import responses
from app.routers.reports import _compute
from app.tables import table_response
from services.reports.estimate_schemas import JudgeConfigurations, JudgeSensitivity, RunEstimate
from services.reports.estimates import estimate_rows
from services.reports.presentation import estimate_render
from services.reports.sensitivity import sensitivity_rows

router = APIRouter(tags=["reports"], route_class=CommittingRoute)

ConfigQuery = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=64,
        pattern=r"^[0-9a-f]+$",
        description="a judge configuration id from GET /runs/{run_id}/judge-configurations",
    ),
]


_WITH_CSV: dict[int | str, dict[str, Any]] = {**responses(404, 422), 200: {"content": {"text/csv": {}}}}


@router.get("/runs/{run_id}/estimate", response_model=RunEstimate, responses=_WITH_CSV)
async def run_estimate(
    run_id: RunId,
    request: Request,
    k: int = Query(5, ge=1, le=100, description="k of the retrieval metrics used as predictors"),
    confidence: float = Query(0.95, ge=0.5, le=0.999, description="confidence level of the intervals"),
    target_width: float | None = Query(
        None,
        gt=0,
        le=100,
        allow_inf_nan=False,
        description="interval width to plan the ratings for (default: an eighth of the rubric's range, "
        "0.5 on 1-5)",
    ),
    format: Literal["json", "csv"] = "json",
) -> Response:
    """The run's mean human score estimated from its rated outputs and each metric on every output
    (prediction-powered inference, PPI++), beside the rated-only interval; which metric gives the narrowest
    interval, and how many more ratings would reach the target width. 422 (field `ratings`) without enough
    rated or unrated outputs."""
    kwargs = {"k": k, "confidence": confidence, "target_width": target_width}
    est: RunEstimate = await _compute(request, estimate_render.estimate, run_id, kwargs)
    return await anyio.to_thread.run_sync(table_response, est, estimate_rows, f"estimate-{run_id}", format)


@router.get(
    "/runs/{run_id}/judge-configurations",
    response_model=JudgeConfigurations,
    responses=responses(404, 422),
)
async def run_judge_configurations(run_id: RunId, request: Request) -> JudgeConfigurations:
    """The judge configurations (model, endpoint, language) with scores on the run, oldest first, and which
    one each metric's report column uses (the latest scored)."""
    return await _compute(request, estimate_render.configurations, run_id)  # type: ignore[no-any-return]


@router.get("/runs/{run_id}/judge-sensitivity", response_model=JudgeSensitivity, responses=_WITH_CSV)
async def run_judge_sensitivity(
    run_id: RunId,
    request: Request,
    a: ConfigQuery = None,
    b: ConfigQuery = None,
    format: Literal["json", "csv"] = "json",
) -> Response:
    """The same judge metrics under two judge configurations (default: the run's two, oldest as `a`): per
    metric, the correlation with the raters under each, the paired difference with Zou's interval, and the
    agreement of the two configurations' scores. 422 naming `a`/`b` for an unknown configuration or a run
    scored under one only."""
    res: JudgeSensitivity = await _compute(request, estimate_render.sensitivity, run_id, {"a": a, "b": b})
    return await anyio.to_thread.run_sync(
        table_response, res, sensitivity_rows, f"judge-sensitivity-{run_id}", format
    )
