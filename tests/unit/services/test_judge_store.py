"""The judge cache's and the score memo's upserts (services.judge.repository): one executemany of one
statement, on both databases — a new key inserted, a stored key replaced, the last of repeated keys kept."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.judge.repository import CachedCall, JudgeCallRepository, ScoreMemoRepository
from services.models import JudgeCall, ScoreMemo


def _call(key: str, answer: str, tokens: int = 1) -> CachedCall:
    return CachedCall(
        key, "m", {"messages": [{"role": "user", "content": key}]}, {"a": answer}, tokens, 2, 3.5
    )


def test_judge_calls_are_inserted_replaced_and_the_last_of_a_repeated_key_kept(db: Session) -> None:
    repo = JudgeCallRepository(db)
    repo.put_many([_call("k1", "first"), _call("k2", "second")])
    db.flush()
    # a refreshed answer for k1, a new k3 given twice (the later wins), in one call
    repo.put_many([_call("k1", "refreshed", tokens=7), _call("k3", "old"), _call("k3", "new")])
    db.flush()
    rows = {r.key: r for r in db.scalars(select(JudgeCall))}
    assert sorted(rows) == ["k1", "k2", "k3"]
    assert rows["k1"].response == {"a": "refreshed"} and rows["k1"].prompt_tokens == 7
    assert rows["k1"].request == {"messages": [{"role": "user", "content": "k1"}]}  # the request is kept
    assert rows["k2"].response == {"a": "second"}
    assert rows["k3"].response == {"a": "new"}
    assert repo.responses(["k1", "k3", "missing"]) == {"k1": {"a": "refreshed"}, "k3": {"a": "new"}}
    repo.put_many([])  # nothing to write: no statement


def _memo(key: str, value: float | None, reason: str | None = None) -> dict[str, object]:
    return {
        "key": key,
        "metric": "ragas.faithfulness",
        "value": value,
        "reason": reason,
        "details": {"n": 1},
        "answers": {"k1": "d1"},
        "job_id": None,
    }


def test_memo_entries_are_inserted_and_replaced_in_one_statement(db: Session) -> None:
    repo = ScoreMemoRepository(db)
    repo.put_many([_memo(f"m{i}", i / 1000) for i in range(1200)])  # more rows than one VALUES list held
    db.flush()
    repo.put_many([_memo("m1", None, "undefined"), _memo("m2", 0.5), _memo("m2", 0.25)])
    db.flush()
    found = repo.get_many(["m0", "m1", "m2", "m1199"])
    assert db.scalar(select(ScoreMemo.key).where(ScoreMemo.key == "m1199")) == "m1199"
    assert found["m0"].value == 0.0 and found["m1199"].value == 1.199
    assert found["m1"].value is None and found["m1"].reason == "undefined"
    assert found["m2"].value == 0.25
    assert found["m2"].answers == {"k1": "d1"} and found["m2"].details == {"n": 1}
