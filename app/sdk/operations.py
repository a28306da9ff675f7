"""Every operation of the service's API (openapi/openapi.json) as a function building its request: typed
with the service's own schemas (imported from where the API declares them, never redeclared). ``Client`` and
``AsyncClient`` (app.sdk.client) bind each as a method of the same name and arguments.

An operation whose answer has several forms has one function per form: ``run_report`` reads the JSON into
``ReportRead``, ``run_report_text`` returns the JSON, CSV or Markdown as the service wrote it. Lists answer
one :class:`Page` (rows and the next page's cursor); ``Client.paginate`` and ``Client.all`` follow the pages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, Unpack
from urllib.parse import quote

from app.sdk.call import Call, Page, Upload, body, paged, parsed, query, raw, text

if TYPE_CHECKING:
    # The service's schemas, for the annotations; an operation's answer is read into its schema by name
    # (app.sdk.call.SCHEMA_HOMES), importing only that schema's module when the operation is called: a
    # command imports what its own requests need, not the store and statistics behind every schema.
    # Declared beside their routes; imported where an operation is built, not with the client: the routers'
    # modules bring the report machinery (scipy), which a command that does not read them must not load.
    from app.routers.comparisons import PairwiseQuery
    from app.routers.health import Health, Liveness, Readiness
    from app.routers.scores import ScoreTable
    from app.routers.scoring import MetricInfo
    from services.accounts.schemas import KeyCreate, KeyIssued, KeyRead, Me, UserCreate, UserRead, UserUpdate
    from services.annotations.schemas import AnnotationImportRead
    from services.datasets.schemas import (
        DatasetCreate,
        DatasetRead,
        DocumentCreate,
        ImportReport,
        QuestionCreate,
    )
    from services.deletion.service import DeleteReport
    from services.metrics.inline import InlineScoreRequest, InlineScoreResponse
    from services.metrics.schemas import ScoringJobRead
    from services.metrics.scoring import ScoringRequest
    from services.otlp.schemas import TraceIngestRead
    from services.pairjudge.schemas import PairJudgingJobRead, PairJudgingRequest
    from services.rag.schemas import (
        AnswerRequest,
        AnswerResponse,
        GenerateJobRead,
        GenerateRequest,
        IndexJobRead,
        IndexRequest,
        RetrieveRequest,
        RetrieveResponse,
    )
    from services.ratings.schemas import (
        PreferenceIn,
        PreferenceRead,
        RaterCreate,
        RaterRead,
        RatingIn,
        RatingRead,
        RubricCreate,
        RubricRead,
    )
    from services.reports.comparison_schemas import PairwiseRead, SystemsRead
    from services.reports.estimate_schemas import JudgeConfigurations, JudgeSensitivity, RunEstimate
    from services.reports.schemas import AgreementRead, MetricItems, ReportRead
    from services.reports.stability import StabilityReport
    from services.reports.trust_schemas import TrustRead
    from services.runs.schemas import OutputRead, RunCreate, RunRead
    from services.scores.service import ExternalScoreIn
    from services.studies.schemas import StudyImportRead
    from services.tasks.schemas import (
        ActionResult,
        ActiveEstimate,
        Dashboard,
        ExportRow,
        ItemAction,
        ItemView,
        NextItem,
        Queue,
        TaskCreate,
        TaskRead,
    )
    from services.workers import JobKindRead


def _report_call(path: str, read: Callable[[Any], Any], options: ReportOptions, **params: Any) -> Call[Any]:
    """A form of a report: its options in the query string, ``fresh`` as ``Cache-Control: no-cache``."""
    fresh = options.pop("fresh", False)
    headers = {"Cache-Control": "no-cache"} if fresh else {}
    return Call("GET", path, read, query(**params, **options), headers=headers)


def _segment(value: str) -> str:
    """A name as one path segment: ``/``, ``?``, ``#`` and ``%`` in it encoded, so it addresses its own
    resource (a metric named ``external.a#b`` is not cut at a fragment)."""
    return quote(value, safe="")


F = TypeVar("F", bound=Callable[..., Call[Any]])

# A body given as the service's schema or as the same JSON data.
Json = Mapping[str, Any]


def operation(method: str, path: str) -> Callable[[F], F]:
    """Mark a function as building ``method path`` of the API (checked against the spec by a test)."""

    def mark(func: F) -> F:
        func.__operation__ = (method, path)  # type: ignore[attr-defined]
        return func

    return mark


def _rows_or_file(rows: Sequence[Any] | None, file: Upload | None, what: str) -> dict[str, Any]:
    """An import's body: JSON rows, or a file sent as it is (the service reads its format and encoding)."""
    if (rows is None) == (file is None):
        raise ValueError(f"give the {what} as rows or as file, one of the two")
    if file is not None:
        return {"files": (("file", file),)}
    return {"json": body(list(rows or []))}


def _csv(value: str | Sequence[int | str] | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return ",".join(map(str, value))


class ReportOptions(TypedDict, total=False):
    """The options of every form of a report (the service's defaults when left out)."""

    k: int
    types: str
    answerable: bool
    ci: Literal["fisher", "bca", "auto"]
    seed: int
    n_resamples: int
    pass_threshold: float
    # A report of the data as it is now, waited for (Cache-Control: no-cache), rather than the last one
    # computed while a newer one is computed (then said stale in its freshness).
    fresh: bool


Runs = str | Sequence[int]


# ------------------------------------------------------------------------------------------------ health


@operation("GET", "/healthz")
def healthz() -> Call[Health]:

    return Call("GET", "/healthz", parsed("Health"))


@operation("GET", "/livez")
def livez() -> Call[Liveness]:

    return Call("GET", "/livez", parsed("Liveness"))


@operation("GET", "/readyz")
def readyz() -> Call[Readiness]:

    return Call("GET", "/readyz", parsed("Readiness"))


@operation("GET", "/-/metrics")
def prometheus_metrics() -> Call[str]:
    return Call("GET", "/-/metrics", text)


# ---------------------------------------------------------------------------------------------- datasets


@operation("POST", "/datasets")
def create_dataset(data: DatasetCreate | Json) -> Call[DatasetRead]:
    return Call("POST", "/datasets", parsed("DatasetRead"), json=body(data))


@operation("GET", "/datasets")
def list_datasets(*, limit: int | None = None, cursor: str | None = None) -> Call[Page[DatasetRead]]:
    return Call("GET", "/datasets", paged("DatasetRead"), query(limit=limit, cursor=cursor))


@operation("GET", "/datasets/{dataset_id}")
def get_dataset(dataset_id: int) -> Call[DatasetRead]:
    return Call("GET", f"/datasets/{dataset_id}", parsed("DatasetRead"))


@operation("DELETE", "/datasets/{dataset_id}")
def delete_dataset(dataset_id: int, *, cascade: bool = False) -> Call[DeleteReport]:
    return Call("DELETE", f"/datasets/{dataset_id}", parsed("DeleteReport"), query(cascade=cascade or None))


@operation("POST", "/datasets/{dataset_id}/documents")
def import_documents(
    dataset_id: int, rows: Sequence[DocumentCreate | Json] | None = None, *, file: Upload | None = None
) -> Call[ImportReport]:
    path = f"/datasets/{dataset_id}/documents"
    return Call("POST", path, parsed("ImportReport"), **_rows_or_file(rows, file, "documents"))


@operation("GET", "/datasets/{dataset_id}/documents")
def export_documents(dataset_id: int) -> Call[list[DocumentCreate]]:
    return Call("GET", f"/datasets/{dataset_id}/documents", parsed("list[DocumentCreate]"))


@operation("GET", "/datasets/{dataset_id}/documents")
def export_documents_text(
    dataset_id: int,
    format: Literal["json", "jsonl"] = "jsonl",
    *,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[str]:
    params = query(format=format, limit=limit, cursor=cursor)
    return Call("GET", f"/datasets/{dataset_id}/documents", text, params)


@operation("POST", "/datasets/{dataset_id}/questions")
def import_questions(
    dataset_id: int, rows: Sequence[QuestionCreate | Json] | None = None, *, file: Upload | None = None
) -> Call[ImportReport]:
    path = f"/datasets/{dataset_id}/questions"
    return Call("POST", path, parsed("ImportReport"), **_rows_or_file(rows, file, "questions"))


@operation("GET", "/datasets/{dataset_id}/questions")
def export_questions(dataset_id: int, *, include_text: bool = False) -> Call[list[QuestionCreate]]:
    params = query(include_text=include_text or None)
    return Call("GET", f"/datasets/{dataset_id}/questions", parsed("list[QuestionCreate]"), params)


@operation("GET", "/datasets/{dataset_id}/questions")
def export_questions_text(
    dataset_id: int,
    format: Literal["json", "jsonl", "csv"] = "jsonl",
    *,
    include_text: bool = False,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[str]:
    params = query(format=format, include_text=include_text or None, limit=limit, cursor=cursor)
    return Call("GET", f"/datasets/{dataset_id}/questions", text, params)


@operation("POST", "/datasets/{dataset_id}/index")
def index_dataset(dataset_id: int, data: IndexRequest | Json | None = None) -> Call[IndexJobRead]:
    return Call("POST", f"/datasets/{dataset_id}/index", parsed("IndexJobRead"), json=body(data))


@operation("POST", "/datasets/{dataset_id}/retrieve")
def retrieve(dataset_id: int, data: RetrieveRequest | Json) -> Call[RetrieveResponse]:
    return Call("POST", f"/datasets/{dataset_id}/retrieve", parsed("RetrieveResponse"), json=body(data))


@operation("POST", "/datasets/{dataset_id}/answer")
def answer(dataset_id: int, data: AnswerRequest | Json) -> Call[AnswerResponse]:
    return Call("POST", f"/datasets/{dataset_id}/answer", parsed("AnswerResponse"), json=body(data))


# -------------------------------------------------------------------------------------------------- runs


@operation("POST", "/datasets/{dataset_id}/runs")
def create_run(dataset_id: int, data: RunCreate | Json) -> Call[RunRead]:
    return Call("POST", f"/datasets/{dataset_id}/runs", parsed("RunRead"), json=body(data))


@operation("GET", "/datasets/{dataset_id}/runs")
def list_runs(dataset_id: int, *, limit: int | None = None, cursor: str | None = None) -> Call[Page[RunRead]]:
    return Call("GET", f"/datasets/{dataset_id}/runs", paged("RunRead"), query(limit=limit, cursor=cursor))


@operation("GET", "/runs/{run_id}")
def get_run(run_id: int) -> Call[RunRead]:
    return Call("GET", f"/runs/{run_id}", parsed("RunRead"))


@operation("DELETE", "/runs/{run_id}")
def delete_run(run_id: int, *, cascade: bool = False) -> Call[DeleteReport]:
    return Call("DELETE", f"/runs/{run_id}", parsed("DeleteReport"), query(cascade=cascade or None))


@operation("POST", "/runs/{run_id}/generate")
def generate(run_id: int, data: GenerateRequest | Json | None = None) -> Call[GenerateJobRead]:
    return Call("POST", f"/runs/{run_id}/generate", parsed("GenerateJobRead"), json=body(data))


@operation("POST", "/runs/{run_id}/outputs")
def import_outputs(
    run_id: int,
    rows: Sequence[Json] | None = None,
    *,
    file: Upload | None = None,
    format: Literal["auto", "native", "ragas", "ragchecker"] | None = None,
) -> Call[ImportReport]:
    sent = _rows_or_file(rows, file, "outputs")
    return Call("POST", f"/runs/{run_id}/outputs", parsed("ImportReport"), query(format=format), **sent)


@operation("GET", "/runs/{run_id}/outputs")
def list_outputs(
    run_id: int, *, limit: int | None = None, cursor: str | None = None
) -> Call[Page[OutputRead]]:
    return Call("GET", f"/runs/{run_id}/outputs", paged("OutputRead"), query(limit=limit, cursor=cursor))


@operation("POST", "/runs/{run_id}/scores")
def import_scores(
    run_id: int,
    rows: Sequence[ExternalScoreIn | Json] | None = None,
    *,
    file: Upload | None = None,
    shape: Literal["auto", "long", "wide"] | None = None,
    library: str | None = None,
    higher_is_better: str | None = None,
    lower_is_better: str | None = None,
    metrics: str | None = None,
) -> Call[ImportReport]:
    params = query(
        shape=shape,
        library=library,
        higher_is_better=higher_is_better,
        lower_is_better=lower_is_better,
        metrics=metrics,
    )
    sent = _rows_or_file(rows, file, "scores")
    return Call("POST", f"/runs/{run_id}/scores", parsed("ImportReport"), params, **sent)


@operation("GET", "/runs/{run_id}/scores")
def get_scores(run_id: int) -> Call[ScoreTable]:

    return Call("GET", f"/runs/{run_id}/scores", parsed("ScoreTable"), {"format": "json"})


@operation("GET", "/runs/{run_id}/scores")
def get_scores_text(
    run_id: int,
    format: Literal["json", "csv"] = "csv",
    *,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[str]:
    return Call("GET", f"/runs/{run_id}/scores", text, query(format=format, limit=limit, cursor=cursor))


@operation("DELETE", "/runs/{run_id}/scores/{metric}")
def delete_scores(run_id: int, metric: str) -> Call[DeleteReport]:
    return Call("DELETE", f"/runs/{run_id}/scores/{_segment(metric)}", parsed("DeleteReport"))


# ----------------------------------------------------------------------------------------------- scoring


@operation("GET", "/metrics")
def list_metrics(*, language: str | None = None) -> Call[list[MetricInfo]]:

    return Call("GET", "/metrics", parsed("list[MetricInfo]"), query(language=language))


@operation("POST", "/runs/{run_id}/scoring-jobs")
def create_scoring(run_id: int, data: ScoringRequest | Json | None = None) -> Call[ScoringJobRead]:
    return Call("POST", f"/runs/{run_id}/scoring-jobs", parsed("ScoringJobRead"), json=body(data or {}))


@operation("POST", "/runs/{run_id}/pair-judging-jobs")
def create_pair_judging(run_id: int, data: PairJudgingRequest | Json) -> Call[PairJudgingJobRead]:
    return Call("POST", f"/runs/{run_id}/pair-judging-jobs", parsed("PairJudgingJobRead"), json=body(data))


@operation("POST", "/score")
def score_samples(data: InlineScoreRequest | Json) -> Call[InlineScoreResponse]:
    return Call("POST", "/score", parsed("InlineScoreResponse"), json=body(data))


# ----------------------------------------------------------------------------------------------- reports


@operation("GET", "/runs/{run_id}/agreement")
def agreement(run_id: int, *, seed: int | None = None) -> Call[AgreementRead]:
    return Call("GET", f"/runs/{run_id}/agreement", parsed("AgreementRead"), query(seed=seed))


@operation("GET", "/runs/{run_id}/report")
def run_report(run_id: int, **options: Unpack[ReportOptions]) -> Call[ReportRead]:
    return _report_call(f"/runs/{run_id}/report", parsed("ReportRead"), options)


@operation("GET", "/runs/{run_id}/report")
def run_report_text(
    run_id: int, format: Literal["json", "csv", "md"], **options: Unpack[ReportOptions]
) -> Call[str]:
    return _report_call(f"/runs/{run_id}/report", text, options, format=format)


@operation("GET", "/report")
def pooled_report(runs: Runs, **options: Unpack[ReportOptions]) -> Call[ReportRead]:
    return _report_call("/report", parsed("ReportRead"), options, runs=_csv(runs))


@operation("GET", "/report")
def pooled_report_text(
    runs: Runs, format: Literal["json", "csv", "md"], **options: Unpack[ReportOptions]
) -> Call[str]:
    return _report_call("/report", text, options, runs=_csv(runs), format=format)


@operation("GET", "/runs/{run_id}/report.html")
def report_html(run_id: int, **options: Unpack[ReportOptions]) -> Call[str]:
    return _report_call(f"/runs/{run_id}/report.html", text, options)


@operation("GET", "/runs/{run_id}/report.svg")
def report_svg(run_id: int, **options: Unpack[ReportOptions]) -> Call[bytes]:
    return _report_call(f"/runs/{run_id}/report.svg", raw, options)


@operation("GET", "/runs/{run_id}/report.png")
def report_png(run_id: int, **options: Unpack[ReportOptions]) -> Call[bytes]:
    return _report_call(f"/runs/{run_id}/report.png", raw, options)


@operation("GET", "/runs/{run_id}/report.pdf")
def report_pdf(run_id: int, **options: Unpack[ReportOptions]) -> Call[bytes]:
    return _report_call(f"/runs/{run_id}/report.pdf", raw, options)


@operation("GET", "/report.html")
def pooled_html(runs: Runs, **options: Unpack[ReportOptions]) -> Call[str]:
    return _report_call("/report.html", text, options, runs=_csv(runs))


@operation("GET", "/report.svg")
def pooled_svg(runs: Runs, **options: Unpack[ReportOptions]) -> Call[bytes]:
    return _report_call("/report.svg", raw, options, runs=_csv(runs))


@operation("GET", "/report.png")
def pooled_png(runs: Runs, **options: Unpack[ReportOptions]) -> Call[bytes]:
    return _report_call("/report.png", raw, options, runs=_csv(runs))


@operation("GET", "/report.pdf")
def pooled_pdf(runs: Runs, **options: Unpack[ReportOptions]) -> Call[bytes]:
    return _report_call("/report.pdf", raw, options, runs=_csv(runs))


@operation("GET", "/runs/{run_id}/metrics/{metric}/items")
def metric_items(run_id: int, metric: str, **options: Unpack[ReportOptions]) -> Call[MetricItems]:
    return Call(
        "GET", f"/runs/{run_id}/metrics/{_segment(metric)}/items", parsed("MetricItems"), query(**options)
    )


@operation("GET", "/runs/{run_id}/metrics/{metric}/items.html")
def metric_items_html(run_id: int, metric: str, **options: Unpack[ReportOptions]) -> Call[str]:
    return Call("GET", f"/runs/{run_id}/metrics/{_segment(metric)}/items.html", text, query(**options))


@operation("GET", "/report/metrics/{metric}/items")
def pooled_metric_items(runs: Runs, metric: str, **options: Unpack[ReportOptions]) -> Call[MetricItems]:
    params = query(runs=_csv(runs), **options)
    return Call("GET", f"/report/metrics/{_segment(metric)}/items", parsed("MetricItems"), params)


@operation("GET", "/report/metrics/{metric}/items.html")
def pooled_metric_items_html(runs: Runs, metric: str, **options: Unpack[ReportOptions]) -> Call[str]:
    return Call(
        "GET", f"/report/metrics/{_segment(metric)}/items.html", text, query(runs=_csv(runs), **options)
    )


# ------------------------------------------------------------------------ estimates, judges, trust


@operation("GET", "/runs/{run_id}/estimate")
def run_estimate(
    run_id: int, *, k: int | None = None, confidence: float | None = None, target_width: float | None = None
) -> Call[RunEstimate]:
    params = query(k=k, confidence=confidence, target_width=target_width)
    return Call("GET", f"/runs/{run_id}/estimate", parsed("RunEstimate"), params)


@operation("GET", "/runs/{run_id}/estimate")
def run_estimate_text(
    run_id: int,
    format: Literal["json", "csv"] = "csv",
    *,
    k: int | None = None,
    confidence: float | None = None,
    target_width: float | None = None,
) -> Call[str]:
    params = query(format=format, k=k, confidence=confidence, target_width=target_width)
    return Call("GET", f"/runs/{run_id}/estimate", text, params)


@operation("GET", "/runs/{run_id}/judge-configurations")
def run_judge_configurations(run_id: int) -> Call[JudgeConfigurations]:
    return Call("GET", f"/runs/{run_id}/judge-configurations", parsed("JudgeConfigurations"))


@operation("GET", "/runs/{run_id}/judge-sensitivity")
def run_judge_sensitivity(
    run_id: int, *, a: str | None = None, b: str | None = None
) -> Call[JudgeSensitivity]:
    return Call("GET", f"/runs/{run_id}/judge-sensitivity", parsed("JudgeSensitivity"), query(a=a, b=b))


@operation("GET", "/runs/{run_id}/judge-sensitivity")
def run_judge_sensitivity_text(
    run_id: int, format: Literal["json", "csv"] = "csv", *, a: str | None = None, b: str | None = None
) -> Call[str]:
    return Call("GET", f"/runs/{run_id}/judge-sensitivity", text, query(format=format, a=a, b=b))


@operation("GET", "/runs/{run_id}/stability")
def run_stability(run_id: int) -> Call[StabilityReport]:

    return Call("GET", f"/runs/{run_id}/stability", parsed("StabilityReport"))


@operation("GET", "/runs/{run_id}/stability")
def run_stability_text(run_id: int, format: Literal["json", "csv", "md"]) -> Call[str]:
    return Call("GET", f"/runs/{run_id}/stability", text, {"format": format})


@operation("GET", "/runs/{run_id}/trust")
def run_trust(run_id: int, *, epsilon: float | None = None, seed: int | None = None) -> Call[TrustRead]:
    return Call("GET", f"/runs/{run_id}/trust", parsed("TrustRead"), query(epsilon=epsilon, seed=seed))


@operation("GET", "/runs/{run_id}/trust")
def run_trust_text(
    run_id: int,
    format: Literal["json", "md", "csv"],
    *,
    epsilon: float | None = None,
    seed: int | None = None,
) -> Call[str]:
    return Call("GET", f"/runs/{run_id}/trust", text, query(format=format, epsilon=epsilon, seed=seed))


@operation("GET", "/trust")
def pooled_trust(runs: Runs, *, epsilon: float | None = None, seed: int | None = None) -> Call[TrustRead]:
    return Call("GET", "/trust", parsed("TrustRead"), query(runs=_csv(runs), epsilon=epsilon, seed=seed))


@operation("GET", "/trust")
def pooled_trust_text(
    runs: Runs, format: Literal["json", "md", "csv"], *, epsilon: float | None = None, seed: int | None = None
) -> Call[str]:
    params = query(runs=_csv(runs), format=format, epsilon=epsilon, seed=seed)
    return Call("GET", "/trust", text, params)


# ------------------------------------------------------------------------------------------- comparisons


def _pairwise(q: PairwiseQuery | Json) -> dict[str, Any]:
    # Not validated here: a bad value is the service's 422, naming the field.
    return query(**body(q))


@operation("GET", "/reports/pairwise")
def pairwise_report(q: PairwiseQuery | Json) -> Call[PairwiseRead]:
    return Call("GET", "/reports/pairwise", parsed("PairwiseRead"), _pairwise(q))


@operation("GET", "/reports/pairwise")
def pairwise_report_text(q: PairwiseQuery | Json, format: Literal["json", "csv"] = "csv") -> Call[str]:
    return Call("GET", "/reports/pairwise", text, _pairwise(q) | {"format": format})


@operation("GET", "/reports/pairwise.svg")
def pairwise_svg(q: PairwiseQuery | Json) -> Call[bytes]:
    return Call("GET", "/reports/pairwise.svg", raw, _pairwise(q))


@operation("GET", "/reports/pairwise.png")
def pairwise_png(q: PairwiseQuery | Json) -> Call[bytes]:
    return Call("GET", "/reports/pairwise.png", raw, _pairwise(q))


@operation("GET", "/reports/systems")
def systems_report(
    runs: Runs, *, k: int | None = None, seed: int | None = None, n_resamples: int | None = None
) -> Call[SystemsRead]:
    params = query(runs=_csv(runs), k=k, seed=seed, n_resamples=n_resamples)
    return Call("GET", "/reports/systems", parsed("SystemsRead"), params)


@operation("GET", "/reports/systems")
def systems_report_text(
    runs: Runs,
    format: Literal["json", "csv"] = "csv",
    *,
    k: int | None = None,
    seed: int | None = None,
    n_resamples: int | None = None,
) -> Call[str]:
    params = query(runs=_csv(runs), format=format, k=k, seed=seed, n_resamples=n_resamples)
    return Call("GET", "/reports/systems", text, params)


@operation("POST", "/preferences")
def import_preferences(
    run_a: int,
    run_b: int,
    rows: Sequence[PreferenceIn | Json] | None = None,
    *,
    file: Upload | None = None,
    register_raters: bool = False,
) -> Call[ImportReport]:
    params = query(run_a=run_a, run_b=run_b, register_raters=register_raters or None)
    sent = _rows_or_file(rows, file, "preferences")
    return Call("POST", "/preferences", parsed("ImportReport"), params, **sent)


@operation("GET", "/preferences")
def list_preferences(
    run_a: int, run_b: int, *, limit: int | None = None, cursor: str | None = None
) -> Call[Page[PreferenceRead]]:
    params = query(run_a=run_a, run_b=run_b, limit=limit, cursor=cursor)
    return Call("GET", "/preferences", paged("PreferenceRead"), params)


# -------------------------------------------------------------------------------------------------- jobs


@operation("GET", "/jobs")
def list_jobs(
    *, status: str | None = None, limit: int | None = None, cursor: str | None = None
) -> Call[Page[JobKindRead]]:
    return Call("GET", "/jobs", paged("JobKindRead"), query(status=status, limit=limit, cursor=cursor))


@operation("GET", "/jobs/{job_id}")
def get_job(job_id: int) -> Call[JobKindRead]:
    return Call("GET", f"/jobs/{job_id}", parsed("JobKindRead"))


@operation("POST", "/jobs/{job_id}/cancel")
def cancel_job(job_id: int) -> Call[JobKindRead]:
    return Call("POST", f"/jobs/{job_id}/cancel", parsed("JobKindRead"))


@operation("POST", "/jobs/{job_id}/resume")
def resume_job(job_id: int) -> Call[JobKindRead]:
    return Call("POST", f"/jobs/{job_id}/resume", parsed("JobKindRead"))


@operation("DELETE", "/jobs/{job_id}/results")
def delete_job_results(job_id: int, *, cascade: bool = False) -> Call[DeleteReport]:
    return Call("DELETE", f"/jobs/{job_id}/results", parsed("DeleteReport"), query(cascade=cascade or None))


# ----------------------------------------------------------------------------------------- study, traces


@operation("POST", "/studies/import")
def import_study(
    files: Sequence[Upload],
    *,
    corpus: Upload | None = None,
    passages: Upload | None = None,
    ratings: Sequence[Upload] = (),
    preferences: Sequence[Upload] = (),
    **fields: str | int | float | None,
) -> Call[StudyImportRead]:
    """The one-step study import; ``fields`` are the form's other fields (dataset, language, run, format,
    columns, fuzzy_threshold, ratings_columns ...: see the operation in /docs), None ones left out."""
    sent: list[tuple[str, Upload]] = [("file", f) for f in files]
    sent += [(name, f) for name, f in (("corpus", corpus), ("passages", passages)) if f is not None]
    sent += [("ratings", f) for f in ratings] + [("preferences", f) for f in preferences]
    data = {k: str(v) for k, v in fields.items() if v is not None}
    return Call("POST", "/studies/import", parsed("StudyImportRead"), data=data, files=tuple(sent))


@operation("POST", "/v1/traces")
def export_traces(
    payload: bytes,
    *,
    content_type: Literal["application/x-protobuf", "application/json"] = "application/x-protobuf",
    dataset: str | None = None,
    run: str | None = None,
    content_encoding: str | None = None,
) -> Call[TraceIngestRead]:
    """An OTLP/HTTP trace export (the bytes an OpenTelemetry exporter sends) into ``run`` of ``dataset``."""

    headers = {"content-type": content_type}
    headers |= query(
        **{"x-ragmeta-dataset": dataset, "x-ragmeta-run": run, "content-encoding": content_encoding}
    )
    return Call("POST", "/v1/traces", parsed("TraceIngestRead"), content=payload, headers=headers)


@operation("POST", "/runs/{run_id}/annotations")
def import_run_annotations(
    run_id: int, file: Upload, *, configs: Upload | None = None, **fields: str | None
) -> Call[AnnotationImportRead]:
    """A Langfuse, Opik, Phoenix or MLflow export of scores onto the run's traced outputs; ``fields`` are
    the form's fields (platform, human, rubric, raters as JSON, higher_is_better, lower_is_better)."""
    sent = [("file", file)] + ([("configs", configs)] if configs is not None else [])
    data = {k: v for k, v in fields.items() if v is not None}
    path = f"/runs/{run_id}/annotations"
    return Call("POST", path, parsed("AnnotationImportRead"), data=data, files=tuple(sent))


# ------------------------------------------------------------------------------------------------ ratings


@operation("POST", "/runs/{run_id}/ratings")
def import_ratings(
    run_id: int,
    rows: Sequence[RatingIn | Json] | None = None,
    *,
    file: Upload | None = None,
    join: Literal["auto", "order"] | None = None,
    columns: str | None = None,
    register_raters: bool = False,
) -> Call[ImportReport]:
    params = query(join=join, columns=columns, register_raters=register_raters or None)
    sent = _rows_or_file(rows, file, "ratings")
    return Call("POST", f"/runs/{run_id}/ratings", parsed("ImportReport"), params, **sent)


@operation("GET", "/runs/{run_id}/ratings")
def list_ratings(
    run_id: int, *, limit: int | None = None, cursor: str | None = None
) -> Call[Page[RatingRead]]:
    return Call("GET", f"/runs/{run_id}/ratings", paged("RatingRead"), query(limit=limit, cursor=cursor))


@operation("DELETE", "/runs/{run_id}/ratings")
def delete_ratings(run_id: int, rater: str) -> Call[DeleteReport]:
    return Call("DELETE", f"/runs/{run_id}/ratings", parsed("DeleteReport"), {"rater": rater})


@operation("POST", "/raters")
def create_raters(rows: Sequence[RaterCreate | Json]) -> Call[ImportReport]:
    return Call("POST", "/raters", parsed("ImportReport"), json=body(list(rows)))


@operation("GET", "/raters")
def list_raters(*, limit: int | None = None, cursor: str | None = None) -> Call[Page[RaterRead]]:
    return Call("GET", "/raters", paged("RaterRead"), query(limit=limit, cursor=cursor))


@operation("POST", "/rubrics")
def create_rubric(data: RubricCreate | Json) -> Call[RubricRead]:
    return Call("POST", "/rubrics", parsed("RubricRead"), json=body(data))


@operation("GET", "/rubrics")
def list_rubrics(*, limit: int | None = None, cursor: str | None = None) -> Call[Page[RubricRead]]:
    return Call("GET", "/rubrics", paged("RubricRead"), query(limit=limit, cursor=cursor))


# ----------------------------------------------------------------------------------------------- accounts


@operation("GET", "/me")
def me() -> Call[Me]:
    return Call("GET", "/me", parsed("Me"))


@operation("GET", "/users")
def list_users(*, limit: int | None = None, cursor: str | None = None) -> Call[Page[UserRead]]:
    return Call("GET", "/users", paged("UserRead"), query(limit=limit, cursor=cursor))


@operation("POST", "/users")
def create_user(data: UserCreate | Json) -> Call[UserRead]:
    return Call("POST", "/users", parsed("UserRead"), json=body(data))


@operation("PATCH", "/users/{user_id}")
def update_user(user_id: int, data: UserUpdate | Json) -> Call[UserRead]:
    return Call("PATCH", f"/users/{user_id}", parsed("UserRead"), json=body(data))


@operation("POST", "/keys")
def create_key(data: KeyCreate | Json) -> Call[KeyIssued]:
    return Call("POST", "/keys", parsed("KeyIssued"), json=body(data))


@operation("GET", "/keys")
def list_keys(*, limit: int | None = None, cursor: str | None = None) -> Call[Page[KeyRead]]:
    return Call("GET", "/keys", paged("KeyRead"), query(limit=limit, cursor=cursor))


@operation("DELETE", "/keys/{key_id}")
def revoke_key(key_id: int) -> Call[KeyRead]:
    return Call("DELETE", f"/keys/{key_id}", parsed("KeyRead"))


# -------------------------------------------------------------------------------------------------- tasks


@operation("POST", "/tasks")
def create_task(data: TaskCreate | Json) -> Call[TaskRead]:
    return Call("POST", "/tasks", parsed("TaskRead"), json=body(data))


@operation("GET", "/tasks")
def list_tasks(*, limit: int | None = None, cursor: str | None = None) -> Call[Page[TaskRead]]:
    return Call("GET", "/tasks", paged("TaskRead"), query(limit=limit, cursor=cursor))


@operation("GET", "/me/tasks")
def my_tasks(*, limit: int | None = None, cursor: str | None = None) -> Call[Page[TaskRead]]:
    return Call("GET", "/me/tasks", paged("TaskRead"), query(limit=limit, cursor=cursor))


@operation("GET", "/tasks/{task_id}")
def get_task(task_id: int) -> Call[TaskRead]:
    return Call("GET", f"/tasks/{task_id}", parsed("TaskRead"))


@operation("GET", "/tasks/{task_id}/dashboard")
def dashboard(task_id: int, *, threshold: int | None = None) -> Call[Dashboard]:
    return Call("GET", f"/tasks/{task_id}/dashboard", parsed("Dashboard"), query(threshold=threshold))


@operation("GET", "/tasks/{task_id}/export")
def export(task_id: int) -> Call[list[ExportRow]]:
    return Call("GET", f"/tasks/{task_id}/export", parsed("list[ExportRow]"), {"format": "json"})


@operation("GET", "/tasks/{task_id}/export")
def export_text(
    task_id: int,
    format: Literal["json", "csv"] = "csv",
    *,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[str]:
    return Call("GET", f"/tasks/{task_id}/export", text, query(format=format, limit=limit, cursor=cursor))


@operation("POST", "/tasks/{task_id}/next")
def next_item(task_id: int) -> Call[NextItem]:
    return Call("POST", f"/tasks/{task_id}/next", parsed("NextItem"))


@operation("GET", "/tasks/{task_id}/estimate")
def active_estimate(task_id: int, *, confidence: float | None = None) -> Call[ActiveEstimate]:
    return Call("GET", f"/tasks/{task_id}/estimate", parsed("ActiveEstimate"), query(confidence=confidence))


@operation("GET", "/tasks/{task_id}/queue")
def my_queue(task_id: int) -> Call[Queue]:
    return Call("GET", f"/tasks/{task_id}/queue", parsed("Queue"))


@operation("GET", "/tasks/{task_id}/queue/{position}")
def my_item(task_id: int, position: int) -> Call[ItemView]:
    return Call("GET", f"/tasks/{task_id}/queue/{position}", parsed("ItemView"))


@operation("PUT", "/tasks/{task_id}/queue/{position}")
def act(task_id: int, position: int, data: ItemAction | Json) -> Call[ActionResult]:
    return Call("PUT", f"/tasks/{task_id}/queue/{position}", parsed("ActionResult"), json=body(data))
