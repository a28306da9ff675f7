"""A re-imported output whose answer or chunks changed retires its ratings and scores (kept in history,
excluded from reports, counted); an unchanged re-import changes nothing."""

from __future__ import annotations

import copy
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from services.jobs.worker import JobContext, Worker
from services.models import MetricScore, MetricScoreHistory, Output, Rating, RatingHistory
from tests.api.helpers import load_mini
from tests.api.test_outputs import make_run, native_outputs


def _count(engine: Engine, model: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(model)).scalar_one())


def _rated_and_scored(client: TestClient) -> int:
    ds = load_mini(client)
    run = make_run(client, ds)
    assert client.post(f"/runs/{run}/outputs", json=native_outputs()).status_code == 200
    assert client.post("/raters", json=[{"name": "alice"}, {"name": "bob"}]).status_code == 200
    ratings = [
        {"question_id": q, "rater": r, "score": s}
        for q, r, s in [("q1", "alice", 4), ("q1", "bob", 5), ("q4", "alice", 2), ("q4", "bob", 1)]
    ]
    assert client.post(f"/runs/{run}/ratings", json=ratings).status_code == 200
    external = [
        {"question_id": "q1", "metric": "external.judge", "value": 0.9},
        {"question_id": "q4", "metric": "external.judge", "value": 0.1},
    ]
    assert client.post(f"/runs/{run}/scores", json=external).status_code == 200
    return run


def test_unchanged_reimport_changes_nothing(client: TestClient, engine: Engine) -> None:
    run = _rated_and_scored(client)
    r = client.post(f"/runs/{run}/outputs", json=native_outputs()).json()
    assert (r["unchanged"], r["updated"], r["invalidated_ratings"], r["invalidated_scores"]) == (2, 0, 0, 0)
    assert len(client.get(f"/runs/{run}/ratings").json()) == 4
    assert _count(engine, RatingHistory) == _count(engine, MetricScoreHistory) == 0


def test_metadata_only_change_keeps_ratings(client: TestClient) -> None:
    run = _rated_and_scored(client)
    rows = native_outputs()
    rows[0]["latency_ms"] = 1234.0  # not what raters or metrics see
    r = client.post(f"/runs/{run}/outputs", json=rows).json()
    assert (r["updated"], r["invalidated_ratings"], r["invalidated_scores"]) == (1, 0, 0)


def test_changed_answer_retires_its_ratings_and_scores(client: TestClient, engine: Engine) -> None:
    run = _rated_and_scored(client)
    rows = native_outputs()
    rows[0]["answer"] = "Le forfait coûte 9,99 € par mois, sans engagement."
    r = client.post(f"/runs/{run}/outputs", json=rows).json()
    assert (r["updated"], r["unchanged"]) == (1, 1)
    assert (r["invalidated_ratings"], r["invalidated_scores"]) == (2, 1)
    ratings = client.get(f"/runs/{run}/ratings").json()
    assert sorted((x["question_id"], x["rater"]) for x in ratings) == [("q4", "alice"), ("q4", "bob")]
    # Kept in history with the version they were given for.
    assert _count(engine, RatingHistory) == 2 and _count(engine, MetricScoreHistory) == 1
    with engine.connect() as conn:
        versions = conn.execute(select(RatingHistory.output_version, RatingHistory.score)).all()
        assert sorted(versions) == [(1, 4), (1, 5)]
        assert conn.execute(select(func.max(Output.version))).scalar_one() == 2
        assert conn.execute(select(func.count()).select_from(MetricScore)).scalar_one() == 1
        assert conn.execute(select(func.count()).select_from(Rating)).scalar_one() == 2
    table = {row["question_id"]: row for row in client.get(f"/runs/{run}/scores").json()["rows"]}
    assert table["q1"].get("external.judge") is None and table["q4"]["external.judge"] == 0.1
    report = client.get(f"/runs/{run}/report").json()
    notes = " ".join(report["notes"])
    assert "2 rating(s) are for a previous answer" in notes
    assert "1 metric score(s) are for a previous answer" in notes
    # Rating the new answer works; the same answer again changes nothing more.
    again = client.post(f"/runs/{run}/ratings", json=[{"question_id": "q1", "rater": "alice", "score": 3}])
    assert again.status_code == 200
    r = client.post(f"/runs/{run}/outputs", json=rows).json()
    assert (r["unchanged"], r["invalidated_ratings"]) == (2, 0)
    assert len(client.get(f"/runs/{run}/ratings").json()) == 3


