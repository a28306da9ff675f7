"""The pooled report page of three runs (the demo's shape: 50 questions, 2 raters, 25 metrics per run): the
comparison sections (system level, three pairwise sections with figures) cached with the report, against
recomputing them on every request (the behaviour before they were cached: the report itself was cached).

    python bench/pooled_page.py [--questions 50] [--metrics 25] [--repeat 5] [--resamples 2000]

Prints the median wall time per request of: a cold page (nothing cached), a repeat with the sections
recomputed (report cached; the old behaviour), a repeat with everything cached, and a page after a new rating
(everything recomputed); and the ratio of the cached repeat to the old repeat.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=50)
    ap.add_argument("--metrics", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--resamples", type=int, default=2000)
    args = ap.parse_args()

    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings
    from services.accounts import service as accounts
    from services.accounts.schemas import KeyCreate, Role
    from services.db import session_scope, upgrade

    tmp = Path(tempfile.mkdtemp())
    url = f"sqlite:///{tmp / 'bench.db'}"
    upgrade(url)
    settings = Settings(
        database_url=url,
        data_dir=tmp / "data",
        auth={"hash_time_cost": 1, "hash_memory_kib": 1024, "hash_parallelism": 1},  # type: ignore[arg-type]
        jobs={"embedded_worker": False},  # type: ignore[arg-type]
        report_processes=0,  # in this process's threads: no worker start-up in the first request
    )
    rng = np.random.default_rng(0)
    n = args.questions
    app = create_app(settings)
    with TestClient(app) as c:
        with session_scope(app.state.resources.session_factory) as s:
            key = accounts.issue_key(
                s, app.state.resources.auth.hasher, KeyCreate(name="bench", role=Role.admin)
            ).key
        c.headers["Authorization"] = f"Bearer {key}"
        ds = c.post("/datasets", json={"name": "bench", "language": "en"}).json()["id"]
        doc = " ".join(f"Sentence {i} of the document." for i in range(400))
        assert (
            c.post(f"/datasets/{ds}/documents", json=[{"external_id": "d", "text": doc}]).status_code == 200
        )
        questions = [{"external_id": f"q{i}", "question": f"Question {i}?"} for i in range(n)]
        assert c.post(f"/datasets/{ds}/questions", json=questions).status_code == 200
        assert c.post("/raters", json=[{"name": "r1"}, {"name": "r2"}]).status_code == 200
        runs = []
        quality = rng.normal(size=n)
        for shift, name in ((0.0, "a"), (0.3, "b"), (-0.3, "c")):
            run = c.post(f"/datasets/{ds}/runs", json={"name": name}).json()["id"]
            outs = [{"question_id": f"q{i}", "answer": f"Answer {name} {i}."} for i in range(n)]
            assert c.post(f"/runs/{run}/outputs", json=outs).status_code == 200
            latent = quality + shift + rng.normal(scale=0.7, size=n)
            ratings = [
                {"question_id": f"q{i}", "rater": r, "score": int(np.clip(np.round(3 + latent[i] + e), 1, 5))}
                for r in ("r1", "r2")
                for i, e in enumerate(rng.normal(scale=0.5, size=n))
            ]
            assert c.post(f"/runs/{run}/ratings", json=ratings).status_code == 200
            scores = [
                {"question_id": f"q{i}", "metric": f"external.m{m:02d}", "value": float(v)}
                for m in range(args.metrics)
                for i, v in enumerate(latent * rng.uniform(0, 1) + rng.normal(size=n))
            ]
            assert c.post(f"/runs/{run}/scores", json=scores).status_code == 200
            runs.append(run)
        params = {"runs": ",".join(map(str, runs)), "n_resamples": args.resamples, "ci": "bca"}
        state = c.app.state  # type: ignore[attr-defined]

        def get() -> float:
            t = time.perf_counter()
            r = c.get("/report.html", params=params)
            assert r.status_code == 200 and "System level" in r.text, r.text[:300]
            return time.perf_counter() - t

        cold, old, cached, after_write = [], [], [], []
        for k in range(args.repeat):
            state.report_cache._cache.clear()
            state.section_cache._cache.clear()
            cold.append(get())
            state.section_cache._cache.clear()  # the report stays cached, the sections are recomputed
            old.append(get())
            cached.append(get())
            row = [{"question_id": "q0", "rater": "r1", "score": 1 + k % 5}]
            assert c.post(f"/runs/{runs[0]}/ratings", json=row).status_code == 200
            after_write.append(get())
    med = {k: statistics.median(v) for k, v in
           {"cold": cold, "old": old, "cached": cached, "after": after_write}.items()}  # fmt: skip
    print(f"3 runs x {n} questions, 2 raters, {args.metrics} metrics, {args.resamples} resamples (BCa), "
          f"median of {args.repeat}")  # fmt: skip
    print(f"{'request':<52} {'median s':>9}")
    print(f"{'cold page (nothing cached)':<52} {med['cold']:>9.3f}")
    print(f"{'repeat, sections recomputed (before: report cached)':<52} {med['old']:>9.3f}")
    print(f"{'repeat, report and sections cached (now)':<52} {med['cached']:>9.3f}")
    print(f"{'after a new rating (everything recomputed)':<52} {med['after']:>9.3f}")
    ratio = med["cached"] / med["old"]
    print(f"cached repeat / old repeat: {ratio:.3f} ({1 / ratio:.0f}x faster)")


if __name__ == "__main__":
    main()
