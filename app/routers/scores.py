"""Scores of a run: precomputed ones imported from elsewhere, and the per-output score table."""

from __future__ import annotations

import json
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from app.deps import CommittingRoute, RunId, SessionDep, SettingsDep, run_in_session
from app.errors import responses
from app.pagination import ExportDep, export_response, paged_extra, paged_responses
from app.uploads import batch_body, read_upload
from services.datasets.schemas import ImportReport
from services.pagination import Key, Page, PageRequest
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


class ScoreTable(BaseModel):
    """The JSON form of a run's score table (documents the streamed body; the route writes it itself)."""

    columns: list[str] = Field(description="output_id, question_id, then each metric column and its .error")
    configs: dict[str, dict[str, Any]] = Field(description="each metric column's recorded configuration")
    rows: list[dict[str, float | int | str | None]] = Field(description="one per output, keyed by column")


_SCORES = paged_responses({"text/csv": {"schema": {"type": "string"}}})
_SCORES[200]["model"] = ScoreTable


@router.get(
    "/runs/{run_id}/scores",
    responses={**responses(404, 422), **_SCORES},
    response_class=Response,
    openapi_extra=paged_extra(),
)
def get_scores(
    run_id: RunId,
    session: SessionDep,
    request: Request,
    query: ExportDep,
    format: Literal["json", "csv"] = "json",
) -> Response:
    """One row per output, one column per metric, and a `<metric>.error` column explaining null values.
    JSON also gives `configs`: each column's recorded configuration (library version, k, word rule, judge);
    a metric scored under several configurations has one column per configuration, `metric[<key>]`. Rows in
    question order: the whole table streamed, or one page of rows with `limit`."""
    columns = service.score_columns(session, run_id)
    header = columns.header

    def fetch(s: Session, after: Key | None, limit: int) -> Page[str]:
        found = service.score_rows(s, run_id, columns, PageRequest(limit, after))
        if format == "csv":
            lines = service.table_csv(header, found.items, with_header=False)
            return Page([lines] if lines else [], found.next_key)
        return Page([json.dumps(r, ensure_ascii=False) for r in found.items], found.next_key)

    if format == "csv":
        return export_response(
            request,
            session,
            query,
            "scores",
            fetch,
            "text/csv; charset=utf-8",
            head=service.table_csv(header, []),
            headers={"Content-Disposition": f'attachment; filename="run-{run_id}-scores.csv"'},
        )
    configs = service.score_configs(session, run_id)
    head = json.dumps({"columns": header, "configs": configs}, ensure_ascii=False)[:-1] + ', "rows": ['
    return export_response(
        request, session, query, "scores", fetch, "application/json", head=head, sep=",", tail="]}"
    )
