"""Job batches through procrastinate on PostgreSQL: workers on any machine that reaches the database.

A job stays what the API shows (``job`` and ``job_item`` rows: progress, per-item errors, cancel, resume); on
PostgreSQL its items are cut into batches when it is created or resumed, and each batch is a procrastinate job
(task ``ragmeta.batch``, queue ``ragmeta``) deferred **in the transaction that creates the job**, so a worker
never sees a batch of an uncommitted job and a committed job always has its batches. Any ``ragmeta worker``
(and the API's embedded workers) runs a procrastinate worker that takes one batch at a time.

What procrastinate gives, and how it is used:

- worker heartbeats (``procrastinate_workers``, every ``jobs.lease_s / 3``) and stalled-job recovery: every
  worker sweeps, every ``jobs.lease_s / 2``, for batches held by workers silent for ``jobs.lease_s`` (killed,
  frozen, partitioned) whose items' claim has not been renewed for as long either, and puts them back in the
  queue (``retry_job``); the batch runs again under the same procrastinate job id, so it takes its own
  half-done items back (its claim token is that id);
- retries: a batch whose handler raised is retried after a pause until its items have been tried
  ``jobs.max_item_retries`` times, then they fail with the cause; a batch that failed around its handler
  (the database unreachable while claiming or recording) is retried too, with a growing pause;
- cancellation stays ours (``POST /jobs/{id}/cancel``): a batch of a cancelled job gives its items back
  unstarted and ends; a resume defers new batches for what is left. The batch running when the job is
  cancelled finishes, as before;
- the ``procrastinate`` command line for operators (``procrastinate --app=services.jobs.queue.app ...``: list
  jobs and workers, healthchecks).

Exactly-once results do not rest on the queue: a batch run twice (a worker presumed dead that was not) writes
through the handlers' idempotent writes and the unique keys of scores and outputs, as with the lease loop.

SQLite keeps the lease loop of ``services.jobs.worker`` (one process, no extra server).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from services.config import Settings
from services.jobs.connection import conninfo, uses_queue
from services.jobs.registry import JobContext, process_handlers
from services.jobs.repository import JobRepository

if TYPE_CHECKING:
    import procrastinate
    from procrastinate.types import JSONValue

    from services.jobs.worker import Worker

log = logging.getLogger("ragmeta.worker")

QUEUE = "ragmeta"
TASK = "ragmeta.batch"
RUNNABLE = ("queued", "running")
# Pause before a batch whose handler raised runs again.
RETRY_WAIT_S = 2


class BatchRetry(Exception):
    """The batch's handler raised; its items went back to pending and the batch is run again later."""


def token_of(queue_job_id: int) -> str:
    return f"queue-{queue_job_id}"


# ------------------------------------------------------------------------------------------------ dispatch
def batches(ids: list[int], size: int) -> list[tuple[int, int]]:
    """Contiguous id ranges of at most ``size`` items (the ids in claim order)."""
    size = max(1, size)
    return [(ids[i], ids[min(i + size, len(ids)) - 1]) for i in range(0, len(ids), size)]


def dispatch(session: Session, settings: Settings, job_id: int, kind: str) -> int:
    """Defer the job's items left as procrastinate batches (``batch_size`` for that many items: an equal
    share per worker), in the session's transaction. Returns the number of batches. The kind's handler
    must be registered in this process (UnknownJobKind otherwise)."""
    from services.jobs.worker import batch_size

    ids = JobRepository(session).claimable_ids(job_id, settings.jobs.lease_s)
    ranges = batches(ids, batch_size(settings, process_handlers.get(kind), len(ids)))
    if not ranges:
        return 0
    # The ORM session's own psycopg connection, inside its open transaction.
    connection = session.connection().connection.driver_connection
    deferrer = build_app(settings).configure_task(TASK, queue=QUEUE, connection=connection)
    kwargs: list[dict[str, JSONValue]] = [{"job_id": job_id, "first": a, "last": b} for a, b in ranges]
    deferrer.batch_defer(*kwargs)
    return len(ranges)


# --------------------------------------------------------------------------------------------- the task
def run_batch_task(ctx: JobContext, queue_job_id: int, job_id: int, first: int, last: int) -> str:
    """The body of one ``ragmeta.batch``: claim the range's items, run them, record their outcomes."""
    from services.jobs.worker import refresh_job, run_batch

    token = token_of(queue_job_id)
    session = ctx.session_factory()
    try:
        repo = JobRepository(session)
        job = repo.get(job_id)
        if job is None:
            return "job deleted"
        if job.status not in RUNNABLE:
            # Cancelled (or finished): what this batch held goes back, for a resume to take.
            released = repo.release(token)
            session.commit()
            return f"job {job.status}, {released} items given back"
        items = repo.claim_range(job_id, first, last, token, ctx.settings.jobs.lease_s)
        # The claim is committed before the batch runs: the stalled sweep sees it live.
        session.commit()
        if not items:
            # Also a batch run again after it recorded its items but not the job's counts.
            refresh_job(session, job)
            return "nothing left"
        if not run_batch(ctx, session, job, items, token):
            raise BatchRetry(f"job {job_id}: items {first}..{last} go back to pending")
        return f"{len(items)} items"
    finally:
        session.close()


