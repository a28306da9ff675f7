"""POST /runs/{run_id}/annotations: one export of each platform, written with the platform's own SDK types
where they run offline (Langfuse, Opik, Phoenix) and in MLflow's documented shape (mlflow-tracing pins an
older cachetools than the service's), onto a run whose outputs came in as OTLP traces. Each report's
metric-vs-annotator correlation is scipy's on the same numbers."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.stats as sps
from fastapi.testclient import TestClient

import ragmeta
from app import client as cli
from app.cli import build_parser
from app.cli_common import UsageError
from services.annotations.schemas import AnnotationImportRead
from tests.annotationdata import (
    JUDGE,
    LEVELS,
    R1,
    R2,
    N,
    question,
    retriever_span,
    root_span,
    trace_id,
    traced_run,
)

WHEN = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
HUMAN = (np.array(R1, dtype=float) + np.array(R2, dtype=float)) / 2


def _post(client: TestClient, run: int, export: Any, configs: Any = None, **form: str) -> Any:
    files: list[tuple[str, tuple[str, bytes, str]]] = [
        ("file", ("export.json", json.dumps(export).encode(), "application/json"))
    ]
    if configs is not None:
        files.append(("configs", ("configs.json", json.dumps(configs).encode(), "application/json")))
    return client.post(f"/runs/{run}/annotations", data=form, files=files)


def _agrees_with_scipy(client: TestClient, run: int, metric: str, judge: list[float]) -> None:
    report = client.get(f"/runs/{run}/report", headers={"Cache-Control": "no-cache"})
    assert report.status_code == 200, report.text
    row = next(m for m in report.json()["analyses"][0]["metrics"] if m["metric"] == metric)
    x = np.asarray(judge, dtype=float)
    assert row["n"] == N
    assert row["spearman"]["estimate"] == pytest.approx(sps.spearmanr(x, HUMAN).statistic, abs=1e-12)
    assert row["pearson"]["estimate"] == pytest.approx(sps.pearsonr(x, HUMAN).statistic, abs=1e-12)
    assert row["kendall"]["estimate"] == pytest.approx(sps.kendalltau(x, HUMAN).statistic, abs=1e-12)


# ----------------------------------------------------------------------------------------------- Langfuse


def langfuse_export() -> tuple[dict[str, Any], dict[str, Any]]:
    """Scores as Langfuse's public API returns them (GetScoresV3Response of the langfuse SDK's API types:
    https://api.reference.langfuse.com/ , "Scores"): two annotators' CATEGORICAL ANNOTATION scores on the
    trace, an EVAL judge's NUMERIC score on the trace's retriever observation; and the score config
    (ScoreConfigs, "Score Configs") whose categories give the labels' values."""
    from langfuse.api import (
        ConfigCategory,
        GetScoresV3Meta,
        GetScoresV3Response,
        ScoreConfig,
        ScoreConfigs,
        ScoreSubjectV3_Observation,
        ScoreSubjectV3_Trace,
        ScoreV3_Categorical,
        ScoreV3_Numeric,
    )
    from langfuse.api.utils.pagination.types.meta_response import MetaResponse

    common = {
        "project_id": "p-1",
        "timestamp": WHEN,
        "created_at": WHEN,
        "updated_at": WHEN,
        "environment": "default",
    }
    scores: list[Any] = []
    for i in range(N):
        for author, ratings in (("user-alice", R1), ("user-bob", R2)):
            scores.append(
                ScoreV3_Categorical(
                    id=f"s-{author}-{i}",
                    name="correctness",
                    source="ANNOTATION",
                    value=LEVELS[ratings[i]],
                    author_user_id=author,
                    comment="checked against the policy",
                    subject=ScoreSubjectV3_Trace(id=trace_id(i)),
                    config_id="cfg-1",
                    **common,
                )
            )
        scores.append(
            ScoreV3_Numeric(
                id=f"s-judge-{i}",
                name="faithfulness_judge",
                source="EVAL",
                value=JUDGE[i],
                subject=ScoreSubjectV3_Observation(id=retriever_span(i), trace_id=trace_id(i)),
                **common,
            )
        )
    # A score of a trace outside the run: counted, not imported.
    scores.append(
        ScoreV3_Numeric(
            id="s-other",
            name="faithfulness_judge",
            source="EVAL",
            value=0.5,
            subject=ScoreSubjectV3_Trace(id="f" * 32),
            **common,
        )
    )
    export = GetScoresV3Response(data=scores, meta=GetScoresV3Meta(limit=100))
    config = ScoreConfig(
        id="cfg-1",
        name="correctness",
        created_at=WHEN,
        updated_at=WHEN,
        project_id="p-1",
        data_type="CATEGORICAL",
        is_archived=False,
        categories=[ConfigCategory(label=label, value=v) for v, label in LEVELS.items()],
    )
    configs = ScoreConfigs(data=[config], meta=MetaResponse(page=1, limit=50, total_items=1, total_pages=1))
    return (
        export.model_dump(mode="json", by_alias=True, exclude_none=True),
        configs.model_dump(mode="json", by_alias=True, exclude_none=True),
    )


