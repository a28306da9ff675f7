"""The service's RAG system on the demo dataset: indexing job, retrieval quality, answers with and without
an LLM (loopback test server), generation runs with per-question errors and resume."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.api.helpers import assert_envelope, upload
from tests.conftest import admin_client
from tests.fakellm import FakeLLM
from tests.integration.test_scoring import drain

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def load_demo(client: TestClient) -> int:
    ds = client.post("/datasets", json={"name": "demo", "language": "fr"}).json()["id"]
    assert (
        upload(
            client, f"/datasets/{ds}/documents", "d.jsonl", (DEMO / "documents.jsonl").read_bytes()
        ).status_code
        == 200
    )
    assert (
        upload(
            client, f"/datasets/{ds}/questions", "q.jsonl", (DEMO / "questions.jsonl").read_bytes()
        ).status_code
        == 200
    )
    return int(ds)


def indexed(client: TestClient) -> int:
    ds = load_demo(client)
    job = client.post(f"/datasets/{ds}/index").json()
    assert job["total"] == 3
    drain(client)
    job = client.get(f"/jobs/{job['id']}").json()
    assert (job["status"], job["done"]) == ("done", 3), job
    return ds


@pytest.fixture(scope="module")
def index_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shared across this module so the demo's dense index is encoded once and then loaded."""
    return tmp_path_factory.mktemp("rag-data")


@pytest.fixture
def client(settings: Settings, engine: Any, index_home: Path) -> Iterator[TestClient]:
    s = settings.model_copy(update={"data_dir": index_home})
    with admin_client(create_app(s)) as c:
        yield c


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def llm_client(settings: Settings, fake: FakeLLM, engine: Any, index_home: Path) -> Iterator[TestClient]:
    s = settings.model_copy(deep=True, update={"data_dir": index_home})
    s.generator.base_url = fake.base_url
    s.generator.model = "fake-model"
    s.generator.timeout_s = 1.0
    s.generator.retries = 2
    with admin_client(create_app(s)) as c:
        yield c


def test_index_is_a_job_and_is_not_rebuilt_when_up_to_date(client: TestClient) -> None:
    ds = indexed(client)
    again = client.post(f"/datasets/{ds}/index").json()
    assert again["total"] == 0 and again["summary"]["up_to_date"] is True
    forced = client.post(f"/datasets/{ds}/index", json={"force": True}).json()
    assert forced["total"] == 3
    # a changed corpus makes the index stale: retrieval refuses until it is rebuilt
    client.post(f"/datasets/{ds}/documents", json=[{"external_id": "new", "text": "Un nouveau document."}])
    body = assert_envelope(
        client.post(f"/datasets/{ds}/retrieve", json={"query": "forfait"}), 409, "Conflict"
    )
    assert "out of date" in body["detail"]


def test_not_indexed_is_409(client: TestClient) -> None:
    ds = load_demo(client)
    body = assert_envelope(client.post(f"/datasets/{ds}/retrieve", json={"query": "x"}), 409)
    assert f"POST /datasets/{ds}/index" in body["detail"]


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "dense"])
def test_retrieval_finds_the_passage_for_most_questions(client: TestClient, mode: str) -> None:
    ds = indexed(client)
    questions = [json.loads(x) for x in (DEMO / "questions.jsonl").read_text().splitlines()]
    hits = total = 0
    for q in questions:
        if not q["passages"]:
            continue
        r = client.post(
            f"/datasets/{ds}/retrieve", json={"query": q["question"], "k": 5, "mode": mode}
        ).json()
        assert [c["rank"] for c in r["chunks"]] == list(range(1, len(r["chunks"]) + 1))
        total += 1
        hits += any(
            c["document_id"] == p["document_id"] and c["start"] < p["end"] and p["start"] < c["end"]
            for c in r["chunks"]
            for p in q["passages"]
        )
    share = hits / total
    print(f"{mode}: passage-bearing chunk in top 5 for {hits}/{total} = {share:.2f}")
    assert share >= {"hybrid": 0.7, "bm25": 0.6, "dense": 0.5}[mode]