def build_app(settings: Settings, ctx: JobContext | None = None) -> procrastinate.App:
    """A procrastinate app on the settings' database with the batch task; ``ctx`` runs the batches (workers
    only: deferring needs none)."""
    import procrastinate

    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(
            conninfo=conninfo(settings.database_url), min_size=1, max_size=4
        )
    )
    # Every failure is retried, the pause growing by RETRY_WAIT_S each time: a handler that raised
    # (BatchRetry), and a batch that failed around it (the database gone for a moment while claiming or
    # recording), whose claimed items only this batch takes back (its token). No bound on the queue's side:
    # the items' own attempts decide when a batch gives up (run_batch), and a batch put back by the stalled
    # sweep counts as an attempt here too.
    retry = procrastinate.RetryStrategy(wait=RETRY_WAIT_S, linear_wait=RETRY_WAIT_S)

    @app.task(name=TASK, queue=QUEUE, pass_context=True, retry=retry)
    def batch(context: procrastinate.JobContext, job_id: int, first: int, last: int) -> str:
        if ctx is None:
            raise RuntimeError("this procrastinate app defers batches; it does not run them")
        assert context.job.id is not None
        return run_batch_task(ctx, context.job.id, job_id, first, last)

    return app


def __getattr__(name: str) -> Any:
    # `procrastinate --app=services.jobs.queue.app ...`: the command line on the configured database.
    if name == "app":
        from services.config import Settings as _Settings

        return build_app(_Settings())
    raise AttributeError(name)


# ------------------------------------------------------------------------------------------- the worker
class QueueWorker:
    """A procrastinate worker (one batch at a time) plus the stalled-batch sweeper, on an event loop of its
    own; the same interface as the lease ``Worker`` (start/stop in a thread, ``run_forever``, ``drain``)."""

    def __init__(self, ctx: JobContext, worker_id: str | None = None) -> None:
        import uuid

        self.ctx = ctx
        self.worker_id = worker_id or f"w-{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: Any = None
        self.batches = 0

    @property
    def lease_s(self) -> float:
        return self.ctx.settings.jobs.lease_s

    async def _main(self, wait: bool) -> None:
        app = build_app(self.ctx.settings, self.ctx)
        lease = self.lease_s

        async with app.open_async():
            worker = app._worker(
                queues=[QUEUE],
                name=self.worker_id,
                concurrency=1,
                wait=wait,
                install_signal_handlers=False,
                update_heartbeat_interval=lease / 3,
                stalled_worker_timeout=lease,
                fetch_job_polling_interval=max(0.2, self.ctx.settings.jobs.poll_interval_s * 4),
                abort_job_polling_interval=lease,
                delete_jobs="successful",
                worker_middleware=[self._count],
            )
            self._worker = worker
            self._loop = asyncio.get_running_loop()
            if self._stop.is_set():
                return
            sweeper = asyncio.create_task(self._sweep_forever(app)) if wait else None
            try:
                await worker.run()  # type: ignore[no-untyped-call]
            finally:
                if sweeper is not None:
                    sweeper.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await sweeper

    async def _count(self, call_next: Any, context: Any, worker: Any) -> Any:
        try:
            return await call_next()
        finally:
            self.batches += 1

    async def sweep(self, app: procrastinate.App) -> int:
        """Put back in the queue the batches held by workers silent for ``lease_s``; the number put back."""
        import procrastinate

        stalled = await app.job_manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=self.lease_s)
        n = 0
        for job in stalled:
            assert job.id is not None
            if await asyncio.to_thread(self._still_beating, job.id):
                continue
            try:
                await app.job_manager.retry_job(job)
            except procrastinate.exceptions.ConnectorException:
                continue  # another worker put it back first
            log.warning(
                "worker %s: batch %s of a silent worker put back in the queue", self.worker_id, job.id
            )
            n += 1
        return n

    def _still_beating(self, queue_job_id: int) -> bool:
        # The batch renews its items' claim from a thread of its own while it runs: a worker whose queue
        # heartbeat is late (its event loop held up, e.g. by a long import) but whose batch still beats is
        # alive, and its batch is left alone.
        with self.ctx.session_factory() as s:
            return JobRepository(s).holds_live_claim(token_of(queue_job_id), self.lease_s)

    async def _sweep_forever(self, app: procrastinate.App) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 2 * (0.75 + random.random() / 2))
            try:
                await self.sweep(app)
            except Exception:
                log.exception("worker %s: the stalled-batch sweep failed", self.worker_id)

    def run_forever(self) -> None:
        log.info("worker %s started (procrastinate, queue %s)", self.worker_id, QUEUE)
        asyncio.run(self._main(wait=True))

    def drain(self) -> int:
        """Run batches until the queue is empty (tests, `ragmeta worker --once`); the number run."""
        before = self.batches
        asyncio.run(self._main(wait=False))
        return self.batches - before

    def request_stop(self) -> None:
        """Stop after the batch in progress (signal-safe: only sets a flag and wakes the loop)."""
        self._stop.set()
        loop, worker = self._loop, self._worker
        if loop is not None and worker is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(worker.stop)

    @property
    def stopping(self) -> threading.Event:
        return self._stop

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run_forever, name=self.worker_id, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout)


def make_worker(ctx: JobContext, worker_id: str | None = None) -> Worker | QueueWorker:
    """The worker for the context's database: procrastinate's on PostgreSQL, the lease loop on SQLite."""
    from services.jobs.worker import Worker

    if uses_queue(ctx.settings.database_url):
        return QueueWorker(ctx, worker_id)
    return Worker(ctx, worker_id)
