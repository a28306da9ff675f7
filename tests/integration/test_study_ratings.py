"""A whole study in one `ragmeta import-study` command: runs written by Ragas and DeepEval over one set of
questions, a corpus, and the team's ratings keyed their own way (their ids, through a French sheet whose
columns are mapped; or the question text), through to a report with all three analyses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests import studydata
from tests.integration.test_study_import import METRICS, assert_three_analyses, drain

FRENCH = {"question_id": "Identifiant", "rater": "Évaluateur", "score": "Note", "run": "Système"}


def write_deepeval_with_ids(directory: Path) -> Path:
    """DeepEval's own writer, the team's ids in additional_metadata (as a team keeps them)."""
    from deepeval.dataset import EvaluationDataset
    from deepeval.test_case import LLMTestCase

    ds = EvaluationDataset()
    for it in studydata.items():
        ds.add_test_case(
            LLMTestCase(
                input=it.question,
                actual_output=it.answer,
                expected_output=it.reference,
                retrieval_context=it.contexts,
                context=[it.gold],
                additional_metadata={"question_id": it.question_id},
            )
        )
    return Path(
        ds.save_as(file_type="json", directory=str(directory), file_name="deepeval", include_test_cases=True)
    )


def french_sheet(path: Path, runs: list[str]) -> Path:
    """The team's sheet: `;`-separated, Windows-1252, French headers, a run column, the team's ids."""
    lines = [";".join(FRENCH.values())]
    for run in runs:
        lines += [f"{r['question_id']};{r['rater']};{r['score']};{run}" for r in studydata.ratings()]
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("cp1252"))
    return path


def cli(client: TestClient, *argv: str) -> str:
    from app import client as commands
    from app.cli import build_parser

    assert commands._dispatch(client, build_parser().parse_args(list(argv))) == 0  # type: ignore[arg-type]
    return ""


def score_and_report(client: TestClient, run_id: int) -> dict[str, Any]:
    job = client.post(f"/runs/{run_id}/scoring-jobs", json={"metrics": METRICS})
    assert job.status_code == 202, job.text
    drain(client)
    report = client.get(f"/runs/{run_id}/report")
    assert report.status_code == 200, report.text
    return dict(report.json())


def test_one_command_imports_two_runs_and_ratings_keyed_by_the_teams_ids(
    client: TestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ragas = studydata.write_ragas_csv(tmp_path / "ragas_eval.csv")
    assert b"question_id" not in ragas.read_bytes()  # Ragas' CSV carries no id
    deepeval = write_deepeval_with_ids(tmp_path)
    assert b'"question_id": "q01"' in deepeval.read_bytes()
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(studydata.corpus_jsonl())
    sheet = french_sheet(tmp_path / "notes.csv", ["ragas_eval", "deepeval"])
    cli(
        client,
        "import-study",
        "licences",
        str(ragas),
        str(deepeval),
        "--corpus",
        str(corpus),
        "--ratings",
        str(sheet),
        "--ratings-columns",
        '{"question_id": "Identifiant", "rater": "Évaluateur", "score": "Note", "run": "Système"}',
    )
    out = capsys.readouterr().out
    assert "ratings: 40 created (20 for 'ragas_eval', 20 for 'deepeval')" in out, out
    [dataset] = client.get("/datasets").json()
    questions = client.get(f"/datasets/{dataset['id']}/questions").json()
    # The file's own ids are kept, and the Ragas rows found them by their text.
    assert sorted(q["external_id"] for q in questions) == [it.question_id for it in studydata.items()]
    runs = {r["name"]: r["id"] for r in client.get(f"/datasets/{dataset['id']}/runs").json()}
    assert set(runs) == {"ragas_eval", "deepeval"}
    assert {r["name"] for r in client.get("/raters").json()} == {"alice", "bob"}
    for run_id in runs.values():
        assert len(client.get(f"/runs/{run_id}/ratings").json()) == 20
        assert_three_analyses(score_and_report(client, run_id))
    # Undo: the dataset goes with its runs' ratings.
    assert client.delete(f"/datasets/{dataset['id']}", params={"cascade": True}).status_code == 200
    for run_id in runs.values():
        assert client.get(f"/runs/{run_id}/ratings").status_code == 404


def test_ratings_keyed_by_question_text_join_a_file_without_ids(
    client: TestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ragas = studydata.write_ragas_csv(tmp_path / "ragas_eval.csv")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(studydata.corpus_jsonl())
    text = {it.question_id: it.question for it in studydata.items()}
    lines = ["question,rater,score"]
    for n, r in enumerate(studydata.ratings()):
        q = text[r["question_id"]]
        # Half of them as a spreadsheet retypes them: other case, doubled spaces, a non-breaking space.
        q = q.upper().replace(" ", "  ", 1).replace(" ", "\u00a0", 1) if n % 2 else q
        lines.append(f'"{q}",{r["rater"]},{r["score"]}')
    sheet = tmp_path / "ratings.csv"
    sheet.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cli(client, "import-study", "shop", str(ragas), "--corpus", str(corpus), "--ratings", str(sheet))
    assert "ratings: 20 created (20 for 'ragas_eval')" in capsys.readouterr().out
    [dataset] = client.get("/datasets").json()
    [run] = client.get(f"/datasets/{dataset['id']}/runs").json()
    assert_three_analyses(score_and_report(client, run["id"]))


def _import(client: TestClient, tmp_path: Path, ratings: bytes, **data: Any) -> Any:
    ragas = studydata.write_ragas_csv(tmp_path / "ragas_eval.csv")
    files = [
        ("file", ("ragas_eval.csv", ragas.read_bytes())),
        ("corpus", ("corpus.jsonl", studydata.corpus_jsonl())),
        ("ratings", ("ratings.csv", ratings)),
    ]
    return client.post("/studies/import", files=files, data={"dataset": "shop", **data})


def test_ratings_by_unknown_ids_point_to_the_join_options_and_nothing_is_written(
    client: TestClient, tmp_path: Path
) -> None:
    r = _import(client, tmp_path, b"question_id,rater,score\nL01,alice,3\n")
    assert r.status_code == 422, r.text
    [item] = r.json()["items"]
    assert item["field"] == "ratings.question_id"
    assert "unknown question 'L01'" in item["reason"] and "join=order" in item["reason"]
    assert "question" in item["reason"] and "columns" in item["reason"]
    assert client.get("/datasets").json() == [] and client.get("/raters").json() == []


def test_ratings_by_row_order_only_when_asked(client: TestClient, tmp_path: Path) -> None:
    sheet = "rater,score\n" + "".join(f"alice,{1 + n % 5}\n" for n in range(10))
    refused = _import(client, tmp_path, sheet.encode())
    assert refused.status_code == 422 and "join=order" in refused.json()["items"][0]["reason"]
    body = _import(client, tmp_path, sheet.encode(), ratings_join="order")
    assert body.status_code == 201, body.text
    run_id, dataset_id = body.json()["run"]["id"], body.json()["dataset"]["id"]
    questions = client.get(f"/datasets/{dataset_id}/questions").json()
    by_text = {q["external_id"]: q["question"] for q in questions}
    got = {by_text[x["question_id"]]: x["score"] for x in client.get(f"/runs/{run_id}/ratings").json()}
    assert got == {it.question: 1 + n % 5 for n, it in enumerate(studydata.items())}


def test_a_text_matching_two_questions_is_refused_naming_both(client: TestClient) -> None:
    ds = client.post("/datasets", json={"name": "d", "language": "en"}).json()
    docs = [{"external_id": "d1", "title": "t", "text": "Some text."}]
    assert client.post(f"/datasets/{ds['id']}/documents", json=docs).status_code == 200
    qs = [
        {"external_id": "a", "question": "How long?", "reference_answer": None, "types": [], "passages": []},
        {"external_id": "b", "question": "how  long?", "reference_answer": None, "types": [], "passages": []},
    ]
    assert client.post(f"/datasets/{ds['id']}/questions", json=qs).status_code == 200
    run = client.post(f"/datasets/{ds['id']}/runs", json={"name": "r", "system": {}}).json()
    outs = [{"question_id": q, "answer": "x", "retrieved": []} for q in ("a", "b")]
    assert client.post(f"/runs/{run['id']}/outputs", json=outs).status_code == 200
    assert client.post("/raters", json=[{"name": "alice"}]).status_code == 200
    r = client.post(
        f"/runs/{run['id']}/ratings", json=[{"question": "HOW LONG?", "rater": "alice", "score": 3}]
    )
    assert r.status_code == 422, r.text
    [item] = r.json()["items"]
    assert item["field"] == "question" and "'a'" in item["reason"] and "'b'" in item["reason"]
    # exact text first: not ambiguous
    ok = client.post(
        f"/runs/{run['id']}/ratings", json=[{"question": "How long?", "rater": "alice", "score": 3}]
    )
    assert ok.status_code == 200, ok.text
    # a run column naming this run is accepted; another run is refused naming the field
    same = [{"question_id": "b", "rater": "alice", "score": 2, "run": "r"}]
    assert client.post(f"/runs/{run['id']}/ratings", json=same).status_code == 200
    other = client.post(f"/runs/{run['id']}/ratings", json=[{**same[0], "run": "other"}])
    assert other.status_code == 422 and other.json()["items"][0]["field"] == "run"
