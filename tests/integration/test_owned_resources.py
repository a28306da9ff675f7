"""The resources a process owns (services.resources, app.resources): the loaded-index cache is bounded
(least recently used first) and drops a deleted dataset's index; the generator's LLM calls share the judge
upstream's bound; everything is closed with its owner."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.resources import AppResources, resources_of
from app.settings import Settings
from services.config import LLMEndpoint
from services.rag.index import IndexCache, LoadedIndex
from services.rag.llm import LLMClients
from services.resources import Resources
from services.retrieval import DenseSearch, HybridRetriever
from tests.api.helpers import upload
from tests.conftest import admin_client
from tests.fakellm import FakeLLM
from tests.integration.test_rag import DEMO
from tests.integration.test_scoring import drain


def _loaded(fp: str) -> LoadedIndex:
    return LoadedIndex(fp, [], HybridRetriever(None, None))


def _key(dataset: int, fp: str = "fp", mode: str = "hybrid") -> Any:
    return (dataset, f"/idx/{dataset}", fp, mode, DenseSearch())


def test_the_cache_keeps_the_settings_bound_dropping_the_least_recently_used(settings: Settings) -> None:
    resources = Resources.open(settings)
    try:
        cache = resources.indexes
        bound = settings.retrieval.max_loaded_indexes
        assert cache.size == bound == 8
        loads: list[int] = []

        def get(ds: int) -> LoadedIndex:
            return cache.get(_key(ds), lambda: loads.append(ds) or _loaded(f"fp{ds}"))

        for ds in range(1, bound + 1):
            get(ds)
        get(1)  # the oldest, used again: now the most recent
        get(bound + 1)  # one over the bound: dataset 2, least recently used, goes
        assert len(cache) == bound
        assert cache.datasets() == [*range(3, bound + 1), 1, bound + 1]
        get(2)
        assert loads == [*range(1, bound + 2), 2]  # only dataset 2 was read twice
    finally:
        resources.close()


def test_a_new_fingerprint_replaces_the_datasets_older_index() -> None:
    cache = IndexCache(8)
    cache.get(_key(1, "old"), lambda: _loaded("old"))
    cache.get(_key(1, "old", "bm25"), lambda: _loaded("old"))
    cache.get(_key(2, "old"), lambda: _loaded("old"))
    cache.get(_key(1, "new"), lambda: _loaded("new"))
    # the stale hybrid index of dataset 1 can never be asked for again; its bm25 one and dataset 2's stay
    assert len(cache) == 3 and cache.evict(1) == 2 and cache.datasets() == [2]


@pytest.fixture
def client(settings: Settings, engine: Any, tmp_path: Path) -> Iterator[TestClient]:
    s = settings.model_copy(update={"data_dir": tmp_path})
    with admin_client(create_app(s)) as c:
        yield c


def _indexed(client: TestClient, name: str) -> int:
    ds = int(client.post("/datasets", json={"name": name, "language": "fr"}).json()["id"])
    assert upload(
        client, f"/datasets/{ds}/documents", "d.jsonl", (DEMO / "documents.jsonl").read_bytes()
    ).is_success
    assert client.post(f"/datasets/{ds}/index").status_code == 202
    drain(client)
    return ds


def test_deleting_a_dataset_drops_its_loaded_index(client: TestClient) -> None:
    res: AppResources = resources_of(client.app)  # type: ignore[arg-type]
    kept, gone = _indexed(client, "kept"), _indexed(client, "gone")
    for ds in (kept, gone):
        r = client.post(f"/datasets/{ds}/retrieve", json={"query": "forfait", "mode": "bm25"})
        assert r.status_code == 200
    assert res.indexes.datasets() == [kept, gone]
    r = client.delete(f"/datasets/{gone}", params={"cascade": "true"})
    assert r.status_code == 200, r.text
    assert res.indexes.datasets() == [kept]


def test_the_generator_shares_the_upstream_bound_and_closes_with_its_owner(settings: Settings) -> None:
    """Six answers asked at once from six threads: at most ``max_concurrency`` (2) reach the endpoint
    together (the openai client the generator used before had no bound: all six did)."""
    fake = FakeLLM().start()
    resources = Resources.open(settings)
    clients = LLMClients(resources.scoring, max_concurrency=2)
    try:
        fake.gate = threading.Event()
        endpoint = LLMEndpoint(base_url=fake.base_url, model="fake-model", timeout_s=30.0, retries=0)
        client = clients.get(endpoint)
        assert clients.get(endpoint) is client
        answers: list[str] = []
        threads = [
            threading.Thread(
                target=lambda: answers.append(client.chat([{"role": "user", "content": "x"}]).text)
            )
            for _ in range(6)
        ]
        for t in threads:
            t.start()
        for _ in range(3000):  # until the bound is reached (never more than 30 s)
            if fake.in_flight == 2:
                break
            threading.Event().wait(0.01)
        fake.gate.set()
        for t in threads:
            t.join(30)
        assert len(answers) == 6 and fake.max_in_flight == 2
    finally:
        clients.close()  # its own clients: the resources close only theirs (resources.llm)
        resources.close()
        fake.stop()
    assert resources.closed and resources.scoring.closed
