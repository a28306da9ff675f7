"""The service's logs: plain text or JSON lines (setting ``RAGMETA_LOG_FORMAT``), each line carrying the id of
the request it belongs to and, in a job's work, the job's id, with secrets scrubbed.

- The request id is set for a request by ``app.request_id`` (taken from ``X-Request-ID`` or ``traceparent``,
  or made) and lives in a context variable, which the threads a request hands work to inherit. A job
  started by a request records it in its params (``request_id``); the worker that runs a batch of the job,
  in whatever process, sets it again with the job id (``log_context``), so one request can be followed from
  the API into its jobs' lines.
- Every line passes through ``scrub``: API keys (``rgm_...``), bearer tokens, cookie and authorization
  headers, ``api_key=...`` pairs and the judge's API key value (read from its environment variable) are
  replaced by ``[redacted]``, whatever logger wrote them (an SDK's debug line included).

Failure modes: none raised; a record that cannot be formatted falls back to logging's own error handling.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

# The context of the work being done now: the request, and in a worker the job (see the module doc).
REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("ragmeta_request_id", default=None)
JOB_ID: contextvars.ContextVar[int | None] = contextvars.ContextVar("ragmeta_job_id", default=None)

REDACTED = "[redacted]"
_PATTERNS = (
    re.compile(r"rgm_[0-9a-f]+_[A-Za-z0-9_\-]+"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]+"),
    re.compile(r"(?i)((?:authorization|cookie|set-cookie|x-api-key)[\"']?\s*[:=]\s*[\"']?)[^\"'\r\n,}]+"),
    re.compile(r"(?i)(ragmeta_session=)[^;\s\"',}]+"),
    re.compile(r"(?i)((?:api[_-]?key|password|secret)[\"']?\s*[:=]\s*[\"']?)[^\"'\s,}]+"),
    re.compile(r"sk-[A-Za-z0-9_\-]{8,}"),
)
_HANDLER_NAME = "ragmeta-logs"


def current_request_id() -> str | None:
    return REQUEST_ID.get()


@contextmanager
def log_context(request_id: str | None = None, job_id: int | None = None) -> Iterator[None]:
    """Lines logged inside carry ``request_id`` and ``job_id`` (None leaves the current one)."""
    rid = REQUEST_ID.set(request_id) if request_id is not None else None
    jid = JOB_ID.set(job_id) if job_id is not None else None
    try:
        yield
    finally:
        if jid is not None:
            JOB_ID.reset(jid)
        if rid is not None:
            REQUEST_ID.reset(rid)


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret the service knows the shape or the value of replaced by ``[redacted]``."""
    for value in secrets:
        if value and len(value) >= 6:
            text = text.replace(value, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + REDACTED, text)
    return text


class ContextFilter(logging.Filter):
    """Puts the request id and job id of the current context on every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = REQUEST_ID.get()
        if getattr(record, "job_id", None) is None:
            record.job_id = JOB_ID.get()
        return True


# Attributes every LogRecord has: the rest were given with ``extra=`` and go into the JSON line.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, request_id, job_id, the
    record's ``extra`` fields, and the exception when there is one; scrubbed of secrets."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets = tuple(secrets)

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
            "job_id": getattr(record, "job_id", None),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and key not in line:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return scrub(json.dumps(line, ensure_ascii=False, default=str), self.secrets)


class TextFormatter(logging.Formatter):
    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")
        self.secrets = tuple(secrets)

    def format(self, record: logging.LogRecord) -> str:
        return scrub(super().format(record), self.secrets)


def known_secrets(env_names: Iterable[str]) -> list[str]:
    """The values of the environment variables that hold secrets (the judge's API key, the session key)."""
    return [v for v in (os.environ.get(n) for n in env_names) if v]


def configure_logs(settings: Any, stream: Any = None) -> logging.Handler:
    """``configure`` as ``settings`` say (format, level; the judge's key and the session key scrubbed)."""
    secret_env = (settings.judge.api_key_env, settings.auth.secret_key_env)
    return configure(settings.log_format, settings.log_level, secret_env, stream)


def configure(
    log_format: str = "text", level: str = "INFO", secret_env: Iterable[str] = (), stream: Any = None
) -> logging.Handler:
    """One handler on the root logger, in ``log_format`` (``text`` or ``json``), replacing the one an earlier
    call installed (an app made again in the same process); returns it."""
    secrets = known_secrets(secret_env)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter(secrets) if log_format == "json" else TextFormatter(secrets))
    handler.addFilter(ContextFilter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    logging.getLogger("ragmeta").setLevel(level.upper())
    return handler
