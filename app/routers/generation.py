"""Answers from the service's RAG system: one question, or every question of a run's dataset."""

from __future__ import annotations

from fastapi import APIRouter

from app.deps import DatasetId, RunId, SessionDep, SettingsDep
from app.errors import responses
from services.jobs.service import JobRead
from services.rag import service
from services.rag.schemas import AnswerRequest, AnswerResponse, GenerateRequest

router = APIRouter(tags=["generation"])


@router.post(
    "/datasets/{dataset_id}/answer", response_model=AnswerResponse, responses=responses(404, 409, 422, 502)
)
def answer(
    dataset_id: DatasetId, body: AnswerRequest, session: SessionDep, settings: SettingsDep
) -> AnswerResponse:
    """Top-k chunks into the configured LLM, or the extractive baseline when no LLM is configured."""
    return service.answer(session, settings, dataset_id, body.question, body.k, body.mode)


@router.post(
    "/runs/{run_id}/generate", status_code=202, response_model=JobRead, responses=responses(404, 409, 422)
)
def generate(
    run_id: RunId, session: SessionDep, settings: SettingsDep, body: GenerateRequest | None = None
) -> JobRead:
    """Answer every question of the dataset with the run's system, as a resumable job."""
    return service.create_generate_job(session, settings, run_id, (body or GenerateRequest()).regenerate)
