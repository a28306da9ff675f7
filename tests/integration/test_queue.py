"""Jobs through procrastinate on PostgreSQL: batches deferred with the job (same transaction), run by queue
workers, recovered from a silent worker, cancelled and resumed; SQLite keeps the lease loop.

The PostgreSQL tests are skipped on SQLite, where there is no queue (``test_sqlite_keeps_the_lease_loop``
checks that side); CI runs the suite on both databases, so they run in its PostgreSQL leg.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, text

from services.jobs.queue import QUEUE, TASK, QueueWorker, batches, make_worker, token_of, uses_queue
from services.jobs.repository import JobRepository
from services.jobs.worker import JobContext, Worker
from services.models import JobItem, MetricScore
from tests.api.helpers import load_mini
from tests.api.test_outputs import make_run, native_outputs
from tests.conftest import Live

PG = (os.environ.get("RAGMETA_TEST_DATABASE_URL") or "").startswith("postgresql")
pg_only = pytest.mark.skipif(
    not PG, reason="PostgreSQL only: SQLite has no queue (test_sqlite_keeps_the_lease_loop covers it)"
)
METRICS = ["classic.bleu", "ref.word_recall", "classic.rouge_l"]


def _ctx(client: TestClient) -> JobContext:
    res: Any = client.app.state.resources  # type: ignore[attr-defined]
    return JobContext(res.session_factory, res.settings, res.core)


def _scoring_job(client: TestClient, batch_size: int) -> dict[str, Any]:
    client.app.state.resources.settings.jobs.scoring_batch_size = batch_size  # type: ignore[attr-defined]
    run = make_run(client, load_mini(client))
    assert client.post(f"/runs/{run}/outputs", json=native_outputs()).status_code == 200
    r = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": METRICS})
    assert r.status_code == 202, r.text
    job: dict[str, Any] = r.json()
    job["run"] = run
    return job


def _queue(engine: Engine) -> list[tuple[int, str, dict[str, Any]]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT id, status::text, args FROM procrastinate_jobs WHERE task_name = :t ORDER BY id"),
            {"t": TASK},
        ).all()
    return [(int(i), str(s), dict(a)) for i, s, a in rows]


def _scores(engine: Engine) -> list[tuple[int, str]]:
    with engine.connect() as conn:
        return [(int(o), str(m)) for o, m in conn.execute(select(MetricScore.output_id, MetricScore.metric))]


def test_batches_are_contiguous_ranges() -> None:
    assert batches([], 3) == []
    assert batches([5, 6, 9, 10, 11], 2) == [(5, 6), (9, 10), (11, 11)]
    assert batches([1, 2, 3], 10) == [(1, 3)]
    assert batches([1, 2], 0) == [(1, 1), (2, 2)]


def test_sqlite_keeps_the_lease_loop(client: TestClient, database_url: str) -> None:
    worker = make_worker(_ctx(client))
    if PG:
        assert uses_queue(database_url) and isinstance(worker, QueueWorker)
    else:
        assert not uses_queue(database_url) and type(worker) is Worker
    assert uses_queue("postgresql+psycopg://u@h/db") and not uses_queue("sqlite:///x.db")


@pg_only
def test_a_job_is_deferred_with_its_batches_and_a_queue_worker_runs_them(
    client: TestClient, engine: Engine
) -> None:
    job = _scoring_job(client, batch_size=2)
    total = job["total"]
    assert total == 2 * len(METRICS)
    queued = _queue(engine)
    # one batch per 2 items, covering every item once, in the same order as the items
    assert len(queued) == (total + 1) // 2 and all(status == "todo" for _, status, _ in queued)
    with engine.connect() as conn:
        ids = list(conn.scalars(select(JobItem.id).where(JobItem.job_id == job["id"]).order_by(JobItem.id)))
    covered = [i for _, _, a in queued for i in ids if a["first"] <= i <= a["last"]]
    assert covered == ids and {a["job_id"] for _, _, a in queued} == {job["id"]}

    ran = QueueWorker(_ctx(client), "q-test").drain()
    assert ran == len(queued)
    final = client.get(f"/jobs/{job['id']}").json()
    assert (final["status"], final["done"], final["failed"], final["pending"]) == ("done", total, 0, 0)
    rows = _scores(engine)
    assert len(rows) == total == len(set(rows))
    assert _queue(engine) == []  # succeeded batches are deleted by the worker


@pg_only
def test_a_job_rolled_back_leaves_no_batch(client: TestClient, engine: Engine) -> None:
    from services.jobs.service import create_job

    settings = client.app.state.resources.settings  # type: ignore[attr-defined]
    with client.app.state.resources.session_factory() as s:  # type: ignore[attr-defined]
        create_job(s, "generate", {"run_id": 0}, ["1", "2"], {}, settings=settings)
        assert len(_queue(engine)) == 0  # not visible outside the transaction
        s.rollback()
    assert _queue(engine) == []


@pg_only
def test_a_batch_of_a_silent_worker_is_put_back_and_finished_once(client: TestClient, engine: Engine) -> None:
    import asyncio

    from services.jobs.queue import build_app

    job = _scoring_job(client, batch_size=3)  # 6 items: two batches of 3
    ctx = _ctx(client)
    app = build_app(ctx.settings, ctx)

    async def take_batch_and_die() -> int:
        """A worker registers, fetches a batch and claims its items, then falls silent (its heartbeat
        ages past the lease) — what a SIGKILL leaves behind."""
        async with app.open_async():
            worker_id = await app.job_manager.register_worker()
            fetched = await app.job_manager.fetch_job(queues=[QUEUE], worker_id=worker_id)
            assert fetched is not None and fetched.id is not None
            with ctx.session_factory() as s:
                args = fetched.task_kwargs
                items = JobRepository(s).claim_range(
                    job["id"], int(args["first"]), int(args["last"]), token_of(fetched.id), 30
                )
                s.commit()  # as a worker does: the repository leaves the claim's commit to its caller
                assert len(items) == 3
            await app.connector.execute_query_async(
                "UPDATE procrastinate_workers SET last_heartbeat = now() - interval '1 hour' "
                "WHERE id = %(w)s",
                w=worker_id,
            )
            return int(fetched.id)

    dead = asyncio.run(take_batch_and_die())
    worker = QueueWorker(ctx, "q-rescuer")
    worker.drain()  # takes every other batch; the dead one is still "doing"
    assert [s for i, s, _ in _queue(engine) if i == dead] == ["doing"]
    progress = client.get(f"/jobs/{job['id']}").json()
    assert progress["status"] == "running" and progress["pending"] == 3

    async def sweep() -> int:
        async with app.open_async():
            return await worker.sweep(app)

    # The worker's queue heartbeat is old but its batch still renews its items' claim: alive, left alone.
    assert asyncio.run(sweep()) == 0
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE job_item SET claimed_at = now() - interval '1 hour' WHERE worker_id = :t"),
            {"t": token_of(dead)},
        )
    assert asyncio.run(sweep()) == 1
    assert asyncio.run(sweep()) == 0  # once back in the queue it is not stalled any more
    assert worker.drain() == 1
    final = client.get(f"/jobs/{job['id']}").json()
    assert (final["status"], final["done"], final["failed"]) == ("done", job["total"], 0)
    rows = _scores(engine)
    assert len(rows) == job["total"] == len(set(rows))
    with engine.connect() as conn:
        by_attempts = select(JobItem.attempts, func.count()).where(JobItem.job_id == job["id"])
        attempts = dict(conn.execute(by_attempts.group_by(JobItem.attempts)).all())
    assert attempts == {1: job["total"] - 3, 2: 3}  # the dead batch's items were taken twice, the others once


@pg_only
def test_cancel_then_resume_through_the_queue(client: TestClient, engine: Engine) -> None:
    job = _scoring_job(client, batch_size=2)
    assert client.post(f"/jobs/{job['id']}/cancel").json()["status"] == "cancelled"
    ctx = _ctx(client)
    QueueWorker(ctx, "q-test").drain()  # the batches of a cancelled job end without running their items
    after = client.get(f"/jobs/{job['id']}").json()
    assert (after["status"], after["done"], after["pending"]) == ("cancelled", 0, job["total"])
    assert _scores(engine) == [] and _queue(engine) == []

    resumed = client.post(f"/jobs/{job['id']}/resume")
    assert resumed.status_code == 200 and resumed.json()["status"] == "queued"
    assert len(_queue(engine)) == (job["total"] + 1) // 2
    QueueWorker(ctx, "q-test").drain()
    final = client.get(f"/jobs/{job['id']}").json()
    assert (final["status"], final["done"], final["failed"]) == ("done", job["total"], 0)
    rows = _scores(engine)
    assert len(rows) == job["total"] == len(set(rows))


@pg_only
def test_a_failing_batch_is_retried_by_the_queue_then_its_items_fail(
    client: TestClient, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.metrics import scoring

    calls: list[int] = []

    def broken(self: Any, ctx: Any, job: Any, keys: list[str]) -> Any:
        calls.append(len(keys))
        raise RuntimeError("boom")

    monkeypatch.setattr(scoring.ScoringHandler, "process", broken)
    settings = client.app.state.resources.settings  # type: ignore[attr-defined]
    settings.jobs.max_item_retries = 2
    job = _scoring_job(client, batch_size=100)
    monkeypatch.setattr("services.jobs.queue.RETRY_WAIT_S", 0)
    QueueWorker(_ctx(client), "q-test").drain()
    final = client.get(f"/jobs/{job['id']}").json()
    assert calls == [job["total"], job["total"]]  # tried, retried by the queue, then given up
    assert (final["status"], final["done"], final["failed"]) == ("done", 0, job["total"])
    assert set(final["errors_by_cause"]) == {"exception"}
    assert _queue(engine) == []


@pg_only
def test_a_batch_that_failed_around_its_handler_is_retried_and_takes_its_items_back(
    client: TestClient, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database fails once while a batch records its outcomes (after its items were claimed): the queue
    retries the batch, which takes back its own claimed items and finishes the job with each score once."""
    from services.jobs import worker as worker_module

    original = worker_module.refresh_job
    failures: list[int] = []

    def flaky(session: Any, job: Any) -> None:
        if not failures:
            failures.append(job.id)
            raise RuntimeError("connection reset while recording")
        original(session, job)

    monkeypatch.setattr(worker_module, "refresh_job", flaky)
    monkeypatch.setattr("services.jobs.queue.RETRY_WAIT_S", 0)
    job = _scoring_job(client, batch_size=100)
    QueueWorker(_ctx(client), "q-test").drain()
    final = client.get(f"/jobs/{job['id']}").json()
    assert failures == [job["id"]]
    assert (final["status"], final["done"], final["failed"], final["pending"]) == ("done", job["total"], 0, 0)
    rows = _scores(engine)
    assert len(rows) == job["total"] == len(set(rows))
    assert _queue(engine) == []