def test_langfuse_scores_become_ratings_and_a_judge_metric(client: TestClient) -> None:
    run = traced_run(client).run_id
    export, configs = langfuse_export()
    assert export["data"][0]["subject"] == {"kind": "trace", "id": trace_id(0)}  # the SDK's own shape
    got = _post(
        client,
        run,
        export,
        configs,
        platform="langfuse",
        raters=json.dumps({"user-alice": "alice"}),
        higher_is_better="faithfulness_judge",
    )
    assert got.status_code == 200, got.text
    body = got.json()
    assert (body["received"], body["matched_outputs"], body["unmatched"]) == (3 * N + 1, N, 1)
    assert body["unmatched_traces"] == ["f" * 32]
    assert body["human"] == "correctness"
    assert body["rubric"] == {
        "name": "langfuse.correctness",
        "min": 1,
        "max": 5,
        "levels": {str(v): label for v, label in LEVELS.items()},
        "source": "config",
        "created": True,
    }
    assert body["ratings"] == {"created": 2 * N, "updated": 0, "unchanged": 0}
    assert sorted(body["raters"]) == ["alice", "user-bob"]
    assert body["metrics"] == ["external.langfuse.faithfulness_judge"]
    assert body["scores"]["created"] == N
    ratings = client.get(f"/runs/{run}/ratings").json()
    alice = sorted(r["score"] for r in ratings if r["rater"] == "alice")
    assert alice == sorted(R1) and all(r["rubric"] == "langfuse.correctness" for r in ratings)
    _agrees_with_scipy(client, run, "external.langfuse.faithfulness_judge", JUDGE)

    # The same export again changes nothing.
    again = _post(
        client,
        run,
        export,
        configs,
        platform="langfuse",
        raters=json.dumps({"user-alice": "alice"}),
        higher_is_better="faithfulness_judge",
    ).json()
    assert again["ratings"] == {"created": 0, "updated": 0, "unchanged": 2 * N}
    assert again["scores"] == {"created": 0, "updated": 0, "unchanged": N}
    assert again["rubric"]["source"] == "existing"


def test_langfuse_v2_scores_and_a_judge_of_unknown_direction(client: TestClient) -> None:
    """The v2 list (Score: traceId, value, stringValue) and a BOOLEAN annotation, a rubric 0..1 inferred
    from the values without a config; the judge without a direction is named, not imported."""
    from langfuse.api import Score_Boolean, Score_Numeric

    run = traced_run(client).run_id
    common = {"timestamp": WHEN, "created_at": WHEN, "updated_at": WHEN, "environment": "default"}
    data: list[Any] = []
    for i in range(N):
        ok = R1[i] >= 3
        data.append(
            Score_Boolean(
                id=f"b{i}",
                trace_id=trace_id(i),
                name="acceptable",
                source="ANNOTATION",
                author_user_id="alice",
                value=1.0 if ok else 0.0,
                string_value="True" if ok else "False",
                **common,
            )
        )
        data.append(
            Score_Numeric(
                id=f"n{i}", trace_id=trace_id(i), name="tone", source="API", value=JUDGE[i], **common
            )
        )
    export = {"data": [s.model_dump(mode="json", by_alias=True) for s in data], "meta": {"page": 1}}
    got = _post(client, run, export, platform="langfuse")
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["rubric"]["name"] == "langfuse.acceptable"
    assert (body["rubric"]["min"], body["rubric"]["max"], body["rubric"]["source"]) == (0, 1, "values")
    assert body["ratings"]["created"] == N and body["metrics"] == []
    assert any(n.startswith("tone (judge score of unknown direction") for n in body["not_imported"])


# ---------------------------------------------------------------------------------------------------- Opik


