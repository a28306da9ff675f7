"""Indexing a dataset and retrieving chunks."""

from __future__ import annotations

from fastapi import APIRouter

from app.deps import CommittingRoute, DatasetId, ReadSessionDep, SessionDep, SettingsDep
from app.errors import responses
from app.resources import ResourcesDep
from services.rag import service
from services.rag.schemas import IndexJobRead, IndexRequest, RetrieveRequest, RetrieveResponse

router = APIRouter(tags=["retrieval"], route_class=CommittingRoute)


@router.post(
    "/datasets/{dataset_id}/index",
    status_code=202,
    response_model=IndexJobRead,
    responses=responses(404, 422),
)
def index_dataset(
    dataset_id: DatasetId, session: SessionDep, settings: SettingsDep, body: IndexRequest | None = None
) -> IndexJobRead:
    """Build chunks, the BM25 index and the dense index as a job; nothing is rebuilt when up to date."""
    return service.create_index_job(session, settings, dataset_id, (body or IndexRequest()).force)


@router.post(
    "/datasets/{dataset_id}/retrieve", response_model=RetrieveResponse, responses=responses(404, 409, 422)
)
def retrieve(
    dataset_id: DatasetId,
    body: RetrieveRequest,
    session: ReadSessionDep,
    settings: SettingsDep,
    resources: ResourcesDep,
) -> RetrieveResponse:
    """Ranked chunks with their document, exact character offsets, text and score."""
    return service.retrieve(session, settings, resources.indexes, dataset_id, body.query, body.k, body.mode)
