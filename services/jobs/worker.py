"""The worker loop: claim a batch of items, run the job's handler on it, record the outcome.

Runs as a thread inside the API process (default) or as its own process (`ragmeta worker`); several
workers can share one database because items are claimed atomically under a lease that a background
heartbeat renews while the batch runs.
"""

from __future__ import annotations

import logging
import threading
import uuid

from sqlalchemy.orm import Session

from services.config import Settings
from services.jobs.registry import JobContext, JobHandler, WorkerResources
from services.jobs.repository import JobRepository
from services.logs import log_context
from services.models import Job, JobItem, utcnow

# Handlers and their context are defined with the registry; they are named here for the callers that build
# a worker (``JobContext(...)``, ``Worker(ctx)``).
__all__ = [
    "JobContext",
    "JobHandler",
    "Worker",
    "WorkerResources",
    "batch_size",
    "even_batches",
    "refresh_job",
    "run_batch",
]

log = logging.getLogger("ragmeta.worker")


def batch_size(settings: Settings, handler: JobHandler, items: int | None = None) -> int:
    """Items per batch of a job of ``items`` items (None: the handler's largest batch)."""
    size_for = getattr(handler, "batch_size_for", None)
    return int(size_for(settings, items)) if size_for is not None else handler.batch_size


def even_batches(items: int, workers: int, cap: int) -> int:
    """A batch size that cuts ``items`` into a multiple of ``workers`` batches of at most ``cap`` items, as
    equal as can be: every worker gets the same share of the job instead of one taking ``cap`` items and
    another the remainder (576 items, cap 512, two workers: 288 + 288, not 512 + 64)."""
    workers, cap = max(1, workers), max(1, cap)
    if items <= 0:
        return cap
    rounds = -(-items // (workers * cap))
    return -(-items // (workers * rounds))


def run_batch(ctx: JobContext, session: Session, job: Job, items: list[JobItem], token: str) -> bool:
    """Run the job's handler on items claimed under ``token`` and record each item's outcome; the batch's
    claim is renewed while it runs. True when every item ended (done or failed); False when the batch raised
    and some items went back to pending to be taken again (up to ``jobs.max_item_retries`` claims each)."""
    handler = ctx.handlers.get(job.kind)
    if job.status == "queued":
        job.status = "running"
        job.started_at = job.started_at or utcnow()
    keys = [i.key for i in items]
    # No transaction stays open while the batch runs (seconds to minutes).
    session.commit()
    with log_context(request_id=(job.params or {}).get("request_id"), job_id=job.id):
        log.info("job %s (%s): batch of %d items started", job.id, job.kind, len(keys))
        outcome = _run_with_heartbeat(ctx, handler, job, keys, token)
        failed = sum(1 for k in keys if outcome is None or outcome.get(k))
        log.info("job %s (%s): batch of %d items ended, %d failed", job.id, job.kind, len(keys), failed)
    ended = True
    for item in items:
        if outcome is None:
            exhausted = item.attempts >= ctx.settings.jobs.max_item_retries
            item.status = "failed" if exhausted else "pending"
            item.error = "exception: the batch failed repeatedly (see the service log)" if exhausted else None
            ended = ended and exhausted
        else:
            err = outcome.get(item.key)
            item.status = "failed" if err else "done"
            item.error = err
        item.worker_id = None
    session.commit()
    refresh_job(session, job)
    return ended


def _run_with_heartbeat(
    ctx: JobContext, handler: JobHandler, job: Job, keys: list[str], token: str
) -> dict[str, str | None] | None:
    done = threading.Event()
    lease_s = ctx.settings.jobs.lease_s

    def beat() -> None:
        while not done.wait(lease_s / 3):
            with ctx.session_factory() as s:
                JobRepository(s).renew(token)
                s.commit()

    beater = threading.Thread(target=beat, name=f"{token}-heartbeat", daemon=True)
    beater.start()
    try:
        return handler.process(ctx, job.id, keys)
    except Exception:
        log.exception("job %s (%s): a batch of %d items raised", job.id, job.kind, len(keys))
        return None
    finally:
        done.set()
        beater.join()


def refresh_job(session: Session, job: Job) -> None:
    """Copy the items' counts onto the job row; a job with nothing left to run is done."""
    session.refresh(job)
    counts = JobRepository(session).counts(job.id)
    job.done, job.failed = counts.get("done", 0), counts.get("failed", 0)
    job.heartbeat_at = utcnow()
    remaining = counts.get("pending", 0) + counts.get("claimed", 0)
    if remaining == 0 and job.status in ("queued", "running"):
        job.status = "done"
        job.finished_at = utcnow()
    session.commit()


class Worker:
    def __init__(self, ctx: JobContext, worker_id: str | None = None) -> None:
        self.ctx = ctx
        self.worker_id = worker_id or f"w-{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def lease_s(self) -> float:
        return self.ctx.settings.jobs.lease_s

    def run_once(self) -> bool:
        """Process one batch of one job; False when there was nothing to do."""
        session = self.ctx.session_factory()
        try:
            repo = JobRepository(session)
            job = repo.next_job_with_work(self.lease_s)
            if job is None:
                self._finish_idle_jobs(session)
                return False
            token = f"{self.worker_id}:{uuid.uuid4().hex[:8]}"
            size = batch_size(self.ctx.settings, self.ctx.handlers.get(job.kind), job.total)
            items = repo.claim(job.id, token, size, self.lease_s)
            # The claim is committed before the batch runs: other workers see these items taken.
            session.commit()
            if not items:
                return True
            run_batch(self.ctx, session, job, items, token)
            return True
        finally:
            session.close()

    def _finish_idle_jobs(self, session: Session) -> None:
        # A job whose last items were finished by a worker that died before updating the job row.
        for job in JobRepository(session).recent("running", limit=20):
            refresh_job(session, job)

    def run_forever(self, poll_s: float | None = None) -> None:
        poll = poll_s if poll_s is not None else self.ctx.settings.jobs.poll_interval_s
        log.info("worker %s started", self.worker_id)
        worked = False
        while not self._stop.is_set():
            try:
                busy = self.run_once()
            except Exception:
                log.exception("worker %s: loop error", self.worker_id)
                busy = False
            worked = worked or busy
            if not busy:
                self.release_idle(trim=worked)
                worked = False
                self._stop.wait(poll)

    def release_idle(self, trim: bool = False) -> None:
        """Nothing to do: release the models no batch has used for ``jobs.model_idle_s``; after work
        (``trim``), also the memory the batches freed."""
        resources = self.ctx.resources
        if resources is None:
            return
        try:
            gone = resources.release_models(self.ctx.settings.jobs.model_idle_s, trim)
        except Exception:
            log.exception("worker %s: releasing idle models failed", self.worker_id)
            return
        if gone:
            log.info("worker %s released %d idle model(s)", self.worker_id, len(gone))

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run_forever, name=self.worker_id, daemon=True)
        self._thread.start()

    def request_stop(self) -> None:
        """Stop after the batch in progress (signal-safe: only sets a flag)."""
        self._stop.set()

    @property
    def stopping(self) -> threading.Event:
        return self._stop

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def drain(self, max_batches: int = 100_000) -> int:
        """Process until no work is left (tests, CLI one-shot). Returns the number of batches run."""
        n = 0
        while n < max_batches and self.run_once():
            n += 1
        return n
