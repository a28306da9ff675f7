"""A judge's own stability on a run: test-retest across the judge repeats of a scoring job, and the
metric-human correlation corrected for both sides' noise."""

from __future__ import annotations

from fastapi import APIRouter, Request

from app.deps import CommittingRoute, RunId
from app.errors import responses
from app.routers.reports import _compute
from services.reports.stability import StabilityReport, stability

router = APIRouter(tags=["reports"], route_class=CommittingRoute)


@router.get("/runs/{run_id}/stability", response_model=StabilityReport, responses=responses(404, 422))
async def run_stability(run_id: RunId, request: Request) -> StabilityReport:
    """Per judge metric: ICC(A,1) across the repeats a scoring job with `repeats >= 2` stored, the
    within-output SD and the Spearman-Brown reliability of the repeat mean, each with an interval by
    question; beside the raw Pearson r with the mean rating, the same r divided by sqrt(ICC(A,k) of the
    raters x reliability of the repeat mean), capped at 1 and flagged when the correction exceeds it. A
    metric scored once per output says so instead of giving figures."""
    result: StabilityReport = await _compute(request, stability, run_id)
    return result
