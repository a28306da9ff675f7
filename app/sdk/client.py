"""``Client`` and ``AsyncClient``: the service's API over httpx, one method per operation (app.sdk.operations,
bound here under the same name and arguments), the pages of a list followed, jobs waited for.

    from ragmeta import Client

    with Client("http://127.0.0.1:8000", api_key="rgm_...") as api:
        job = api.create_scoring(3, {"metrics": ["classic.bleu"]})
        api.wait_job(job.id)
        report = api.run_report(3)

An ``httpx.Client`` (``httpx.AsyncClient``) of your own may be given as ``http``, a test's in-process one
say; its base URL and headers are then used as they are. Errors are app.sdk.errors'.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import httpx

from app.sdk import operations as ops
from app.sdk.call import Call, Page
from app.sdk.errors import JobFailed, ServiceUnreachable, error_for

if TYPE_CHECKING:
    from services.workers import JobKindRead

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8000"
# Rows asked per page when a whole list is read (the service's maximum).
PAGE_LIMIT = 1000
ENDED = ("done", "failed", "cancelled")


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def _files(stack: contextlib.ExitStack, call: Call[Any]) -> list[tuple[str, Any]] | None:
    """The call's uploads as httpx takes them: paths opened (closed with ``stack``), bytes as they are."""
    if not call.files:
        return None
    sent: list[tuple[str, Any]] = []
    for name, f in call.files:
        if isinstance(f, Path):
            sent.append((name, (f.name, stack.enter_context(f.open("rb")), "application/octet-stream")))
        else:
            sent.append((name, (f[0], f[1], "application/octet-stream")))
    return sent


def _request(call: Call[Any], files: list[tuple[str, Any]] | None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"params": dict(call.params) or None, "headers": dict(call.headers) or None}
    if call.json is not None:
        kwargs["json"] = call.json
    if call.content is not None:
        kwargs["content"] = call.content
    if call.data:
        kwargs["data"] = dict(call.data)
    if files is not None:
        kwargs["files"] = files
    return kwargs


def _read(call: Call[T], resp: httpx.Response) -> T:
    if resp.status_code >= 400:
        raise error_for(resp)
    return call.read(resp)


