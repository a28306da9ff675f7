"""Datasets, documents and questions: create, list, import (JSON body or JSONL/JSON file), export."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from app.deps import CommittingRoute, DatasetId, SessionDep, SettingsDep, run_in_session
from app.errors import responses
from app.pagination import (
    ExportDep,
    ExportQuery,
    PageDep,
    export_response,
    paged,
    paged_extra,
    paged_responses,
)
from app.uploads import batch_body, read_upload
from services.datasets import service
from services.datasets.schemas import DatasetCreate, DatasetRead, ImportReport
from services.pagination import Key, Page, PageRequest
from services.scores.service import table_csv

router = APIRouter(prefix="/datasets", tags=["datasets"], route_class=CommittingRoute)

_REF = "#/components/schemas/{}"
# One page of an export's rows (in their import form) in the order of its cursor.
Rows = Callable[[Session, PageRequest], Page[dict[str, Any]]]


def _export_content(model: str, csv: bool = False) -> dict[str, Any]:
    """The media types of an export: a JSON list of the import form, JSONL (one import row a line), CSV."""
    content: dict[str, Any] = {
        "application/json": {"schema": {"type": "array", "items": {"$ref": _REF.format(model)}}},
        "application/x-ndjson": {"schema": {"type": "string"}},
    }
    if csv:
        content["text/csv"] = {"schema": {"type": "string"}}
    return content


def _json(item: dict[str, Any]) -> str:
    return json.dumps(item, ensure_ascii=False)


def _export(
    request: Request, session: Session, query: ExportQuery, list_name: str, fmt: str, name: str, rows: Rows
) -> Response:
    """A JSON list or JSONL, one page or streamed whole (app.pagination)."""

    def fetch(s: Session, after: Key | None, limit: int) -> Page[str]:
        found = rows(s, PageRequest(limit, after))
        if fmt == "jsonl":
            return Page([_json(i) + "\n" for i in found.items], found.next_key)
        return Page([_json(i) for i in found.items], found.next_key)

    if fmt == "jsonl":
        headers = {"Content-Disposition": f'attachment; filename="{name}.jsonl"'}
        return export_response(
            request, session, query, list_name, fetch, "application/x-ndjson", headers=headers
        )
    return export_response(
        request, session, query, list_name, fetch, "application/json", head="[", sep=",", tail="]"
    )


@router.post("", status_code=201, response_model=DatasetRead, responses=responses(409, 422))
def create_dataset(body: DatasetCreate, session: SessionDep) -> DatasetRead:
    return service.create_dataset(session, body)


@router.get(
    "",
    response_model=list[DatasetRead],
    responses={**responses(422), **paged_responses()},
    openapi_extra=paged_extra(),
)
def list_datasets(
    session: SessionDep, page: PageDep, request: Request, response: Response
) -> list[DatasetRead]:
    """The datasets in id order, a page at a time."""
    return paged(request, response, "datasets", service.list_datasets(session, page.request("datasets")))


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
    responses={**responses(404, 422), **paged_responses(_export_content("DocumentCreate"))},
    response_class=Response,
    openapi_extra=paged_extra(),
)
def export_documents(
    dataset_id: DatasetId,
    session: SessionDep,
    request: Request,
    query: ExportDep,
    format: Literal["json", "jsonl"] = "json",
) -> Response:
    """Documents in their import form (JSON list or JSONL), in id order: the whole export streamed, or one
    page with `limit`."""
    service.get_dataset(session, dataset_id)

    def rows(s: Session, page: PageRequest) -> Page[dict[str, Any]]:
        found = service.document_page(s, dataset_id, page)
        return Page(service.export_document_items(found.items), found.next_key)

    return _export(request, session, query, "documents", format, f"dataset-{dataset_id}-documents", rows)


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
    responses={**responses(404, 422), **paged_responses(_export_content("QuestionCreate", csv=True))},
    response_class=Response,
    openapi_extra=paged_extra(),
)
def export_questions(
    dataset_id: DatasetId,
    session: SessionDep,
    request: Request,
    query: ExportDep,
    format: Literal["json", "jsonl", "csv"] = "json",
    include_text: bool = Query(False, description="add each passage's text (checked again on re-import)"),
) -> Response:
    """Questions in their import form (JSON, JSONL): re-importing this gives the identical dataset; each
    passage says how it was obtained (`location`: given offsets, or located from text exact, normalized or
    fuzzy, with its `match_score`), which a re-import keeps. CSV: one row per question for a spreadsheet
    (question_id, question, reference_answer, answerable, types, passages), not an import form. In id
    order: the whole export streamed, or one page with `limit`."""
    service.get_dataset(session, dataset_id)
    if format == "csv":

        def sheet(s: Session, after: Key | None, limit: int) -> Page[str]:
            found = service.question_page(s, dataset_id, PageRequest(limit, after), include_text)
            lines = table_csv(service.QUESTION_SHEET, service.question_sheet(found.items), with_header=False)
            return Page([lines] if lines else [], found.next_key)

        return export_response(
            request,
            session,
            query,
            "questions",
            sheet,
            "text/csv; charset=utf-8",
            head=table_csv(service.QUESTION_SHEET, []),
            headers={"Content-Disposition": f'attachment; filename="dataset-{dataset_id}-questions.csv"'},
        )

    def rows(s: Session, page: PageRequest) -> Page[dict[str, Any]]:
        found = service.question_page(s, dataset_id, page, include_text)
        return Page(service.export_question_items(found.items, include_text), found.next_key)

    return _export(request, session, query, "questions", format, f"dataset-{dataset_id}-questions", rows)