@pg_only
async def test_concurrent_job_creation_defers_each_jobs_batches_exactly(
    live_server: Live, engine: Engine
) -> None:
    """Load on the new write path: many clients create scoring jobs (and cancel/resume some) at once; every
    answer is 2xx and every job's batches cover its pending items exactly once."""
    import asyncio

    import httpx

    clients, metrics = 16, ["classic.bleu", "classic.rouge_l", "classic.rouge_lsum"]
    async with httpx.AsyncClient(base_url=live_server.url, headers=live_server.headers, timeout=120) as c:
        ds = (await c.post("/datasets", json={"name": "load", "language": "fr"})).json()["id"]
        doc = [{"external_id": "d", "text": " ".join(f"Phrase {i}." for i in range(50))}]
        assert (await c.post(f"/datasets/{ds}/documents", json=doc)).status_code == 200
        qs = [{"external_id": f"q{i}", "question": f"Q{i}?", "reference_answer": f"R{i}."} for i in range(50)]
        assert (await c.post(f"/datasets/{ds}/questions", json=qs)).status_code == 200
        run = (await c.post(f"/datasets/{ds}/runs", json={"name": "r"})).json()["id"]
        outs = [{"question_id": f"q{i}", "answer": f"A {i}."} for i in range(50)]
        assert (await c.post(f"/runs/{run}/outputs", json=outs)).status_code == 200

        async def one(i: int) -> int:
            r = await c.post(f"/runs/{run}/scoring-jobs", json={"metrics": metrics, "recompute": True})
            assert r.status_code == 202, r.text
            job = int(r.json()["id"])
            if i % 4 == 0:  # cancel and resume: a second set of batches for the same items
                assert (await c.post(f"/jobs/{job}/cancel")).status_code == 200
                assert (await c.post(f"/jobs/{job}/resume")).status_code == 200
            return job

        jobs = await asyncio.gather(*(one(i) for i in range(clients)))
    assert len(set(jobs)) == clients
    size = 512  # the default scoring batch: 150 items -> one batch per job, two for the resumed ones
    queued = _queue(engine)
    with engine.connect() as conn:
        for i, job in enumerate(jobs):
            ids = list(conn.scalars(select(JobItem.id).where(JobItem.job_id == job).order_by(JobItem.id)))
            assert len(ids) == 150 <= size
            mine = [a for _, _, a in queued if a["job_id"] == job]
            assert len(mine) == (2 if i % 4 == 0 else 1), (job, mine)
            for a in mine:
                assert [x for x in ids if a["first"] <= x <= a["last"]] == ids
