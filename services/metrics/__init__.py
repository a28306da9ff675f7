"""Metrics behind one adapter interface, a lazy catalogue, and the scoring job.

Importing this package loads no metric library: adapters are ``"module:Class"`` targets imported on first
use, so the catalogue is readable in milliseconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.jobs.registry import JobHandlers


def register_job_handlers(registry: JobHandlers) -> None:
    """The scoring job's handler, made on its first batch (registering loads no metric code)."""
    registry.register("scoring", "services.metrics.scoring:ScoringHandler")
