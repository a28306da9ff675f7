"""Scores from other tools in their own (wide) shape: one column per metric, imported as
external.<library>.<metric>, rows matched by question id or exact question text, direction from the known
metric or asked for."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from tests import studydata
from tests.api.helpers import assert_envelope, upload
from tests.integration.test_study_import import study_import


def imported_run(client: TestClient, tmp_path: Path) -> tuple[int, dict[str, str]]:
    path = studydata.write_ragas_csv(tmp_path / "ragas.csv")
    body = study_import(
        client,
        {"file": ("ragas.csv", path.read_bytes()), "corpus": ("c.jsonl", studydata.corpus_jsonl())},
        dataset="s",
    )
    run = body["run"]["id"]
    qs = client.get(f"/datasets/{body['dataset']['id']}/questions").json()
    return run, {q["question"]: q["external_id"] for q in qs}


def scores_by_question(client: TestClient, run: int) -> dict[str, dict[str, Any]]:
    return {r["question_id"]: r for r in client.get(f"/runs/{run}/scores").json()["rows"]}


def test_ragas_result_to_pandas(client: TestClient, tmp_path: Path) -> None:
    """A table written by Ragas itself: evaluate() with its non-LLM metrics, then result.to_pandas()."""
    from ragas import EvaluationDataset, SingleTurnSample, evaluate

    from services.metrics.judges.ragas import _quiet_userid

    _quiet_userid()  # Ragas leaves its telemetry id file open (docs/judges.md)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics import BleuScore, NonLLMContextRecall, RougeScore

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
        result = evaluate(
            EvaluationDataset(samples=samples),
            metrics=[BleuScore(), RougeScore(), NonLLMContextRecall()],
            show_progress=False,
            raise_exceptions=True,
        )
    table = result.to_pandas().to_csv(index=False)
    run, ids = imported_run(client, tmp_path)
    r = upload(client, f"/runs/{run}/scores", "ragas_result.csv", table.encode())
    assert r.status_code == 200, r.text
    assert r.json()["created"] == 30
    rows = scores_by_question(client, run)
    first = studydata.items()[0]
    assert rows[ids[first.question]]["external.ragas.bleu_score"] == result["bleu_score"][0]
    assert set(rows[ids[first.question]]) >= {
        "external.ragas.bleu_score",
        "external.ragas.rouge_score:fmeasure",
        "external.ragas.non_llm_context_recall",
    }
    # the report keeps each metric's kind and direction: context recall is a retrieval metric
    assert client.post("/raters", json=[{"name": "alice"}, {"name": "bob"}]).status_code == 200
    ratings = [
        {**x, "question_id": ids[it.question]}
        for it in studydata.items()
        for x in studydata.ratings()
        if x["question_id"] == it.question_id
    ]
    assert client.post(f"/runs/{run}/ratings", json=ratings).status_code == 200
    report = client.get(f"/runs/{run}/report").json()
    kinds = {
        m["metric"]: (m["kind"], m["library"], m["higher_is_better"])
        for a in report["analyses"]
        for m in a["metrics"]
    }
    assert kinds["external.ragas.non_llm_context_recall"] == ("retrieval", "external.ragas", True)
    assert kinds["external.ragas.bleu_score"] == ("overall", "external.ragas", True)
    # importing the same table again changes nothing
    again = upload(client, f"/runs/{run}/scores", "ragas_result.csv", table.encode()).json()
    assert (again["created"], again["unchanged"]) == (0, 30)


def test_deepeval_test_run_file(client: TestClient, tmp_path: Path) -> None:
    """The test run DeepEval writes (.deepeval/.latest_test_run.json), with its own TestRun.save."""
    from deepeval.test_run.api import LLMApiTestCase
    from deepeval.test_run.test_run import TestRun
    from deepeval.tracing.api import MetricData

    run, ids = imported_run(client, tmp_path)
    cases = []
    for n, it in enumerate(studydata.items()):
        cases.append(
            LLMApiTestCase(
                name=f"test_case_{n}",
                input=it.question,
                actualOutput=it.answer,
                expectedOutput=it.reference,
                retrievalContext=it.contexts,
                success=True,
                metricsData=[
                    MetricData(
                        name="Answer Relevancy",
                        threshold=0.5,
                        success=True,
                        score=it.quality / 4,
                        strictMode=False,
                    ),
                    MetricData(
                        name="Hallucination",
                        threshold=0.5,
                        success=True,
                        score=1 - it.quality / 4,
                        strictMode=False,
                    ),
                    MetricData(
                        name="Contextual Recall", threshold=0.5, success=True, score=0.5, strictMode=False
                    ),
                ],
                order=n,
            )
        )
    path = tmp_path / ".latest_test_run.json"
    with path.open("w") as f:
        TestRun(testFile="test_rag.py", testCases=cases).save(f)
    r = upload(client, f"/runs/{run}/scores", "latest_test_run.json", path.read_bytes())
    assert r.status_code == 200, r.text
    rows = scores_by_question(client, run)
    first = studydata.items()[0]
    assert rows[ids[first.question]]["external.deepeval.answer_relevancy"] == first.quality / 4
    assert rows[ids[first.question]]["external.deepeval.hallucination"] == 1 - first.quality / 4
    assert "imported external.deepeval.answer_relevancy" in r.json()["notes"][0]


def test_opik_experiment_export_and_asked_directions(client: TestClient, tmp_path: Path) -> None:
    """The CSV of Opik's experiment export: dataset.<field> columns, the output, one column per score."""
    import csv

    run, _ = imported_run(client, tmp_path)
    buf = io.StringIO()
    fields = ["dataset.input", "dataset.expected_output", "output", "hallucination_metric", "my_judge"]
    writer = csv.DictWriter(buf, fields)
    writer.writeheader()
    for it in studydata.items():
        writer.writerow(
            {
                "dataset.input": it.question,
                "dataset.expected_output": it.reference,
                "output": json.dumps({"output": it.answer}),
                "hallucination_metric": 1 - it.quality / 4,
                "my_judge": str(it.quality).replace(".", ","),
            }
        )
    raw = buf.getvalue().encode()
    body = assert_envelope(upload(client, f"/runs/{run}/scores", "opik.csv", raw), 422)
    [item] = body["items"]
    assert item["field"] == "my_judge" and "direction of this metric is unknown" in item["reason"]
    r = client.post(
        f"/runs/{run}/scores",
        params={"lower_is_better": "my_judge"},
        files={"file": ("opik.csv", raw, "text/csv")},
    )
    assert r.status_code == 200, r.text
    report = client.get(f"/runs/{run}/report").json()
    rows = {m["metric"]: m for a in report["analyses"] for m in a["metrics"]}
    assert rows["external.opik.hallucination"]["higher_is_better"] is False  # from the catalogue
    assert rows["external.opik.my_judge"]["higher_is_better"] is False  # as asked
    assert rows["external.opik.hallucination"]["kind"] == "generation"


def test_rows_that_match_no_question(client: TestClient, tmp_path: Path) -> None:
    run, ids = imported_run(client, tmp_path)
    rows = [
        {"user_input": "A question nobody asked", "faithfulness": 0.5},
        {"question_id": "nope", "faithfulness": 0.5},
        {"question_id": next(iter(ids.values())), "faithfulness": "high"},
        {"question_id": list(ids.values())[1], "faithfulness": 0.5},
    ]
    body = assert_envelope(client.post(f"/runs/{run}/scores", json=rows), 422)
    reasons = [i["reason"] for i in body["items"]]
    assert "no question of the dataset has exactly the text of column 'user_input'" in reasons[0]
    assert reasons[1] == "unknown question id 'nope'"
    assert body["detail"] == "scores: 4 rows, 3 errors in 3 of them; nothing was imported"
    assert body["items"][2]["field"] == "faithfulness"
    assert_envelope(client.post(f"/runs/{run}/scores", json=[{"user_input": "x", "notes": "text only"}]), 422)
