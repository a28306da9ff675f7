"""Comparisons between runs of one dataset, beside the report: pairwise preference meta-evaluation (two runs)
and system level (three or more runs), as JSON or CSV, and the pairwise figure."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from app.deps import MAX_ID, SeedQuery
from app.errors import responses
from app.routers.reports import MEDIA, RunsQuery, _compute, _run_ids
from services.reports import comparisons
from services.reports.comparison_schemas import PairwiseRead, SystemsRead
from services.scores.service import table_csv

router = APIRouter(tags=["reports"])

RunA = Annotated[int, Query(ge=1, le=MAX_ID, description="the service's id of run A (the baseline)")]
RunB = Annotated[int, Query(ge=1, le=MAX_ID, description="the service's id of run B (compared with A)")]
K = Annotated[int, Query(ge=1, le=100, description="k of the retrieval metrics shown")]
Resamples = Annotated[int, Query(ge=100, le=100_000, description="bootstrap resamples")]
Source = Annotated[
    Literal["auto", "preference", "absolute"],
    Query(
        description="auto: side-by-side preference ratings of a pairwise rating task on these runs when "
        "there are some, else the difference of the absolute ratings; preference / absolute: force one"
    ),
]


def _csv(rows: list[dict[str, Any]], name: str) -> PlainTextResponse:
    header = list(rows[0]) if rows else ["metric"]
    return PlainTextResponse(
        table_csv(header, rows),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
    )


def _encode(read: PairwiseRead | SystemsRead, fmt: str, name: str) -> Response:
    if fmt == "csv":
        if isinstance(read, PairwiseRead):
            return _csv(comparisons.pairwise_rows(read), name)
        return _csv(comparisons.systems_rows(read), name)
    return JSONResponse(read.model_dump(mode="json"))


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
async def pairwise_report(
    request: Request,
    run_a: RunA,
    run_b: RunB,
    source: Source = "auto",
    k: K = 5,
    seed: SeedQuery = 0,
    n_resamples: Resamples = 2000,
    format: Literal["json", "csv"] = "json",
) -> Response:
    """Can each metric tell which of two runs' answers the humans prefer? Per metric: Pearson, Spearman and
    Kendall between its difference (B - A, positive = B better) and the human preference, with BCa
    intervals resampling questions; sign agreement with a Wilson interval (human ties left out, a metric tie
    counts as wrong); the comparison with the best metric (Holm). `source` says where the preference comes
    from. `?format=csv`: one row per metric."""
    kwargs = {"source": source, "k": k, "seed": seed, "n_resamples": n_resamples}
    read = await _compute(request, comparisons.pairwise_read, run_a, run_b, kwargs)
    return await anyio.to_thread.run_sync(_encode, read, format, f"pairwise-{run_a}-{run_b}")


@router.get(
    "/reports/pairwise.svg",
    responses={**responses(404, 422), 200: {"content": {"image/svg+xml": {}}}},
)
async def pairwise_svg(
    request: Request,
    run_a: RunA,
    run_b: RunB,
    source: Source = "auto",
    k: K = 5,
    seed: SeedQuery = 0,
    n_resamples: Resamples = 2000,
) -> Response:
    """The pairwise figure: per metric, r of its difference with the preference and its sign agreement."""
    kwargs = {"source": source, "k": k, "seed": seed, "n_resamples": n_resamples}
    body = await _compute(request, comparisons.pairwise_bytes, run_a, run_b, kwargs, "svg")
    return Response(body, media_type=MEDIA["svg"])


@router.get("/reports/pairwise.png", responses={**responses(404, 422), 200: {"content": {"image/png": {}}}})
async def pairwise_png(
    request: Request,
    run_a: RunA,
    run_b: RunB,
    source: Source = "auto",
    k: K = 5,
    seed: SeedQuery = 0,
    n_resamples: Resamples = 2000,
) -> Response:
    kwargs = {"source": source, "k": k, "seed": seed, "n_resamples": n_resamples}
    body = await _compute(request, comparisons.pairwise_bytes, run_a, run_b, kwargs, "png")
    return Response(body, media_type=MEDIA["png"])


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
    kwargs = {"k": k, "seed": seed, "n_resamples": n_resamples}
    read = await _compute(request, comparisons.systems_read, ids, kwargs)
    return await anyio.to_thread.run_sync(_encode, read, format, f"systems-{'-'.join(map(str, ids))}")