def _sync(op: Callable[P, Call[T]]) -> Callable[Concatenate[Client, P], T]:
    def method(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.send(op(*args, **kwargs))

    method.__name__ = method.__qualname__ = op.__name__
    method.__doc__ = op.__doc__
    method.__operation__ = op.__operation__  # type: ignore[attr-defined]
    return method


def _async(op: Callable[P, Call[T]]) -> Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]]:
    async def method(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.send(op(*args, **kwargs))

    method.__name__ = method.__qualname__ = op.__name__
    method.__doc__ = op.__doc__
    method.__operation__ = op.__operation__  # type: ignore[attr-defined]
    return method


class Client:
    """The service's API, synchronous. ``url`` defaults to http://127.0.0.1:8000; ``api_key`` is sent as
    ``Authorization: Bearer``; ``timeout`` (seconds) bounds each request."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float = 600,
        http: httpx.Client | None = None,
    ) -> None:
        self.url = url.rstrip("/") if http is None else str(http.base_url).rstrip("/")
        self._owned = http is None
        self.http = http or httpx.Client(base_url=self.url, timeout=timeout, headers=_headers(api_key))

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._owned:
            self.http.close()

    def send(self, call: Call[T]) -> T:
        """Send one operation's request and read its answer (APIError when the service refuses it)."""
        with contextlib.ExitStack() as stack:
            try:
                resp = self.http.request(call.method, call.path, **_request(call, _files(stack, call)))
            except httpx.TransportError as exc:
                raise ServiceUnreachable(self.url, str(exc) or type(exc).__name__) from exc
        return _read(call, resp)

    def paginate(self, list_op: Callable[P, Page[T]], *args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        """Every row of a paged list, page after page: ``api.paginate(api.list_jobs, status="done")``."""
        kwargs.setdefault("limit", PAGE_LIMIT)
        while True:
            page = list_op(*args, **kwargs)
            yield from page.items
            if page.next_cursor is None:
                return
            kwargs["cursor"] = page.next_cursor

    def all(self, list_op: Callable[P, Page[T]], *args: P.args, **kwargs: P.kwargs) -> list[T]:
        """Every row of a paged list: ``api.all(api.list_datasets)``."""
        return list(self.paginate(list_op, *args, **kwargs))

    def wait_job(
        self,
        job: int | JobKindRead,
        *,
        poll_s: float = 0.5,
        timeout_s: float | None = None,
        progress: Callable[[JobKindRead], None] | None = None,
        raise_on_failure: bool = True,
    ) -> JobKindRead:
        """Follow a job until it ends; ``progress`` is called with each state read. JobFailed when it ends
        failed or cancelled (unless ``raise_on_failure`` is false); TimeoutError after ``timeout_s``."""
        job_id = job if isinstance(job, int) else job.id
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            state = self.get_job(job_id)
            if progress is not None:
                progress(state)
            if state.status in ENDED:
                if raise_on_failure and state.status != "done":
                    raise JobFailed(state)
                return state
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"job {job_id} still {state.status} after {timeout_s} s")
            time.sleep(poll_s)

    # The operations (app.sdk.operations), in the order of the API's tags.
    healthz = _sync(ops.healthz)
    livez = _sync(ops.livez)
    readyz = _sync(ops.readyz)
    prometheus_metrics = _sync(ops.prometheus_metrics)
    create_dataset = _sync(ops.create_dataset)
    list_datasets = _sync(ops.list_datasets)
    get_dataset = _sync(ops.get_dataset)
    delete_dataset = _sync(ops.delete_dataset)
    import_documents = _sync(ops.import_documents)
    export_documents = _sync(ops.export_documents)
    export_documents_text = _sync(ops.export_documents_text)
    import_questions = _sync(ops.import_questions)
    export_questions = _sync(ops.export_questions)
    export_questions_text = _sync(ops.export_questions_text)
    index_dataset = _sync(ops.index_dataset)
    retrieve = _sync(ops.retrieve)
    answer = _sync(ops.answer)
    create_run = _sync(ops.create_run)
    list_runs = _sync(ops.list_runs)
    get_run = _sync(ops.get_run)
    delete_run = _sync(ops.delete_run)
    generate = _sync(ops.generate)
    import_outputs = _sync(ops.import_outputs)
    list_outputs = _sync(ops.list_outputs)
    import_scores = _sync(ops.import_scores)
    get_scores = _sync(ops.get_scores)
    get_scores_text = _sync(ops.get_scores_text)
    delete_scores = _sync(ops.delete_scores)
    list_metrics = _sync(ops.list_metrics)
    create_scoring = _sync(ops.create_scoring)
    create_pair_judging = _sync(ops.create_pair_judging)
    score_samples = _sync(ops.score_samples)
    agreement = _sync(ops.agreement)
    run_report = _sync(ops.run_report)
    run_report_text = _sync(ops.run_report_text)
    pooled_report = _sync(ops.pooled_report)
    pooled_report_text = _sync(ops.pooled_report_text)
    report_html = _sync(ops.report_html)
    report_svg = _sync(ops.report_svg)
    report_png = _sync(ops.report_png)
    report_pdf = _sync(ops.report_pdf)
    pooled_html = _sync(ops.pooled_html)
    pooled_svg = _sync(ops.pooled_svg)
    pooled_png = _sync(ops.pooled_png)
    pooled_pdf = _sync(ops.pooled_pdf)
    metric_items = _sync(ops.metric_items)
    metric_items_html = _sync(ops.metric_items_html)
    pooled_metric_items = _sync(ops.pooled_metric_items)
    pooled_metric_items_html = _sync(ops.pooled_metric_items_html)
    run_estimate = _sync(ops.run_estimate)
    run_estimate_text = _sync(ops.run_estimate_text)
    run_judge_configurations = _sync(ops.run_judge_configurations)
    run_judge_sensitivity = _sync(ops.run_judge_sensitivity)
    run_judge_sensitivity_text = _sync(ops.run_judge_sensitivity_text)
    run_stability = _sync(ops.run_stability)
    run_stability_text = _sync(ops.run_stability_text)
    run_trust = _sync(ops.run_trust)
    run_trust_text = _sync(ops.run_trust_text)
    pooled_trust = _sync(ops.pooled_trust)
    pooled_trust_text = _sync(ops.pooled_trust_text)
    pairwise_report = _sync(ops.pairwise_report)
    pairwise_report_text = _sync(ops.pairwise_report_text)
    pairwise_svg = _sync(ops.pairwise_svg)
    pairwise_png = _sync(ops.pairwise_png)
    systems_report = _sync(ops.systems_report)
    systems_report_text = _sync(ops.systems_report_text)
    import_preferences = _sync(ops.import_preferences)
    list_preferences = _sync(ops.list_preferences)
    list_jobs = _sync(ops.list_jobs)
    get_job = _sync(ops.get_job)
    cancel_job = _sync(ops.cancel_job)
    resume_job = _sync(ops.resume_job)
    delete_job_results = _sync(ops.delete_job_results)
    import_study = _sync(ops.import_study)
    export_traces = _sync(ops.export_traces)
    import_run_annotations = _sync(ops.import_run_annotations)
    import_ratings = _sync(ops.import_ratings)
    list_ratings = _sync(ops.list_ratings)
    delete_ratings = _sync(ops.delete_ratings)
    create_raters = _sync(ops.create_raters)
    list_raters = _sync(ops.list_raters)
    create_rubric = _sync(ops.create_rubric)
    list_rubrics = _sync(ops.list_rubrics)
    me = _sync(ops.me)
    list_users = _sync(ops.list_users)
    create_user = _sync(ops.create_user)
    update_user = _sync(ops.update_user)
    create_key = _sync(ops.create_key)
    list_keys = _sync(ops.list_keys)
    revoke_key = _sync(ops.revoke_key)
    create_task = _sync(ops.create_task)
    list_tasks = _sync(ops.list_tasks)
    my_tasks = _sync(ops.my_tasks)
    get_task = _sync(ops.get_task)
    dashboard = _sync(ops.dashboard)
    export = _sync(ops.export)
    export_text = _sync(ops.export_text)
    next_item = _sync(ops.next_item)
    active_estimate = _sync(ops.active_estimate)
    my_queue = _sync(ops.my_queue)
    my_item = _sync(ops.my_item)
    act = _sync(ops.act)


class AsyncClient:
    """The service's API, asynchronous: every method of :class:`Client`, awaited."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float = 600,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url.rstrip("/") if http is None else str(http.base_url).rstrip("/")
        self._owned = http is None
        self.http = http or httpx.AsyncClient(base_url=self.url, timeout=timeout, headers=_headers(api_key))

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owned:
            await self.http.aclose()

    async def send(self, call: Call[T]) -> T:
        with contextlib.ExitStack() as stack:
            try:
                resp = await self.http.request(call.method, call.path, **_request(call, _files(stack, call)))
            except httpx.TransportError as exc:
                raise ServiceUnreachable(self.url, str(exc) or type(exc).__name__) from exc
        return _read(call, resp)

    async def paginate(
        self, list_op: Callable[P, Awaitable[Page[T]]], *args: P.args, **kwargs: P.kwargs
    ) -> AsyncIterator[T]:
        kwargs.setdefault("limit", PAGE_LIMIT)
        while True:
            page = await list_op(*args, **kwargs)
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            kwargs["cursor"] = page.next_cursor

    async def all(
        self, list_op: Callable[P, Awaitable[Page[T]]], *args: P.args, **kwargs: P.kwargs
    ) -> list[T]:
        return [item async for item in self.paginate(list_op, *args, **kwargs)]

    async def wait_job(
        self,
        job: int | JobKindRead,
        *,
        poll_s: float = 0.5,
        timeout_s: float | None = None,
        progress: Callable[[JobKindRead], None] | None = None,
        raise_on_failure: bool = True,
    ) -> JobKindRead:
        job_id = job if isinstance(job, int) else job.id
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            state = await self.get_job(job_id)
            if progress is not None:
                progress(state)
            if state.status in ENDED:
                if raise_on_failure and state.status != "done":
                    raise JobFailed(state)
                return state
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"job {job_id} still {state.status} after {timeout_s} s")
            await asyncio.sleep(poll_s)

    # The operations (app.sdk.operations), awaited.
    healthz = _async(ops.healthz)
    livez = _async(ops.livez)
    readyz = _async(ops.readyz)
    prometheus_metrics = _async(ops.prometheus_metrics)
    create_dataset = _async(ops.create_dataset)
    list_datasets = _async(ops.list_datasets)
    get_dataset = _async(ops.get_dataset)
    delete_dataset = _async(ops.delete_dataset)
    import_documents = _async(ops.import_documents)
    export_documents = _async(ops.export_documents)
    export_documents_text = _async(ops.export_documents_text)
    import_questions = _async(ops.import_questions)
    export_questions = _async(ops.export_questions)
    export_questions_text = _async(ops.export_questions_text)
    index_dataset = _async(ops.index_dataset)
    retrieve = _async(ops.retrieve)
    answer = _async(ops.answer)
    create_run = _async(ops.create_run)
    list_runs = _async(ops.list_runs)
    get_run = _async(ops.get_run)
    delete_run = _async(ops.delete_run)
    generate = _async(ops.generate)
    import_outputs = _async(ops.import_outputs)
    list_outputs = _async(ops.list_outputs)
    import_scores = _async(ops.import_scores)
    get_scores = _async(ops.get_scores)
    get_scores_text = _async(ops.get_scores_text)
    delete_scores = _async(ops.delete_scores)
    list_metrics = _async(ops.list_metrics)
    create_scoring = _async(ops.create_scoring)
    create_pair_judging = _async(ops.create_pair_judging)
    score_samples = _async(ops.score_samples)
    agreement = _async(ops.agreement)
    run_report = _async(ops.run_report)
    run_report_text = _async(ops.run_report_text)
    pooled_report = _async(ops.pooled_report)
    pooled_report_text = _async(ops.pooled_report_text)
    report_html = _async(ops.report_html)
    report_svg = _async(ops.report_svg)
    report_png = _async(ops.report_png)
    report_pdf = _async(ops.report_pdf)
    pooled_html = _async(ops.pooled_html)
    pooled_svg = _async(ops.pooled_svg)
    pooled_png = _async(ops.pooled_png)
    pooled_pdf = _async(ops.pooled_pdf)
    metric_items = _async(ops.metric_items)
    metric_items_html = _async(ops.metric_items_html)
    pooled_metric_items = _async(ops.pooled_metric_items)
    pooled_metric_items_html = _async(ops.pooled_metric_items_html)
    run_estimate = _async(ops.run_estimate)
    run_estimate_text = _async(ops.run_estimate_text)
    run_judge_configurations = _async(ops.run_judge_configurations)
    run_judge_sensitivity = _async(ops.run_judge_sensitivity)
    run_judge_sensitivity_text = _async(ops.run_judge_sensitivity_text)
    run_stability = _async(ops.run_stability)
    run_stability_text = _async(ops.run_stability_text)
    run_trust = _async(ops.run_trust)
    run_trust_text = _async(ops.run_trust_text)
    pooled_trust = _async(ops.pooled_trust)
    pooled_trust_text = _async(ops.pooled_trust_text)
    pairwise_report = _async(ops.pairwise_report)
    pairwise_report_text = _async(ops.pairwise_report_text)
    pairwise_svg = _async(ops.pairwise_svg)
    pairwise_png = _async(ops.pairwise_png)
    systems_report = _async(ops.systems_report)
    systems_report_text = _async(ops.systems_report_text)
    import_preferences = _async(ops.import_preferences)
    list_preferences = _async(ops.list_preferences)
    list_jobs = _async(ops.list_jobs)
    get_job = _async(ops.get_job)
    cancel_job = _async(ops.cancel_job)
    resume_job = _async(ops.resume_job)
    delete_job_results = _async(ops.delete_job_results)
    import_study = _async(ops.import_study)
    export_traces = _async(ops.export_traces)
    import_run_annotations = _async(ops.import_run_annotations)
    import_ratings = _async(ops.import_ratings)
    list_ratings = _async(ops.list_ratings)
    delete_ratings = _async(ops.delete_ratings)
    create_raters = _async(ops.create_raters)
    list_raters = _async(ops.list_raters)
    create_rubric = _async(ops.create_rubric)
    list_rubrics = _async(ops.list_rubrics)
    me = _async(ops.me)
    list_users = _async(ops.list_users)
    create_user = _async(ops.create_user)
    update_user = _async(ops.update_user)
    create_key = _async(ops.create_key)
    list_keys = _async(ops.list_keys)
    revoke_key = _async(ops.revoke_key)
    create_task = _async(ops.create_task)
    list_tasks = _async(ops.list_tasks)
    my_tasks = _async(ops.my_tasks)
    get_task = _async(ops.get_task)
    dashboard = _async(ops.dashboard)
    export = _async(ops.export)
    export_text = _async(ops.export_text)
    next_item = _async(ops.next_item)
    active_estimate = _async(ops.active_estimate)
    my_queue = _async(ops.my_queue)
    my_item = _async(ops.my_item)
    act = _async(ops.act)