def test_changed_chunks_retire_and_a_new_job_scores_again(client: TestClient) -> None:
    run = _rated_and_scored(client)
    first = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["ref.word_recall@5"]}).json()
    app = client.app
    Worker(JobContext(app.state.resources.session_factory, app.state.resources.settings)).drain()  # type: ignore[attr-defined]
    assert client.get(f"/jobs/{first['id']}").json()["done"] == 2
    again = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["ref.word_recall@5"]}).json()
    assert again["summary"]["skipped_already_computed"] == 2 and again["total"] == 0
    rows = copy.deepcopy(native_outputs())
    rows[0]["retrieved"] = rows[0]["retrieved"][:1]  # one chunk fewer: the retrieval changed
    r = client.post(f"/runs/{run}/outputs", json=rows).json()
    assert r["invalidated_scores"] == 2 and r["invalidated_ratings"] == 2  # word recall + external; 2 ratings
    third = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["ref.word_recall@5"]}).json()
    assert third["summary"]["skipped_already_computed"] == 1 and third["total"] == 1


def test_a_score_for_an_answer_replaced_while_scoring_is_not_stored(
    client: TestClient, engine: Engine, monkeypatch: Any
) -> None:
    from services.metrics import registry

    run = _rated_and_scored(client)
    job = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["classic.rouge_l"]}).json()
    load = registry.load_adapter
    rows = native_outputs()
    rows[0]["answer"] = "Une autre réponse, importée pendant le calcul."

    def load_and_reimport(*args: Any, **kwargs: Any) -> Any:
        adapter = load(*args, **kwargs)
        score = adapter.score

        async def score_then_reimport(samples: Any, ctx: Any) -> Any:
            results = await score(samples, ctx)
            # The answer of q1 changes after its score was computed and before it is stored.
            assert client.post(f"/runs/{run}/outputs", json=rows).json()["updated"] == 1
            return results

        monkeypatch.setattr(adapter, "score", score_then_reimport)
        return adapter

    monkeypatch.setattr(registry, "load_adapter", load_and_reimport)
    app = client.app
    Worker(JobContext(app.state.resources.session_factory, app.state.resources.settings)).drain()  # type: ignore[attr-defined]
    done = client.get(f"/jobs/{job['id']}").json()
    assert (done["done"], done["failed"]) == (1, 1), done
    assert "stale" in done["errors_by_cause"], done
    table = {row["question_id"]: row for row in client.get(f"/runs/{run}/scores").json()["rows"]}
    # q4's score was stored (undefined: q4 has no reference answer); q1 has no score at all.
    assert table["q4"]["classic.rouge_l.error"]
    assert table["q1"]["classic.rouge_l"] is None and table["q1"]["classic.rouge_l.error"] is None


def _outputs(client: TestClient, run: int) -> dict[str, Any]:
    return {o["question_id"]: o for o in client.get(f"/runs/{run}/outputs").json()}


def _versions(engine: Engine) -> list[int]:
    with engine.connect() as conn:
        return sorted(conn.execute(select(Output.version)).scalars())


def _nothing_retired(client: TestClient, engine: Engine, run: int) -> None:
    assert len(client.get(f"/runs/{run}/ratings").json()) == 4
    assert _count(engine, RatingHistory) == _count(engine, MetricScoreHistory) == 0
    assert _versions(engine) == [1, 1]
    table = {row["question_id"]: row for row in client.get(f"/runs/{run}/scores").json()["rows"]}
    assert (table["q1"]["external.judge"], table["q4"]["external.judge"]) == (0.9, 0.1)


