"""Job handlers are registered by their domains, get the job's id and open their own sessions; the job
repository leaves every commit to the worker that owns the transaction."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from services.config import Settings
from services.db import make_session_factory
from services.jobs.queue import make_worker
from services.jobs.registry import JobContext, JobHandlers, UnknownJobKind, process_handlers
from services.jobs.repository import JobRepository
from services.jobs.service import create_job
from services.models import Job, JobItem

ROOT = Path(__file__).resolve().parents[2]
KIND = "test.probe"


class Probe:
    """Records what it was given and what it read in a session of its own."""

    batch_size = 2

    def __init__(self) -> None:
        self.calls: list[tuple[Any, list[str], dict[str, Any] | None]] = []

    def process(self, ctx: JobContext, job_id: int, keys: list[str]) -> dict[str, str | None]:
        with ctx.read_factory() as session:
            params = JobRepository(session).params(job_id)
        self.calls.append((job_id, keys, params))
        return {key: None for key in keys}


PROBE = Probe()
# The queue's dispatch sizes batches from this process's registry, as the domains' kinds are.
process_handlers.register(KIND, PROBE)


def _job(engine: Engine, settings: Settings, keys: list[str]) -> int:
    with make_session_factory(engine)() as session:
        job = create_job(session, KIND, {"probe": 7}, keys, {}, settings=settings)
        session.commit()
        return job.id


def test_a_handler_gets_the_jobs_id_and_reads_the_job_in_its_own_session(
    engine: Engine, settings: Settings
) -> None:
    PROBE.calls.clear()
    job_id = _job(engine, settings, ["a", "b", "c"])
    ctx = JobContext(make_session_factory(engine), settings)
    make_worker(ctx, "probe-worker").drain()
    assert [type(j) for j, _, _ in PROBE.calls] == [int, int]  # an id, never an ORM object of the worker's
    assert {j for j, _, _ in PROBE.calls} == {job_id}
    assert sorted(k for _, keys, _ in PROBE.calls for k in keys) == ["a", "b", "c"]
    assert all(params == {"probe": 7} for _, _, params in PROBE.calls)
    with make_session_factory(engine)() as session:
        job = session.get(Job, job_id)
        assert job is not None and (job.status, job.done) == ("done", 3)


def test_a_worker_takes_handlers_from_its_contexts_registry(engine: Engine, settings: Settings) -> None:
    PROBE.calls.clear()
    mine = Probe()
    own = JobHandlers()
    own.register(KIND, mine)
    job_id = _job(engine, settings, ["x"])
    make_worker(JobContext(make_session_factory(engine), settings, handlers=own), "own-registry").drain()
    assert [(j, keys) for j, keys, _ in mine.calls] == [(job_id, ["x"])] and PROBE.calls == []


def test_an_unknown_kind_names_the_kinds_that_are_registered() -> None:
    handlers = JobHandlers()
    handlers.register("scoring", "services.metrics.scoring:ScoringHandler")
    with pytest.raises(UnknownJobKind, match=r"'indexing' \(registered: scoring\)"):
        handlers.get("indexing")


def test_a_lazy_target_is_made_once_on_first_use_and_a_kind_keeps_its_handler() -> None:
    handlers = JobHandlers()
    handlers.register("scoring", "services.metrics.scoring:ScoringHandler")
    handlers.register("scoring", "services.metrics.scoring:ScoringHandler")  # every entry point registers
    first = handlers.get("scoring")
    assert type(first).__name__ == "ScoringHandler" and handlers.get("scoring") is first
    with pytest.raises(ValueError, match="already has a handler"):
        handlers.register("scoring", "services.rag.jobs:IndexHandler")


def test_every_entry_point_has_every_domains_handlers() -> None:
    """The API (app.main, on import) and every process that opens its resources (`ragmeta worker`, the demo,
    a spawned worker) register them; the jobs package alone, and the command line's client, register none."""
    script = (
        "import sys; import services.jobs.registry as r; before = r.process_handlers.kinds; "
        "import app.cli; client = r.process_handlers.kinds; "
        "from services.resources import Resources; from services.config import Settings; "
        "Resources.open(Settings(database_url='sqlite://')).close(); opened = r.process_handlers.kinds; "
        "r.process_handlers._targets.clear(); r.process_handlers._loaded.clear(); "
        "import app.main; print(before, client, opened, r.process_handlers.kinds)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    every = "['generate', 'index', 'pair_judging', 'scoring']"
    assert out.stdout.strip() == f"[] [] {every} {every}"


def test_the_job_repository_leaves_the_claim_to_its_caller(engine: Engine, settings: Settings) -> None:
    """A claim rolled back is no claim: the repository does not commit behind its caller."""
    job_id = _job(engine, settings, ["a", "b", "c", "d"])
    factory = make_session_factory(engine)
    with factory() as session:
        repo = JobRepository(session)
        assert len(repo.claim(job_id, "t1", 2, settings.jobs.lease_s)) == 2
        ids = repo.claimable_ids(job_id, settings.jobs.lease_s)
        assert len(repo.claim_range(job_id, ids[0], ids[-1], "t2", settings.jobs.lease_s)) == 2
        session.rollback()
    with factory() as session:
        statuses = session.scalars(select(JobItem.status).where(JobItem.job_id == job_id)).all()
        assert sorted(statuses) == ["pending"] * 4


def test_no_repository_commits() -> None:
    """Transactions belong to the service or worker that owns them (and, for HTTP, to the route)."""
    found = []
    for path in sorted((ROOT / "services").rglob("repository.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("commit", "rollback"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert not found, found
