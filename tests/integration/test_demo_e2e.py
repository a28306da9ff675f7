"""The main job end to end on a temporary database: the demo is loaded, indexed, its three runs imported,
rated and scored with every offline metric, and reported; the shipped runs are what the service produces."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine

from app.demo import DEMO_DIR, RATERS, RATINGS_NOTE, RUNS, prepare, summary
from app.main import create_app
from app.settings import Settings
from services.db import make_session_factory
from tests.conftest import admin_client
from tests.integration.test_scoring import drain


@pytest.mark.slow
def test_demo_end_to_end(
    settings: Settings, engine: Engine, tmp_path_factory: pytest.TempPathFactory
) -> None:
    s = settings.model_copy(update={"data_dir": tmp_path_factory.mktemp("demo")})
    factory = make_session_factory(engine)
    messages: list[str] = []
    info = prepare(factory, s, say=messages.append)
    assert messages[-1].startswith("demo ready")
    # idempotent: a second preparation changes nothing and schedules no work
    again: list[str] = []
    assert prepare(factory, s, say=again.append) == info
    assert not any(m.startswith(("building", "scoring")) for m in again)

    with admin_client(create_app(s)) as client:
        offline = [m["name"] for m in client.get("/metrics").json() if m["available"]]
        for name, run_id in info["runs"].items():
            table = client.get(f"/runs/{run_id}/scores").json()
            assert len(table["rows"]) == 50
            metric_cols = [c for c in table["columns"] if "." in c and not c.endswith(".error")]
            assert {c.split("@")[0] for c in metric_cols} == set(offline)
            for row in table["rows"]:
                for col in metric_cols:
                    # every question is scored, or excused with a reason (no error, nothing silently empty)
                    reason = row[f"{col}.error"]
                    assert row[col] is not None or (reason and not reason.startswith("exception")), (
                        name,
                        col,
                        row,
                    )
            report = client.get(f"/runs/{run_id}/report").json()
            assert report["notes"] == [RATINGS_NOTE]
            assert report["agreement"]["result"]["alpha"]["ordinal"]["estimate"] is not None
            a1 = report["analyses"][0]
            assert {m["metric"] for m in a1["metrics"]} >= {
                "classic.bleu",
                "classic.rouge_l",
                "classic.meteor",
            }
            for m in a1["metrics"]:
                # the 8 unanswerable questions have no reference answer: excluded with that reason
                assert m["n"] + sum(m["excluded"].values()) == 50
        pooled = client.get("/report", params={"runs": ",".join(map(str, info["runs"].values()))}).json()
        assert pooled["reference_score"]["n_items"] == 150
        # The pooled page carries the comparisons between the three runs, labelled illustrative.
        ids = ",".join(map(str, info["runs"].values()))
        page = client.get("/report.html", params={"runs": ids, "n_resamples": 200}).text
        assert "id='table-system-level'" in page and page.count("<h3 id='pairwise-") == 3
        assert page.count(f"<p class='note run-note'>{RATINGS_NOTE}</p>") == 4  # system level, 3 pairs
        text = summary(factory, s, info["runs"], "http://127.0.0.1:8000")
        assert "Krippendorff alpha" in text and "report.html?runs=" in text
        assert "8 of 38 metrics computed; 30 need an LLM judge (set RAGMETA_JUDGE__BASE_URL" in text
        assert "nan" not in text.split()
        assert sum(line.startswith("  may a metric ") for line in text.splitlines()) == 3, text
        # The third annotator rated the 50 outputs of one run: the Alternative Annotator Test runs there.
        alt_line = next(line for line in text.splitlines() if line.startswith("  Alternative Annotator Test"))
        # (42 outputs for the metrics that need a reference answer: 8 questions have none)
        assert "(3 raters, 42 outputs rated by 3 or more)" in alt_line, alt_line
        hybrid = client.get(f"/runs/{info['runs']['hybrid-extractive']}/trust").json()
        assert hybrid["raters"] == list(RATERS)
        ran = [m for m in hybrid["metrics"] if m["alt_test"]["omega"] is not None]
        assert ran and all(
            m["alt_test"]["n_raters"] == 3 and m["alt_test"]["n_items"] in (42, 50) for m in ran
        )
        assert all(len(m["alt_test"]["raters"]) == 3 for m in ran)
        # On a run the third annotator did not rate, the test says what is missing.
        bm25 = client.get(f"/runs/{info['runs']['bm25-extractive']}/trust").json()
        assert all(m["alt_test"]["omega"] is None for m in bm25["metrics"])
        assert all(m["alt_test"]["undefined_reason"].startswith("needs 3 raters") for m in bm25["metrics"])

        # The shipped outputs are what the service's own RAG system produces for these configurations.
        dataset_id = info["dataset_id"]
        for name, system in RUNS.items():
            run = client.post(
                f"/datasets/{dataset_id}/runs",
                json={"name": f"regen-{name}", "system": system.model_dump(exclude_none=True)},
            ).json()
            client.post(f"/runs/{run['id']}/generate")
            drain(client)
            fresh = {o["question_id"]: o for o in client.get(f"/runs/{run['id']}/outputs").json()}
            shipped = [json.loads(x) for x in (DEMO_DIR / "runs" / f"{name}.jsonl").read_text().splitlines()]
            same_answer = sum(fresh[o["question_id"]]["answer"] == o["answer"] for o in shipped)
            same_chunks = sum(
                [(c["document_id"], c["start"], c["end"]) for c in fresh[o["question_id"]]["retrieved"]]
                == [(c["document_id"], c["start"], c["end"]) for c in o["retrieved"]]
                for o in shipped
            )
            assert (same_answer, same_chunks) == (50, 50), (name, same_answer, same_chunks)
