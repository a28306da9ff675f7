"""What a worker runs jobs with: every domain's job handlers, and the resources of a worker process.

The jobs package knows no domain; the composition layer, above them all, is where they meet. Every process
that runs jobs registers the handlers before its first job: opening its ``Resources`` does (the API, ``ragmeta
worker``, the demo, a spawned worker process in ``worker_runtime``), and the API's module on import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field, TypeAdapter

from services.jobs.service import JobRead
from services.metrics.schemas import ScoringJobRead
from services.pairjudge.schemas import PairJudgingJobRead
from services.rag.schemas import GenerateJobRead, IndexJobRead

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from services.config import Settings
    from services.resources import Resources


# Every registered kind's typed read, told apart by ``kind``: the API's job schema. A kind registered in
# services.resources.register_job_handlers has its read here.
AnyJobRead = ScoringJobRead | PairJudgingJobRead | IndexJobRead | GenerateJobRead
JobKindRead = Annotated[AnyJobRead, Field(discriminator="kind")]
_JOB_KIND_READ: TypeAdapter[AnyJobRead] = TypeAdapter(JobKindRead)


def job_kind_read(read: JobRead) -> AnyJobRead:
    """``read`` as its kind's typed model (ValidationError for a kind no domain reads)."""
    return _JOB_KIND_READ.validate_python(read.model_dump())


def worker_runtime(
    settings: Settings, session_factory: sessionmaker[Session], gateway_url: str | None
) -> Resources:
    """The start-up of a spawned worker process (``services.jobs.processes.WorkerRuntime``): the handlers
    registered, the judge libraries imported when a judge is configured (before any batch: a batch
    importing openai while a background thread did the same failed with ``KeyError: 'openai.types'``),
    and the process's resources (scoring, indexes, generator clients), its judge calls going through
    ``gateway_url``."""
    from services.resources import Resources

    if settings.judge.configured:
        from services.metrics.judges.preload import preload

        preload()
    return Resources.open(settings, session_factory=session_factory, gateway_url=gateway_url)
