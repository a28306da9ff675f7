"""Scores of a run: precomputed ones imported from elsewhere, and the per-output score table."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from app.deps import RunId, SessionDep, SettingsDep, run_in_session
from app.errors import responses
from app.uploads import batch_body, read_upload
from services.datasets.schemas import ImportReport
from services.scores import service

router = APIRouter(tags=["scoring"])


@router.post(
    "/runs/{run_id}/scores",
    response_model=ImportReport,
    responses=responses(400, 404, 413, 415, 422),
    openapi_extra=batch_body({"$ref": "#/components/schemas/ExternalScoreIn"}, csv=True),
)
async def import_scores(run_id: RunId, request: Request, settings: SettingsDep) -> ImportReport:
    """Precomputed scores `{question_id, metric: "external.<name>", value}`, usable in reports."""
    upload = await read_upload(request, settings.max_upload_bytes, ("json", "jsonl", "csv"))
    return await run_in_session(request, lambda s: service.import_external_scores(s, run_id, upload.rows()))


@router.get(
    "/runs/{run_id}/scores",
    responses={**responses(404), 200: {"content": {"text/csv": {}}}},
)
def get_scores(run_id: RunId, session: SessionDep, format: Literal["json", "csv"] = "json") -> Response:
    """One row per output, one column per metric, and a `<metric>.error` column explaining null values."""
    header, rows = service.score_table(session, run_id)
    if format == "csv":
        return PlainTextResponse(
            service.table_csv(header, rows),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="run-{run_id}-scores.csv"'},
        )
    return JSONResponse({"columns": header, "rows": rows})
