"""A bounded loopback load on POST /runs/{run_id}/annotations (uvicorn, real threadpool and connection pool;
SQLite, and PostgreSQL with RAGMETA_TEST_DATABASE_URL): 6 clients send 3 Langfuse exports each at once into
one traced run, every export a slice of the traces overlapping the others', the first requests racing to
create the inferred rubric and to register the raters.

Every answer must be 200 or 503 (an overload, with Retry-After). Afterwards the rubric and each rater exist
once, and the run holds exactly one rating per (output, author) and one judge score per output of the slices
that were accepted, with the export's values. The timeout only keeps a deadlock from hanging the suite;
nothing is timed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from services.models import MetricScore, Rater, Rating, Rubric
from tests.annotationdata import JUDGE, R1, R2, N, trace_id, traced_run
from tests.api.test_annotations import langfuse_export
from tests.conftest import Live
from tests.integration.test_concurrency import HANG_GUARD_S

CLIENTS = 6
REQUESTS = 3
SLICE = 5


def _slice(export: dict[str, Any], client: int, request: int) -> tuple[set[int], bytes]:
    start = (client * REQUESTS + request) * 2 % N
    wanted = {(start + k) % N for k in range(SLICE)}
    ids = {trace_id(i) for i in wanted}
    data = [s for s in export["data"] if s["subject"].get("traceId", s["subject"]["id"]) in ids]
    return wanted, json.dumps({"data": data}).encode()


def test_concurrent_annotation_imports_write_each_rating_and_score_once(
    live_server: Live, engine: Engine
) -> None:
    with httpx.Client(base_url=live_server.url, headers=live_server.headers, timeout=HANG_GUARD_S) as c:
        run = traced_run(c).run_id
    export, configs = langfuse_export()
    config_bytes = json.dumps(configs).encode()
    form = {"platform": "langfuse", "higher_is_better": "faithfulness_judge"}

    async def load() -> list[tuple[set[int], httpx.Response]]:
        async with httpx.AsyncClient(
            base_url=live_server.url, headers=live_server.headers, timeout=HANG_GUARD_S
        ) as c:

            async def sender(k: int) -> list[tuple[set[int], httpx.Response]]:
                out = []
                for r in range(REQUESTS):
                    wanted, body = _slice(export, k, r)
                    files = {
                        "file": ("scores.json", body, "application/json"),
                        "configs": ("configs.json", config_bytes, "application/json"),
                    }
                    got = await c.post(f"/runs/{run}/annotations", data=form, files=files)
                    out.append((wanted, got))
                return out

            done = await asyncio.gather(*(sender(k) for k in range(CLIENTS)))
            return [x for xs in done for x in xs]

    answers = asyncio.run(load())
    assert len(answers) == CLIENTS * REQUESTS
    codes = [r.status_code for _, r in answers]
    assert set(codes) <= {200, 503}, [r.text[:300] for _, r in answers if r.status_code not in (200, 503)]
    for _, r in answers:
        if r.status_code == 503:
            assert r.headers["Retry-After"].isdigit(), r.text
    accepted = {i for wanted, r in answers if r.status_code == 200 for i in wanted}
    assert accepted

    with Session(engine) as s:
        assert s.scalar(select(func.count()).where(Rubric.name == "langfuse.correctness")) == 1
        raters = s.scalars(select(Rater.name)).all()
        assert sorted(raters) == ["user-alice", "user-bob"]
        ratings = s.execute(select(Rater.name, Rating.score).join(Rater, Rater.id == Rating.rater_id)).all()
        expected = sorted([("user-alice", R1[i]) for i in accepted] + [("user-bob", R2[i]) for i in accepted])
        assert sorted(ratings) == expected
        values = s.scalars(
            select(MetricScore.value).where(MetricScore.metric == "external.langfuse.faithfulness_judge")
        ).all()
        assert sorted(values) == sorted(JUDGE[i] for i in accepted)
