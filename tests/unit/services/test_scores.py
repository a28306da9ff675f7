"""services.scores: long and wide imports of external scores (upserts, directions), the table, queries."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.errors import InvalidItems, NotFound, WrongKind
from services.models import MetricScore
from services.runs.repository import RunRepository
from services.scores import service as scores
from services.scores.external import EXTERNAL_CONFIG, import_wide_scores
from services.scores.repository import ScoreRepository
from tests.unit.services.factories import dataset, rows, run


def _stored(db: Session) -> dict[tuple[int, str], MetricScore]:
    return {(s.output_id, s.metric): s for s in db.scalars(select(MetricScore))}


def _oid(db: Session, ds: int, r: int, ext: str) -> int:
    oid = RunRepository(db).output_ids_by_question(ds, r, [ext])[ext][1]
    assert oid is not None
    return oid


def test_long_scores_upsert_by_question_and_metric(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    batch: list[dict[str, Any]] = [
        {"question_id": "q1", "metric": "external.judge", "value": 0.5, "higher_is_better": True},
        {"question_id": "q2", "metric": "external.judge", "value": None},
        {"question_id": "q1", "metric": "external.other", "value": "1"},
    ]
    first = scores.import_scores(db, r, rows(*batch))
    assert (first.kind, first.created, first.updated, first.unchanged) == ("scores", 3, 0, 0)
    stored = _stored(db)
    q1, q2 = _oid(db, ds, r, "q1"), _oid(db, ds, r, "q2")
    judge = stored[(q1, "external.judge")]
    assert (judge.value, judge.config_key, judge.reason) == (0.5, EXTERNAL_CONFIG, None)
    assert judge.details == {"source": "imported", "higher_is_better": "true"}
    assert stored[(q2, "external.judge")].reason == "no value given by the external tool"
    assert stored[(q1, "external.other")].value == 1.0

    batch[1]["value"] = 0.25
    again = scores.import_scores(db, r, rows(*batch))
    assert (again.created, again.updated, again.unchanged) == (0, 1, 2)
    db.expire_all()
    score = _stored(db)[(q2, "external.judge")]
    assert (score.value, score.reason) == (0.25, None)
    assert db.scalar(select(func.count()).select_from(MetricScore)) == 3


@pytest.mark.parametrize(
    ("item", "field", "reason"),
    [
        ({"question_id": "q1", "metric": "judge", "value": 1}, "metric", "must look like external.<name>"),
        ({"question_id": "q1", "metric": "external.x", "value": "NaN"}, "value", "finite"),
        ({"question_id": "zz", "metric": "external.x", "value": 1}, "question_id", "unknown question 'zz'"),
        ({"question_id": "q3", "metric": "external.x", "value": 1}, "question_id", "has no output for 'q3'"),
    ],
)
def test_a_bad_long_score_names_its_field(
    db: Session, item: dict[str, object], field: str, reason: str
) -> None:
    ds = dataset(db)
    r = run(db, ds, answers={"q1": "a"})
    with pytest.raises(InvalidItems) as exc:
        scores.import_external_scores(db, r, rows(item))
    [error] = exc.value.items
    assert (error.index, error.field) == (0, field)
    assert reason in error.reason
    assert db.scalar(select(func.count()).select_from(MetricScore)) == 0


def test_a_repeated_question_and_metric_is_refused(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    item = {"question_id": "q1", "metric": "external.x", "value": 1}
    with pytest.raises(InvalidItems) as exc:
        scores.import_external_scores(db, r, rows(item, item))
    assert [(e.index, e.field) for e in exc.value.items] == [(1, "metric")]


def test_a_ratings_file_posted_as_scores_is_the_wrong_kind(db: Session) -> None:
    r = run(db, dataset(db))
    with pytest.raises(WrongKind) as exc:
        scores.import_scores(db, r, rows({"question_id": "q1", "rater": "ann", "score": 4}))
    assert [e.field for e in exc.value.items] == ["(file)"]


def test_wide_ragas_export_names_metrics_by_the_catalogue(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    table: list[dict[str, Any]] = [
        {"user_input": "Question 1?", "response": "x", "faithfulness": 0.9, "my_metric": 3},
        {"user_input": "Question 2?", "response": "y", "faithfulness": None, "my_metric": 4},
    ]
    with pytest.raises(InvalidItems) as exc:
        scores.import_scores(db, r, rows(*table))
    [error] = exc.value.items
    assert error.field == "my_metric" and "direction of this metric is unknown" in error.reason

    report = scores.import_scores(db, r, rows(*table), lower_is_better=["my_metric"])
    assert (report.created, report.updated, report.unchanged) == (4, 0, 0)
    assert "imported external.ragas.faithfulness, external.ragas.my_metric" in report.notes
    stored = _stored(db)
    q1 = _oid(db, ds, r, "q1")
    faith = stored[(q1, "external.ragas.faithfulness")]
    assert faith.value == 0.9
    assert faith.details["same_definition_as"] == "ragas.faithfulness"
    assert stored[(q1, "external.ragas.my_metric")].details["higher_is_better"] == "false"
    assert stored[(_oid(db, ds, r, "q2"), "external.ragas.faithfulness")].value is None

    table[0]["faithfulness"] = 0.8
    again = scores.import_scores(db, r, rows(*table), lower_is_better=["my_metric"])
    assert (again.created, again.updated, again.unchanged) == (0, 1, 3)


def test_wide_failures(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds, answers={"q1": "a"})
    with pytest.raises(InvalidItems) as exc:
        import_wide_scores(db, r, rows({"question_id": "q1", "faithfulness": 0.5}))
    assert [e.field for e in exc.value.items] == ["library"]
    with pytest.raises(InvalidItems) as exc:
        import_wide_scores(db, r, rows({"question_id": "q1", "faithfulness": 0.5}), library="Bad Name")
    assert [e.field for e in exc.value.items] == ["library"]
    with pytest.raises(InvalidItems) as exc:
        import_wide_scores(
            db,
            r,
            rows({"question_id": "q2", "faithfulness": 0.5}, {"question_id": "q1", "faithfulness": 0.5},
                 {"question_id": "q1", "faithfulness": 0.4}),
            library="ragas",
        )  # fmt: skip
    assert [(e.index, e.field) for e in exc.value.items] == [(0, "question"), (2, "question")]
    assert f"run {r} has no output for 'q2'" in exc.value.items[0].reason
    assert "second row for 'q1'" in exc.value.items[1].reason
    assert db.scalar(select(func.count()).select_from(MetricScore)) == 0


def test_score_table_and_csv(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds, answers={"q1": "a", "q2": "b"})
    scores.import_scores(
        db,
        r,
        rows(
            {"question_id": "q1", "metric": "external.m", "value": 0.5},
            {"question_id": "q2", "metric": "external.m", "value": None},
        ),
    )
    header, table = scores.score_table(db, r)
    assert header == ["output_id", "question_id", "external.m", "external.m.error"]
    assert [(t["question_id"], t["external.m"], t["external.m.error"]) for t in table] == [
        ("q1", 0.5, None),
        ("q2", None, "no value given by the external tool"),
    ]
    assert scores.csv_cell("=cmd()") == "'=cmd()" and scores.csv_cell("-1.5") == "-1.5"
    assert scores.table_csv(["a"], [{"a": "@x"}]) == "a\r\n'@x\r\n"
    with pytest.raises(NotFound):
        scores.score_table(db, 999)


def test_repository_queries(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds, answers={"q1": "a", "q2": "b"})
    scores.import_scores(
        db,
        r,
        rows(
            {"question_id": "q1", "metric": "external.m", "value": 0.5},
            {"question_id": "q2", "metric": "external.m", "value": 0.7},
            {"question_id": "q1", "metric": "external.n", "value": 1},
        ),
    )
    repo = ScoreRepository(db)
    q1 = _oid(db, ds, r, "q1")
    assert [(s.output_id, s.metric) for s in repo.of_runs([r], ["external.n"])] == [(q1, "external.n")]
    assert len(repo.of_runs([r])) == 3
    assert {v[1] for v in repo.values_of_run(r, "external.m", EXTERNAL_CONFIG).values()} == {0.5, 0.7}
    assert list(repo.existing([q1], "external.m", EXTERNAL_CONFIG)) == [q1]
    chosen, every = repo.reported_configs([r])
    assert chosen == {"external.m": EXTERNAL_CONFIG, "external.n": EXTERNAL_CONFIG}
    assert every == {"external.m": {EXTERNAL_CONFIG}, "external.n": {EXTERNAL_CONFIG}}
    values = repo.report_values([r], chosen)
    assert sorted((m, v) for _, m, v, _, _ in values) == [
        ("external.m", 0.5),
        ("external.m", 0.7),
        ("external.n", 1.0),
    ]
    assert repo.report_values([r], {}) == []
    assert set(repo.ids_of([q1], ["external.m", "external.n"])) == {
        (q1, "external.m", EXTERNAL_CONFIG, 0),
        (q1, "external.n", EXTERNAL_CONFIG, 0),
    }  # fmt: skip  (the last key is the repeat: 0 for a score asked once)