def test_reimport_without_chunk_scores_keeps_version_and_stored_scores(
    client: TestClient, engine: Engine
) -> None:
    run = _rated_and_scored(client)
    rows = native_outputs()
    del rows[0]["retrieved"][0]["score"]
    r = client.post(f"/runs/{run}/outputs", json=rows).json()
    assert (r["unchanged"], r["updated"], r["invalidated_ratings"], r["invalidated_scores"]) == (2, 0, 0, 0)
    rows[0]["retrieved"][0]["score"] = None  # null says no more than absent
    r = client.post(f"/runs/{run}/outputs", json=rows).json()
    assert (r["unchanged"], r["invalidated_ratings"], r["invalidated_scores"]) == (2, 0, 0)
    _nothing_retired(client, engine, run)
    assert [c["score"] for c in _outputs(client, run)["q1"]["retrieved"]] == [3.5, None]


def test_reimport_with_new_chunk_scores_updates_them_and_keeps_version(
    client: TestClient, engine: Engine
) -> None:
    run = _rated_and_scored(client)
    rows = native_outputs()
    rows[0]["retrieved"][0]["score"] = 0.42
    rows[0]["retrieved"][1]["score"] = 0.17
    r = client.post(f"/runs/{run}/outputs", json=rows).json()
    assert (r["unchanged"], r["updated"], r["invalidated_ratings"], r["invalidated_scores"]) == (1, 1, 0, 0)
    _nothing_retired(client, engine, run)
    assert [c["score"] for c in _outputs(client, run)["q1"]["retrieved"]] == [0.42, 0.17]
    # Leaving the scores out afterwards keeps the new ones.
    for c in rows[0]["retrieved"]:
        c.pop("score")
    assert client.post(f"/runs/{run}/outputs", json=rows).json()["unchanged"] == 2
    assert [c["score"] for c in _outputs(client, run)["q1"]["retrieved"]] == [0.42, 0.17]


def test_reimport_without_latency_or_generator_keeps_them(client: TestClient, engine: Engine) -> None:
    run = _rated_and_scored(client)
    rows = native_outputs()
    rows[0]["latency_ms"] = 120.0
    rows[0]["generator"] = {"kind": "llm", "model": "m1"}
    r = client.post(f"/runs/{run}/outputs", json=rows).json()
    assert (r["updated"], r["invalidated_ratings"], r["invalidated_scores"]) == (1, 0, 0)
    r = client.post(f"/runs/{run}/outputs", json=native_outputs()).json()
    assert (r["unchanged"], r["updated"], r["invalidated_ratings"]) == (2, 0, 0)
    q1 = _outputs(client, run)["q1"]
    assert (q1["latency_ms"], q1["generator"]) == (120.0, {"kind": "llm", "model": "m1"})
    _nothing_retired(client, engine, run)


def test_changed_answer_does_not_inherit_metadata_of_the_old_one(client: TestClient, engine: Engine) -> None:
    run = _rated_and_scored(client)
    rows = native_outputs()
    rows[0]["latency_ms"] = 120.0
    rows[0]["generator"] = {"kind": "llm", "model": "m1"}
    assert client.post(f"/runs/{run}/outputs", json=rows).json()["invalidated_ratings"] == 0
    rows = native_outputs()
    rows[0]["answer"] = "Une autre réponse."
    rows[0]["retrieved"] = list(reversed(rows[0]["retrieved"]))
    del rows[0]["retrieved"][1]["score"]
    r = client.post(f"/runs/{run}/outputs", json=rows).json()
    assert (r["updated"], r["invalidated_ratings"], r["invalidated_scores"]) == (1, 2, 1)
    q1 = _outputs(client, run)["q1"]
    # The latency, generator and chunk scores described the answer and retrieval that were replaced.
    assert (q1["latency_ms"], q1["generator"]) == (None, {"kind": "external"})
    assert [c["score"] for c in q1["retrieved"]] == [None, None]
    assert _versions(engine) == [1, 2]


