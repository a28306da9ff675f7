"""Datasets, documents and questions: create, list, import (JSON body or JSONL/JSON file), export."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from app.deps import CommittingRoute, DatasetId, SessionDep, SettingsDep, run_in_session
from app.errors import responses
from app.uploads import batch_body, read_upload
from services.datasets import service
from services.datasets.schemas import DatasetCreate, DatasetRead, ImportReport
from services.scores.service import table_csv

router = APIRouter(prefix="/datasets", tags=["datasets"], route_class=CommittingRoute)

_REF = "#/components/schemas/{}"


def _export(items: list[dict[str, Any]], fmt: str, name: str) -> Response:
    if fmt == "jsonl":
        return PlainTextResponse(
            service.to_jsonl(items),
            media_type="application/x-ndjson",
            headers={"Content-Disposition": f'attachment; filename="{name}.jsonl"'},
        )
    return JSONResponse(items)


@router.post("", status_code=201, response_model=DatasetRead, responses=responses(409, 422))
def create_dataset(body: DatasetCreate, session: SessionDep) -> DatasetRead:
    return service.create_dataset(session, body)


@router.get("", response_model=list[DatasetRead])
def list_datasets(session: SessionDep) -> list[DatasetRead]:
    return service.list_datasets(session)


@router.get("/{dataset_id}", response_model=DatasetRead, responses=responses(404))
def get_dataset(dataset_id: DatasetId, session: SessionDep) -> DatasetRead:
    return service.dataset_read(session, service.get_dataset(session, dataset_id))


@router.post(
    "/{dataset_id}/documents",
    response_model=ImportReport,
    responses=responses(400, 404, 413, 415, 422),
    openapi_extra=batch_body({"$ref": _REF.format("DocumentCreate")}),
)
async def import_documents(dataset_id: DatasetId, request: Request, settings: SettingsDep) -> ImportReport:
    """Upsert documents by external id: a JSON list, a JSONL body, or a multipart `file` (.json/.jsonl)."""
    upload = await read_upload(request, settings.max_upload_bytes)
    return await run_in_session(request, lambda s: service.import_documents(s, dataset_id, upload.rows()))


@router.get(
    "/{dataset_id}/documents",
    responses={**responses(404), 200: {"content": {"application/x-ndjson": {}}}},
)
def export_documents(
    dataset_id: DatasetId, session: SessionDep, format: Literal["json", "jsonl"] = "json"
) -> Response:
    """Documents in their import form (JSON list or JSONL)."""
    items = service.export_document_items(service.list_documents(session, dataset_id))
    return _export(items, format, f"dataset-{dataset_id}-documents")


@router.post(
    "/{dataset_id}/questions",
    response_model=ImportReport,
    responses=responses(400, 404, 413, 415, 422),
    openapi_extra=batch_body({"$ref": _REF.format("QuestionCreate")}, csv=True),
)
async def import_questions(dataset_id: DatasetId, request: Request, settings: SettingsDep) -> ImportReport:
    """Upsert questions by external id; passages point into documents already imported. A JSON list, JSONL,
    or CSV (a header row naming the fields; `types` and `passages` as JSON lists in their cells, `answerable`
    as true/false, an empty cell for no value)."""
    upload = await read_upload(request, settings.max_upload_bytes, ("json", "jsonl", "csv"))
    return await run_in_session(request, lambda s: service.import_questions(s, dataset_id, upload.rows()))


@router.get(
    "/{dataset_id}/questions",
    responses={**responses(404), 200: {"content": {"application/x-ndjson": {}, "text/csv": {}}}},
)
def export_questions(
    dataset_id: DatasetId,
    session: SessionDep,
    format: Literal["json", "jsonl", "csv"] = "json",
    include_text: bool = Query(False, description="add each passage's text (checked again on re-import)"),
) -> Response:
    """Questions in their import form (JSON, JSONL): re-importing this gives the identical dataset; each
    passage says how it was obtained (`location`: given offsets, or located from text exact, normalized or
    fuzzy, with its `match_score`), which a re-import keeps. CSV: one row per question for a spreadsheet
    (question_id, question, reference_answer, answerable, types, passages), not an import form."""
    questions = service.list_questions(session, dataset_id, include_text)
    if format == "csv":
        return PlainTextResponse(
            table_csv(service.QUESTION_SHEET, service.question_sheet(questions)),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="dataset-{dataset_id}-questions.csv"'},
        )
    items = service.export_question_items(questions, include_text)
    return _export(items, format, f"dataset-{dataset_id}-questions")
