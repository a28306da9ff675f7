"""ragmeta.Client and AsyncClient against the app (in-process): typed answers, pages followed by their
cursor, a job waited for, and the service's error envelope carried by the exceptions."""

from __future__ import annotations

import httpx
import pytest
from fastapi.testclient import TestClient

import ragmeta
from services.datasets.schemas import DatasetRead
from tests.api.helpers import MINI
from tests.api.team import all_outputs


def test_a_study_through_the_client(client: TestClient) -> None:
    api = ragmeta.Client(http=client)
    ds = api.create_dataset({"name": "mini", "language": "fr"})
    assert isinstance(ds, DatasetRead) and ds.name == "mini"
    assert api.import_documents(ds.id, file=MINI / "documents.jsonl").created == 3
    assert api.import_questions(ds.id, file=MINI / "questions.jsonl").created == 5
    run = api.create_run(ds.id, {"name": "r1", "system": {"retriever": "external", "k": 5}})
    assert api.import_outputs(run.id, all_outputs()).created == 5
    sheet = b"question_id,rater,score\nq1,ann,5\nq1,bob,4\nq2,ann,2\nq2,bob,3\nq4,ann,5\nq4,bob,5\n"
    assert api.import_ratings(run.id, file=("r.csv", sheet), register_raters=True).created == 6
    # Two rows a page: the pages are followed by their cursor, every row once.
    first = api.list_ratings(run.id, limit=2)
    assert len(first.items) == 2 and first.next_cursor
    assert len(api.all(api.list_ratings, run.id, limit=2)) == 6
    assert api.get_run(run.id).name == "r1"


def test_waiting_for_a_job(client: TestClient) -> None:
    """No worker runs here: the job stays queued until it is cancelled."""
    api = ragmeta.Client(http=client)
    ds = api.create_dataset({"name": "mini", "language": "fr"})
    api.import_documents(ds.id, file=MINI / "documents.jsonl")
    api.import_questions(ds.id, file=MINI / "questions.jsonl")
    run = api.create_run(ds.id, {"name": "r1"})
    api.import_outputs(run.id, all_outputs())
    job = api.create_scoring(run.id, {"metrics": ["classic.rouge_l"]})
    seen: list[str] = []
    with pytest.raises(TimeoutError, match=f"job {job.id} still queued"):
        api.wait_job(job, poll_s=0.01, timeout_s=0.05, progress=lambda j: seen.append(j.status))
    assert seen and set(seen) == {"queued"}
    assert api.cancel_job(job.id).status == "cancelled"
    with pytest.raises(ragmeta.JobFailed, match="ended cancelled") as failed:
        api.wait_job(job.id)
    assert failed.value.job.id == job.id
    assert api.wait_job(job.id, raise_on_failure=False).status == "cancelled"
    assert [j.id for j in api.all(api.list_jobs, status="cancelled")] == [job.id]


def test_errors_carry_the_service_s_envelope(client: TestClient) -> None:
    api = ragmeta.Client(http=client)
    with pytest.raises(ragmeta.NotFound) as missing:
        api.get_run(987654)
    assert missing.value.status_code == 404 and missing.value.error == "NotFound"
    assert missing.value.detail and str(missing.value).startswith("404 NotFound: ")
    with pytest.raises(ragmeta.BadRequest) as bad:
        api.create_dataset({"name": "", "language": "fr"})
    assert bad.value.status_code == 422 and [i.field for i in bad.value.items] == ["name"]
    assert isinstance(bad.value, ragmeta.APIError) and isinstance(bad.value, ragmeta.RagmetaError)


def test_an_unreachable_service_is_said() -> None:
    with ragmeta.Client("http://127.0.0.1:9", timeout=2) as api, pytest.raises(ragmeta.ServiceUnreachable):
        api.healthz()


async def test_the_async_client(client: TestClient) -> None:
    transport = httpx.ASGITransport(app=client.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test", headers=client.headers) as http:
        api = ragmeta.AsyncClient(http=http)
        for name in ("a", "b", "c"):
            await api.create_dataset({"name": name})
        names = [d.name for d in await api.all(api.list_datasets, limit=2)]
        assert sorted(names) == ["a", "b", "c"]
        with pytest.raises(ragmeta.NotFound):
            await api.get_dataset(987654)


def test_a_fresh_report_is_asked_with_no_cache() -> None:
    """``fresh=True`` asks for the report of the data as it is now (Cache-Control: no-cache), and is no
    query parameter; the command line's report and figure commands ask for it."""
    from app.sdk import operations

    call = operations.run_report(4, ci="bca", fresh=True)
    assert dict(call.headers) == {"Cache-Control": "no-cache"} and dict(call.params) == {"ci": "bca"}
    assert dict(operations.pooled_svg([1, 2]).headers) == {}