def _as_ragas(client: TestClient, run: int) -> list[dict[str, Any]]:
    return [
        {
            "question_id": qid,
            "user_input": "ignored when question_id is given",
            "response": o["answer"],
            "retrieved_contexts": [c["text"] for c in o["retrieved"]],
        }
        for qid, o in _outputs(client, run).items()
    ]


def _as_ragchecker(client: TestClient, run: int) -> dict[str, Any]:
    return {
        "results": [
            {
                "query_id": qid,
                "response": o["answer"],
                "retrieved_context": [
                    {"doc_id": c["document_id"], "text": c["text"]} for c in o["retrieved"]
                ],
            }
            for qid, o in _outputs(client, run).items()
        ]
    }


def test_ragas_and_ragchecker_reimports_of_the_same_content_keep_ratings(
    client: TestClient, engine: Engine
) -> None:
    run = _rated_and_scored(client)
    before = _outputs(client, run)
    for body in (_as_ragas(client, run), _as_ragchecker(client, run)):
        r = client.post(f"/runs/{run}/outputs", json=body).json()
        assert (r["created"], r["invalidated_ratings"], r["invalidated_scores"]) == (0, 0, 0), r
        _nothing_retired(client, engine, run)
        after = _outputs(client, run)
        # Neither shape carries chunk scores or a generator: the stored ones stay.
        assert [c["score"] for c in after["q1"]["retrieved"]] == [3.5, None]
        assert after["q1"]["generator"] == before["q1"]["generator"]
        spans = [
            [(c["document_id"], c["start"], c["end"], c["text"]) for c in o["retrieved"]]
            for o in (before["q1"], after["q1"])
        ]
        assert spans[0] == spans[1]


def test_ragas_reimport_with_other_contexts_retires(client: TestClient, engine: Engine) -> None:
    run = _rated_and_scored(client)
    rows = _as_ragas(client, run)
    q1 = next(r for r in rows if r["question_id"] == "q1")
    q1["retrieved_contexts"] = q1["retrieved_contexts"][::-1]  # the order is what the metrics rank by
    r = client.post(f"/runs/{run}/outputs", json=rows).json()
    assert (r["updated"], r["invalidated_ratings"], r["invalidated_scores"]) == (1, 2, 1)
    assert _versions(engine) == [1, 2]


def test_a_regenerated_output_is_retired_only_when_what_is_seen_changed(
    client: TestClient, engine: Engine
) -> None:
    from types import SimpleNamespace

    from services.models import Question
    from services.rag.jobs import GenerateHandler

    run = _rated_and_scored(client)
    q1 = _outputs(client, run)["q1"]
    factory = client.app.state.resources.session_factory  # type: ignore[attr-defined]

    def regenerate(texts: list[str], scores: list[float]) -> None:
        chunks = [
            SimpleNamespace(
                rank=c["rank"], document_id=c["document_id"], start=c["start"], end=c["end"], text=t, score=s
            )
            for c, t, s in zip(q1["retrieved"], texts, scores, strict=True)
        ]
        with factory() as session:
            question = session.scalars(select(Question).where(Question.external_id == "q1")).one()
            GenerateHandler()._store(
                session,
                run,
                question,
                SimpleNamespace(chunks=chunks),
                q1["answer"],
                None,
                {"kind": "llm"},
                0.0,
            )
            session.commit()

    texts = [c["text"] for c in q1["retrieved"]]
    regenerate(texts, [0.8, 0.7])  # the retriever scored the same chunks otherwise
    _nothing_retired(client, engine, run)
    assert [c["score"] for c in _outputs(client, run)["q1"]["retrieved"]] == [0.8, 0.7]
    regenerate([texts[0], texts[1].upper()], [0.8, 0.7])  # same offsets, another text shown to raters
    assert _versions(engine) == [1, 2] and _count(engine, RatingHistory) == 2