def opik_export() -> tuple[dict[str, Any], dict[str, Any]]:
    """Traces as Opik's search returns them (TracePagePublic of opik.rest_api.types, the REST API's
    GET /v1/private/traces: https://www.comet.com/docs/opik/reference/rest-api/traces/get-traces-by-project):
    a trace id of Opik's own (a UUID, unrelated to the OTel id), the input holding the question, a
    feedback score given by two annotators in the UI (value_by_author) and one by the SDK's
    AnswerRelevance metric; the feedback definition (FeedbackDefinitionPagePublic) gives the scale."""
    from opik.rest_api.types import (
        FeedbackDefinitionPagePublic,
        FeedbackScorePublic,
        NumericalFeedbackDetailPublic,
        TracePagePublic,
        TracePublic,
        ValueEntryPublic,
    )
    from opik.rest_api.types.feedback_object_public import FeedbackObjectPublic_Numerical

    traces = [
        TracePublic(
            id=str(uuid.UUID(int=i + 1, version=4)),
            start_time=WHEN,
            input={"question": question(i)},
            output={"answer": f"Answer {i}"},
            feedback_scores=[
                FeedbackScorePublic(
                    name="helpfulness",
                    value=HUMAN[i],
                    source="ui",
                    value_by_author={
                        "alice": ValueEntryPublic(value=R1[i], source="ui", author="alice"),
                        "bob": ValueEntryPublic(value=R2[i], source="ui", author="bob", reason="fine"),
                    },
                ),
                FeedbackScorePublic(name="answer_relevance_metric", value=JUDGE[i], source="sdk"),
            ],
        )
        for i in range(N)
    ]
    page = TracePagePublic(content=traces, page=1, size=N, total=N)
    definitions = FeedbackDefinitionPagePublic(
        content=[
            FeedbackObjectPublic_Numerical(
                name="helpfulness", details=NumericalFeedbackDetailPublic(min=1, max=5)
            )
        ]
    )
    return (
        page.model_dump(mode="json", by_alias=True, exclude_none=True),
        definitions.model_dump(mode="json", by_alias=True, exclude_none=True),
    )


def test_opik_feedback_scores_join_by_the_trace_input(client: TestClient) -> None:
    run = traced_run(client).run_id
    export, configs = opik_export()
    got = _post(client, run, export, configs, platform="opik")
    assert got.status_code == 200, got.text
    body = got.json()
    assert (body["matched_outputs"], body["unmatched"], body["human"]) == (N, 0, "helpfulness")
    assert (body["rubric"]["min"], body["rubric"]["max"], body["rubric"]["source"]) == (1, 5, "config")
    assert sorted(body["raters"]) == ["alice", "bob"] and body["ratings"]["created"] == 2 * N
    # Opik's answer_relevance_metric is the catalogue's opik.answer_relevance: its direction is known.
    assert body["metrics"] == ["external.opik.answer_relevance"]
    _agrees_with_scipy(client, run, "external.opik.answer_relevance", JUDGE)


# ------------------------------------------------------------------------------------------------- Phoenix


def phoenix_export() -> tuple[dict[str, Any], dict[str, Any]]:
    """Span annotations as Phoenix's REST API returns them (SpanAnnotationsResponseBody of
    phoenix.client.__generated__.v1, GET /v1/projects/{project}/span_annotations in
    https://github.com/Arize-ai/phoenix/blob/main/schemas/openapi.json): HUMAN annotations on the root span
    with a label only, an LLM annotation on the retriever span with a score; the annotation configs
    (GetAnnotationConfigsResponseBody) give the labels' scores and the judge's direction."""
    from phoenix.client.__generated__.v1 import (
        CategoricalAnnotationConfig,
        CategoricalAnnotationValue,
        ContinuousAnnotationConfig,
        GetAnnotationConfigsResponseBody,
        SpanAnnotation,
        SpanAnnotationsResponseBody,
    )

    def annotation(i: int, span: str, name: str, kind: Any, user: str | None, result: Any) -> Any:
        return SpanAnnotation(
            id=f"a-{name}-{user}-{i}",
            span_id=span,
            name=name,
            annotator_kind=kind,
            result=result,
            metadata={},
            identifier="",
            source="APP" if kind == "HUMAN" else "API",
            user_id=user,
            created_at=WHEN.isoformat(),
            updated_at=WHEN.isoformat(),
        )

    data = []
    for i in range(N):
        for user, ratings in (("VXNlcjox", R1), ("VXNlcjoy", R2)):
            data.append(
                annotation(i, root_span(i), "correctness", "HUMAN", user, {"label": LEVELS[ratings[i]]})
            )
        data.append(
            annotation(
                i, retriever_span(i), "relevance", "LLM", None, {"score": JUDGE[i], "explanation": "ok"}
            )
        )
    configs = GetAnnotationConfigsResponseBody(
        data=[
            CategoricalAnnotationConfig(
                type="CATEGORICAL",
                name="correctness",
                optimization_direction="MAXIMIZE",
                values=[CategoricalAnnotationValue(label=label, score=v) for v, label in LEVELS.items()],
                id="c1",
            ),
            ContinuousAnnotationConfig(
                type="CONTINUOUS",
                name="relevance",
                optimization_direction="MAXIMIZE",
                lower_bound=0.0,
                upper_bound=1.0,
                id="c2",
            ),
        ],
        next_cursor=None,
    )
    return dict(SpanAnnotationsResponseBody(data=data, next_cursor=None)), dict(configs)