def test_quantized_dense_search_in_the_service_returns_the_exact_results(
    settings: Settings, engine: Any, index_home: Path
) -> None:
    # dense_exact_below=0 sends even the demo's small corpus through the quantized index and re-scoring.
    quantized_settings = settings.model_copy(deep=True, update={"data_dir": index_home})
    quantized_settings.retrieval.dense_exact_below = 0
    exact_settings = settings.model_copy(update={"data_dir": index_home})
    questions = [json.loads(x)["question"] for x in (DEMO / "questions.jsonl").read_text().splitlines()]
    results = []
    ds = 0
    for s in (quantized_settings, exact_settings):
        with admin_client(create_app(s)) as c:
            ds = ds or indexed(c)
            results.append(
                [
                    c.post(f"/datasets/{ds}/retrieve", json={"query": q, "k": 5, "mode": mode}).json()
                    for q in questions[:20]
                    for mode in ("dense", "hybrid")
                ]
            )
    assert (index_home / "indexes" / str(ds) / "dense" / "quantized" / "index.faiss").is_file()
    assert results[0] == results[1]


def test_onnx_int8_encoder_in_the_service(settings: Settings, engine: Any, tmp_path: Path) -> None:
    # The encoder backend is part of the index's fingerprint: an index encoded by torch is out of date for
    # the int8 ONNX backend until it is rebuilt, and the rebuilt one answers like torch's.
    by_backend = {}
    for backend in ("torch", "onnx-int8"):
        s = settings.model_copy(deep=True, update={"data_dir": tmp_path})
        s.embeddings.backend = backend
        by_backend[backend] = s
    questions = [json.loads(x)["question"] for x in (DEMO / "questions.jsonl").read_text().splitlines()]

    def top5(c: TestClient, ds: int) -> list[list[tuple[str, int]]]:
        out = []
        for q in questions[:20]:
            r = c.post(f"/datasets/{ds}/retrieve", json={"query": q, "k": 5, "mode": "dense"}).json()
            out.append([(x["document_id"], x["start"]) for x in r["chunks"]])
        return out

    with admin_client(create_app(by_backend["torch"])) as c:
        ds = indexed(c)
        torch_top5 = top5(c, ds)
    with admin_client(create_app(by_backend["onnx-int8"])) as c:
        stale = assert_envelope(c.post(f"/datasets/{ds}/retrieve", json={"query": "x", "mode": "dense"}), 409)
        assert "out of date" in stale["detail"]
        c.post(f"/datasets/{ds}/index")
        drain(c)
        int8_top5 = top5(c, ds)
    meta = json.loads((tmp_path / "indexes" / str(ds) / "dense" / "dense.json").read_text())
    assert meta["backend"] == "onnx-int8"
    overlap = sum(len(set(a) & set(b)) for a, b in zip(int8_top5, torch_top5, strict=True)) / 100
    assert overlap >= 0.9, overlap


def test_retrieved_offsets_are_exact(client: TestClient) -> None:
    ds = indexed(client)
    docs = {
        json.loads(x)["external_id"]: json.loads(x)["text"]
        for x in (DEMO / "documents.jsonl").read_text().splitlines()
    }
    r = client.post(f"/datasets/{ds}/retrieve", json={"query": "résilier mon abonnement", "k": 10}).json()
    assert len(r["chunks"]) == 10
    for c in r["chunks"]:
        assert docs[c["document_id"]][c["start"] : c["end"]] == c["text"]


