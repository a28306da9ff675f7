"""Job handlers: building a dataset's index part by part; answering a run's questions one by one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy.orm import Session

from services.datasets.service import get_dataset
from services.jobs.registry import JobContext
from services.jobs.repository import JobRepository
from services.models import Output, Question, RetrievedChunk
from services.rag import index
from services.rag.index import IndexCache
from services.rag.llm import LLMClients, LLMError
from services.rag.service import generate_answer, retrieve
from services.runs.repository import RunRepository
from services.runs.service import get_run, lock_run


@contextmanager
def _resources(ctx: JobContext) -> Iterator[tuple[IndexCache, LLMClients]]:
    """The process's loaded indexes and generator clients; a worker without long-lived resources (tools,
    tests) gets this batch's own, closed when it ends."""
    indexes: IndexCache | None = getattr(ctx.resources, "indexes", None)
    llm: LLMClients | None = getattr(ctx.resources, "llm", None)
    if indexes is not None and llm is not None:
        yield indexes, llm
        return
    from services.metrics.resources import ScoringResources

    scoring = ScoringResources(ctx.settings, ctx.session_factory)
    own_indexes = IndexCache(ctx.settings.retrieval.max_loaded_indexes)
    own_llm = LLMClients(scoring, ctx.settings.generator.max_concurrency)
    try:
        yield own_indexes, own_llm
    finally:
        own_llm.close()
        own_indexes.clear()
        scoring.close()


class IndexHandler:
    batch_size = 1  # one part at a time, so progress moves chunks -> bm25 -> dense

    def process(self, ctx: JobContext, job_id: int, keys: list[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        with ctx.read_factory() as session:
            params = JobRepository(session).params(job_id)
        if params is None:
            return dict.fromkeys(keys, "missing: the job was deleted")
        dataset_id = int(params["dataset_id"])
        indexes: IndexCache | None = getattr(ctx.resources, "indexes", None)
        models = indexes.models if indexes is not None else None
        for part in keys:
            # Read the corpus and build (minutes) outside any write transaction; record the state briefly.
            with ctx.read_factory() as session:
                fp, directory, details = index.build_part_files(
                    session, ctx.settings, dataset_id, part, models
                )
            with ctx.session_factory() as session:
                index.record_part(session, dataset_id, part, fp, directory, details)
                session.commit()
            out[part] = None
        return out


class GenerateHandler:
    batch_size = 4

    def process(self, ctx: JobContext, job_id: int, keys: list[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        with ctx.read_factory() as session:
            params = JobRepository(session).params(job_id)
            if params is None:
                return dict.fromkeys(keys, "missing: the job was deleted")
            run = get_run(session, int(params["run_id"]))
            language = get_dataset(session, run.dataset_id).language
            questions = {key: session.get(Question, int(key)) for key in keys}
        system = run.system or {}
        mode = system.get("retriever", "hybrid")
        k = int(system.get("k", 5))
        with _resources(ctx) as (indexes, llm):
            for key, question in questions.items():
                if question is None:
                    out[key] = "missing: the question was deleted"
                    continue
                generator = system.get("generator")
                out[key] = self._one(ctx, indexes, llm, run.id, question, language, mode, k, generator)
        return out

    def _one(
        self,
        ctx: JobContext,
        indexes: IndexCache,
        llm: LLMClients,
        run_id: int,
        question: Question,
        language: str,
        mode: str,
        k: int,
        generator: str | None,
    ) -> str | None:
        t0 = time.perf_counter()
        with ctx.read_factory() as session:
            found = retrieve(
                session,
                ctx.settings,
                indexes,
                question.dataset_id,
                question.question,
                k,
                mode,  # type: ignore[arg-type]
            )
        error = None
        answer = None
        info: dict[str, object] = {}
        try:
            answer, gen, tokens = generate_answer(
                ctx.settings, llm, question.question, language, [c.text for c in found.chunks], generator
            )
            info = gen.model_dump(exclude_none=True)
            if tokens:
                info["tokens"] = tokens
        except LLMError as exc:
            error = str(exc)
            info = {"kind": "llm", "model": ctx.settings.generator.model}
        # The answer took seconds with no transaction open; it is stored in a short write transaction.
        with ctx.session_factory() as session:
            self._store(session, run_id, question, found, answer, error, info, t0)
            session.commit()
        return error

    def _store(
        self,
        session: Session,
        run_id: int,
        question: Question,
        found: Any,
        answer: str | None,
        error: str | None,
        info: dict[str, object],
        t0: float,
    ) -> None:
        lock_run(session, run_id)
        repo = RunRepository(session)
        output = repo.output_for(run_id, question.id)
        ids = _doc_ids(session, question.dataset_id, {c.document_id for c in found.chunks})
        if output is None:
            output = Output(run_id=run_id, question_id=question.id)
            repo.add(output)
        else:
            # What raters and metrics see, as for imported outputs: the answer and the chunks' spans and
            # texts in rank order (a retriever score that moved is not a new answer).
            old = [(c.document_id, c.start, c.end, c.text) for c in output.chunks]
            ranked = sorted(found.chunks, key=lambda c: c.rank)
            new = [(ids[c.document_id], c.start, c.end, c.text) for c in ranked]
            if (output.answer, old) != (answer, new):
                repo.retire_dependants([output.id])
        output.answer, output.error, output.generator = answer, error, info
        output.latency_ms = (time.perf_counter() - t0) * 1000
        repo.replace_chunks(
            output,
            [
                RetrievedChunk(
                    rank=c.rank,
                    document_id=ids[c.document_id],
                    start=c.start,
                    end=c.end,
                    text=c.text,
                    score=c.score,
                    location="given",
                )
                for c in found.chunks
            ],
        )


def _doc_ids(session: Session, dataset_id: int, external: set[str]) -> dict[str, int]:
    from services.datasets.repository import DatasetRepository

    return {
        k: d.id for k, d in DatasetRepository(session).documents_by_external_id(dataset_id, external).items()
    }