def test_phoenix_span_annotations_join_by_span_id(client: TestClient) -> None:
    run = traced_run(client).run_id
    export, configs = phoenix_export()
    got = _post(
        client,
        run,
        export,
        configs,
        platform="phoenix",
        raters=json.dumps({"VXNlcjox": "alice", "VXNlcjoy": "bob"}),
    )
    assert got.status_code == 200, got.text
    body = got.json()
    assert (body["matched_outputs"], body["human"], sorted(body["raters"])) == (
        N,
        "correctness",
        ["alice", "bob"],
    )
    assert body["metrics"] == ["external.phoenix.relevance"]  # its direction from optimization_direction
    _agrees_with_scipy(client, run, "external.phoenix.relevance", JUDGE)


# -------------------------------------------------------------------------------------------------- MLflow


def mlflow_export() -> list[dict[str, Any]]:
    """Assessments in the shape of MLflow 3's ``Assessment.to_dictionary()`` (MessageToDict of the
    Assessment message with proto field names:
    https://github.com/mlflow/mlflow/blob/master/mlflow/protos/assessments.proto and
    https://github.com/mlflow/mlflow/blob/master/mlflow/entities/assessment.py): trace ids ``tr-<hex>``,
    HUMAN feedback under the annotator's source_id, an LLM_JUDGE's numeric feedback, an expectation and an
    overridden feedback (both left out). mlflow-tracing is not installed: it requires cachetools<7 and the
    service pins cachetools 8."""

    def assessment(i: int, name: str, source: tuple[str, str], value: Any, **more: Any) -> dict[str, Any]:
        return {
            "assessment_id": f"a-{uuid.UUID(int=hash((i, name, source)) % 2**64)}",
            "assessment_name": name,
            "trace_id": f"tr-{trace_id(i)}",
            "source": {"source_type": source[0], "source_id": source[1]},
            "create_time": "2026-03-01T12:00:00Z",
            "last_update_time": "2026-03-01T12:00:00Z",
            "feedback": {"value": value},
            "valid": True,
            **more,
        }

    out = []
    for i in range(N):
        out.append(assessment(i, "quality", ("HUMAN", "alice@example.com"), R1[i], rationale="read it"))
        out.append(assessment(i, "quality", ("HUMAN", "bob@example.com"), R2[i]))
        out.append(assessment(i, "groundedness", ("LLM_JUDGE", "openai:/gpt-4o-mini"), JUDGE[i]))
    expectation = assessment(0, "expected_response", ("HUMAN", "alice@example.com"), None)
    del expectation["feedback"]
    expectation["expectation"] = {"value": "Within 30 days."}
    overridden = {**assessment(1, "quality", ("HUMAN", "alice@example.com"), 1), "valid": False}
    return [*out, expectation, overridden]


def test_mlflow_assessments_on_an_asked_rubric(client: TestClient) -> None:
    run = traced_run(client).run_id
    assert client.post("/rubrics", json={"name": "quality-1-5", "min": 1, "max": 5}).status_code == 201
    got = _post(
        client, run, mlflow_export(), platform="mlflow", rubric="quality-1-5", higher_is_better="groundedness"
    )
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["rubric"]["source"] == "asked" and body["rubric"]["name"] == "quality-1-5"
    assert sorted(body["raters"]) == ["alice@example.com", "bob@example.com"]
    assert body["ratings"]["created"] == 2 * N
    assert any("expectation" in n for n in body["not_imported"])
    assert any("overridden" in n for n in body["not_imported"])
    _agrees_with_scipy(client, run, "external.mlflow.groundedness", JUDGE)


# -------------------------------------------------------------------------------------------- bad exports


def _field(response: Any) -> list[str]:
    return [e["field"] for e in response.json()["items"]]


