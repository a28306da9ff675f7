"""One-step study imports from files written by each library's own writer, through to a report whose three
analyses are computed (or, for RAGChecker, say why two of them need gold passages)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from services.jobs.worker import JobContext, Worker
from tests import studydata

METRICS = ["ref.word_recall", "ref.doc_recall", "ref.word_precision", "classic.bleu", "classic.rouge_l"]


def drain(client: TestClient) -> None:
    app: Any = client.app
    Worker(
        JobContext(app.state.resources.session_factory, app.state.resources.settings), worker_id="test"
    ).drain()


def study_import(client: TestClient, files: dict[str, tuple[str, bytes]], **data: Any) -> dict[str, Any]:
    r = client.post("/studies/import", files=files, data={k: str(v) for k, v in data.items()})
    assert r.status_code == 201, r.text
    return dict(r.json())


def rate_score_report(client: TestClient, run_id: int, recompute: bool = False) -> dict[str, Any]:
    # Files without question ids get ids made from the question text: the dataset's export says which.
    dataset_id = client.get(f"/runs/{run_id}").json()["dataset_id"]
    by_text = {
        q["question"]: q["external_id"] for q in client.get(f"/datasets/{dataset_id}/questions").json()
    }
    ids = {it.question_id: by_text[it.question] for it in studydata.items()}
    ratings = [{**r, "question_id": ids[r["question_id"]]} for r in studydata.ratings()]
    assert client.post("/raters", json=[{"name": "alice"}, {"name": "bob"}]).status_code == 200
    r = client.post(f"/runs/{run_id}/ratings", json=ratings)
    assert r.status_code == 200, r.text
    job = client.post(f"/runs/{run_id}/scoring-jobs", json={"metrics": METRICS, "recompute": recompute})
    assert job.status_code == 202, job.text
    drain(client)
    assert client.get(f"/jobs/{job.json()['id']}").json()["failed"] == 0
    report = client.get(f"/runs/{run_id}/report")
    assert report.status_code == 200, report.text
    return dict(report.json())


def assert_three_analyses(report: dict[str, Any]) -> None:
    analyses = {a["id"]: a for a in report["analyses"]}
    assert set(analyses) == {1, 2, 3}
    for aid, a in analyses.items():
        assert a["metrics"], (aid, a)
        for m in a["metrics"]:
            assert m["n"] > 0, (aid, m)
        assert any(m["pearson"]["estimate"] is not None for m in a["metrics"]), (aid, a)


def test_ragas_to_csv_with_a_corpus_gives_all_three_analyses(client: TestClient, tmp_path: Path) -> None:
    path = studydata.write_ragas_csv(tmp_path / "ragas_eval.csv")
    raw = path.read_bytes()
    assert b"['" in raw  # Ragas writes list cells as Python literals
    body = study_import(
        client,
        {"file": ("ragas_eval.csv", raw), "corpus": ("corpus.jsonl", studydata.corpus_jsonl())},
        dataset="shop",
        language="en",
    )
    assert body["format"] == "ragas" and body["file"]["kind"] == "csv"
    assert body["dataset"]["created"] and body["run"]["name"] == "ragas_eval"
    assert body["corpus"]["source"] == "corpus" and body["corpus"]["documents"]["created"] == 6
    assert body["questions"]["created"] == 10 and body["questions"]["with_gold_passages"] == 10
    assert body["questions"]["with_reference_answer"] == 10
    assert body["passages"]["exact"] == 10
    chunks = body["chunks"]
    assert chunks["total"] == sum(len(it.contexts) for it in studydata.items())
    # a chunk of two sentences joined by a space, where the document has a line break: normalised
    assert chunks["normalized"] == 5 and chunks["unlocated"] == 0
    report = rate_score_report(client, body["run"]["id"])
    assert_three_analyses(report)


def test_deepeval_test_cases_with_context_give_all_three_analyses(client: TestClient, tmp_path: Path) -> None:
    path = studydata.write_deepeval_json(tmp_path)
    body = study_import(
        client,
        {"file": (path.name, path.read_bytes()), "corpus": ("corpus.jsonl", studydata.corpus_jsonl())},
        dataset="shop",
    )
    assert body["format"] == "deepeval"
    assert body["questions"]["with_gold_passages"] == 10 and body["passages"]["exact"] == 10
    assert body["outputs"] == 10
    report = rate_score_report(client, body["run"]["id"])
    assert_three_analyses(report)
    # the questions round-trip with their located passages
    qs = client.get(f"/datasets/{body['dataset']['id']}/questions", params={"include_text": True}).json()
    gold = {it.question_id: it.gold for it in studydata.items()}
    assert sorted(p["text"] for q in qs for p in q["passages"]) == sorted(gold.values())


def test_ragchecker_results_give_analysis_1_and_say_what_2_and_3_need(
    client: TestClient, tmp_path: Path
) -> None:
    path = studydata.write_ragchecker_json(tmp_path / "ragchecker_results.json")
    body = study_import(
        client,
        {"file": (path.name, path.read_bytes()), "corpus": ("corpus.jsonl", studydata.corpus_jsonl())},
        dataset="shop",
    )
    assert body["format"] == "ragchecker" and body["questions"]["with_gold_passages"] == 0
    assert any("analyses 2 and 3 need gold passages" in n for n in body["notes"])
    run_id = body["run"]["id"]
    report = rate_score_report(client, run_id)
    a1, a2, a3 = report["analyses"]
    assert all(m["n"] > 0 for m in a1["metrics"])
    assert all(m["n"] == 0 for m in a2["metrics"] + a3["metrics"] if m["metric"].startswith("ref.word"))
    assert any("gold passages" in n for n in report["notes"])

    # The gold passages supplied beside the same file (a second run of the same questions) fill them in.
    import csv
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, ["question_id", "text"])
    writer.writeheader()
    writer.writerows(studydata.gold_passages())
    again = study_import(
        client,
        {"file": (path.name, path.read_bytes()), "passages": ("gold.csv", buf.getvalue().encode())},
        dataset="shop",
        run="with gold passages",
    )
    assert again["questions"]["updated"] == 10 and again["passages"]["exact"] == 10
    assert again["corpus"]["source"] == "existing"
    report = rate_score_report(client, again["run"]["id"])
    assert_three_analyses(report)


def test_ragas_jsonl_imports_like_ragas_csv(client: TestClient, tmp_path: Path) -> None:
    from ragas import EvaluationDataset, SingleTurnSample

    csv_path = studydata.write_ragas_csv(tmp_path / "r.csv")
    jsonl = tmp_path / "r.jsonl"
    samples = [
        SingleTurnSample(
            user_input=it.question,
            retrieved_contexts=it.contexts,
            reference_contexts=[it.gold],
            response=it.answer,
            reference=it.reference,
        )
        for it in studydata.items()
    ]
    EvaluationDataset(samples=samples).to_jsonl(jsonl)
    seen = []
    runs = []
    for name, raw in (("r.csv", csv_path.read_bytes()), ("r.jsonl", jsonl.read_bytes())):
        body = study_import(
            client,
            {"file": (name, raw), "corpus": ("c.jsonl", studydata.corpus_jsonl())},
            dataset="shop",
            run=name,
        )
        seen.append((body["questions"]["received"], body["passages"], body["chunks"], body["outputs"]))
        runs.append(body["run"]["id"])
    assert seen[0] == seen[1]
    outputs = [client.get(f"/runs/{rid}/outputs").json() for rid in runs]
    strip = [[{k: v for k, v in o.items() if k != "id"} for o in run] for run in outputs]
    assert strip[0] == strip[1]


@pytest.mark.parametrize("threshold", [90])
def test_a_gold_passage_that_cannot_be_found_names_its_question_and_best_score(
    client: TestClient, threshold: int
) -> None:
    import json

    rows = [
        {
            "user_input": "How much is the late payment fee?",
            "response": "Twelve euros.",
            "retrieved_contexts": [],
            "reference_contexts": ["A late payment adds a fee of twenty dollars after fifteen weeks."],
        },
        {
            "user_input": "How long does standard delivery take?",
            "response": "Three to five days.",
            "reference_contexts": ["Standard delivery takes three to five working days in mainland France."],
        },
    ]
    r = client.post(
        "/studies/import",
        files={
            "file": ("r.json", json.dumps(rows).encode()),
            "corpus": ("c.jsonl", studydata.corpus_jsonl()),
        },
        data={"dataset": "shop", "fuzzy_threshold": str(threshold)},
    )
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["detail"] == "ragas study: 2 rows, 1 error in 1 of them; nothing was imported"
    [item] = body["items"]
    assert item["index"] == 0 and item["field"] == "reference_contexts[0]"
    assert "How much is the late payment fee?" in item["reason"]
    assert (
        "best match" in item["reason"]
        and "'billing'" in item["reason"]
        and "below the threshold 90" in item["reason"]
    )
    assert client.get("/datasets").json() == []  # atomic: nothing was written


def test_the_import_study_command(
    client: TestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app import client as cli
    from app.cli import build_parser

    study = studydata.write_ragas_csv(tmp_path / "ragas_eval.csv")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(studydata.corpus_jsonl())
    argv = ["import-study", "shop", str(study), "--corpus", str(corpus), "--fuzzy-threshold", "95"]
    assert cli._dispatch(client, build_parser().parse_args(argv)) == 0  # type: ignore[arg-type]
    out = capsys.readouterr().out
    [dataset] = client.get("/datasets").json()
    [run] = client.get(f"/datasets/{dataset['id']}/runs").json()
    assert f"dataset 'shop': id {dataset['id']} (created)" in out
    assert f"run 'ragas_eval': id {run['id']}, 10 outputs" in out
    assert "ragas file, 10 rows; questions: 10 created, 0 updated, 0 unchanged, 10 with gold passages" in out
    assert "passages: 0 given, 10 exact, 0 normalized, 0 fuzzy, 0 unlocated" in out
    assert "chunks: 0 given, 23 exact, 5 normalized, 0 fuzzy, 0 unlocated" in out
    # the same file again under the same run name: the service's refusal, naming the run that holds it
    with pytest.raises(cli.ClientError, match=rf"409 Conflict: .*'ragas_eval' \(id {run['id']}\)"):
        cli._dispatch(client, build_parser().parse_args(argv))  # type: ignore[arg-type]
