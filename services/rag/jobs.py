"""Job handlers: building a dataset's index part by part; answering a run's questions one by one."""

from __future__ import annotations

import time

from sqlalchemy.orm import Session

from services.datasets.service import get_dataset
from services.jobs.worker import JobContext
from services.models import Job, Output, Question, RetrievedChunk
from services.rag import index
from services.rag.llm import LLMError
from services.rag.service import generate_answer, retrieve
from services.runs.repository import RunRepository
from services.runs.service import get_run


class IndexHandler:
    batch_size = 1  # one part at a time, so progress moves chunks -> bm25 -> dense

    def process(self, ctx: JobContext, job: Job, keys: list[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        with ctx.session_factory() as session:
            for part in keys:
                index.build_part(session, ctx.settings, int(job.params["dataset_id"]), part)
                session.commit()
                out[part] = None
        return out


class GenerateHandler:
    batch_size = 4

    def process(self, ctx: JobContext, job: Job, keys: list[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        with ctx.session_factory() as session:
            run = get_run(session, int(job.params["run_id"]))
            language = get_dataset(session, run.dataset_id).language
            system = run.system or {}
            mode = system.get("retriever", "hybrid")
            k = int(system.get("k", 5))
            for key in keys:
                question = session.get(Question, int(key))
                if question is None:
                    out[key] = "missing: the question was deleted"
                    continue
                out[key] = self._one(
                    session, ctx, run.id, question, language, mode, k, system.get("generator")
                )
                session.commit()
        return out

    def _one(
        self,
        session: Session,
        ctx: JobContext,
        run_id: int,
        question: Question,
        language: str,
        mode: str,
        k: int,
        generator: str | None,
    ) -> str | None:
        t0 = time.perf_counter()
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
        repo = RunRepository(session)
        output = repo.output_for(run_id, question.id)
        if output is None:
            output = Output(run_id=run_id, question_id=question.id)
            repo.add(output)
        output.answer, output.error, output.generator = answer, error, info
        output.latency_ms = (time.perf_counter() - t0) * 1000
        doc_ids = {c.document_id for c in found.chunks}
        ids = _doc_ids(session, question.dataset_id, doc_ids)
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
        return error


def _doc_ids(session: Session, dataset_id: int, external: set[str]) -> dict[str, int]:
    from services.datasets.repository import DatasetRepository

    return {
        k: d.id for k, d in DatasetRepository(session).documents_by_external_id(dataset_id, external).items()
    }