def test_extractive_answer_without_llm(client: TestClient) -> None:
    ds = indexed(client)
    q = json.loads((DEMO / "questions.jsonl").read_text().splitlines()[0])
    r = client.post(f"/datasets/{ds}/answer", json={"question": q["question"]}).json()
    assert r["generator"]["kind"] == "extractive" and len(r["chunks"]) == 5
    assert r["answer"] and not r["generator"]["declined"]
    unknown = client.post(
        f"/datasets/{ds}/answer", json={"question": "Quelle est la couleur du ciel sur Mars ?"}
    )
    body = unknown.json()
    assert body["generator"]["declined"] is True and body["answer"].startswith("Je ne sais pas")


def test_llm_prompt_holds_top5_chunks_in_rank_order(llm_client: TestClient, fake: FakeLLM) -> None:
    fake.script = lambda body, i: "Réponse du modèle."
    ds = indexed(llm_client)
    q = "Combien coûte le forfait 100 Go ?"
    r = llm_client.post(f"/datasets/{ds}/answer", json={"question": q}).json()
    assert r["answer"] == "Réponse du modèle."
    assert r["generator"] == {"kind": "llm", "model": "fake-model", "declined": None}
    prompt = fake.requests[-1]["messages"][1]["content"]
    positions = [prompt.index(c["text"].strip()) for c in r["chunks"]]
    assert positions == sorted(positions) and len(positions) == 5
    assert "ne sais pas" in fake.requests[-1]["messages"][0]["content"]
    assert q in prompt


def test_llm_500_is_retried_then_succeeds(llm_client: TestClient, fake: FakeLLM) -> None:
    ds = indexed(llm_client)
    fake.requests.clear()
    fake.fail_first, fake.fail_status = 2, 500
    r = llm_client.post(f"/datasets/{ds}/answer", json={"question": "Prix de la box ?"})
    assert r.status_code == 200 and len(fake.requests) == 3


def test_llm_timeout_is_a_502_envelope(llm_client: TestClient, fake: FakeLLM) -> None:
    ds = indexed(llm_client)
    fake.requests.clear()
    fake.hang_first, fake.hang_s = 100, 5.0
    body = assert_envelope(
        llm_client.post(f"/datasets/{ds}/answer", json={"question": "Prix ?"}), 502, "UpstreamError"
    )
    assert "timeout" in body["detail"]
    assert len(fake.requests) == 3  # first try + 2 retries


def test_generation_run_records_errors_and_resumes(llm_client: TestClient, fake: FakeLLM) -> None:
    ds = indexed(llm_client)
    fail_on = {"Quel est le débit", "résilier"}

    def script(body: dict[str, Any], i: int) -> Any:
        from starlette.responses import JSONResponse

        user = body["messages"][1]["content"]
        if any(w in user.split("Question :")[-1] for w in fail_on):
            return JSONResponse({"error": {"message": "boom"}}, status_code=503)
        return "Réponse."

    fake.script = script
    run = llm_client.post(
        f"/datasets/{ds}/runs",
        json={"name": "llm", "system": {"retriever": "hybrid", "k": 5, "generator": "llm"}},
    ).json()["id"]
    job = llm_client.post(f"/runs/{run}/generate").json()
    assert job["total"] == 50
    drain(llm_client)
    job = llm_client.get(f"/jobs/{job['id']}").json()
    assert job["status"] == "done" and job["done"] + job["failed"] == 50
    assert job["failed"] >= 1 and set(job["errors_by_cause"]) == {"http_503"}
    outputs = llm_client.get(f"/runs/{run}/outputs").json()
    assert len(outputs) == 50
    failed = [o for o in outputs if o["error"]]
    assert len(failed) == job["failed"] and all(o["answer"] is None for o in failed)
    assert all(len(o["retrieved"]) == 5 for o in outputs)
    # resume: only the failed questions are asked again, and nothing is duplicated
    fake.script = lambda body, i: "Réponse."
    again = llm_client.post(f"/runs/{run}/generate").json()
    assert again["total"] == job["failed"]
    drain(llm_client)
    outputs = llm_client.get(f"/runs/{run}/outputs").json()
    assert len(outputs) == 50 and not any(o["error"] for o in outputs)


