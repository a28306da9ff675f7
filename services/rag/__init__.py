"""The service's own RAG system: indexes per dataset, retrieval, generation, runs over a dataset."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.jobs.registry import JobHandlers


def register_job_handlers(registry: JobHandlers) -> None:
    """The handlers of index building and generation, made on their first batch."""
    registry.register("index", "services.rag.jobs:IndexHandler")
    registry.register("generate", "services.rag.jobs:GenerateHandler")
