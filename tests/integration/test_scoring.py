"""Scoring jobs through the API: values equal the direct library calls; undefined cases carry a reason;
re-submitting skips what is computed; failures are per score."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from services.jobs.queue import make_worker
from services.jobs.worker import JobContext, Worker
from tests.api.helpers import MINI, load_mini, read_jsonl
from tests.api.test_outputs import make_run, native_outputs

REFS = {q["external_id"]: q["reference_answer"] for q in read_jsonl(MINI / "questions.jsonl")}


def drain(client: TestClient) -> None:
    """Run the queued work as a deployment does: the queue on PostgreSQL, the lease loop on SQLite."""
    app: Any = client.app
    res = app.state.resources
    make_worker(JobContext(res.session_factory, res.settings, res.core), worker_id="test").drain()


def scored_run(client: TestClient, metrics: list[str], k: int = 5) -> tuple[int, dict[str, Any]]:
    ds = load_mini(client)
    run = make_run(client, ds)
    assert client.post(f"/runs/{run}/outputs", json=native_outputs()).status_code == 200
    r = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": metrics, "k": k})
    assert r.status_code == 202, r.text
    job = r.json()
    assert job["status"] == "queued" and job["total"] == 2 * len(metrics)
    drain(client)
    job = client.get(f"/jobs/{job['id']}").json()
    return run, job


def rows_by_question(client: TestClient, run: int) -> dict[str, dict[str, Any]]:
    return {r["question_id"]: r for r in client.get(f"/runs/{run}/scores").json()["rows"]}


def test_classic_metrics_equal_direct_library_calls(client: TestClient) -> None:
    from nltk.stem.snowball import SnowballStemmer
    from nltk.translate.meteor_score import meteor_score
    from rouge_score import rouge_scorer
    from sacrebleu.metrics.bleu import BLEU

    from services.metrics.classic import UnicodeTokenizer, sentences_newline

    metrics = ["classic.bleu", "classic.rouge_l", "classic.rouge_lsum", "classic.meteor"]
    run, job = scored_run(client, metrics)
    assert job["status"] == "done" and job["done"] == 8 and job["failed"] == 0
    rows = rows_by_question(client, run)
    hyp, ref = native_outputs()[0]["answer"], REFS["q1"]
    tok = UnicodeTokenizer()
    assert rows["q1"]["classic.bleu"] == pytest.approx(
        BLEU(effective_order=True).sentence_score(hyp, [ref]).score
    )
    scorer = rouge_scorer.RougeScorer(["rougeL", "rougeLsum"], tokenizer=tok)
    assert rows["q1"]["classic.rouge_l"] == pytest.approx(scorer.score(ref, hyp)["rougeL"].fmeasure)
    assert rows["q1"]["classic.rouge_lsum"] == pytest.approx(
        scorer.score(sentences_newline(ref), sentences_newline(hyp))["rougeLsum"].fmeasure
    )

    class NoWordNet:
        def synsets(self, *_: Any) -> list[Any]:
            return []

    direct = meteor_score(
        [tok.tokenize(ref)], tok.tokenize(hyp), stemmer=SnowballStemmer("french"), wordnet=NoWordNet()
    )
    assert rows["q1"]["classic.meteor"] == pytest.approx(direct)
    assert rows["q1"]["classic.meteor"] > 0
    # the unanswerable question has no reference answer: null with the reason, never 0
    for m in metrics:
        assert rows["q4"][m] is None
        assert rows["q4"][f"{m}.error"] == "no reference answer (unanswerable question)"


def test_accented_words_count_in_rouge() -> None:
    from services.metrics.classic import UnicodeTokenizer

    assert UnicodeTokenizer().tokenize("Été déjà prêt") == ["été", "déjà", "prêt"]


def test_reference_metrics_with_k_and_resubmission(client: TestClient) -> None:
    run, job = scored_run(client, ["ref.word_recall", "ref.doc_recall@1"], k=2)
    assert job["done"] == 4
    rows = rows_by_question(client, run)
    # q1's passage is the whole sentence (14 words); the chunk covers its first 40 characters
    assert 0 < rows["q1"]["ref.word_recall@2"] < 1
    assert rows["q1"]["ref.doc_recall@1"] == 1.0
    assert rows["q4"]["ref.word_recall@2"] is None
    assert "unanswerable" in rows["q4"]["ref.word_recall@2.error"]
    again = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["ref.word_recall"], "k": 2}).json()
    assert again["total"] == 0 and again["status"] == "done"
    assert again["summary"]["skipped_already_computed"] == 2
    forced = client.post(
        f"/runs/{run}/scoring-jobs", json={"metrics": ["ref.word_recall@2"], "recompute": True}
    )
    assert forced.json()["total"] == 2
    drain(client)
    # recomputing replaced, never duplicated
    table = client.get(f"/runs/{run}/scores").json()
    assert [c for c in table["columns"] if not c.endswith(".error")] == [
        "output_id",
        "question_id",
        "ref.doc_recall@1",
        "ref.word_recall@2",
    ]


def test_unknown_and_unavailable_metrics_are_422(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    r = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["classic.bleuu"]})
    assert r.status_code == 422 and "did you mean classic.bleu" in r.json()["items"][0]["reason"]
    r = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["ragas.faithfulness"]})
    assert r.status_code == 422 and "no judge configured" in r.json()["items"][0]["reason"]
    assert client.post("/runs/999/scoring-jobs", json={}).status_code == 404


def test_failure_of_one_metric_is_recorded_and_job_goes_on(client: TestClient, monkeypatch: Any) -> None:
    from services.metrics import classic

    async def boom(self: Any, samples: Any, ctx: Any) -> Any:
        raise RuntimeError("library crashed")

    monkeypatch.setattr(classic.BleuAdapter, "compute", boom)
    run, job = scored_run(client, ["classic.bleu", "classic.rouge_l"])
    assert job["status"] == "done"
    # q1 bleu fails; q4 bleu is undefined (no reference) so it never reaches the library
    assert (job["done"], job["failed"]) == (3, 1)
    assert job["errors_by_cause"] == {"exception": 1}
    assert "library crashed" in job["errors"][0]["error"]
    rows = rows_by_question(client, run)
    assert rows["q1"]["classic.bleu"] is None and "library crashed" in rows["q1"]["classic.bleu.error"]
    assert rows["q1"]["classic.rouge_l"] is not None
    # a re-submission retries the failed score only
    monkeypatch.undo()
    again = client.post(
        f"/runs/{run}/scoring-jobs", json={"metrics": ["classic.bleu", "classic.rouge_l"]}
    ).json()
    assert again["total"] == 1
    drain(client)
    assert rows_by_question(client, run)["q1"]["classic.bleu"] is not None


def test_metric_catalogue(client: TestClient) -> None:
    cat = {m["name"]: m for m in client.get("/metrics").json()}
    assert cat["classic.bleu"]["available"] and cat["classic.bleu"]["library_version"]
    assert not cat["deepeval.hallucination"]["available"]
    assert "no judge configured" in cat["deepeval.hallucination"]["unavailable_reason"]
    assert cat["opik.hallucination"]["higher_is_better"] is False
    assert cat["ref.word_recall"]["takes_k"] and cat["ref.word_recall"]["kind"] == "retrieval"
    # the catalogue says which judge metrics keep English prompts for a French dataset
    assert cat["opik.moderation"]["prompt_language"] == "en"
    assert cat["ragas.faithfulness"]["prompt_language"] == "fr"
    assert cat["classic.bleu"]["prompt_language"] is None
    english = {
        m["name"]: m["prompt_language"] for m in client.get("/metrics", params={"language": "en"}).json()
    }
    assert english["ragas.faithfulness"] == "en"


def test_scores_csv_columns(client: TestClient) -> None:
    run, _ = scored_run(client, ["classic.bleu"])
    lines = client.get(f"/runs/{run}/scores", params={"format": "csv"}).text.splitlines()
    assert lines[0] == "output_id,question_id,classic.bleu,classic.bleu.error"
    assert len(lines) == 3


def test_bertscore_equals_the_direct_library_call(client: TestClient) -> None:
    import bert_score

    from services.retrieval.dense import default_model_path

    run, job = scored_run(client, ["classic.bertscore_f1"])
    assert job["done"] == 2 and job["failed"] == 0
    rows = rows_by_question(client, run)
    scorer = bert_score.BERTScorer(model_type=default_model_path(), num_layers=6)
    _, _, f1 = scorer.score([native_outputs()[0]["answer"]], [REFS["q1"]])
    assert rows["q1"]["classic.bertscore_f1"] == pytest.approx(float(f1[0]), abs=1e-6)
    assert rows["q4"]["classic.bertscore_f1"] is None
    scores = client.get(f"/runs/{run}/scores").json()
    assert scores["rows"][0]["classic.bertscore_f1"] is not None


def test_two_workers_never_take_the_same_item(client: TestClient) -> None:
    """Several workers on one database share a job's items without processing any twice."""
    import threading

    from services.metrics import classic

    calls: list[int] = []
    original = classic.BleuAdapter.compute

    async def counting(self: Any, samples: Any, ctx: Any) -> Any:
        calls.extend(s.output_id for s in samples)
        return await original(self, samples, ctx)

    ds = client.post("/datasets", json={"name": "many"}).json()["id"]
    client.post(f"/datasets/{ds}/documents", json=[{"external_id": "d", "text": "Some text."}])
    n = 30
    client.post(
        f"/datasets/{ds}/questions",
        json=[
            {"external_id": f"q{i}", "question": f"Q{i}?", "reference_answer": f"answer {i}"}
            for i in range(n)
        ],
    )
    run = make_run(client, ds)
    client.post(
        f"/runs/{run}/outputs", json=[{"question_id": f"q{i}", "answer": f"answer {i} !"} for i in range(n)]
    )
    job = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["classic.bleu"]}).json()
    app: Any = client.app
    res = app.state.resources
    jobs = res.settings.jobs
    jobs.scoring_batch_size, saved = 1, jobs.scoring_batch_size
    classic.BleuAdapter.compute = counting  # type: ignore[method-assign]
    try:
        workers = [Worker(JobContext(res.session_factory, res.settings), worker_id=f"w{i}") for i in range(3)]
        threads = [threading.Thread(target=w.drain) for w in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        classic.BleuAdapter.compute = original  # type: ignore[method-assign]
        jobs.scoring_batch_size = saved
    final = client.get(f"/jobs/{job['id']}").json()
    assert final["status"] == "done" and final["done"] == n
    assert len(calls) == n and len(set(calls)) == n  # each output scored exactly once across the workers
    table = client.get(f"/runs/{run}/scores").json()["rows"]
    assert len(table) == n and all(r["classic.bleu"] is not None for r in table)