def test_extractive_run_over_dataset(client: TestClient) -> None:
    ds = indexed(client)
    run = client.post(
        f"/datasets/{ds}/runs",
        json={"name": "bm25", "system": {"retriever": "bm25", "k": 5, "generator": "extractive"}},
    ).json()["id"]
    client.post(f"/runs/{run}/generate")
    drain(client)
    outputs = client.get(f"/runs/{run}/outputs").json()
    assert len(outputs) == 50 and all(o["generator"]["kind"] == "extractive" for o in outputs)
    assert client.post(f"/runs/{run}/generate").json()["total"] == 0


def test_generate_needs_a_runnable_system(client: TestClient) -> None:
    ds = indexed(client)
    run = client.post(f"/datasets/{ds}/runs", json={"name": "x", "system": {"retriever": "external"}}).json()[
        "id"
    ]
    assert_envelope(client.post(f"/runs/{run}/generate"), 422)
    run = client.post(f"/datasets/{ds}/runs", json={"name": "y", "system": {"generator": "llm"}}).json()["id"]
    body = assert_envelope(client.post(f"/runs/{run}/generate"), 422)
    assert body["items"][0]["field"] == "system.generator"


def test_answers_waiting_on_the_llm_hold_no_database_slot(
    settings: Settings, fake: FakeLLM, engine: Any, index_home: Path
) -> None:
    """More answers wait on a stalled LLM than there are database slots, and writes still go through: an
    answer reads its chunks in a short read transaction and calls the LLM after it has ended."""
    s = settings.model_copy(deep=True, update={"data_dir": index_home, "database_wait_s": 5.0})
    s.generator.base_url, s.generator.model = fake.base_url, "fake-model"
    s.generator.timeout_s, s.generator.max_concurrency = 120.0, 64
    fake.gate = threading.Event()
    with admin_client(create_app(s)) as client:
        ds = indexed(client)
        waiting = client.app.state.resources.db_slots.sessions.total_tokens + 2  # type: ignore[attr-defined]
        answers: list[int] = []
        threads = [
            threading.Thread(
                target=lambda: answers.append(
                    client.post(f"/datasets/{ds}/answer", json={"question": "Prix ?"}).status_code
                )
            )
            for _ in range(int(waiting))
        ]
        try:
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + 60
            while fake.in_flight < waiting and time.monotonic() < deadline:
                time.sleep(0.02)
            assert fake.in_flight == waiting
            writes = [client.post("/datasets", json={"name": f"w{i}"}).status_code for i in range(4)]
            assert writes == [201] * 4
            assert fake.in_flight == waiting and answers == []
        finally:
            fake.gate.set()
            for thread in threads:
                thread.join(60)
    assert answers == [200] * int(waiting)


def test_starting_generation_checks_the_index_without_loading_it(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """POST /runs/{id}/generate answers 409 when the index is missing, from the store alone: its write
    transaction never loads index files (a cold load would hold SQLite's write lock meanwhile)."""
    from services.rag import index

    def no_load(*args: Any) -> None:
        raise AssertionError("the index was loaded inside the request's transaction")

    monkeypatch.setattr(index, "load", no_load)
    bm25 = {"name": "bm25", "system": {"retriever": "bm25", "k": 5, "generator": "extractive"}}
    ds = load_demo(client)
    run = client.post(f"/datasets/{ds}/runs", json=bm25).json()["id"]
    body = assert_envelope(client.post(f"/runs/{run}/generate"), 409)
    assert f"POST /datasets/{ds}/index" in body["detail"]
    monkeypatch.undo()
    assert client.post(f"/datasets/{ds}/index").status_code == 202
    drain(client)
    monkeypatch.setattr(index, "load", no_load)
    job = client.post(f"/runs/{run}/generate")
    assert job.status_code == 202, job.text
    assert job.json()["total"] == 50
