"""SQL store: every entity of the service.

Identifiers are integers owned by the service; callers match items inside payloads by their own external ids.
Character offsets are Python string indices (code points) into ``Document.text``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on both databases (SQLite stores no zone and returns naive values)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class Timestamps:
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)


class Dataset(Timestamps, Base):
    __tablename__ = "dataset"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    language: Mapped[str] = mapped_column(String(16))
    description: Mapped[str | None] = mapped_column(Text)
    # Chunking configuration: {"page_max_words", "max_words", "overlap_words"}.
    chunking: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class Document(Timestamps, Base):
    __tablename__ = "document"
    __table_args__ = (UniqueConstraint("dataset_id", "external_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("dataset.id", ondelete="CASCADE"), index=True)
    external_id: Mapped[str] = mapped_column(String(300))
    title: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)


class Question(Timestamps, Base):
    __tablename__ = "question"
    __table_args__ = (UniqueConstraint("dataset_id", "external_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("dataset.id", ondelete="CASCADE"), index=True)
    external_id: Mapped[str] = mapped_column(String(300))
    question: Mapped[str] = mapped_column(Text)
    reference_answer: Mapped[str | None] = mapped_column(Text)
    answerable: Mapped[bool] = mapped_column(Boolean, default=True)
    types: Mapped[list[Any]] = mapped_column(JSON, default=list)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)

    passages: Mapped[list[Passage]] = relationship(
        back_populates="question", cascade="all, delete-orphan", order_by="Passage.position"
    )


class Passage(Base):
    """A reference passage: a span of a document that supports the question's answer."""

    __tablename__ = "passage"
    __table_args__ = (CheckConstraint("start_char >= 0 AND end_char > start_char", name="passage_span"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    question_id: Mapped[int] = mapped_column(ForeignKey("question.id", ondelete="CASCADE"), index=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("document.id", ondelete="RESTRICT"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    start: Mapped[int] = mapped_column("start_char", Integer)
    end: Mapped[int] = mapped_column("end_char", Integer)
    # How the span was obtained: given (offsets supplied) | exact | normalized | fuzzy (located from a text),
    # and the match score of a located text (0-100, see services.corpus).
    location: Mapped[str] = mapped_column(String(16), default="given", server_default="given")
    match_score: Mapped[float | None] = mapped_column(Float)

    question: Mapped[Question] = relationship(back_populates="passages")
    document: Mapped[Document] = relationship()


class Run(Timestamps, Base):
    """One version of a RAG system whose outputs are rated and scored."""

    __tablename__ = "run"
    __table_args__ = (UniqueConstraint("dataset_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("dataset.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    # {"retriever": "hybrid", "k": 5, "generator": "extractive", "model": ..., "prompt": ...}
    system: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)


class Output(Timestamps, Base):
    __tablename__ = "output"
    __table_args__ = (UniqueConstraint("run_id", "question_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), index=True)
    question_id: Mapped[int] = mapped_column(ForeignKey("question.id", ondelete="CASCADE"), index=True)
    answer: Mapped[str | None] = mapped_column(Text)
    # Which generator produced the answer: {"kind": "llm"|"extractive"|"external", "model": ...}.
    generator: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    # Set when generation failed for this question; the answer is then null.
    error: Mapped[str | None] = mapped_column(Text)
    # Bumped when the answer or the retrieved chunks change; ratings and scores of an earlier version move
    # to the history tables (kept, excluded from reports).
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")

    chunks: Mapped[list[RetrievedChunk]] = relationship(
        back_populates="output", cascade="all, delete-orphan", order_by="RetrievedChunk.rank"
    )


class RetrievedChunk(Base):
    __tablename__ = "retrieved_chunk"
    __table_args__ = (UniqueConstraint("output_id", "rank"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    output_id: Mapped[int] = mapped_column(ForeignKey("output.id", ondelete="CASCADE"), index=True)
    rank: Mapped[int] = mapped_column(Integer)  # 1-based
    document_id: Mapped[int | None] = mapped_column(ForeignKey("document.id", ondelete="SET NULL"))
    start: Mapped[int | None] = mapped_column("start_char", Integer)
    end: Mapped[int | None] = mapped_column("end_char", Integer)
    text: Mapped[str] = mapped_column(Text)
    score: Mapped[float | None] = mapped_column(Float)
    # given (offsets supplied) | exact | normalized | fuzzy | unlocated
    location: Mapped[str] = mapped_column(String(16), default="given")
    # For a chunk located from its text: the match score (0-100; the best one seen when unlocated).
    match_score: Mapped[float | None] = mapped_column(Float)

    output: Mapped[Output] = relationship(back_populates="chunks")


class Rater(Timestamps, Base):
    __tablename__ = "rater"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)


class Rubric(Timestamps, Base):
    __tablename__ = "rubric"
    __table_args__ = (CheckConstraint("max_score > min_score", name="rubric_scale"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    min_score: Mapped[int] = mapped_column(Integer)
    max_score: Mapped[int] = mapped_column(Integer)
    levels: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    is_default: Mapped[bool] = mapped_column(Boolean, default=False)


class Rating(Timestamps, Base):
    __tablename__ = "rating"
    __table_args__ = (UniqueConstraint("output_id", "rater_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    output_id: Mapped[int] = mapped_column(ForeignKey("output.id", ondelete="CASCADE"), index=True)
    rater_id: Mapped[int] = mapped_column(ForeignKey("rater.id", ondelete="CASCADE"), index=True)
    rubric_id: Mapped[int] = mapped_column(ForeignKey("rubric.id", ondelete="RESTRICT"))
    score: Mapped[int] = mapped_column(Integer)
    comment: Mapped[str | None] = mapped_column(Text)


class RatingHistory(Base):
    """A rating of an earlier version of its output (the answer or the chunks changed since)."""

    __tablename__ = "rating_history"

    id: Mapped[int] = mapped_column(primary_key=True)
    output_id: Mapped[int] = mapped_column(ForeignKey("output.id", ondelete="CASCADE"), index=True)
    output_version: Mapped[int] = mapped_column(Integer)
    rater_id: Mapped[int] = mapped_column(ForeignKey("rater.id", ondelete="CASCADE"), index=True)
    rubric_id: Mapped[int] = mapped_column(ForeignKey("rubric.id", ondelete="RESTRICT"))
    score: Mapped[int] = mapped_column(Integer)
    comment: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    invalidated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class MetricScoreHistory(Base):
    """A metric score of an earlier version of its output."""

    __tablename__ = "metric_score_history"

    id: Mapped[int] = mapped_column(primary_key=True)
    output_id: Mapped[int] = mapped_column(ForeignKey("output.id", ondelete="CASCADE"), index=True)
    output_version: Mapped[int] = mapped_column(Integer)
    metric: Mapped[str] = mapped_column(String(200))
    config_key: Mapped[str] = mapped_column(String(64))
    # The judge asking the score came from (``MetricScore.repeat``); 0 for scores kept before it was recorded.
    repeat: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    k: Mapped[int | None] = mapped_column(Integer)
    value: Mapped[float | None] = mapped_column(Float)
    reason: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    tokens: Mapped[int | None] = mapped_column(Integer)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    job_id: Mapped[int | None] = mapped_column(ForeignKey("job.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    invalidated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class MetricScore(Timestamps, Base):
    """One metric's value for one output under one configuration (k, judge fingerprint, model...)."""

    __tablename__ = "metric_score"
    __table_args__ = (
        UniqueConstraint("output_id", "metric", "config_key", "repeat", name="uq_metric_score_repeat"),
        Index("ix_metric_score_metric", "metric"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    output_id: Mapped[int] = mapped_column(ForeignKey("output.id", ondelete="CASCADE"), index=True)
    metric: Mapped[str] = mapped_column(String(200))
    # Hash of the configuration that produced the score; re-submitting the same configuration skips it.
    config_key: Mapped[str] = mapped_column(String(64))
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # Which of a job's independent judge askings this is (``repeats``): 0 for the first and for every metric
    # that does not ask a judge.
    repeat: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    k: Mapped[int | None] = mapped_column(Integer)
    value: Mapped[float | None] = mapped_column(Float)
    # Why the value is null: an undefined case ("no reference passage") or a failure ("judge timeout").
    reason: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    tokens: Mapped[int | None] = mapped_column(Integer)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    job_id: Mapped[int | None] = mapped_column(ForeignKey("job.id", ondelete="SET NULL"))


class PairVerdict(Timestamps, Base):
    """A pairwise judge's verdicts on the two runs' answers to one question, asked in both orders.

    Stored with ``run_a_id < run_b_id``. ``a_first``: the run whose answer the judge preferred when run A's
    answer was shown first ("a", "b" or "tie"); ``b_first``: the same with run B's answer shown first. Both
    None and ``error`` ("cause: message") when the judge gave no usable verdict in one of the orders. The
    output versions are those judged: once either answer changes the verdicts are stale (kept, left out).
    """

    __tablename__ = "pair_verdict"
    __table_args__ = (
        UniqueConstraint("run_a_id", "run_b_id", "question_id", "config_key", name="uq_pair_verdict"),
        CheckConstraint("run_a_id < run_b_id", name="pair_verdict_run_order"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_a_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), index=True)
    run_b_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), index=True)
    question_id: Mapped[int] = mapped_column(ForeignKey("question.id", ondelete="CASCADE"))
    output_a_id: Mapped[int] = mapped_column(ForeignKey("output.id", ondelete="CASCADE"), index=True)
    output_b_id: Mapped[int] = mapped_column(ForeignKey("output.id", ondelete="CASCADE"), index=True)
    output_a_version: Mapped[int] = mapped_column(Integer)
    output_b_version: Mapped[int] = mapped_column(Integer)
    # Hash of the judge model, temperature and prompt version the verdicts were asked with.
    config_key: Mapped[str] = mapped_column(String(64))
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    a_first: Mapped[str | None] = mapped_column(String(8))
    b_first: Mapped[str | None] = mapped_column(String(8))
    error: Mapped[str | None] = mapped_column(Text)
    # The judge's reasons in each order, and the answers' lengths in words.
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    job_id: Mapped[int | None] = mapped_column(ForeignKey("job.id", ondelete="SET NULL"))


class Job(Timestamps, Base):
    """Long work (indexing, generation, scoring) run by a worker, resumable after a crash."""

    __tablename__ = "job"

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    # queued | running | done | failed | cancelled
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    total: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    worker_id: Mapped[str | None] = mapped_column(String(100))
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    error: Mapped[str | None] = mapped_column(Text)
    # Counts by cause and a bounded sample of per-item errors.
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class JobItem(Base):
    """One unit of a job; claimed by one worker at a time so that several workers never take the same item."""

    __tablename__ = "job_item"
    __table_args__ = (UniqueConstraint("job_id", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("job.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(200))
    # pending | claimed | done | failed
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker_id: Mapped[str | None] = mapped_column(String(100))
    claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    error: Mapped[str | None] = mapped_column(Text)


class IndexState(Timestamps, Base):
    """Which persisted retrieval index a dataset has, so it is rebuilt only when corpus or settings change."""

    __tablename__ = "index_state"
    __table_args__ = (UniqueConstraint("dataset_id", "kind"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("dataset.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(32))  # chunks | bm25 | dense
    fingerprint: Mapped[str] = mapped_column(String(64))
    path: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class JudgeCall(Base):
    """Cache of judge LLM calls, keyed on model + full request body and a repeat index."""

    __tablename__ = "judge_call"

    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(64), unique=True)
    model: Mapped[str] = mapped_column(String(200))
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    response: Mapped[dict[str, Any]] = mapped_column(JSON)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer)
    completion_tokens: Mapped[int | None] = mapped_column(Integer)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ScoreMemo(Base):
    """A judge score and the cached judge answers it was computed from (services/metrics/memo.py), keyed on
    everything the score depends on: metric, configuration (library version, judge, language, prompt
    templates), the library-side state it read (translated prompts, RAGChecker checkpoint) and the sample's
    content. Valid only while every one of those answers is still the cached one."""

    __tablename__ = "score_memo"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    metric: Mapped[str] = mapped_column(String(200))
    value: Mapped[float | None] = mapped_column(Float)
    reason: Mapped[str | None] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # judge-call cache key -> digest of the answer (services.judge.gateway.answer_digest)
    answers: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    job_id: Mapped[int | None] = mapped_column(ForeignKey("job.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class User(Timestamps, Base):
    """An account: a person or a program, with one role (admin, editor, rater, viewer)."""

    __tablename__ = "app_user"
    __table_args__ = (CheckConstraint("role IN ('admin', 'editor', 'rater', 'viewer')", name="user_role"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    active: Mapped[bool] = mapped_column(Boolean, default=True)


class ApiKey(Base):
    """An API key: only its public prefix and an Argon2 hash of the whole key are stored."""

    __tablename__ = "api_key"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("app_user.id", ondelete="CASCADE"), index=True)
    label: Mapped[str | None] = mapped_column(String(200))
    prefix: Mapped[str] = mapped_column(String(32), unique=True)
    hash: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class WebSession(Base):
    """A browser session opened by the login form with one of the account's keys; the cookie carries the
    token, the store its SHA-256."""

    __tablename__ = "web_session"

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("app_user.id", ondelete="CASCADE"), index=True)
    # The key signed in with: the session ends when it is revoked.
    key_id: Mapped[int] = mapped_column(
        ForeignKey("api_key.id", ondelete="CASCADE", name="fk_web_session_key_id"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())


class LoginFailure(Base):
    """A failed login, kept for the rate-limit window (per account name and per client address)."""

    __tablename__ = "login_failure"
    __table_args__ = (
        Index("ix_login_failure_name_at", "name", "at"),
        Index("ix_login_failure_client_at", "client", "at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    client: Mapped[str] = mapped_column(String(64))
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class RaterAccount(Base):
    """Which account a rater is: ratings written through a credential land on the account's rater."""

    __tablename__ = "rater_account"

    rater_id: Mapped[int] = mapped_column(ForeignKey("rater.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("app_user.id", ondelete="CASCADE"), unique=True)


class RatingTask(Timestamps, Base):
    """A rating task: which run's outputs (pointwise) or which two runs' answers (pairwise), on which rubric,
    by whom, and what the raters are shown."""

    __tablename__ = "rating_task"
    __table_args__ = (CheckConstraint("mode IN ('pointwise', 'pairwise')", name="task_mode"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    mode: Mapped[str] = mapped_column(String(16), default="pointwise")
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), index=True)
    run_b_id: Mapped[int | None] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"))
    rubric_id: Mapped[int] = mapped_column(ForeignKey("rubric.id", ondelete="RESTRICT"))
    # None: every rater rates every output; k: k raters per output, balanced at random.
    per_output: Mapped[int | None] = mapped_column(Integer)
    show_reference: Mapped[bool] = mapped_column(Boolean, default=False)
    show_contexts: Mapped[bool] = mapped_column(Boolean, default=True)
    seed: Mapped[int] = mapped_column(Integer)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("app_user.id", ondelete="SET NULL"))
    # 'fixed': the queues are assigned when the task is made (everyone, or per_output raters each);
    # 'active': outputs are drawn one at a time with recorded probabilities (TaskDraw, services.active_ppi).
    policy: Mapped[str] = mapped_column(String(16), default="fixed", server_default="fixed")
    # active: metric, budget, floor, refit_every, target_width (see services.tasks.schemas.ActivePolicy).
    policy_params: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Set when the task's stopping rule is met (or its stream of outputs is used up): nothing more is drawn.
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    closed_reason: Mapped[str | None] = mapped_column(Text)

    rubric: Mapped[Rubric] = relationship()


class TaskFit(Base):
    """One fit of an active task's uncertainty model, recorded with the ratings it was made on."""

    __tablename__ = "task_fit"

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("rating_task.id", ondelete="CASCADE"), index=True)
    n_ratings: Mapped[int] = mapped_column(Integer)
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class TaskDraw(Base):
    """One output of an active task's stream, in the order fixed by the task's seed, with the metric value
    the policy and the estimate use (snapshot when the task was made). Decided when a rater needed an item:
    ``pi`` is its inclusion probability at that moment, ``included`` the outcome, ``fit_id`` the fit in use.
    Undecided: all three null."""

    __tablename__ = "task_draw"
    __table_args__ = (UniqueConstraint("task_id", "stream_index"), UniqueConstraint("task_id", "output_id"))

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("rating_task.id", ondelete="CASCADE"), index=True)
    stream_index: Mapped[int] = mapped_column(Integer)
    output_id: Mapped[int] = mapped_column(ForeignKey("output.id", ondelete="CASCADE"))
    question_id: Mapped[int] = mapped_column(ForeignKey("question.id", ondelete="CASCADE"))
    metric_value: Mapped[float] = mapped_column(Float)
    metric_imputed: Mapped[bool] = mapped_column(Boolean, default=False)
    pi: Mapped[float | None] = mapped_column(Float)
    included: Mapped[bool | None] = mapped_column(Boolean)
    fit_id: Mapped[int | None] = mapped_column(ForeignKey("task_fit.id", ondelete="SET NULL"))
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class TaskRater(Base):
    __tablename__ = "task_rater"
    __table_args__ = (UniqueConstraint("task_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("rating_task.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("app_user.id", ondelete="CASCADE"), index=True)
    # The seed of this rater's order, recorded so that the order can be reproduced and audited.
    order_seed: Mapped[int] = mapped_column(Integer)


class TaskItem(Base):
    """One output (or pair of outputs) in one rater's queue, at its position in that rater's order."""

    __tablename__ = "task_item"
    __table_args__ = (
        UniqueConstraint("task_id", "user_id", "position"),
        UniqueConstraint("task_id", "user_id", "question_id"),
        CheckConstraint(
            "status IN ('pending', 'rated', 'skipped', 'flagged', 'released')", name="task_item_status"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("rating_task.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("app_user.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)  # 1-based, in this rater's order
    question_id: Mapped[int] = mapped_column(ForeignKey("question.id", ondelete="CASCADE"))
    output_id: Mapped[int] = mapped_column(ForeignKey("output.id", ondelete="CASCADE"), index=True)
    # Pairwise: the other run's output, and whether it is shown on the left (order randomised per item).
    output_b_id: Mapped[int | None] = mapped_column(ForeignKey("output.id", ondelete="CASCADE"))
    b_on_left: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    # Pairwise preference (positive: the task's run is preferred); pointwise scores live in `rating`.
    preference: Mapped[int | None] = mapped_column(Integer)
    # Pairwise: the versions of the two outputs (Output.version) when the preference was given; a preference
    # whose answers changed since is stale (kept, left out of the pairwise report). Null on preferences given
    # before versions were recorded whose outputs had changed by then (see migration 0007).
    output_version: Mapped[int | None] = mapped_column(Integer)
    output_b_version: Mapped[int | None] = mapped_column(Integer)
    comment: Mapped[str | None] = mapped_column(Text)
    flag_reason: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # Active tasks: the draw that put the output in this queue and its inclusion probability when drawn.
    draw_id: Mapped[int | None] = mapped_column(ForeignKey("task_draw.id", ondelete="SET NULL"))
    inclusion_probability: Mapped[float | None] = mapped_column(Float)
    # Active tasks: when the item was served (its lease starts), and when it was released unrated after the
    # task's lease (status 'released': the draw and its probability stay; the output may be served again;
    # ``released_at`` stays when its rater later takes the free slot back).
    served_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    released_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class Preference(Timestamps, Base):
    """One rater's preference between two runs' answers to one question, imported from a file (side-by-side
    preferences given in a pairwise rating task stay on the task's items).

    Stored with ``run_a_id < run_b_id``; ``score`` is on the rubric's scale, its high end for run B's answer.
    ``output_a_version`` / ``output_b_version``: the versions of the two outputs the preference was given on;
    once either answer changes the preference is stale (kept, left out of the pairwise report, counted).
    """

    __tablename__ = "preference"
    __table_args__ = (
        UniqueConstraint("run_a_id", "run_b_id", "question_id", "rater_id"),
        CheckConstraint("run_a_id < run_b_id", name="preference_run_order"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_a_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), index=True)
    run_b_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), index=True)
    question_id: Mapped[int] = mapped_column(ForeignKey("question.id", ondelete="CASCADE"))
    output_a_id: Mapped[int] = mapped_column(ForeignKey("output.id", ondelete="CASCADE"), index=True)
    output_b_id: Mapped[int] = mapped_column(ForeignKey("output.id", ondelete="CASCADE"), index=True)
    output_a_version: Mapped[int] = mapped_column(Integer)
    output_b_version: Mapped[int] = mapped_column(Integer)
    rater_id: Mapped[int] = mapped_column(ForeignKey("rater.id", ondelete="CASCADE"), index=True)
    rubric_id: Mapped[int] = mapped_column(ForeignKey("rubric.id", ondelete="RESTRICT"))
    score: Mapped[int] = mapped_column(Integer)
    comment: Mapped[str | None] = mapped_column(Text)
