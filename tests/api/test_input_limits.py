"""Hostile or malformed input gets a clear 4xx in the envelope, names the field, and changes nothing."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.helpers import assert_envelope, create_dataset, load_mini
from tests.api.test_outputs import make_run, native_outputs

TOO_BIG = 2**63


def _datasets(client: TestClient) -> list[dict[str, Any]]:
    return list(client.get("/datasets").json())


@pytest.mark.parametrize(
    "path",
    [
        f"/datasets/{TOO_BIG}",
        f"/runs/{TOO_BIG}",
        f"/jobs/{TOO_BIG}",
        f"/runs/{TOO_BIG}/report",
        f"/runs/{TOO_BIG}/outputs",
        "/datasets/0",
        "/runs/-1",
    ],
)
def test_ids_beyond_the_store_are_422_not_500(client: TestClient, path: str) -> None:
    body = assert_envelope(client.get(path), 422, "InvalidRequest")
    assert body["items"][0]["field"].endswith("_id")


def test_ids_beyond_the_store_in_a_write_path(client: TestClient) -> None:
    assert_envelope(client.post(f"/runs/{TOO_BIG}/ratings", json=[{"x": 1}]), 422)
    assert_envelope(client.post(f"/report?runs=1,{TOO_BIG}"), 405)
    body = assert_envelope(client.get(f"/report?runs=1,{TOO_BIG}"), 422)
    assert body["items"][0]["field"] == "query.runs"


@pytest.mark.parametrize("seed", ["-1", str(2**32), "1e3"])
def test_seed_must_be_a_non_negative_32_bit_integer(client: TestClient, seed: str) -> None:
    body = assert_envelope(client.get(f"/runs/1/report?seed={seed}"), 422)
    assert body["items"][0]["field"] == "query.seed"


def test_deeply_nested_json_is_refused_everywhere(client: TestClient) -> None:
    deep: Any = "x"
    for _ in range(100):
        deep = {"a": deep}
    body = assert_envelope(client.post("/datasets", json={"name": "deep", "description": deep}), 400)
    assert "deeper than 32" in body["detail"]
    ds = create_dataset(client)
    doc = {"external_id": "d", "text": "some text", "metadata": deep}
    assert_envelope(client.post(f"/datasets/{ds}/documents", json=[doc]), 400, "MalformedInput")
    # Deeper than Python's own recursion limit: still a 400, never a RecursionError.
    raw = "[" * 100_000 + "]" * 100_000
    assert_envelope(
        client.post(f"/datasets/{ds}/documents", content=raw, headers={"content-type": "application/json"}),
        400,
    )
    assert_envelope(client.post("/datasets", content=raw, headers={"content-type": "application/json"}), 400)
    assert client.get(f"/datasets/{ds}").json()["documents"] == 0


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused_at_input(client: TestClient, constant: str) -> None:
    ds = create_dataset(client)
    raw = f'[{{"external_id": "d", "text": "t", "metadata": {{"x": {constant}}}}}]'
    body = assert_envelope(
        client.post(f"/datasets/{ds}/documents", content=raw, headers={"content-type": "application/json"}),
        400,
    )
    assert "NaN and Infinity are refused" in json.dumps(body)
    jsonl = f'{{"external_id": "d", "text": "t", "metadata": {{"x": {constant}}}}}\n'
    assert_envelope(
        client.post(
            f"/datasets/{ds}/documents", content=jsonl, headers={"content-type": "application/x-ndjson"}
        ),
        400,
    )
    raw_ds = f'{{"name": "n", "chunking": {{"max_words": {constant}}}}}'
    assert_envelope(
        client.post("/datasets", content=raw_ds, headers={"content-type": "application/json"}), 400
    )
    # The store is unchanged and still readable.
    r = client.get(f"/datasets/{ds}/documents")
    assert r.status_code == 200 and r.json() == []


def test_plain_json_bodies_have_a_size_limit(client: TestClient) -> None:
    limit = client.app.state.resources.settings.max_request_bytes  # type: ignore[attr-defined]
    big = {"name": "big", "description": "x" * (limit + 1)}
    body = assert_envelope(client.post("/datasets", json=big), 413, "PayloadTooLarge")
    assert "RAGMETA_MAX_REQUEST_BYTES" in body["detail"]

    def chunks() -> Any:  # no content-length: the limit is enforced on the stream
        yield b'{"name": "big", "description": "'
        for _ in range(limit // 1000 + 2):
            yield b"y" * 1000
        yield b'"}'

    r = client.post("/datasets", content=chunks(), headers={"content-type": "application/json"})
    assert_envelope(r, 413, "PayloadTooLarge")
    # A long description within the limit is refused by the schema instead (declared maxLength).
    assert_envelope(client.post("/datasets", json={"name": "d", "description": "z" * 10_001}), 422)
    assert _datasets(client) == []


def test_non_utf8_json_body_is_a_declared_400(client: TestClient) -> None:
    r = client.post("/datasets", content=b'{"name": "caf\xe9"}', headers={"content-type": "application/json"})
    body = assert_envelope(r, 400, "MalformedInput")
    assert "UTF-8" in body["detail"]
    spec = client.get("/openapi.json").json()
    assert "400" in spec["paths"]["/datasets"]["post"]["responses"]
    assert "413" in spec["paths"]["/datasets"]["post"]["responses"]


def test_a_csv_of_only_a_header_is_not_an_empty_batch(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    r = client.post(f"/runs/{run}/ratings", content=b"question_id,rater,score\r\n",
                    headers={"content-type": "text/csv"})  # fmt: skip
    body = assert_envelope(r, 400, "MalformedInput")
    assert "no rows" in body["detail"]
    assert_envelope(client.post(f"/runs/{run}/ratings", json=[]), 400, "MalformedInput")


@pytest.mark.parametrize(
    ("content", "ctype", "field", "says"),
    [
        (b"", "application/json", "body", "empty"),
        (b" \n\t\r\n ", "application/x-ndjson", "body", "empty"),
        (b"\n\n", "text/csv", "body", "empty"),
        (b"  \n", None, "file", "empty"),
        # a batch route reads its body itself (the request guard streams uploads through unparsed)
        (b" \n\t\r\n ", "application/json", "body", "empty"),
    ],
)
def test_an_empty_or_blank_batch_is_a_400_naming_it(
    client: TestClient, content: bytes, ctype: str | None, field: str, says: str
) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    before = client.get(f"/runs/{run}/ratings").json()
    if ctype is None:
        resp = client.post(f"/runs/{run}/ratings", files={"file": ("r.csv", content, "text/csv")})
    else:
        resp = client.post(f"/runs/{run}/ratings", content=content, headers={"content-type": ctype})
    body = assert_envelope(resp, 400, "MalformedInput")
    assert body["items"][0]["field"] == field and says in body["detail"]
    assert client.get(f"/runs/{run}/ratings").json() == before


def test_timestamps_are_timezone_aware(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    assert client.post(f"/runs/{run}/outputs", json=native_outputs()).status_code == 200
    assert client.post("/raters", json=[{"name": "alice"}]).status_code == 200
    rating = [{"question_id": "q1", "rater": "alice", "score": 4}]
    assert client.post(f"/runs/{run}/ratings", json=rating).status_code == 200
    job = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["classic.bleu"]}).json()
    client.app.state.resources.worker = None  # type: ignore[attr-defined]
    stamps = [client.get(f"/runs/{run}/ratings").json()[0][k] for k in ("created_at", "updated_at")]
    from services.jobs.worker import JobContext, Worker

    app = client.app
    Worker(JobContext(app.state.resources.session_factory, app.state.resources.settings)).drain()  # type: ignore[attr-defined]
    stamps += [client.get(f"/jobs/{job['id']}").json()[k] for k in ("started_at", "finished_at")]
    assert all(s.endswith(("Z", "+00:00")) for s in stamps), stamps


def test_csv_exports_neutralise_formula_cells(client: TestClient) -> None:
    ds = create_dataset(client)
    doc = {"external_id": "d", "text": "Le forfait coûte dix euros par mois."}
    assert client.post(f"/datasets/{ds}/documents", json=[doc]).status_code == 200
    questions = [
        {"external_id": '=HYPERLINK("http://evil.example")', "question": "a?", "reference_answer": "x"},
        {"external_id": "-2+3", "question": "b?", "reference_answer": "y"},
        {"external_id": "q3", "question": "c?", "reference_answer": "z"},
    ]
    assert client.post(f"/datasets/{ds}/questions", json=questions).status_code == 200
    run = make_run(client, ds)
    outputs = [{"question_id": q["external_id"], "answer": "dix euros", "retrieved": []} for q in questions]
    assert client.post(f"/runs/{run}/outputs", json=outputs).status_code == 200
    scores = [
        {"question_id": q["external_id"], "metric": "external.judge", "value": v}
        for q, v in zip(questions, [0.5, -0.25, 1.0], strict=True)
    ]
    assert client.post(f"/runs/{run}/scores", json=scores).status_code == 200
    text = client.get(f"/runs/{run}/scores?format=csv").text
    cells = [c for row in csv.reader(io.StringIO(text)) for c in row]
    assert '\'=HYPERLINK("http://evil.example")' in cells and "'-2+3" in cells
    assert "-0.25" in cells  # numbers are left as numbers
    assert not [c for c in cells if c[:1] in ("=", "+", "@") or (c[:1] == "-" and not _is_number(c))]


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Referer": "http://evil.example/page.html"},
    ],
)
def test_cross_origin_writes_are_refused(client: TestClient, headers: dict[str, str]) -> None:
    r = client.post("/datasets", json={"name": "x"}, headers=headers)
    body = assert_envelope(r, 403, "CrossOriginRefused")
    assert body["items"][0]["field"] == "Origin"
    files = {"file": ("d.jsonl", b'{"external_id": "d", "text": "t"}\n', "application/octet-stream")}
    assert_envelope(client.post("/datasets/1/documents", files=files, headers=headers), 403)
    assert _datasets(client) == []


def test_same_origin_and_non_browser_writes_pass(client: TestClient) -> None:
    assert (
        client.post("/datasets", json={"name": "a"}, headers={"Origin": "http://testserver"}).status_code
        == 201
    )
    assert client.post("/datasets", json={"name": "b"}).status_code == 201  # curl, the CLI: no Origin
    # Reads are not writes: a page elsewhere may read public reports (CORS still decides what it sees).
    assert client.get("/datasets", headers={"Origin": "http://evil.example"}).status_code == 200


def test_allowed_origins_setting(client: TestClient) -> None:
    client.app.state.resources.settings.allowed_origins = ["http://dashboard.internal:3000"]  # type: ignore[attr-defined]
    ok = client.post("/datasets", json={"name": "c"}, headers={"Origin": "http://dashboard.internal:3000"})
    assert ok.status_code == 201


def test_unchanged_runs_of_the_guard_keep_bodies_intact(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    r = client.post(f"/runs/{run}/outputs", json=native_outputs())
    assert r.status_code == 200 and r.json()["created"] == len(native_outputs())


def test_method_not_allowed_says_which_are(client: TestClient) -> None:
    r = client.request("TRACE", "/datasets")
    assert_envelope(r, 405, "MethodNotAllowed")
    assert set(r.headers["allow"].replace(" ", "").split(",")) == {"GET", "POST"}


def test_booleans_are_not_numbers(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    rows = native_outputs()
    rows[0]["latency_ms"] = False
    body = assert_envelope(client.post(f"/runs/{run}/outputs", json=rows), 422)
    assert body["items"][0]["field"] == "latency_ms" and "not true or false" in body["items"][0]["reason"]
    assert client.post(f"/runs/{run}/outputs", json=native_outputs()).status_code == 200
    assert client.post("/raters", json=[{"name": "alice"}]).status_code == 200
    rating = [{"question_id": "q1", "rater": "alice", "score": True}]
    assert_envelope(client.post(f"/runs/{run}/ratings", json=rating), 422)
    assert client.get(f"/runs/{run}/ratings").json() == []


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("DELETE", f"/keys/{TOO_BIG}", None, "path.key_id"),
        ("PATCH", f"/users/{TOO_BIG}", {"role": "viewer"}, "path.user_id"),
        ("GET", f"/tasks/{TOO_BIG}", None, "path.task_id"),
        ("PUT", f"/tasks/1/queue/{2**31}", {"action": "skip"}, "path.position"),
    ],
)
def test_account_and_task_ids_beyond_the_store_are_422(
    client: TestClient, method: str, path: str, body: dict[str, Any] | None, field: str
) -> None:
    found = assert_envelope(client.request(method, path, json=body), 422, "InvalidRequest")
    assert found["items"][0]["field"] == field


def test_a_study_import_into_a_dataset_id_beyond_the_store_is_422(client: TestClient) -> None:
    rows = [{"question": "q?", "answer": "a", "contexts": ["c"]}]
    files = {"file": ("s.json", json.dumps(rows), "application/json")}
    response = client.post("/studies/import", files=files, data={"dataset_id": str(TOO_BIG)})
    found = assert_envelope(response, 422)
    assert found["items"][0]["field"] == "dataset_id"
    assert _datasets(client) == []


def test_rating_levels_beyond_32_bits_are_422_naming_the_field(client: TestClient) -> None:
    run = make_run(client, load_mini(client))
    body = [{"question_id": "q1", "rater": "ann", "score": 2**63}]
    found = assert_envelope(client.post(f"/runs/{run}/ratings", json=body), 422)
    assert found["items"][0]["field"].endswith("score")


@pytest.mark.parametrize("path", [f"/rate/{TOO_BIG}", f"/rate/1/{2**31}", f"/tasks/{TOO_BIG}/dashboard.html"])
def test_pages_refuse_ids_beyond_the_store(client: TestClient, path: str) -> None:
    found = assert_envelope(client.get(path), 422, "InvalidRequest")
    assert found["items"][0]["field"] in {"path.task_id", "path.position"}
