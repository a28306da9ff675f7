"""A team's study in one import, at scale: a 10,000-row Ragas file (the CSV Ragas writes, 5 retrieved
contexts and 1 reference context per row, all given as text) against a 10,000-document corpus, on SQLite
and PostgreSQL, beside the native import of the same rows (documents, questions with gold passages as
offsets, a run, outputs with chunks as offsets: what a team would post after locating every text itself).

Both go through the service functions (no HTTP) from the raw bytes of their files, parsing included, each
into an empty database. Most texts are copied from the corpus; a share has the document's line breaks
written as spaces (found normalised) and a share has one word changed (found by the fuzzy alignment), as
texts exported from a pipeline do.

    python bench/study_import.py [--rows 10000] [--docs 10000] [--pg-url postgresql+psycopg://...]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONTEXTS = 5
MAX_BYTES = 1 << 30


def make_corpus(n_docs: int, rng: random.Random) -> list[dict[str, str]]:
    """Documents of 8 sentences on 2 lines, from a vocabulary large enough for passages to be distinctive."""
    vocab = [f"{a}{b}" for a in ("ba", "ko", "mi", "ru", "se", "ta", "vo", "zu") for b in range(400)]
    docs = []
    for i in range(n_docs):
        sentences = [" ".join(rng.choices(vocab, k=rng.randint(10, 16))).capitalize() + "." for _ in range(8)]
        text = " ".join(sentences[:4]) + "\n" + " ".join(sentences[4:])
        docs.append({"external_id": f"d{i}", "title": f"Document {i}", "text": text})
    return docs


def make_rows(docs: list[dict[str, str]], n_rows: int, rng: random.Random) -> list[dict[str, Any]]:
    """Each row: a gold span and 5 retrieved spans (the gold one among them for most rows), with the spans'
    offsets (for the native import) and their texts as the row's pipeline exported them (for Ragas)."""

    def span(doc: int) -> dict[str, Any]:
        text = docs[doc]["text"]
        words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
        a = rng.randrange(len(words) - 30)
        b = a + rng.randint(12, 30)
        start, end = words[a][0], words[b][1]
        given = text[start:end]
        kind = rng.random()
        if kind < 0.15:  # the line break written as a space
            given = given.replace("\n", " ")
            if "\n" not in text[start:end]:
                given = "  ".join(given.split(" ", 1))
        elif kind < 0.20:  # one word changed
            parts = given.split(" ")
            k = rng.randrange(1, len(parts) - 1)
            parts[k] = parts[k][::-1] + "x"
            given = " ".join(parts)
        return {"document_id": f"d{doc}", "start": start, "end": end, "text": given}

    rows = []
    for i in range(n_rows):
        gold_doc = rng.randrange(len(docs))
        gold = span(gold_doc)
        others = [span(rng.randrange(len(docs))) for _ in range(CONTEXTS - 1)]
        retrieved = [gold, *others] if rng.random() < 0.7 else [*others, span(gold_doc)]
        rows.append(
            {
                "id": f"q{i}",
                "question": f"Question {i}: what does document {gold_doc} say?",
                "reference": gold["text"][:80],
                "answer": f"Answer {i}: " + retrieved[0]["text"][:60],
                "gold": gold,
                "retrieved": retrieved,
            }
        )
    return rows


def ragas_csv(rows: list[dict[str, Any]]) -> bytes:
    """The file Ragas' EvaluationDataset.to_csv writes (pandas; list cells as Python literals)."""
    try:
        from ragas import EvaluationDataset, SingleTurnSample

        samples = [
            SingleTurnSample(
                user_input=r["question"],
                retrieved_contexts=[c["text"] for c in r["retrieved"]],
                reference_contexts=[r["gold"]["text"]],
                response=r["answer"],
                reference=r["reference"],
            )
            for r in rows
        ]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "ragas.csv"
            EvaluationDataset(samples=samples).to_csv(path)
            return path.read_bytes()
    except ImportError:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["user_input", "retrieved_contexts", "reference_contexts", "response", "reference"])
        for r in rows:
            w.writerow(
                [
                    r["question"],
                    repr([c["text"] for c in r["retrieved"]]),
                    repr([r["gold"]["text"]]),
                    r["answer"],
                    r["reference"],
                ]
            )
        return buf.getvalue().encode()


def jsonl(items: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items).encode()


