"""services.metrics: job item keys, configuration keys, the planning of a scoring job (typed read, skipped
scores, repeats) and the rows a batch stores (stale outputs left out), with no metric library run."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy.orm import Session

from services.config import Settings
from services.errors import InvalidItems
from services.metrics import registry
from services.metrics.base import SampleScore
from services.metrics.batch import BatchResult, MetricWork
from services.metrics.scoring import (
    ScoringRequest,
    _score_rows,
    config_key,
    create_scoring_job,
    item_key,
    parse_item,
)
from services.runs.repository import RunRepository
from tests.unit.services.factories import dataset, run


@pytest.mark.parametrize(
    ("name", "output_id", "repeat", "key"),
    [("ref.word_recall@5", 12, 0, "ref.word_recall@5|12"), ("opik.moderation", 3, 2, "opik.moderation|3|2")],
)
def test_item_keys_round_trip(name: str, output_id: int, repeat: int, key: str) -> None:
    assert item_key(name, output_id, repeat) == key
    assert parse_item(key) == (name, output_id, repeat)


def test_config_key_is_the_sha256_of_the_sorted_configuration() -> None:
    config = {"k": 5, "word_rule": "joined", "language": "en"}
    blob = '{"k": 5, "language": "en", "metric": "ref.word_recall@5", "word_rule": "joined"}'
    assert config_key("ref.word_recall@5", config) == hashlib.sha256(blob.encode()).hexdigest()[:32]
    assert config_key("ref.word_recall@5", {**config, "word_rule": "w_runs"}) != config_key(
        "ref.word_recall@5", config
    )


def test_scoring_job_plan(db: Session, settings: Settings) -> None:
    ds = dataset(db)
    r = run(db, ds)
    with pytest.raises(InvalidItems) as exc:
        create_scoring_job(db, settings, r, ScoringRequest(metrics=["nope.metric"]))
    assert [e.field for e in exc.value.items] == ["metrics[0]"]
    job = create_scoring_job(
        db, settings, r, ScoringRequest(metrics=["ref.word_recall", "ref.doc_recall"], k=3)
    )
    assert (job.kind, job.total) == ("scoring", 6)  # 2 metrics x 3 outputs
    assert job.params.metrics == ["ref.word_recall@3", "ref.doc_recall@3"]
    assert (job.params.run_id, job.params.k, job.params.word_rule, job.params.repeats) == (r, 3, "joined", 1)
    assert (job.summary.outputs, job.summary.skipped_already_computed) == (3, 0)
    assert set(job.summary.config_keys) == {"ref.word_recall@3", "ref.doc_recall@3"}
    assert job.summary.repeats is None and "repeats" not in job.model_dump()["summary"]
    # Repeats ask a judge again; a metric without one is deterministic and scored once.
    repeated = create_scoring_job(db, settings, r, ScoringRequest(metrics=["ref.word_recall"], repeats=3))
    assert repeated.total == 3 and repeated.summary.repeats is not None
    assert (repeated.summary.repeats.k, repeated.summary.repeats.repeated) == (3, [])
    assert repeated.summary.repeats.deterministic == ["ref.word_recall@5"]


def test_a_batch_stores_no_score_of_an_output_changed_while_it_was_scored() -> None:
    resolved = registry.resolve("ref.word_recall", 5)
    work = [MetricWork(resolved, []), MetricWork(registry.resolve("classic.bleu", 5), [])]
    result = BatchResult(
        scores=[[SampleScore(value=0.5), SampleScore(error="parse: bad")], [SampleScore(value=0.1)]],
        configs=[{"k": 5}, {"smooth": True}],
        judge_usage={},
    )
    outcome: dict[str, str | None] = {}
    rows = _score_rows(
        work,
        present=[[1, 2], [1]],
        repeat_of=[0, 2],
        result=result,
        versions={1: 1, 2: 1},
        current={1: 1, 2: 2},  # output 2 was re-imported meanwhile
        outcome=outcome,
    )
    assert [(r.metric, r.output_id, r.k, r.repeat, r.result.value) for r in rows] == [
        ("ref.word_recall@5", 1, 5, 0, 0.5),
        ("classic.bleu", 1, None, 2, 0.1),
    ]
    assert rows[0].config_key == config_key("ref.word_recall@5", {"k": 5})
    assert outcome == {
        "ref.word_recall@5|1": None,
        "ref.word_recall@5|2": "stale: the output's answer changed while it was scored; score the run again",
        "classic.bleu|1|2": None,
    }


def test_outputs_are_versioned(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    repo = RunRepository(db)
    ids = [o.id for o in repo.outputs(r)]
    assert repo.output_versions(ids) == dict.fromkeys(ids, 1)
