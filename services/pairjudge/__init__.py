"""A pairwise judge over two runs of one dataset: each question's two answers judged in both orders (the
position and length probes of the stability report), as a job.

Importing this package loads no handler code; the job's handler is made on its first batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.jobs.registry import JobHandlers


def register_job_handlers(registry: JobHandlers) -> None:
    """The pairwise judging job's handler (``services.pairjudge.service:PairJudgingHandler``)."""
    registry.register("pair_judging", "services.pairjudge.service:PairJudgingHandler")
