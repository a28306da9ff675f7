"""Lists page by keyset: every row once, in a stable order, whatever is written between two pages; exports
are the same rows streamed whole or paged."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

import ragmeta
from services.pagination import encode_cursor
from tests.api.helpers import assert_envelope, create_dataset, get_pages
from tests.api.test_outputs import make_run

N = 23


def _store(client: TestClient, n: int = N) -> tuple[int, int]:
    ds = create_dataset(client, "paged")
    docs = [{"external_id": f"d{i:02d}", "text": f"Document {i} : le texte numéro {i}."} for i in range(n)]
    assert client.post(f"/datasets/{ds}/documents", json=docs).status_code == 200
    questions = [{"external_id": f"q{i:02d}", "question": f"Question {i} ?"} for i in range(n)]
    assert client.post(f"/datasets/{ds}/questions", json=questions).status_code == 200
    run = make_run(client, ds)
    # Imported in another order than the question ids: the pages follow the questions, not the import.
    outputs = [
        {
            "question_id": f"q{i:02d}",
            "answer": f"réponse {i}",
            "retrieved": [{"document_id": f"d{i:02d}", "start": 0, "end": 8}],
        }
        for i in reversed(range(n))
    ]
    assert client.post(f"/runs/{run}/outputs", json=outputs).status_code == 200
    scores = [{"question_id": f"q{i:02d}", "metric": "external.m", "value": i / 10} for i in range(n)]
    assert client.post(f"/runs/{run}/scores", json=scores).status_code == 200, "scores"
    return ds, run


def _walk(client: TestClient, path: str, limit: int | None = None, **params: Any) -> list[list[Any]]:
    """The pages of a list, following each Link header; every page but the last says where to go on."""
    pages = []
    resp = client.get(path, params={"limit": limit, **params} if limit else None)
    while True:
        assert resp.status_code == 200, resp.text
        pages.append(resp.json())
        nxt = resp.links.get("next", {}).get("url")
        if nxt is None:
            assert "X-Next-Cursor" not in resp.headers
            return pages
        assert resp.headers["X-Next-Cursor"] in nxt
        resp = client.get(nxt)


def test_outputs_are_read_page_by_page_in_question_order(client: TestClient) -> None:
    _, run = _store(client)
    pages = _walk(client, f"/runs/{run}/outputs", 5)
    assert [len(p) for p in pages] == [5, 5, 5, 5, 3]
    ids = [o["question_id"] for p in pages for o in p]
    assert ids == [f"q{i:02d}" for i in range(N)]
    # The chunks' documents are named on every page, not only on the first.
    assert [o["retrieved"][0]["document_id"] for p in pages for o in p] == [f"d{i:02d}" for i in range(N)]
    api = ragmeta.Client(http=client)
    every = [o.model_dump(mode="json") for o in api.all(api.list_outputs, run, limit=7)]
    assert every == [o for p in pages for o in p]
    # An exact multiple of the limit ends without an empty page.
    assert [len(p) for p in _walk(client, f"/runs/{run}/outputs", N)] == [N]


def test_a_row_written_between_two_pages_moves_no_other(client: TestClient) -> None:
    ds, run = _store(client)
    first = client.get(f"/runs/{run}/outputs", params={"limit": 10})
    # A new question sorts after every existing one; an earlier one changes its answer: neither shifts the
    # page boundary (an offset would give the 10th row again or skip one).
    client.post(f"/datasets/{ds}/questions", json=[{"external_id": "zz", "question": "Nouvelle ?"}])
    client.post(f"/runs/{run}/outputs", json=[{"question_id": "zz", "answer": "neuve"}])
    client.post(f"/runs/{run}/outputs", json=[{"question_id": "q00", "answer": "changée"}])
    rest = [o for page in _walk(client, first.links["next"]["url"]) for o in page]
    seen = [o["question_id"] for o in first.json() + rest]
    assert seen == [f"q{i:02d}" for i in range(N)] + ["zz"]


def test_jobs_newest_first_and_small_lists_page(client: TestClient) -> None:
    _, run = _store(client, 3)
    for _ in range(4):
        assert client.post(
            f"/runs/{run}/scoring-jobs", json={"metrics": ["classic.rouge_l"]}
        ).status_code in (
            200,
            201,
            202,
        )
    jobs = [j["id"] for p in _walk(client, "/jobs", 3) for j in p]
    assert jobs == sorted(jobs, reverse=True) and len(jobs) == len(set(jobs)) >= 4
    client.post("/raters", json=[{"name": f"r{i}"} for i in range(7)])
    raters = _walk(client, "/raters", 2)
    assert [r["name"] for p in raters for r in p] == [f"r{i}" for i in range(7)]
    assert [len(p) for p in raters] == [2, 2, 2, 1]


def test_ratings_page_on_output_and_rater(client: TestClient) -> None:
    _, run = _store(client, 4)
    rows = [
        {"question_id": f"q{i:02d}", "rater": r, "score": 1 + i % 5}
        for i in range(4)
        for r in ("a", "b", "c")
    ]
    assert (
        client.post(f"/runs/{run}/ratings", params={"register_raters": "true"}, json=rows).status_code == 200
    )
    pages = _walk(client, f"/runs/{run}/ratings", 5)
    got = [(r["question_id"], r["rater"]) for p in pages for r in p]
    # The outputs were imported last question first: output id order is the reverse of the questions'.
    assert got == [(f"q{i:02d}", r) for i in reversed(range(4)) for r in ("a", "b", "c")]
    assert [len(p) for p in pages] == [5, 5, 2]


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_document_export_streamed_whole_equals_its_pages(client: TestClient, fmt: str) -> None:
    ds, _ = _store(client)
    whole = client.get(f"/datasets/{ds}/documents", params={"format": fmt})
    assert whole.status_code == 200 and "Link" not in whole.headers

    def rows(resp: Any) -> list[dict[str, Any]]:
        if fmt == "json":
            return list(resp.json())
        return [json.loads(line) for line in resp.text.splitlines()]

    paged = [
        r
        for resp in get_pages(client, f"/datasets/{ds}/documents", {"format": fmt, "limit": 4})
        for r in rows(resp)
    ]
    assert rows(whole) == paged
    assert [d["external_id"] for d in paged] == [f"d{i:02d}" for i in range(N)]


def test_score_and_question_csv_streamed_whole_equal_their_pages(client: TestClient) -> None:
    ds, run = _store(client)
    whole = client.get(f"/runs/{run}/scores", params={"format": "csv"}).text
    pages = get_pages(client, f"/runs/{run}/scores", {"format": "csv", "limit": 6})
    assert len(pages) == 4
    table = list(csv.DictReader(io.StringIO(whole)))
    assert table == [row for p in pages for row in csv.DictReader(io.StringIO(p.text))]
    assert [float(r["external.m"]) for r in table] == [i / 10 for i in range(N)]
    body = client.get(f"/runs/{run}/scores").json()
    assert set(body) == {"columns", "configs", "rows"} and len(body["rows"]) == N
    assert body["columns"][:3] == ["output_id", "question_id", "external.m"]
    sheet = client.get(f"/datasets/{ds}/questions", params={"format": "csv"}).text
    sheet_pages = get_pages(client, f"/datasets/{ds}/questions", {"format": "csv", "limit": 10})
    assert list(csv.DictReader(io.StringIO(sheet))) == [
        r for p in sheet_pages for r in csv.DictReader(io.StringIO(p.text))
    ]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"cursor": "not a cursor"}, "cursor"),
        ({"cursor": encode_cursor("jobs", (3,))}, "cursor"),  # a cursor of another list
        ({"cursor": encode_cursor("outputs", ("x",))}, "cursor"),  # the wrong kind of key
        ({"cursor": encode_cursor("outputs", (2**40,))}, "cursor"),  # out of the id range
        ({"cursor": "x" * 500}, "cursor"),
    ],
)
def test_bad_page_parameters_are_named(client: TestClient, params: dict[str, Any], field: str) -> None:
    _, run = _store(client, 2)
    body = assert_envelope(client.get(f"/runs/{run}/outputs", params=params), 422)
    assert field in json.dumps(body["items"])
