"""services.jobs: creating jobs, their progress read back, cancel and resume, the typed read of each kind,
and the handler registry."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError
from sqlalchemy import event, select, update
from sqlalchemy.orm import Session

from services.config import Settings
from services.errors import Conflict, NotFound
from services.jobs import service as jobs
from services.jobs.registry import JobHandlers, UnknownJobKind
from services.metrics.schemas import ScoringJobRead
from services.models import JobItem, utcnow
from services.pagination import PageRequest
from services.rag.schemas import GenerateJobRead, IndexJobRead
from services.workers import job_kind_read

SCORING_PARAMS = {
    "run_id": 4,
    "metrics": ["ref.exact_match", "ref.token_f1"],
    "k": 5,
    "word_rule": "joined",
    "recompute": False,
    "refresh_judge_cache": False,
    "repeats": 1,
}
SCORING_SUMMARY = {"skipped_already_computed": 2, "outputs": 3, "config_keys": {"ref.exact_match": "abc"}}


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        ("timeout: the judge took 30 s", "timeout"),
        ("missing: the output was deleted", "missing"),
        ("no colon at all", "error"),
        ("two words: then the message", "error"),
        (": empty head", "error"),
        ("parse:", "parse"),
    ],
)
def test_cause_of_reads_the_head_of_the_error(error: str, cause: str) -> None:
    assert jobs.cause_of(error) == cause


def _finish(db: Session, job_id: int, outcomes: dict[str, tuple[str, str | None]]) -> None:
    for key, (status, error) in outcomes.items():
        db.execute(
            update(JobItem)
            .where(JobItem.job_id == job_id, JobItem.key == key)
            .values(status=status, error=error)
        )


def test_progress_rate_eta_and_errors_by_cause(db: Session, settings: Settings) -> None:
    keys = [f"k{i}" for i in range(6)]
    job = jobs.create_job(db, "scoring", SCORING_PARAMS, keys, SCORING_SUMMARY, settings=settings)
    assert (job.status, job.total, job.finished_at) == ("queued", 6, None)
    _finish(
        db,
        job.id,
        {
            "k0": ("done", None),
            "k1": ("done", None),
            "k2": ("failed", "timeout: slow judge"),
            "k3": ("failed", "timeout: slower"),
            "k4": ("failed", "an error without a cause"),
            "k5": ("claimed", None),
        },
    )
    start = utcnow()
    job.started_at, job.finished_at = start, start + timedelta(seconds=10)
    db.flush()
    read = jobs.job_read(db, job)
    assert (read.done, read.failed, read.pending) == (2, 3, 1)
    # 5 items finished over 10 s; the one claimed item is left.
    assert read.rate_per_s == pytest.approx(0.5)
    assert read.eta_s == pytest.approx(1 / 0.5)
    assert read.errors_by_cause == {"timeout": 2, "error": 1}
    assert sorted((e.item, e.error) for e in read.errors) == [
        ("k2", "timeout: slow judge"),
        ("k3", "timeout: slower"),
        ("k4", "an error without a cause"),
    ]
    assert (read.params, read.summary) == (SCORING_PARAMS, SCORING_SUMMARY)


def test_a_jobs_items_are_inserted_in_one_statement_pending_in_the_keys_order(
    db: Session, settings: Settings
) -> None:
    keys = [f"k{i}" for i in (5, 1, 4, 0, 3, 2, 7, 6)]
    inserts: list[str] = []

    def seen(conn: object, cursor: object, statement: str, *_: object) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO JOB_ITEM"):
            inserts.append(statement)

    engine = db.get_bind()
    event.listen(engine, "before_cursor_execute", seen)
    try:
        job = jobs.create_job(db, "index", {}, keys, {}, settings=settings)
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert len(inserts) == 1
    rows = db.execute(
        select(JobItem.key, JobItem.status, JobItem.attempts)
        .where(JobItem.job_id == job.id)
        .order_by(JobItem.id)
    ).all()
    assert rows == [(k, "pending", 0) for k in keys]


def test_a_job_not_started_has_no_rate_and_one_without_items_is_done(db: Session, settings: Settings) -> None:
    waiting = jobs.job_read(db, jobs.create_job(db, "index", {}, ["a", "b"], {}, settings=settings))
    assert (waiting.status, waiting.pending, waiting.rate_per_s, waiting.eta_s) == ("queued", 2, None, None)
    empty = jobs.create_job(db, "index", {}, [], {}, settings=settings)
    assert (empty.status, empty.total) == ("done", 0) and empty.finished_at is not None
    read = jobs.job_read(db, empty)
    assert (read.done, read.failed, read.pending) == (0, 0, 0)


def test_cancel_and_resume(db: Session, settings: Settings) -> None:
    job = jobs.create_job(db, "index", {}, ["a"], {}, settings=settings)
    with pytest.raises(Conflict, match="only a cancelled job can be resumed"):
        jobs.resume_job(db, settings, job.id)
    cancelled = jobs.cancel_job(db, job.id)
    assert cancelled.status == "cancelled" and cancelled.finished_at is not None
    with pytest.raises(Conflict, match="already cancelled"):
        jobs.cancel_job(db, job.id)
    resumed = jobs.resume_job(db, settings, job.id)
    assert (resumed.status, resumed.finished_at, resumed.pending) == ("queued", None, 1)
    with pytest.raises(NotFound, match="job 999999 does not exist"):
        jobs.cancel_job(db, 999999)
    assert [j.id for j in jobs.list_jobs(db, PageRequest(100), "queued").items] == [job.id]
    assert jobs.list_jobs(db, PageRequest(100), "cancelled").items == []


def test_each_kind_reads_as_its_typed_model(db: Session, settings: Settings) -> None:
    index_summary = {
        "fingerprint": "f" * 24,
        "up_to_date": False,
        "corpus": [2, "2026-01-01T00:00:00"],
        "chunking": {"max_words": 200},
        "language": "en",
        "analyzer": 2,
        "model": "e5-small",
    }
    made = {
        "scoring": jobs.create_job(db, "scoring", SCORING_PARAMS, ["x"], SCORING_SUMMARY, settings=settings),
        "index": jobs.create_job(
            db, "index", {"dataset_id": 1, "force": True}, ["bm25"], index_summary, settings=settings
        ),
        "generate": jobs.create_job(
            db,
            "generate",
            {"run_id": 3, "regenerate": False},
            ["1"],
            {"skipped_existing": 0, "questions": 1},
            settings=settings,
        ),
    }
    reads = {kind: job_kind_read(jobs.job_read(db, job)) for kind, job in made.items()}
    assert isinstance(reads["scoring"], ScoringJobRead)
    assert isinstance(reads["index"], IndexJobRead)
    assert isinstance(reads["generate"], GenerateJobRead)
    assert reads["scoring"].params.metrics == ["ref.exact_match", "ref.token_f1"]
    assert reads["index"].summary.corpus == (2, "2026-01-01T00:00:00")
    assert reads["generate"].params.run_id == 3
    # What the API sends is what was stored: no key added for the fields a job did not record.
    for kind, job in made.items():
        dumped = reads[kind].model_dump(mode="json")
        assert (dumped["params"], dumped["summary"]) == (job.params, job.summary), kind


def test_a_scoring_summary_keeps_what_batches_added_and_omits_what_they_did_not() -> None:
    base = jobs.JobRead(
        id=1,
        kind="scoring",
        status="done",
        params={k: v for k, v in SCORING_PARAMS.items() if k not in ("word_rule", "repeats")},
        total=1,
        done=1,
        failed=0,
        pending=0,
        started_at=None,
        finished_at=None,
        rate_per_s=None,
        eta_s=None,
        summary={
            **SCORING_SUMMARY,
            "score_memo_hits": 4,
            "judge_usage": {
                "opik.moderation": {
                    "calls": 3,
                    "cache_hits": 1,
                    "upstream_calls": 2,
                    "upstream_retries": 0,
                    "failures": 0,
                    "prompt_tokens": 30,
                    "completion_tokens": 6,
                    "latency_ms": 12.5,
                    "causes": {},
                }
            },
        },
        errors_by_cause={},
        errors=[],
        error=None,
    )
    read = jobs.typed(base, ScoringJobRead)
    assert read.summary.score_memo_hits == 4 and read.summary.repeats is None
    assert read.summary.judge_usage is not None and read.summary.judge_usage["opik.moderation"].calls == 3
    dumped = read.model_dump(mode="json")
    # A job planned before word_rule and repeats were parameters reads back without them.
    assert "word_rule" not in dumped["params"] and "repeats" not in dumped["params"]
    assert "repeats" not in dumped["summary"]
    assert dumped["summary"]["judge_usage"] == base.summary["judge_usage"]


def test_a_job_that_does_not_fit_its_kind_is_a_validation_error() -> None:
    def read(kind: str, params: dict[str, object]) -> jobs.JobRead:
        return jobs.JobRead(
            id=1,
            kind=kind,
            status="done",
            params=params,
            total=0,
            done=0,
            failed=0,
            pending=0,
            started_at=None,
            finished_at=None,
            rate_per_s=None,
            eta_s=None,
            summary={"skipped_existing": 0, "questions": 0},
            errors_by_cause={},
            errors=[],
            error=None,
        )

    assert isinstance(job_kind_read(read("generate", {"run_id": 1, "regenerate": True})), GenerateJobRead)
    with pytest.raises(ValidationError, match="regenerate"):
        job_kind_read(read("generate", {"run_id": 1}))
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        job_kind_read(read("test.probe", {"run_id": 1, "regenerate": True}))


class _Handler:
    batch_size = 3

    def process(self, ctx: object, job_id: int, keys: list[str]) -> dict[str, str | None]:
        return dict.fromkeys(keys)


def test_the_handler_registry() -> None:
    handlers = JobHandlers()
    mine = _Handler()
    handlers.register("b.kind", mine)
    handlers.register("b.kind", mine)  # every entry point registers: the same again is a no-op
    with pytest.raises(ValueError, match="already has a handler"):
        handlers.register("b.kind", _Handler())
    # A lazy target is made on first use, once.
    handlers.register("a.kind", "tests.unit.services.test_jobs:_Handler")
    first = handlers.get("a.kind")
    assert isinstance(first, _Handler) and handlers.get("a.kind") is first
    assert handlers.get("b.kind") is mine
    assert handlers.kinds == ["a.kind", "b.kind"]
    with pytest.raises(UnknownJobKind, match=r"'c\.kind' \(registered: a\.kind, b\.kind\)"):
        handlers.get("c.kind")
    with pytest.raises(UnknownJobKind, match="registered: none"):
        JobHandlers().get("a.kind")
