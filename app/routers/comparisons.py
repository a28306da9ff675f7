"""Comparisons between runs of one dataset, beside the report: pairwise preference meta-evaluation (two runs)
and system level (three or more runs), as JSON or CSV, and the pairwise figure."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.deps import CommittingRoute, SeedQuery
from app.errors import responses
from app.routers.reports import MEDIA, RunsQuery, _compute, _run_ids
from app.tables import table_response
from services.reports import comparisons
from services.types import MAX_ID

router = APIRouter(tags=["reports"], route_class=CommittingRoute)


class PairwiseQuery(BaseModel):
    """The query of every form of the pairwise report."""

    run_a: int = Field(ge=1, le=MAX_ID, description="the service's id of run A (the baseline)")
    run_b: int = Field(ge=1, le=MAX_ID, description="the service's id of run B (compared with A)")
    source: Literal["auto", "preference", "absolute"] = Field(
        "auto",
        description="auto: side-by-side preference ratings of a pairwise rating task on these runs when "
        "there are some, else the difference of the absolute ratings; preference / absolute: force one",
    )
    k: int = Field(5, ge=1, le=100, description="k of the retrieval metrics shown")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="bootstrap seed, recorded in the report")
    n_resamples: int = Field(2000, ge=100, le=100_000, description="bootstrap resamples")

    def options(self) -> dict[str, Any]:
        return self.model_dump(exclude={"run_a", "run_b"})


Pairwise = Annotated[PairwiseQuery, Query()]
K = Annotated[int, Query(ge=1, le=100, description="k of the retrieval metrics shown")]
Resamples = Annotated[int, Query(ge=100, le=100_000, description="bootstrap resamples")]


def _content(model: str) -> dict[int | str, dict[str, Any]]:
    return {
        200: {
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model}"}},
                "text/csv": {},
            }
        }
    }


@router.get("/reports/pairwise", responses={**responses(404, 422), **_content("PairwiseRead")})
async def pairwise_report(request: Request, q: Pairwise, format: Literal["json", "csv"] = "json") -> Response:
    """Can each metric tell which of two runs' answers the humans prefer? Per metric: Pearson, Spearman and
    Kendall between its difference (B - A, positive = B better) and the human preference, with BCa
    intervals resampling questions; sign agreement with a Wilson interval (human ties left out, a metric tie
    counts as wrong); the comparison with the best metric (Holm). `source` says where the preference comes
    from. `?format=csv`: one row per metric."""
    read = await _compute(request, comparisons.pairwise_read, q.run_a, q.run_b, q.options())
    name = f"pairwise-{q.run_a}-{q.run_b}"
    return await anyio.to_thread.run_sync(table_response, read, comparisons.pairwise_rows, name, format)


async def _pairwise_figure(request: Request, q: PairwiseQuery, fmt: Literal["svg", "png"]) -> Response:
    body = await _compute(request, comparisons.pairwise_bytes, q.run_a, q.run_b, q.options(), fmt)
    return Response(body, media_type=MEDIA[fmt])


def _figure_responses(fmt: Literal["svg", "png"]) -> dict[int | str, dict[str, Any]]:
    """404/422 and the figure's own media type; with response_class=Response no application/json 200 with
    an empty schema is advertised beside it."""
    schema = {"type": "string"} if fmt == "svg" else {"type": "string", "format": "binary"}
    return {**responses(404, 422), 200: {"content": {MEDIA[fmt]: {"schema": schema}}}}


@router.get("/reports/pairwise.svg", responses=_figure_responses("svg"), response_class=Response)
async def pairwise_svg(request: Request, q: Pairwise) -> Response:
    """The pairwise figure: per metric, r of its difference with the preference and its sign agreement."""
    return await _pairwise_figure(request, q, "svg")


@router.get("/reports/pairwise.png", responses=_figure_responses("png"), response_class=Response)
async def pairwise_png(request: Request, q: Pairwise) -> Response:
    return await _pairwise_figure(request, q, "png")


@router.get("/reports/systems", responses={**responses(404, 422), **_content("SystemsRead")})
async def systems_report(
    request: Request,
    runs: RunsQuery,
    k: K = 5,
    seed: SeedQuery = 0,
    n_resamples: Resamples = 2000,
    format: Literal["json", "csv"] = "json",
) -> Response:
    """System level over three or more runs of one dataset: human mean per run (t interval), each metric's
    mean per run, Kendall's tau-b between the rankings with a bootstrap over questions, and per pair of runs
    the paired t-test of the human difference beside the metric's (same winner? distinguishable from 0?).
    `?format=csv`: one row per metric and pair of runs."""
    ids = _run_ids(runs)
    read = await _compute(
        request, comparisons.systems_read, ids, {"k": k, "seed": seed, "n_resamples": n_resamples}
    )
    name = f"systems-{'-'.join(map(str, ids))}"
    return await anyio.to_thread.run_sync(table_response, read, comparisons.systems_rows, name, format)