def test_bad_exports_are_refused_naming_the_field(client: TestClient) -> None:
    run = traced_run(client).run_id
    export, configs = langfuse_export()

    not_json = client.post(
        f"/runs/{run}/annotations",
        data={"platform": "langfuse"},
        files={"file": ("x.json", b"{not json", "application/json")},
    )
    assert not_json.status_code == 400 and _field(not_json) == ["file"]

    no_author = json.loads(json.dumps(export))
    del no_author["data"][0]["authorUserId"]
    got = _post(client, run, no_author, configs, platform="langfuse", higher_is_better="faithfulness_judge")
    assert got.status_code == 422 and _field(got) == ["data[0].authorUserId"], got.text

    got = _post(client, run, export, configs, platform="datadog")
    assert got.status_code == 422 and "platform" in _field(got)[0]

    got = _post(client, run, export, configs, platform="langfuse", raters="{alice")
    assert got.status_code == 400 and _field(got) == ["raters"]

    elsewhere = {"data": [s for s in export["data"] if s["subject"]["id"] == "f" * 32]}
    got = _post(client, run, elsewhere, platform="langfuse", higher_is_better="faithfulness_judge")
    assert got.status_code == 422 and _field(got) == ["traceId"], got.text

    got = _post(client, run, export, platform="langfuse")  # no configs: the categorical scale is unknown
    assert got.status_code == 422 and _field(got) == ["rubric"], got.text

    two = json.loads(json.dumps(export))
    two["data"][0]["name"] = "fluency"
    got = _post(client, run, two, configs, platform="langfuse")
    assert got.status_code == 422 and _field(got) == ["human"], got.text

    bad_label = json.loads(json.dumps(export))
    bad_label["data"][3]["value"] = "superb"
    got = _post(client, run, bad_label, configs, platform="langfuse")
    assert got.status_code == 422 and _field(got) == ["data[3].value"], got.text

    assert client.post("/rubrics", json={"name": "tiny", "min": 0, "max": 1}).status_code == 201
    got = _post(client, run, export, configs, platform="langfuse", rubric="tiny")
    assert got.status_code == 422 and "data[0].value" in _field(got), got.text

    got = _post(client, run, mlflow_export(), configs, platform="mlflow")
    assert got.status_code == 422 and _field(got) == ["configs"], got.text

    assert (
        client.post("/rubrics", json={"name": "langfuse.correctness", "min": 0, "max": 10}).status_code == 201
    )
    got = _post(client, run, export, configs, platform="langfuse")
    assert got.status_code == 409 and _field(got) == ["rubric"], got.text

    got = _post(client, 999_999, export, configs, platform="langfuse")
    assert got.status_code == 404

    # Text the store cannot hold (NUL) is named where it is, in the file and in the configurations.
    nul = json.loads(json.dumps(export))
    nul["data"][2]["comment"] = "fine\x00"
    nul_config = json.loads(json.dumps(configs))
    nul_config["data"][0]["categories"][0]["label"] = "wr\x00ong"
    got = _post(client, run, nul, configs, platform="langfuse")
    assert got.status_code == 422 and _field(got) == ["data[2].comment"], got.text
    got = _post(client, run, export, nul_config, platform="langfuse")
    assert got.status_code == 422 and _field(got) == ["configs.data[0].categories[0].label"], got.text

    # Nothing of the refused imports was written.
    assert client.get(f"/runs/{run}/ratings").json() == []


# ------------------------------------------------------------------------------------- client and command


def test_the_client_and_the_command_import_an_export(
    client: TestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = traced_run(client).run_id
    export, configs = opik_export()
    api = ragmeta.Client(http=client)
    got = api.import_run_annotations(
        run,
        ("opik.json", json.dumps(export).encode()),
        configs=("defs.json", json.dumps(configs).encode()),
        platform="opik",
    )
    assert isinstance(got, AnnotationImportRead) and got.ratings.created == 2 * N
    file, defs = tmp_path / "traces.json", tmp_path / "definitions.json"
    file.write_text(json.dumps(export))
    defs.write_text(json.dumps(configs))
    argv = ["import-annotations", str(run), str(file), "--platform", "opik", "--configs", str(defs)]
    assert cli._dispatch(client, build_parser().parse_args([*argv, "--rater", "alice=Alice"])) == 0  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert "ratings ('helpfulness' on rubric 'opik.helpfulness' 1..5, existing)" in out
    assert f"{N} created" in out and "metric external.opik.answer_relevance" in out
    with pytest.raises(UsageError, match="AUTHOR=RATER"):
        cli._dispatch(client, build_parser().parse_args([*argv, "--rater", "alice"]))  # type: ignore[arg-type]
