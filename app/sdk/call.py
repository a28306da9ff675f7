"""One request to the service, described (method, path, query, body) with how to read its answer: what each
operation builds (app.sdk.operations) and the sync and async clients send (app.sdk.client)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel, TypeAdapter

T = TypeVar("T")

# A file to upload: a path (read when the request is sent), or a name and its bytes.
Upload = Path | tuple[str, bytes]


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a paged list: its rows and the cursor of the next page (None on the last page)."""

    items: list[T]
    next_cursor: str | None


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: Mapping[str, Any] = field(default_factory=dict)
    json: Any = None
    content: bytes | None = None
    data: Mapping[str, str] | None = None
    files: Sequence[tuple[str, Upload]] = ()
    headers: Mapping[str, str] = field(default_factory=dict)


def query(**params: Any) -> dict[str, Any]:
    """The query string's parameters, those left None omitted (the service's defaults apply)."""
    return {k: v for k, v in params.items() if v is not None}


def body(value: Any) -> Any:
    """A request body given as the service's schema or as plain JSON data."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [body(v) for v in value]
    return value


# Where each schema an answer is read into lives: a schema's module is imported when an operation that
# answers with it is called, so a command loads the modules its own requests need and no other (the
# service's schema modules bring the store and the statistics with them).
SCHEMA_HOMES: Mapping[str, str] = MappingProxyType(
    {
        "ActionResult": "services.tasks.schemas",
        "ActiveEstimate": "services.tasks.schemas",
        "AgreementRead": "services.reports.schemas",
        "AnnotationImportRead": "services.annotations.schemas",
        "AnswerRequest": "services.rag.schemas",
        "AnswerResponse": "services.rag.schemas",
        "Dashboard": "services.tasks.schemas",
        "DatasetCreate": "services.datasets.schemas",
        "DatasetRead": "services.datasets.schemas",
        "DeleteReport": "services.deletion.service",
        "DocumentCreate": "services.datasets.schemas",
        "ExportRow": "services.tasks.schemas",
        "ExternalScoreIn": "services.scores.service",
        "GenerateJobRead": "services.rag.schemas",
        "GenerateRequest": "services.rag.schemas",
        "Health": "app.routers.health",
        "ImportReport": "services.datasets.schemas",
        "IndexJobRead": "services.rag.schemas",
        "IndexRequest": "services.rag.schemas",
        "InlineScoreRequest": "services.metrics.inline",
        "InlineScoreResponse": "services.metrics.inline",
        "ItemAction": "services.tasks.schemas",
        "ItemView": "services.tasks.schemas",
        "JobKindRead": "services.workers",
        "JudgeConfigurations": "services.reports.estimate_schemas",
        "JudgeSensitivity": "services.reports.estimate_schemas",
        "KeyCreate": "services.accounts.schemas",
        "KeyIssued": "services.accounts.schemas",
        "KeyRead": "services.accounts.schemas",
        "Liveness": "app.routers.health",
        "Me": "services.accounts.schemas",
        "MetricInfo": "app.routers.scoring",
        "MetricItems": "services.reports.schemas",
        "NextItem": "services.tasks.schemas",
        "OutputRead": "services.runs.schemas",
        "PairJudgingJobRead": "services.pairjudge.schemas",
        "PairJudgingRequest": "services.pairjudge.schemas",
        "PairwiseQuery": "app.routers.comparisons",
        "PairwiseRead": "services.reports.comparison_schemas",
        "PreferenceIn": "services.ratings.schemas",
        "PreferenceRead": "services.ratings.schemas",
        "QuestionCreate": "services.datasets.schemas",
        "Queue": "services.tasks.schemas",
        "RaterCreate": "services.ratings.schemas",
        "RaterRead": "services.ratings.schemas",
        "RatingIn": "services.ratings.schemas",
        "RatingRead": "services.ratings.schemas",
        "Readiness": "app.routers.health",
        "ReportRead": "services.reports.schemas",
        "RetrieveRequest": "services.rag.schemas",
        "RetrieveResponse": "services.rag.schemas",
        "RubricCreate": "services.ratings.schemas",
        "RubricRead": "services.ratings.schemas",
        "RunCreate": "services.runs.schemas",
        "RunEstimate": "services.reports.estimate_schemas",
        "RunRead": "services.runs.schemas",
        "ScoreTable": "app.routers.scores",
        "ScoringJobRead": "services.metrics.schemas",
        "ScoringRequest": "services.metrics.scoring",
        "StabilityReport": "services.reports.stability",
        "StudyImportRead": "services.studies.schemas",
        "SystemsRead": "services.reports.comparison_schemas",
        "TaskCreate": "services.tasks.schemas",
        "TaskRead": "services.tasks.schemas",
        "TraceIngestRead": "services.otlp.schemas",
        "TrustRead": "services.reports.trust_schemas",
        "UserCreate": "services.accounts.schemas",
        "UserRead": "services.accounts.schemas",
        "UserUpdate": "services.accounts.schemas",
    }
)


class _Schemas(dict[str, Any]):
    """The names a kind is written with, each imported from its home on first use."""

    def __missing__(self, name: str) -> Any:
        home = SCHEMA_HOMES.get(name)
        if home is None:
            raise KeyError(name)
        value = getattr(importlib.import_module(home), name)
        self[name] = value
        return value


def schema(kind: str) -> Any:
    """The type written ``kind`` (``"RunRead"``, ``"list[ExportRow]"``), its schemas imported now."""
    return eval(kind, {"__builtins__": {"list": list}}, _Schemas())


def parsed(kind: str) -> Callable[[httpx.Response], Any]:
    """Read a JSON answer into ``kind`` (a schema of the service, or a list of them, by name)."""
    adapter: TypeAdapter[Any] = TypeAdapter(schema(kind))
    return lambda resp: adapter.validate_json(resp.content)


def paged(kind: str) -> Callable[[httpx.Response], Page[Any]]:
    """Read one page of a list: its rows, and the next page's cursor from ``X-Next-Cursor``."""
    adapter: TypeAdapter[list[Any]] = TypeAdapter(list[schema(kind)])  # type: ignore[misc,arg-type]
    return lambda resp: Page(adapter.validate_json(resp.content), resp.headers.get("x-next-cursor"))


def text(resp: httpx.Response) -> str:
    return resp.text


def raw(resp: httpx.Response) -> bytes:
    return resp.content
