"""Classical metrics through the service's scoring path vs the direct library calls (same inputs).

    python bench/metrics.py [--pairs 10000] [--bertscore-pairs 1000]

Prints wall times and ratios (service / direct, and the same ratio in CPU time): BLEU, ROUGE-L and METEOR over
the same pairs, each direct loop building its scorer once per loop as the adapter does once per scoring call,
the two sides interleaved ``--repeats`` times (best of each); and BERTScore
through the adapter vs bert-score's own batched call on the same model and layer. The service path is the
adapter's ``score`` (input checks, per-sample results); the database and job overhead are measured separately
by scoring a stored run of 2,000 outputs through a job.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from services.offline import apply_offline_env  # noqa: E402

apply_offline_env()


def french_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """Sentence pairs from the demo corpus: a reference and a perturbed hypothesis (~22 words)."""
    from services.retrieval import sentence_spans

    texts = [
        json.loads(line)["text"] for line in (ROOT / "data/demo/documents.jsonl").read_text().splitlines()
    ]
    sentences = [t[s:e].strip() for t in texts for s, e in sentence_spans(t)]
    sentences = [s for s in sentences if 8 <= len(s.split()) <= 40 and not s.startswith("#")]
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        ref = rng.choice(sentences)
        words = ref.split()
        hyp = [w for w in words if rng.random() > 0.2] + rng.choice(sentences).split()[:3]
        pairs.append((" ".join(hyp), ref))
    return pairs


def samples(pairs: list[tuple[str, str]]) -> list[object]:
    from services.metrics.base import Sample

    return [
        Sample(
            output_id=i,
            question="q",
            answer=h,
            contexts=(),
            reference_answer=r,
            answerable=True,
            language="fr",
            passages=(),
            retrieved=(),
            documents={},
            k=5,
        )
        for i, (h, r) in enumerate(pairs)
    ]


def _load() -> str:
    return Path("/proc/loadavg").read_text().split(" ")[0]


def timed(fn: object) -> float:
    t0 = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=10_000)
    ap.add_argument("--bertscore-pairs", type=int, default=1_000)
    ap.add_argument("--job-outputs", type=int, default=2_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from nltk.stem.snowball import SnowballStemmer
    from nltk.translate.meteor_score import meteor_score
    from rouge_score import rouge_scorer
    from sacrebleu.metrics.bleu import BLEU

    from services.config import Settings
    from services.metrics.classic import UnicodeTokenizer, _NoSynonyms
    from services.metrics.registry import load_adapter, resolve

    pairs = french_pairs(args.pairs)
    smp = samples(pairs)
    settings = Settings(data_dir=Path(tempfile.mkdtemp()))
    tok = UnicodeTokenizer()

    # The same object lifetime on both sides: the adapters build their scorer (BLEU, ROUGE scorer, stemmer)
    # once per scoring call, so each direct loop builds its own once per loop.
    def direct_bleu() -> list[float]:
        bleu = BLEU(effective_order=True)
        return [bleu.sentence_score(h, [r]).score for h, r in pairs]

    def direct_rouge() -> list[float]:
        rouge = rouge_scorer.RougeScorer(["rougeL"], tokenizer=UnicodeTokenizer())
        return [rouge.score(r, h)["rougeL"].fmeasure for h, r in pairs]

    def direct_meteor() -> list[float]:
        stem = SnowballStemmer("french")
        return [
            meteor_score([tok.tokenize(r)], tok.tokenize(h), stemmer=stem, wordnet=_NoSynonyms())
            for h, r in pairs
        ]

    direct = {"classic.bleu": direct_bleu, "classic.rouge_l": direct_rouge, "classic.meteor": direct_meteor}
    print(
        f"{len(pairs)} French sentence pairs (~{sum(len(h.split()) for h, _ in pairs) // len(pairs)} words); "
        f"{args.repeats} repeats, direct and service interleaved, best of each; load {_load()}"
    )
    print(
        f"{'metric':<22}{'direct loop':>14}{'service':>12}{'ratio':>8}{'cpu ratio':>11}"
        f"{'pairs/s (service)':>20}{'load':>7}"
    )
    from services.metrics.context import ScoringContext
    from services.metrics.resources import ScoringResources

    # Loaded models kept between calls, as a worker keeps them.
    ctx = ScoringContext(settings, language="fr", resources=ScoringResources(settings))
    for name, fn in direct.items():
        adapter = load_adapter(resolve(name))
        walls: dict[str, list[float]] = {"direct": [], "service": []}
        cpus: dict[str, list[float]] = {"direct": [], "service": []}
        for _ in range(args.repeats):  # interleaved: a load change hits both sides alike
            for side, call in (
                ("direct", fn),
                ("service", lambda a=adapter: asyncio.run(a.score(smp, ctx))),  # type: ignore[misc]
            ):
                c0 = time.process_time()
                walls[side].append(timed(call))
                cpus[side].append(time.process_time() - c0)
        t_direct, t_service = min(walls["direct"]), min(walls["service"])
        cpu_ratio = min(cpus["service"]) / min(cpus["direct"])
        print(
            f"{name:<22}{t_direct:>13.2f}s{t_service:>11.2f}s{t_service / t_direct:>8.2f}{cpu_ratio:>11.2f}"
            f"{len(pairs) / t_service:>20.0f}{_load():>7}"
        )

    import bert_score

    bp = pairs[: args.bertscore_pairs]
    from services.metrics.classic import BertScoreAdapter

    adapter = load_adapter(resolve("classic.bertscore_f1"))
    model, label = BertScoreAdapter.model(ctx), BertScoreAdapter.model_label(ctx)
    layer = settings.embeddings.bertscore_layer
    scorer = bert_score.BERTScorer(model_type=model, num_layers=layer, batch_size=64)
    scorer.score(["warm"], ["up"])
    asyncio.run(adapter.score(samples(bp[:2]), ctx))
    t_direct = timed(lambda: scorer.score([h for h, _ in bp], [r for _, r in bp]))
    t_service = timed(lambda: asyncio.run(adapter.score(samples(bp), ctx)))
    print(
        f"{'classic.bertscore_f1':<22}{t_direct:>13.2f}s{t_service:>11.2f}s{t_service / t_direct:>8.2f}"
        f"{len(bp) / t_service:>20.0f}   ({len(bp)} pairs, model {label}, layer {layer})"
    )

    job_overhead(args.job_outputs, pairs)


def job_overhead(n: int, pairs: list[tuple[str, str]]) -> None:
    """Scoring a stored run through a job (SQLite): per-output cost of the database and job bookkeeping."""
    from services.config import Settings
    from services.db import make_engine, make_session_factory, upgrade
    from services.jobs.worker import JobContext, Worker
    from services.metrics.scoring import ScoringRequest, create_scoring_job
    from services.models import Dataset, Output, Question, Run
    from services.resources import register_job_handlers

    register_job_handlers()
    tmp = Path(tempfile.mkdtemp())
    url = f"sqlite:///{tmp / 'bench.db'}"
    upgrade(url)
    factory = make_session_factory(make_engine(url))
    settings = Settings(database_url=url, data_dir=tmp)
    with factory.begin() as s:
        ds = Dataset(name="bench", language="fr", chunking={})
        s.add(ds)
        s.flush()
        run = Run(dataset_id=ds.id, name="r", system={})
        s.add(run)
        s.flush()
        for i, (h, r) in enumerate(pairs[:n]):
            q = Question(dataset_id=ds.id, external_id=f"q{i}", question="q", reference_answer=r, types=[])
            s.add(q)
            s.flush()
            s.add(Output(run_id=run.id, question_id=q.id, answer=h, generator={}))
        run_id = run.id
    with factory.begin() as s:
        create_scoring_job(s, settings, run_id, ScoringRequest(metrics=["classic.bleu", "classic.rouge_l"]))
    t0 = time.perf_counter()
    Worker(JobContext(factory, settings)).drain()
    wall = time.perf_counter() - t0
    print(
        f"\njob path: {2 * n} scores (BLEU + ROUGE-L on {n} stored outputs, SQLite) in {wall:.2f} s "
        f"= {2 * n / wall:.0f} scores/s including claims, heartbeats and one row per score"
    )


if __name__ == "__main__":
    main()
