"""Runs (system versions) and their outputs: the outputs of any RAG system, or of the service's own."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request, Response

from app.deps import CommittingRoute, DatasetId, RunId, SessionDep, SettingsDep, run_in_session
from app.errors import responses
from app.pagination import PageDep, paged, paged_extra, paged_responses
from app.uploads import batch_body, read_upload
from services.datasets.schemas import ImportReport
from services.runs import service
from services.runs.schemas import OutputFormat, OutputRead, RunCreate, RunRead

router = APIRouter(tags=["runs"], route_class=CommittingRoute)


@router.post(
    "/datasets/{dataset_id}/runs", status_code=201, response_model=RunRead, responses=responses(404, 409)
)
def create_run(dataset_id: DatasetId, body: RunCreate, session: SessionDep) -> RunRead:
    """Record a system configuration (retriever, k, generator, model, prompt) whose outputs are evaluated."""
    return service.create_run(session, dataset_id, body)


@router.get(
    "/datasets/{dataset_id}/runs",
    response_model=list[RunRead],
    responses={**responses(404, 422), **paged_responses()},
    openapi_extra=paged_extra(),
)
def list_runs(
    dataset_id: DatasetId, session: SessionDep, page: PageDep, request: Request, response: Response
) -> list[RunRead]:
    """The dataset's runs in id order, a page at a time."""
    return paged(request, response, "runs", service.list_runs(session, dataset_id, page.request("runs")))


@router.get("/runs/{run_id}", response_model=RunRead, responses=responses(404))
def get_run(run_id: RunId, session: SessionDep) -> RunRead:
    return service.run_read(session, service.get_run(session, run_id))


@router.post(
    "/runs/{run_id}/outputs",
    response_model=ImportReport,
    responses=responses(400, 404, 413, 415, 422),
    openapi_extra=batch_body(
        {
            "oneOf": [
                {"$ref": "#/components/schemas/NativeOutput"},
                {"$ref": "#/components/schemas/RagasOutput"},
                {"$ref": "#/components/schemas/RagCheckerOutput"},
            ]
        },
        csv=True,
    ),
)
async def import_outputs(
    run_id: RunId,
    request: Request,
    settings: SettingsDep,
    format: OutputFormat = Query("auto", description="auto detects Ragas rows and RAGChecker results"),
) -> ImportReport:
    """Upsert outputs (answer + ranked retrieved chunks), one per question.

    Native rows `{question_id, answer, retrieved: [{document_id, start, end} | {text}]}`, Ragas rows
    `{user_input, response, retrieved_contexts, reference}` (matched by question text unless `question_id`
    is given) or RAGChecker `{"results": [{query_id, query, gt_answer, response, retrieved_context}]}`;
    as a JSON body, a JSONL or CSV body, or a file. Text-only chunks are located in their documents
    (exact, then whitespace-normalised); chunks that cannot be found are kept and marked unlocated.
    """
    upload = await read_upload(request, settings.max_upload_bytes, ("json", "jsonl", "csv"))
    return await run_in_session(request, lambda s: service.import_outputs(s, run_id, upload.rows(), format))


@router.get(
    "/runs/{run_id}/outputs",
    response_model=list[OutputRead],
    responses={**responses(404, 422), **paged_responses()},
    openapi_extra=paged_extra(),
)
def list_outputs(
    run_id: RunId, session: SessionDep, page: PageDep, request: Request, response: Response
) -> list[OutputRead]:
    """The run's outputs in question order, a page at a time."""
    found = service.list_outputs(session, run_id, page.request("outputs"))
    return paged(request, response, "outputs", found)
