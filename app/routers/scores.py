"""Scores of a run: precomputed ones imported from elsewhere, and the per-output score table."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from app.deps import CommittingRoute, RunId, SessionDep, SettingsDep, run_in_session
from app.errors import responses
from app.uploads import batch_body, read_upload
from services.datasets.schemas import ImportReport
from services.scores import service

router = APIRouter(tags=["scoring"], route_class=CommittingRoute)


@router.post(
    "/runs/{run_id}/scores",
    response_model=ImportReport,
    responses=responses(400, 404, 413, 415, 422),
    openapi_extra=batch_body({"$ref": "#/components/schemas/ExternalScoreIn"}, csv=True),
)
async def import_scores(
    run_id: RunId,
    request: Request,
    settings: SettingsDep,
    shape: Literal["auto", "long", "wide"] = Query(
        "auto", description="long: rows {question_id, metric, value}; wide: one column per metric"
    ),
    library: str | None = Query(None, description="wide: the tool that wrote it (ragas, deepeval, opik...)"),
    higher_is_better: str | None = Query(None, description="wide: comma-separated columns, higher is better"),
    lower_is_better: str | None = Query(None, description="wide: comma-separated columns, lower is better"),
    metrics: str | None = Query(None, description="wide: import only these comma-separated columns"),
) -> ImportReport:
    """Precomputed scores, usable in reports: long rows `{question_id, metric: "external.<name>", value}`, or
    the wide tables of Ragas (`result.to_pandas()`), DeepEval, Opik and RAGChecker exports, whose metric
    columns become `external.<library>.<metric>` (rows matched by question id or exact question text; the
    direction comes from the known metric, or is asked for)."""
    upload = await read_upload(request, settings.max_upload_bytes, ("json", "jsonl", "csv"))

    def names(value: str | None) -> list[str]:
        return [v.strip() for v in (value or "").split(",") if v.strip()]

    return await run_in_session(
        request,
        lambda s: service.import_scores(
            s,
            run_id,
            upload.rows(),
            shape,
            library,
            names(higher_is_better),
            names(lower_is_better),
            names(metrics) or None,
        ),
    )


@router.get(
    "/runs/{run_id}/scores",
    responses={**responses(404), 200: {"content": {"text/csv": {}}}},
)
def get_scores(run_id: RunId, session: SessionDep, format: Literal["json", "csv"] = "json") -> Response:
    """One row per output, one column per metric, and a `<metric>.error` column explaining null values.
    JSON also gives `configs`: each column's recorded configuration (library version, k, word rule, judge);
    a metric scored under several configurations has one column per configuration, `metric[<key>]`."""
    header, rows = service.score_table(session, run_id)
    if format == "csv":
        return PlainTextResponse(
            service.table_csv(header, rows),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="run-{run_id}-scores.csv"'},
        )
    return JSONResponse({"columns": header, "rows": rows, "configs": service.score_configs(session, run_id)})
