"""Job handlers: building a dataset's index part by part; answering a run's questions one by one."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy.orm import Session

from services.datasets.service import get_dataset
from services.jobs.registry import JobContext
from services.jobs.repository import JobRepository
from services.models import Output, Question, RetrievedChunk
from services.rag import index
from services.rag.llm import LLMError
from services.rag.service import generate_answer, retrieve
from services.runs.repository import RunRepository
from services.runs.service import get_run, lock_run


class IndexHandler:
    batch_size = 1  # one part at a time, so progress moves chunks -> bm25 -> dense

    def process(self, ctx: JobContext, job_id: int, keys: list[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        with ctx.read_factory() as session:
            params = JobRepository(session).params(job_id)
        if params is None:
            return dict.fromkeys(keys, "missing: the job was deleted")
        dataset_id = int(params["dataset_id"])
        for part in keys:
            # Read the corpus and build (minutes) outside any write transaction; record the state briefly.
            with ctx.read_factory() as session:
                fp, directory, details = index.build_part_files(session, ctx.settings, dataset_id, part)
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
        for key, question in questions.items():
            if question is None:
                out[key] = "missing: the question was deleted"
                continue
            out[key] = self._one(ctx, run.id, question, language, mode, k, system.get("generator"))
        return out

    def _one(
        self,
        ctx: JobContext,
        run_id: int,
        question: Question,
        language: str,
        mode: str,
        k: int,
        generator: str | None,
    ) -> str | None:
        t0 = time.perf_counter()
        with ctx.read_factory() as session:
            found = retrieve(session, ctx.settings, question.dataset_id, question.question, k, mode)  # type: ignore[arg-type]
        error = None
        answer = None
        info: dict[str, object] = {}
        try:
            answer, gen, tokens = generate_answer(
                ctx.settings, question.question, language, [c.text for c in found.chunks], generator
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