def native_files(docs: list[dict[str, str]], rows: list[dict[str, Any]]) -> tuple[bytes, bytes, bytes]:
    def offsets(c: dict[str, Any]) -> dict[str, Any]:
        return {"document_id": c["document_id"], "start": c["start"], "end": c["end"]}

    questions = [
        {
            "external_id": r["id"],
            "question": r["question"],
            "reference_answer": r["reference"],
            "passages": [offsets(r["gold"])],
        }
        for r in rows
    ]
    outputs = [
        {"question_id": r["id"], "answer": r["answer"], "retrieved": [offsets(c) for c in r["retrieved"]]}
        for r in rows
    ]
    return jsonl(docs), jsonl(questions), jsonl(outputs)


def fresh(url: str) -> Any:
    from sqlalchemy import text

    from services.db import make_engine, make_session_factory, upgrade
    from services.models import Base

    engine = make_engine(url)
    with engine.begin() as conn:
        Base.metadata.drop_all(conn)
        conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
    upgrade(url)
    return engine, make_session_factory(engine)


def native(url: str, files: tuple[bytes, bytes, bytes]) -> dict[str, float]:
    from services.datasets import service as datasets
    from services.datasets.schemas import DatasetCreate
    from services.db import run_transaction
    from services.ingest import parse_rows
    from services.runs import service as runs
    from services.runs.schemas import RunCreate

    engine, factory = fresh(url)
    docs, questions, outputs = files
    times = {}
    t0 = time.perf_counter()

    def dataset(s: Any) -> tuple[int, int]:
        ds = datasets.create_dataset(s, DatasetCreate(name="bench", language="en")).id
        datasets.import_documents(s, ds, parse_rows(docs, "jsonl"))
        return ds, 0

    ds, _ = run_transaction(factory, dataset)
    times["documents"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    run_transaction(factory, lambda s: datasets.import_questions(s, ds, parse_rows(questions, "jsonl")))
    times["questions"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    run_id = run_transaction(factory, lambda s: runs.create_run(s, ds, RunCreate(name="r")).id)
    run_transaction(factory, lambda s: runs.import_outputs(s, run_id, parse_rows(outputs, "jsonl")))
    times["run and outputs"] = time.perf_counter() - t1
    times["total"] = time.perf_counter() - t0
    engine.dispose()
    return times


def study(url: str, corpus: bytes, ragas: bytes) -> tuple[dict[str, float], Any]:
    from services.db import run_transaction
    from services.studies import plan as study_plan
    from services.studies import service, writer
    from services.studies.schemas import StudyOptions

    engine, factory = fresh(url)
    options = StudyOptions(dataset="bench", language="en", run="r")
    files = study_plan.StudyFiles(
        study=ragas, study_name="ragas.csv", corpus=corpus, corpus_name="corpus.jsonl"
    )
    times = {}
    t0 = time.perf_counter()
    snap = run_transaction(factory, service.snapshot, options)
    times["snapshot"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    plan = service.plan(snap, files, options, MAX_BYTES)
    times["plan (parse, locate)"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    answer = run_transaction(factory, writer.write, plan)
    times["write"] = time.perf_counter() - t1
    times["total"] = time.perf_counter() - t0
    engine.dispose()
    return times, answer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--pg-url", default=os.environ.get("RAGMETA_BENCH_PG_URL"))
    args = ap.parse_args()
    rng = random.Random(0)
    docs = make_corpus(args.docs, rng)
    rows = make_rows(docs, args.rows, rng)
    t0 = time.perf_counter()
    ragas = ragas_csv(rows)
    print(f"Ragas CSV written in {time.perf_counter() - t0:.1f} s ({len(ragas) / 1e6:.1f} MB); ", end="")
    corpus = jsonl(docs)
    files = native_files(docs, rows)
    print(f"corpus {len(corpus) / 1e6:.1f} MB; native files {sum(map(len, files)) / 1e6:.1f} MB")
    urls = {"sqlite": f"sqlite:///{tempfile.mkdtemp()}/bench.db"}
    if args.pg_url:
        urls["postgres"] = args.pg_url
    for db, url in urls.items():
        nat = native(url, files)
        st, answer = study(url, corpus, ragas)
        print(f"\n{db}: {args.rows} rows x {CONTEXTS} contexts, {args.docs} documents")
        print(f"  native import  (offsets) {nat['total']:7.2f} s   " + _parts(nat))
        print(f"  study import   (texts)   {st['total']:7.2f} s   " + _parts(st))
        print(f"  ratio study / native     {st['total'] / nat['total']:7.2f}")
        print(
            f"  located: passages {answer.passages.model_dump()}\n"
            f"           chunks   {answer.chunks.model_dump()}"
        )


def _parts(times: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in times.items() if k != "total")


if __name__ == "__main__":
    main()
