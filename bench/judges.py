"""LLM-judge scoring: the service's job path vs each library's own batch API, against one loopback judge.

    python bench/judges.py [--samples 96] [--latency 0.2] [--concurrency 16] [--processes 2[,4]]
                           [--skip-libraries] [--skip-per-library] [--memory-jobs 10]

A loopback OpenAI-compatible test judge (tests/fakellm.py, answers from tests/judgefake.py) answers every
request after a fixed latency. The same samples (a French demo question, answer and reference with 3 retrieved
chunks each, stored as an "en" dataset so that no prompt is translated) are scored:

1. by the service as the embedded default runs it: this process owns the scoring resources and the judge
   gateway (the API's role, judge.max_concurrency = --concurrency, retries 1) and ``--processes`` worker
   processes (default: one per core; a comma-separated list runs the whole service path once per count)
   drain one scoring job with every catalogue metric that needs a judge (Ragas 7, DeepEval 6, Opik 6,
   RAGChecker 11) from a temporary SQLite database;
2. by the same job again with ``recompute=True``, twice: first with the score memo emptied (the previous
   path: the libraries run again over the gateway's cached answers and RAGChecker's checkpoints, and fill
   the memo), then with the memo (services/metrics/memo.py: no library runs for an unchanged score);
3. per library, a job with only that library's metrics and ``refresh_judge_cache`` (so it asks the judge
   again): the service's figure to set beside the library's own loop;
4. by each library's own batch API, one after the other, pointed straight at the judge as a user would, with
   the concurrency asked where the library has a knob: Ragas legacy ``evaluate`` (RunConfig(max_workers)),
   DeepEval ``evaluate`` (AsyncConfig(max_concurrent), LocalModel), Opik ``ascore`` under an
   ``asyncio.Semaphore``, RAGChecker ``evaluate(all_metrics)`` (batch sizes = concurrency) under a timeout;
5. with ``--memory-jobs N``: N refreshed jobs of the same run (``--memory-samples`` samples), and the resident
   memory of this process and the worker processes after each.

Ideal wall = judge requests x latency / concurrency; efficiency = ideal / wall. Library imports and model
loads happen before any timing and are excluded from every wall. By default each judge answer is made
specific to its request (the sentences the test judge writes get a short digest of the request appended), so
samples that share a chunk do not send identical follow-up requests by accident; ``--constant-answers``
keeps the test judge's sentences unchanged. Either way DeepEval's plain-text prompts get the whole example
JSON (see ``whole_examples``).

Columns: "asked" = calls the libraries made to the service's gateway (identical requests are sent upstream
once, cached answers are not sent at all); "requests" = requests the judge received; "in flight" = the most it
had at once; "cpu" = CPU time of this process and the worker processes, of which "judge" = the test judge's
own server thread; "cpu/req" = CPU per judge request without the test judge's. Run it with ``--latency 0`` for
the client CPU per request of the service and of each library.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import io
import json
import math
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from services.offline import apply_offline_env  # noqa: E402

apply_offline_env()
warnings.simplefilter("ignore")

MODEL = "judge-model"
API_KEY = "bench-key"
DECLINED = "Je ne sais pas"
JUDGE_THREAD = "bench-test-judge"  # the FakeLLM's server thread, renamed when started
GATEWAY = "judge-gateway"  # the service's gateway thread (services/judge/gateway.py)
BATCH: list[int] = []  # --batch-size, when given (else the service's default)


# ------------------------------------------------------------------------------------------------ samples
@dataclass(frozen=True)
class Item:
    question: str
    answer: str
    reference: str
    contexts: tuple[str, ...]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w{4,}", text.lower()))


def _extractive(question: str, contexts: tuple[str, ...], used: set[str]) -> str | None:
    """Two sentences of the contexts sharing the most words with the question (an answer not used yet)."""
    from services.retrieval import sentence_spans

    sentences = [c[s:e] for c in contexts for s, e in sentence_spans(c)]
    sentences = [s for s in sentences if len(s.split()) >= 5 and not s.startswith("#")]
    q = _words(question)
    ranked = sorted(sentences, key=lambda s: -len(q & _words(s)))
    for i, first in enumerate(ranked):
        for second in ranked[i + 1 :]:
            answer = f"{first} {second}"
            if answer not in used:
                return answer
    return None


def demo_items(n: int, n_contexts: int = 3) -> list[Item]:
    """Distinct samples from data/demo: questions with a reference, the demo runs' retrieved chunks (3 per
    sample; per question: hybrid ranks 1-3, BM25 ranks 1-3, hybrid ranks 3-5, BM25 ranks 3-5) and the runs'
    answers, or, where the run declined or the answer is taken, the two best-matching context sentences."""
    demo = ROOT / "data" / "demo"
    docs = {d["external_id"]: d["text"] for d in _jsonl(demo / "documents.jsonl")}
    questions = [q for q in _jsonl(demo / "questions.jsonl") if q.get("reference_answer")]
    runs = [
        {r["question_id"]: r for r in _jsonl(demo / "runs" / f"{name}.jsonl")}
        for name in ("hybrid-extractive", "bm25-extractive")
    ]
    items: list[Item] = []
    answers: set[str] = set()
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for run_index, first in ((0, 0), (1, 0), (0, 2), (1, 2)):
        for q in questions:
            out = runs[run_index].get(q["external_id"])
            spans = (out or {}).get("retrieved", [])[first : first + n_contexts]
            if out is None or len(spans) < n_contexts:
                continue
            contexts = tuple(docs[s["document_id"]][s["start"] : s["end"]].strip() for s in spans)
            if (q["question"], contexts) in seen:
                continue
            answer: str | None = out["answer"]
            if not answer or answer.startswith(DECLINED) or answer in answers:
                answer = _extractive(q["question"], contexts, answers)
            if answer is None:
                continue
            seen.add((q["question"], contexts))
            answers.add(answer)
            items.append(Item(q["question"], answer, q["reference_answer"], contexts))
            if len(items) == n:
                return items
    raise SystemExit(f"the demo data give only {len(items)} distinct samples; ask for fewer (--samples)")


# -------------------------------------------------------------------------------------------------- judge
def _tag_value(value: Any, tag: str) -> Any:
    if isinstance(value, str):
        # Sentences only: verdict words ("yes", "no", "idk") and other short tokens stay as they are.
        return f"{value} [{tag}]" if " " in value.strip() and len(value) > 12 else value
    if isinstance(value, list):
        return [_tag_value(v, tag) for v in value]
    if isinstance(value, dict):
        return {k: _tag_value(v, tag) for k, v in value.items()}
    return value


def _tag_text(text: str, tag: str) -> str:
    try:
        data = json.loads(text)
    except ValueError:
        # RAGChecker's KG triplets: make the subject of each triplet specific to the request.
        return re.sub(r'^\("([^"]*)"', lambda m: f'("{m.group(1)} {tag}"', text, flags=re.MULTILINE)
    return json.dumps(_tag_value(data, tag), ensure_ascii=False)


def _objects(text: str) -> list[dict[str, Any]]:
    decoder, found = json.JSONDecoder(), []
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(obj, dict) and obj:
            found.append(obj)
    return found


def whole_examples(script: Callable[[dict[str, Any], int], Any]) -> Callable[[dict[str, Any], int], Any]:
    """The test judge, except that a plain-text prompt ending "JSON:" answered with one item of its example's
    list gets the whole example instead.

    tests/judgefake.py answers a DeepEval prompt with the example object holding the key the prompt names.
    ContextualRelevancy's prompt names the item key ('verdict') before the list key ('verdicts'), so without
    ``response_format`` (DeepEval's LocalModel) the answer is a bare verdict and every score fails validation.
    The service's DeepEval adapter sends a json_schema response format and never meets this.
    """

    def run(body: dict[str, Any], index: int) -> Any:
        reply = script(body, index)
        messages = body.get("messages") or []
        if not isinstance(reply, dict) or body.get("response_format") or body.get("tools") or not messages:
            return reply
        last = messages[-1].get("content")
        if not isinstance(last, str) or not re.search(r"JSON:\s*$", last):
            return reply
        message = reply["choices"][0]["message"]
        try:
            answer = json.loads(message.get("content") or "")
        except ValueError:
            return reply
        for example in _objects(last):
            if any(isinstance(v, list) and answer in v for v in example.values()):
                for choice in reply["choices"]:
                    choice["message"]["content"] = json.dumps(example, ensure_ascii=False)
                break
        return reply

    return run


def request_specific(script: Callable[[dict[str, Any], int], Any]) -> Callable[[dict[str, Any], int], Any]:
    """The test judge's answer with a digest of the request's messages appended to every sentence it wrote.

    Deterministic (the same request always gets the same answer, so the gateway cache and RAGChecker's
    checkpoints behave as with a real judge at temperature 0), but two samples sharing a chunk no longer
    send identical follow-up requests because the judge wrote the same constant claims for both.
    """

    def run(body: dict[str, Any], index: int) -> Any:
        reply = script(body, index)
        if not isinstance(reply, dict):
            return reply
        tag = hashlib.sha1(
            json.dumps(body.get("messages"), sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()[:6]
        for choice in reply.get("choices", []):
            message = choice.get("message") or {}
            if isinstance(message.get("content"), str):
                message["content"] = _tag_text(message["content"], tag)
            for call in message.get("tool_calls") or []:
                call["function"]["arguments"] = _tag_text(call["function"]["arguments"], tag)
        return reply

    return run


def thread_cpu(name: str) -> float:
    """CPU seconds used so far by the live thread of that name (0 when there is none)."""
    for thread in threading.enumerate():
        if thread.name == name and thread.ident is not None:
            try:
                return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
            except (OSError, AttributeError):
                return 0.0
    return 0.0


@contextlib.contextmanager
def watching(fake: Any) -> Iterator[dict[str, Any]]:
    """Within the block: requests the judge received and their max in flight, wall time, process CPU time
    and the CPU time of the test judge's own server thread (it runs in this process)."""
    with fake._lock:
        start = len(fake.requests)
        fake.max_in_flight = fake.in_flight
    out: dict[str, Any] = {}
    samples: list[int] = []
    stop = threading.Event()

    def sample() -> None:  # the judge's requests in flight, every 0.1 s
        while not stop.wait(0.1):
            samples.append(fake.in_flight)

    sampler = threading.Thread(target=sample, name="bench-in-flight", daemon=True)
    t0, c0, j0, g0 = time.perf_counter(), time.process_time(), thread_cpu(JUDGE_THREAD), thread_cpu(GATEWAY)
    sampler.start()
    try:
        yield out
    finally:
        stop.set()
        sampler.join()
        # mean in flight per 5 s of the block
        out["timeline"] = [
            sum(samples[i : i + 50]) / len(samples[i : i + 50]) for i in range(0, len(samples), 50)
        ]
        out["wall"] = time.perf_counter() - t0
        out["cpu"] = time.process_time() - c0
        out["judge_cpu"] = thread_cpu(JUDGE_THREAD) - j0
        out["gateway_cpu"] = thread_cpu(GATEWAY) - g0 if g0 else thread_cpu(GATEWAY)
        with fake._lock:
            out["requests"] = len(fake.requests) - start
            out["in_flight"] = fake.max_in_flight


def forget_requests(fake: Any) -> None:
    with fake._lock:
        fake.requests.clear()


# ---------------------------------------------------------------------------------------------------- rows
@dataclass
class Row:
    path: str
    requests: int
    in_flight: int
    wall: float
    cpu: float
    judge_cpu: float
    scores: int
    failed: int
    asked: int | None = None  # calls the metric code made (to the gateway, for the service path)
    note: str = ""
    sub: bool = False


@dataclass
class Bench:
    latency: float
    concurrency: int
    rows: list[Row] = field(default_factory=list)
    # per service path: (processes, first scoring, (re-score without the memo, re-score with it) or None)
    reruns: list[tuple[int, dict[str, Any], Any]] = field(default_factory=list)

    def ideal(self, requests: int) -> float:
        return requests * self.latency / self.concurrency

    def print_table(self) -> None:
        print(
            f"{'path':<44}{'asked':>7}{'requests':>9}{'in flight':>10}{'wall s':>9}{'ideal s':>9}"
            f"{'effic.':>8}{'cpu s':>8}{'judge':>7}{'cpu/req':>9}{'failed':>11}"
        )
        for r in self.rows:
            name = ("  " if r.sub else "") + r.path
            eff = self.ideal(r.requests) / r.wall if r.wall > 0 else float("nan")
            asked = "" if r.asked is None else str(r.asked)
            print(
                f"{name:<44}{asked:>7}{r.requests:>9}{r.in_flight:>10}{r.wall:>9.1f}"
                f"{self.ideal(r.requests):>9.1f}{eff:>8.2f}{r.cpu:>8.1f}{r.judge_cpu:>7.1f}"
                f"{_per_request(r) * 1000:>7.1f}ms{f'{r.failed}/{r.scores}':>11}"
            )
            if r.note:
                print(f"{'':<4}{r.note}")


# ---------------------------------------------------------------------------------------------- warm-up
def warm_up() -> float:
    """Import every library and load the embedding model, for both paths, before any timing."""
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        import deepeval.metrics  # noqa: F401
        import langchain_openai  # noqa: F401
        import ragas  # noqa: F401
        import ragchecker  # noqa: F401
        from langchain_community.embeddings import HuggingFaceEmbeddings  # noqa: F401
        from opik.evaluation import metrics  # noqa: F401

        from services.metrics.judges import deepeval as de_adapter
        from services.metrics.judges import opik as opik_adapter
        from services.metrics.judges import ragas as ragas_adapter
        from services.metrics.judges import ragchecker as rc_adapter
        from services.retrieval import default_model_path

        ragas_adapter._load_embeddings(default_model_path())
        opik_adapter._load()
        rc_adapter._library()
        de_adapter._deepeval_metrics()
    return time.perf_counter() - t0


# --------------------------------------------------------------------------------------------- service
def _children_cpu(pids: list[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


def _rss_mb(pids: list[int]) -> float:
    """Resident memory of this process (the API's role: gateway, scoring loop) and the worker processes."""
    import psutil

    total = psutil.Process().memory_info().rss
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            total += psutil.Process(pid).memory_info().rss
    return total / 2**20


@dataclass
class Service:
    """The service as the embedded default runs it: this process owns the scoring resources and the judge
    gateway (the API's role); ``processes`` worker processes (0: one worker thread here) drain the jobs."""

    settings: Any
    factory: Any
    resources: Any
    workers: Any  # WorkerProcesses or None
    run_id: int
    names: list[str]

    @property
    def pids(self) -> list[int]:
        return list(self.workers.pids) if self.workers is not None else []


def start_service(bench: Bench, fake: Any, items: list[Item], tmp: Path, processes: int) -> Service:
    from services.config import JudgeSettings, Settings
    from services.db import make_engine, make_session_factory, upgrade
    from services.jobs.processes import WorkerProcesses
    from services.metrics import registry
    from services.metrics.resources import ScoringResources
    from services.models import Dataset, Output, Question, RetrievedChunk, Run
    from services.workers import worker_runtime

    url = f"sqlite:///{tmp / 'bench.db'}"
    upgrade(url)
    factory = make_session_factory(make_engine(url))
    judge = JudgeSettings(
        base_url=fake.base_url, model=MODEL, max_concurrency=bench.concurrency, retries=1, timeout_s=60.0
    )
    settings = Settings(
        database_url=url,
        data_dir=tmp / "data",
        judge=judge,
        jobs={"worker_processes": processes, **({"scoring_batch_size": BATCH[0]} if BATCH else {})},  # type: ignore[arg-type]
    )
    with factory.begin() as s:
        ds = Dataset(name="bench-judges", language="en", chunking={})
        s.add(ds)
        s.flush()
        run = Run(dataset_id=ds.id, name="demo-samples", system={})
        s.add(run)
        s.flush()
        for i, it in enumerate(items):
            q = Question(
                dataset_id=ds.id,
                external_id=f"q{i}",
                question=it.question,
                reference_answer=it.reference,
                answerable=True,
                types=[],
            )
            s.add(q)
            s.flush()
            out = Output(run_id=run.id, question_id=q.id, answer=it.answer, generator={"kind": "external"})
            s.add(out)
            s.flush()
            for rank, text in enumerate(items[i].contexts, 1):
                s.add(RetrievedChunk(output_id=out.id, rank=rank, text=text, location="given"))
        run_id = run.id
    resources = ScoringResources(settings, factory)
    workers = None
    if processes:
        workers = WorkerProcesses(settings, resources.gateway_url(), processes, worker_runtime).start()
        # Library imports are excluded from every wall, the worker processes' too.
        if not workers.wait_ready(600):
            raise SystemExit("the worker processes did not import the judge libraries within 600 s")
    names = [spec.name for spec in registry.CATALOGUE if spec.needs_judge]
    return Service(settings, factory, resources, workers, run_id, names)


def stop_service(svc: Service) -> None:
    if svc.workers is not None:
        svc.workers.stop()
    svc.resources.close()


def service_job(
    svc: Service,
    fake: Any,
    k: int,
    names: list[str] | None = None,
    recompute: bool = False,
    refresh: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One scoring job, timed from its creation to its end: wall, judge requests and in flight, CPU of this
    process (gateway and scoring loop; the test judge's thread reported apart) plus the worker processes."""
    from sqlalchemy import func, select

    from services.jobs.worker import JobContext, Worker
    from services.metrics.scoring import ScoringRequest, create_scoring_job
    from services.models import Job, MetricScore

    request = ScoringRequest(
        metrics=names or svc.names, k=k, recompute=recompute, refresh_judge_cache=refresh
    )
    pids = svc.pids
    w0 = _children_cpu(pids)
    with watching(fake) as seen:
        with svc.factory.begin() as s:
            created = create_scoring_job(s, svc.settings, svc.run_id, request)
        if svc.workers is None:
            Worker(JobContext(svc.factory, svc.settings, svc.resources)).drain()
        else:
            while True:
                with svc.factory() as s:
                    status = s.scalar(select(Job.status).where(Job.id == created.id))
                if status in ("done", "failed", "cancelled"):
                    break
                time.sleep(0.2)  # a client polling the job (each poll is a query in this process)
    seen["workers_cpu"] = _children_cpu(pids) - w0
    seen["cpu"] += seen["workers_cpu"]
    with svc.factory() as s:
        stored = s.get(Job, created.id)
        assert stored is not None
        info: dict[str, Any] = {
            "status": stored.status,
            "total": stored.total,
            "failed": stored.failed,
            "usage": dict((stored.summary or {}).get("judge_usage", {})),
            "memo_hits": int((stored.summary or {}).get("score_memo_hits", 0)),
            "no_value": s.scalar(
                select(func.count())
                .select_from(MetricScore)
                .where(MetricScore.job_id == stored.id, MetricScore.value.is_(None))
            ),
            "errors": defaultdict(int),
            "first_error": {},
        }
        rows = s.execute(
            select(MetricScore.metric, MetricScore.error).where(
                MetricScore.job_id == stored.id, MetricScore.error.is_not(None)
            )
        )
        for metric, error in rows:
            lib = metric.split(".", 1)[0]
            info["errors"][lib] += 1
            info["first_error"].setdefault(lib, f"{metric}: {error}"[:200])
    return seen, info


def _asked(info: dict[str, Any]) -> tuple[int, int]:
    calls = sum(int(u.get("calls", 0)) for u in info["usage"].values())
    upstream = sum(int(u.get("upstream_calls", 0)) for u in info["usage"].values())
    return calls, upstream


def service_path(
    bench: Bench,
    fake: Any,
    items: list[Item],
    tmp: Path,
    processes: int,
    per_library: bool,
    rescore: bool = True,
) -> None:
    from sqlalchemy import delete

    from services.models import ScoreMemo

    svc = start_service(bench, fake, items, tmp, processes)
    k = len(items[0].contexts)
    try:
        first, info = service_job(svc, fake, k)
        first["load"] = os.getloadavg()[0]
        forget_requests(fake)
        reruns: Any = None
        if rescore:
            with svc.factory.begin() as s:  # the previous path: no memo to read
                s.execute(delete(ScoreMemo))
            without, info_without = service_job(svc, fake, k, recompute=True)
            without["load"] = os.getloadavg()[0]
            forget_requests(fake)
            again, info2 = service_job(svc, fake, k, recompute=True)
            again["load"] = os.getloadavg()[0]
            forget_requests(fake)
            reruns = ((without, info_without), (again, info2))
        libs: dict[str, tuple[dict[str, Any], dict[str, Any], int]] = {}
        if per_library:
            for lib in ("ragas", "deepeval", "opik", "ragchecker"):
                names = [n for n in svc.names if n.startswith(lib + ".")]
                seen, linfo = service_job(svc, fake, k, names, recompute=True, refresh=True)
                libs[lib] = (seen, linfo, len(names))
                forget_requests(fake)
    finally:
        stop_service(svc)
    asked, upstream = _asked(info)
    where = f"{processes} worker processes" if processes else "one worker thread"
    note = (
        f"job {info['status']}: {info['total']} scores ({len(svc.names)} metrics x {len(items)} outputs), "
        f"{info['no_value']} without a value; gateway: {asked} calls asked by the libraries, {upstream} sent "
        f"upstream; CPU: workers {first['workers_cpu']:.1f} s, gateway thread {first['gateway_cpu']:.1f} s; "
        f"load average (1 min) at its end {first['load']:.1f}; judge requests in flight, mean per 5 s: "
        + " ".join(f"{x:.0f}" for x in first["timeline"])
    )
    bench.rows.append(
        Row(
            f"service job, {len(svc.names)} judge metrics, {where}",
            first["requests"],
            first["in_flight"],
            first["wall"],
            first["cpu"],
            first["judge_cpu"],
            info["total"],
            info["failed"],
            asked=asked,
            note=note,
        )
    )
    for lib, (seen, linfo, n_metrics) in libs.items():
        bench.rows.append(
            Row(
                f"{lib} alone ({n_metrics} metrics, refreshed job)",
                seen["requests"],
                seen["in_flight"],
                seen["wall"],
                seen["cpu"],
                seen["judge_cpu"],
                linfo["total"],
                linfo["failed"],
                asked=_asked(linfo)[0],
                note=f"first error: {linfo['first_error'][lib]}" if lib in linfo["first_error"] else "",
                sub=True,
            )
        )
    bench.reruns.append((processes, first, reruns))


def memory_path(
    bench: Bench, fake: Any, items: list[Item], tmp: Path, processes: int, jobs: int
) -> list[float]:
    """Resident memory (this process + worker processes) after each of ``jobs`` refreshed scoring jobs of the
    same run with every judge metric."""
    svc = start_service(bench, fake, items, tmp, processes)
    k = len(items[0].contexts)
    rss: list[float] = []
    try:
        for i in range(jobs):
            _, info = service_job(svc, fake, k, recompute=i > 0, refresh=i > 0)
            assert info["status"] == "done", info
            forget_requests(fake)
            rss.append(_rss_mb(svc.pids))
            print(f"  memory after job {i + 1}: {rss[-1]:.0f} MB", flush=True)
    finally:
        stop_service(svc)
    return rss


# ------------------------------------------------------------------------------------------- libraries
def ragas_path(items: list[Item], base_url: str, concurrency: int, fake: Any) -> tuple[dict[str, Any], int]:
    import httpx
    from langchain_community.embeddings import HuggingFaceEmbeddings
    from langchain_openai import ChatOpenAI
    from ragas import EvaluationDataset, RunConfig, SingleTurnSample, evaluate
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import (
        FactualCorrectness,
        Faithfulness,
        LLMContextPrecisionWithReference,
        LLMContextRecall,
        ResponseRelevancy,
    )

    from services.retrieval import default_model_path

    def judge() -> Any:  # one wrapper per metric group: it mutates n/temperature (docs/judges.md)
        http = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0))
        return LangchainLLMWrapper(
            ChatOpenAI(model=MODEL, base_url=base_url, api_key=API_KEY, http_async_client=http)
        )

    embeddings = LangchainEmbeddingsWrapper(HuggingFaceEmbeddings(model_name=default_model_path()))
    metrics = [
        Faithfulness(),
        ResponseRelevancy(llm=judge()),
        *(FactualCorrectness(mode=m) for m in ("f1", "recall", "precision")),
        LLMContextPrecisionWithReference(),
        LLMContextRecall(),
    ]
    dataset = EvaluationDataset(
        samples=[
            SingleTurnSample(
                user_input=it.question,
                response=it.answer,
                retrieved_contexts=list(it.contexts),
                reference=it.reference,
            )
            for it in items
        ]
    )
    with watching(fake) as seen:
        result = evaluate(
            dataset,
            metrics=metrics,
            llm=judge(),
            embeddings=embeddings,
            run_config=RunConfig(max_workers=concurrency),
            show_progress=False,
        )
    frame = result.to_pandas()
    failed = 0
    inputs = {"user_input", "retrieved_contexts", "response", "reference"}
    values = [v for column in frame.columns if column not in inputs for v in frame[column]]
    failed += len(items) * len(metrics) - len(values)
    failed += sum(1 for v in values if v is None or (isinstance(v, float) and math.isnan(v)))
    return seen, failed


def deepeval_path(
    items: list[Item], base_url: str, concurrency: int, fake: Any, tmp: Path
) -> tuple[dict[str, Any], int]:
    from deepeval import evaluate
    from deepeval.evaluate import AsyncConfig, DisplayConfig, ErrorConfig
    from deepeval.metrics import (
        AnswerRelevancyMetric,
        ContextualPrecisionMetric,
        ContextualRecallMetric,
        ContextualRelevancyMetric,
        FaithfulnessMetric,
        HallucinationMetric,
    )
    from deepeval.models import LocalModel
    from deepeval.test_case import LLMTestCase

    judge = LocalModel(model=MODEL, base_url=base_url, api_key=API_KEY, temperature=0)
    classes = (
        HallucinationMetric,
        AnswerRelevancyMetric,
        FaithfulnessMetric,
        ContextualPrecisionMetric,
        ContextualRecallMetric,
        ContextualRelevancyMetric,
    )
    metrics = [cls(model=judge, threshold=0.5, include_reason=True) for cls in classes]
    cases = [
        LLMTestCase(
            input=it.question,
            actual_output=it.answer,
            expected_output=it.reference,
            retrieval_context=list(it.contexts),
            context=list(it.contexts),
        )
        for it in items
    ]
    cwd = Path.cwd()
    work = tmp / "deepeval-cwd"  # evaluate() writes ./.deepeval/ in the working directory
    work.mkdir(exist_ok=True)
    os.chdir(work)
    try:
        with watching(fake) as seen, contextlib.redirect_stdout(io.StringIO()):
            result = evaluate(
                cases,
                metrics,
                async_config=AsyncConfig(max_concurrent=concurrency),
                display_config=DisplayConfig(print_results=False, show_indicator=False),
                error_config=ErrorConfig(ignore_errors=True),
            )
    finally:
        os.chdir(cwd)
    done = [md for tr in result.test_results for md in (tr.metrics_data or [])]
    failed = sum(1 for md in done if md.error or md.score is None) + len(items) * len(classes) - len(done)
    return seen, failed


def opik_path(items: list[Item], base_url: str, concurrency: int, fake: Any) -> tuple[dict[str, Any], int]:
    from opik.evaluation.metrics import (
        AnswerRelevance,
        ContextPrecision,
        ContextRecall,
        Hallucination,
        Moderation,
        Usefulness,
    )
    from opik.evaluation.models import LiteLLMChatModel

    judge = LiteLLMChatModel(model_name=f"openai/{MODEL}", base_url=base_url, api_key=API_KEY, track=False)
    kw: dict[str, Any] = {"model": judge, "track": False}
    metrics = [
        (Hallucination(**kw), lambda it: {"input": it.question, "output": it.answer, "context": it.contexts}),
        (Moderation(**kw), lambda it: {"output": it.answer}),
        (
            AnswerRelevance(**kw),
            lambda it: {"input": it.question, "output": it.answer, "context": it.contexts},
        ),
        (Usefulness(**kw), lambda it: {"input": it.question, "output": it.answer}),
        *(
            (
                cls(**kw),
                lambda it: {
                    "input": it.question,
                    "output": it.answer,
                    "expected_output": it.reference,
                    "context": it.contexts,
                },
            )
            for cls in (ContextPrecision, ContextRecall)
        ),
    ]

    async def main() -> list[Any]:
        limit = asyncio.Semaphore(concurrency)

        async def one(metric: Any, kwargs: dict[str, Any]) -> Any:
            async with limit:
                try:
                    return (await metric.ascore(**kwargs)).value
                except Exception:
                    return None

        return await asyncio.gather(
            *(
                one(m, {k: list(v) if k == "context" else v for k, v in args(it).items()})
                for it in items
                for m, args in metrics
            )
        )

    with watching(fake) as seen:
        values = asyncio.run(main())
    return seen, sum(1 for v in values if v is None)


def ragchecker_path(
    items: list[Item], base_url: str, concurrency: int, fake: Any, timeout_s: float
) -> tuple[dict[str, Any], int, str]:
    from ragchecker import RAGChecker, RAGResults
    from ragchecker.metrics import all_metrics

    evaluator = RAGChecker(
        extractor_name=f"openai/{MODEL}",
        checker_name=f"openai/{MODEL}",
        extractor_api_base=base_url,
        checker_api_base=base_url,
        api_key=API_KEY,
        batch_size_extractor=concurrency,
        batch_size_checker=concurrency,
        joint_check=True,
        joint_check_num=5,
    )
    results = RAGResults.from_dict(
        {
            "results": [
                {
                    "query_id": str(i),
                    "query": it.question,
                    "gt_answer": it.reference,
                    "response": it.answer,
                    "retrieved_context": [{"doc_id": f"c{j}", "text": c} for j, c in enumerate(it.contexts)],
                }
                for i, it in enumerate(items)
            ]
        }
    )
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["metrics"] = evaluator.evaluate(results, all_metrics)
        except BaseException as exc:  # reported below
            box["error"] = exc

    # refchecker loops forever (while True + sleep 10) on any API error: run it in a daemon thread, abandoned
    # on timeout.
    worker = threading.Thread(target=target, name="ragchecker-bench", daemon=True)
    with watching(fake) as seen:
        worker.start()
        worker.join(timeout_s)
    scores = len(items) * 11
    if worker.is_alive():
        return (
            seen,
            scores,
            f"timed out after {timeout_s:.0f} s (abandoned; it may still be calling the judge)",
        )
    if "error" in box:
        return seen, scores, f"failed: {type(box['error']).__name__}: {box['error']}"[:200]
    nan = sum(
        1
        for group in box["metrics"].values()
        for v in group.values()
        if v is None or (isinstance(v, float) and math.isnan(v))
    )
    return seen, 0, f"{nan} NaN batch means" if nan else ""


def library_paths(bench: Bench, fake: Any, items: list[Item], tmp: Path, rc_timeout: float) -> None:
    base_url, conc, n = fake.base_url, bench.concurrency, len(items)
    runs: list[tuple[str, int, Callable[[], tuple[Any, ...]]]] = [
        (
            f"ragas evaluate(), max_workers={conc}",
            7,
            lambda: ragas_path(items, base_url, conc, fake),
        ),
        (
            f"deepeval evaluate(), max_concurrent={conc}",
            6,
            lambda: deepeval_path(items, base_url, conc, fake, tmp),
        ),
        (
            f"opik ascore, Semaphore({conc})",
            6,
            lambda: opik_path(items, base_url, conc, fake),
        ),
        (
            f"ragchecker evaluate(all), batch sizes {conc}",
            11,
            lambda: ragchecker_path(items, base_url, conc, fake, rc_timeout),
        ),
    ]
    for name, n_metrics, fn in runs:
        forget_requests(fake)
        try:
            seen, failed, *rest = fn()
        except Exception as exc:
            bench.rows.append(
                Row(
                    name,
                    0,
                    0,
                    0.0,
                    0.0,
                    0.0,
                    n * n_metrics,
                    n * n_metrics,
                    note=f"could not run: {exc!r}"[:300],
                )
            )
            continue
        note = rest[0] if rest else ""
        row = Row(
            name,
            seen["requests"],
            seen["in_flight"],
            seen["wall"],
            seen["cpu"],
            seen["judge_cpu"],
            n * n_metrics,
            failed,
            note=note,
        )
        bench.rows.append(row)
        forget_requests(fake)


# ------------------------------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=96)
    ap.add_argument("--latency", type=float, default=0.2, help="seconds the test judge waits per request")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument(
        "--processes",
        default=str(os.cpu_count() or 1),
        help="worker processes (0: a thread); a comma-separated list runs the service path once per count",
    )
    ap.add_argument("--skip-libraries", action="store_true", help="only the service path (and its re-run)")
    ap.add_argument("--skip-per-library", action="store_true", help="no refreshed job per library")
    ap.add_argument("--skip-rescore", action="store_true", help="no re-scoring jobs after the first scoring")
    ap.add_argument("--memory-jobs", type=int, default=0, help="then N refreshed jobs, memory after each")
    ap.add_argument("--memory-samples", type=int, default=24)
    ap.add_argument("--ragchecker-timeout", type=float, default=600.0)
    ap.add_argument("--batch-size", type=int, default=0, help="scoring items per batch (0: the default)")
    ap.add_argument(
        "--constant-answers", action="store_true", help="the test judge's answers unchanged (see the doc)"
    )
    args = ap.parse_args()
    if args.batch_size:
        BATCH.append(args.batch_size)
    counts = [int(x) for x in str(args.processes).split(",") if x.strip()]

    from tests.fakellm import FakeLLM
    from tests.judgefake import judge_script

    items = demo_items(args.samples)
    tmp = Path(tempfile.mkdtemp(prefix="bench-judges-"))
    warm = warm_up()
    script = whole_examples(judge_script())
    if not args.constant_answers:
        script = request_specific(script)
    fake = FakeLLM(script=script, latency_s=args.latency).start()
    # The test judge's server thread (tests/live.py's Served, or the thread of older FakeLLMs).
    server = getattr(fake, "_thread", None) or getattr(getattr(fake, "_served", None), "_thread", None)
    if server is not None:
        server.name = JUDGE_THREAD
    bench = Bench(args.latency, args.concurrency)
    words = sum(len(it.answer.split()) for it in items) / len(items)
    ctx_words = sum(len(c.split()) for it in items for c in it.contexts) / (
        len(items) * len(items[0].contexts)
    )
    load = os.getloadavg()
    print(
        f"{len(items)} samples (data/demo, French text, dataset language 'en'): answers ~{words:.0f} words, "
        f"{len(items[0].contexts)} contexts of ~{ctx_words:.0f} words each"
    )
    print(
        f"loopback judge: {args.latency * 1000:.0f} ms per request, concurrency {args.concurrency}, "
        f"{'constant' if args.constant_answers else 'request-specific'} answers; {os.cpu_count()} CPUs, load "
        f"average {load[0]:.1f} / {load[1]:.1f} at start; imports and model loads before timing: {warm:.1f} s"
    )
    print(
        "ideal = requests x latency / concurrency; efficiency = ideal / wall; cpu = CPU time of this process "
        "and the worker processes, of which judge = the test judge's server thread (same process); "
        "cpu/req = (cpu - judge) / requests"
    )
    print()
    rss: list[float] = []
    try:
        for n, count in enumerate(counts):
            # the per-library jobs once, with the first count
            service_path(
                bench,
                fake,
                items,
                tmp / f"service-{count}",
                count,
                n == 0 and not args.skip_per_library,
                rescore=not args.skip_rescore,
            )
        if not args.skip_libraries:
            library_paths(bench, fake, items, tmp, args.ragchecker_timeout)
        if args.memory_jobs:
            print(f"memory: {args.memory_jobs} jobs of {args.memory_samples} samples x every judge metric")
            rss = memory_path(
                bench, fake, items[: args.memory_samples], tmp / "memory", counts[0], args.memory_jobs
            )
    finally:
        fake.stop()
        shutil.rmtree(tmp, ignore_errors=True)  # the database, RAGChecker checkpoints, DeepEval's cwd
    bench.print_table()
    print()
    services = [r for r in bench.rows if r.path.startswith("service job")]
    for (count, first, reruns), row in zip(bench.reruns, services, strict=True):
        print(f"{count} worker processes:")
        if bench.latency > 0:
            print(
                f"  first scoring: wall {row.wall:.1f} s vs ideal {bench.ideal(row.requests):.1f} s: "
                f"{row.wall / bench.ideal(row.requests):.2f} x ideal (efficiency "
                f"{bench.ideal(row.requests) / row.wall:.2f}); load average at its end {first['load']:.1f}"
            )
        if reruns is None:
            continue
        (without, info_w), (again, info2) = reruns
        for label, (seen, info) in (
            ("re-score, score memo emptied (previous path)", (without, info_w)),
            ("re-score with the score memo", (again, info2)),
        ):
            calls, _ = _asked(info)
            hits = sum(int(u.get("cache_hits", 0)) for u in info["usage"].values())
            memo = int(info.get("memo_hits", 0))
            print(
                f"  {label}: {seen['requests']} judge requests, wall {seen['wall']:.1f} s = "
                f"{seen['wall'] / row.wall:.2f} x the first scoring, cpu {seen['cpu']:.1f} s; gateway: "
                f"{calls} calls asked, {hits} cache hits; score memo hits {memo}; "
                f"{info['failed']}/{info['total']} failed; load average at its end {seen['load']:.1f}"
            )
        print(
            f"  re-score with / without the memo: wall {again['wall'] / without['wall']:.2f}, "
            f"cpu {again['cpu'] / max(without['cpu'], 1e-9):.2f}"
        )
    service = services[0]
    libs = [r for r in bench.rows if not r.sub and not r.path.startswith("service job")]
    if libs:
        total = sum(r.wall for r in libs)
        reqs = sum(r.requests for r in libs)
        print(
            f"libraries one after the other: {total:.1f} s, {reqs} requests "
            f"(ideal {bench.ideal(reqs):.1f} s, efficiency {bench.ideal(reqs) / total:.2f})"
            if bench.latency > 0
            else f"libraries one after the other: {total:.1f} s, {reqs} requests"
        )
        print(
            f"service wall / sum of library walls = {service.wall:.1f} / {total:.1f} = "
            f"{service.wall / total:.2f}; requests {service.requests} / {reqs} = "
            f"{service.requests / reqs:.2f}"
        )
        subs = {r.path.split(" ", 1)[0]: r for r in bench.rows if r.sub}
        for r in libs:
            lib = r.path.split(" ", 1)[0]
            mine = subs.get(lib)
            if mine is not None and r.wall > 0:
                print(
                    f"  {lib}: service {mine.wall:.1f} s vs own loop {r.wall:.1f} s "
                    f"({mine.wall / r.wall:.2f}); cpu/request service {_per_request(mine) * 1000:.1f} ms "
                    f"vs own {_per_request(r) * 1000:.1f} ms"
                )
    print(f"cpu per judge request, whole service job: {_per_request(service) * 1000:.1f} ms")
    if rss:
        print(
            "memory (this process + worker processes) after each job, MB: "
            + ", ".join(f"{x:.0f}" for x in rss)
            + f"; last / first = {rss[-1] / rss[0]:.3f}"
        )


def _per_request(row: Row) -> float:
    return (row.cpu - row.judge_cpu) / row.requests if row.requests else float("nan")


if __name__ == "__main__":
    main()
