"""Answers from the service's RAG system: one question, or every question of a run's dataset."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request

from app.deps import CommittingRoute, DatasetId, RunId, SessionDep, SettingsDep, run_in_session
from app.errors import responses
from app.resources import ResourcesDep
from services.rag import service
from services.rag.schemas import AnswerRequest, AnswerResponse, GenerateJobRead, GenerateRequest

router = APIRouter(tags=["generation"], route_class=CommittingRoute)


@router.post(
    "/datasets/{dataset_id}/answer", response_model=AnswerResponse, responses=responses(404, 409, 422, 502)
)
async def answer(
    dataset_id: DatasetId,
    body: AnswerRequest,
    request: Request,
    settings: SettingsDep,
    resources: ResourcesDep,
) -> AnswerResponse:
    """Top-k chunks into the configured LLM, or the extractive baseline when no LLM is configured."""
    indexes = resources.indexes
    context = await run_in_session(
        request,
        service.answer_context,
        settings,
        indexes,
        dataset_id,
        body.question,
        body.k,
        body.mode,
        read=True,
    )
    # Threads of their own (the limiter's), so that answers waiting on the LLM never take the threads
    # database work needs.
    return await anyio.to_thread.run_sync(
        service.answer_from, settings, resources.llm, body.question, context, limiter=resources.answer_limiter
    )


@router.post(
    "/runs/{run_id}/generate",
    status_code=202,
    response_model=GenerateJobRead,
    responses=responses(404, 409, 422),
)
def generate(
    run_id: RunId, session: SessionDep, settings: SettingsDep, body: GenerateRequest | None = None
) -> GenerateJobRead:
    """Answer every question of the dataset with the run's system, as a resumable job."""
    return service.create_generate_job(session, settings, run_id, (body or GenerateRequest()).regenerate)
