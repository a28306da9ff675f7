"""Retrieval and answers over a dataset, and the jobs that index a dataset or generate a run's outputs.

With no LLM configured, the extractive baseline answers (best-matching sentences of the chunks, or
"I don't know" under a relevance threshold) and says so in ``generator``; it is never an error.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy.orm import Session

from services.config import Settings
from services.datasets.repository import DatasetRepository
from services.datasets.service import get_dataset
from services.errors import InvalidItems, ItemError, UpstreamError
from services.jobs.service import create_job, job_read, typed
from services.rag import index
from services.rag.index import IndexCache
from services.rag.llm import LLMClients, LLMError
from services.rag.prompts import build_messages
from services.rag.schemas import (
    AnswerResponse,
    GenerateJobRead,
    GeneratorInfo,
    IndexJobRead,
    Mode,
    RetrievedChunkOut,
    RetrieveResponse,
)
from services.retrieval import extractive_answer
from services.runs.repository import RunRepository
from services.runs.service import get_run


def retrieve(
    session: Session,
    settings: Settings,
    indexes: IndexCache,
    dataset_id: int,
    query: str,
    k: int,
    mode: Mode,
) -> RetrieveResponse:
    """Top-k chunks, from the index loaded in ``indexes`` (or read into it); raises Conflict when the dataset
    is not indexed for ``mode``."""
    loaded = index.load(session, settings, dataset_id, mode, indexes)
    hits = loaded.retriever.retrieve(query, k, mode)
    chunks = []
    for h in hits:
        c = loaded.chunks[h.chunk_idx]
        chunks.append(
            RetrievedChunkOut(
                rank=h.rank,
                document_id=c.document_external_id,
                start=c.start,
                end=c.end,
                text=c.text,
                score=h.score,
            )
        )
    return RetrieveResponse(mode=mode, k=k, chunks=chunks)


def generate_answer(
    settings: Settings,
    llm: LLMClients,
    question: str,
    language: str,
    chunks: list[str],
    generator: str | None = None,
) -> tuple[str, GeneratorInfo, dict[str, int | None] | None]:
    """Answer from ranked chunk texts with the LLM (when configured, or when ``generator == "llm"``), through
    its client in ``llm``, or the extractive baseline. Raises LLMError when the LLM fails after its
    retries."""
    use_llm = generator == "llm" or (generator is None and settings.generator.configured)
    if use_llm:
        result = llm.get(settings.generator).chat(build_messages(question, chunks, language))
        tokens = {"prompt": result.prompt_tokens, "completion": result.completion_tokens}
        return result.text, GeneratorInfo(kind="llm", model=result.model), tokens
    ans = extractive_answer(question, language, chunks, threshold=settings.generator.extractive_threshold)
    return ans.answer, GeneratorInfo(kind="extractive", declined=ans.declined), None


@dataclass(frozen=True)
class AnswerContext:
    """What an answer needs from the store, read in a transaction that ends before the LLM is called."""

    language: str
    found: RetrieveResponse
    started: float


def answer_context(
    session: Session,
    settings: Settings,
    indexes: IndexCache,
    dataset_id: int,
    question: str,
    k: int,
    mode: Mode,
) -> AnswerContext:
    dataset = get_dataset(session, dataset_id)
    started = time.perf_counter()
    found = retrieve(session, settings, indexes, dataset_id, question, k, mode)
    return AnswerContext(dataset.language, found, started)


def answer_from(settings: Settings, llm: LLMClients, question: str, context: AnswerContext) -> AnswerResponse:
    """The answer to ``question`` from the retrieved chunks: no database work (an LLM call can take
    seconds, and no connection or transaction waits on it)."""
    found = context.found
    try:
        text, info, tokens = generate_answer(
            settings, llm, question, context.language, [c.text for c in found.chunks]
        )
    except LLMError as exc:
        raise UpstreamError(f"the generator LLM failed: {exc}") from exc
    return AnswerResponse(
        answer=text,
        chunks=found.chunks,
        generator=info,
        latency_ms=(time.perf_counter() - context.started) * 1000,
        tokens=tokens,
    )


def create_index_job(session: Session, settings: Settings, dataset_id: int, force: bool) -> IndexJobRead:
    get_dataset(session, dataset_id)
    if not DatasetRepository(session).documents(dataset_id):
        raise InvalidItems("the dataset has no documents to index", [ItemError(None, "documents", "empty")])
    fresh = index.up_to_date(session, settings, dataset_id)
    keys = [] if fresh and not force else list(index.PARTS)
    fp, config = index.fingerprint(session, settings, dataset_id)
    summary = {"fingerprint": fp, "up_to_date": fresh and not force, **config}
    job = create_job(
        session, "index", {"dataset_id": dataset_id, "force": force}, keys, summary, settings=settings
    )
    return typed(job_read(session, job), IndexJobRead)


def create_generate_job(
    session: Session, settings: Settings, run_id: int, regenerate: bool
) -> GenerateJobRead:
    """Answer every question of the run's dataset; questions with an output (not in error) are skipped."""
    run = get_run(session, run_id)
    system = run.system or {}
    mode = system.get("retriever", "hybrid")
    if mode not in index.NEEDS:
        raise InvalidItems(
            f"run {run_id} uses retriever {mode!r}, which the service cannot run",
            [
                ItemError(
                    None, "system.retriever", "must be hybrid, bm25 or dense to generate with the service"
                )
            ],
        )
    if system.get("generator") == "llm" and not settings.generator.configured:
        raise InvalidItems(
            "the run asks for an LLM generator but none is configured",
            [
                ItemError(
                    None, "system.generator", "set RAGMETA_GENERATOR__BASE_URL and RAGMETA_GENERATOR__MODEL"
                )
            ],
        )
    index.require(session, settings, run.dataset_id, mode)  # 409 now rather than failures later
    existing = RunRepository(session).outputs_by_question(run_id)
    questions = DatasetRepository(session).questions(run.dataset_id)
    keys = [
        str(q.id) for q in questions if regenerate or q.id not in existing or existing[q.id].error is not None
    ]
    summary = {"skipped_existing": len(questions) - len(keys), "questions": len(questions)}
    job = create_job(
        session, "generate", {"run_id": run_id, "regenerate": regenerate}, keys, summary, settings=settings
    )
    return typed(job_read(session, job), GenerateJobRead)
