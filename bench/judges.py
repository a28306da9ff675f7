"""LLM-judge scoring: the service's job path vs each library's own batch API, against one loopback judge.

    python bench/judges.py [--samples 96] [--latency 0.2] [--concurrency 16] [--processes 2[,4]]
                           [--skip-libraries] [--skip-per-library] [--memory-jobs 10] [--judge-repeats 3]

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
import functools
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
GATEWAY = "judge-gateway"  # the service's gateway thread (services/judge/gateway.py)
BATCH: list[int] = []  # --batch-size, when given (else the service's default)
REPEATS: list[int] = []  # --judge-repeats, when given: every service job asks each judge metric k times
LIBRARIES: list[str] = []  # --libraries: those compared one by one
# --library-loop uvloop: the event loop the own loops of Ragas and Opik run on (in the library processes)
LIBRARY_LOOP: list[str] = []


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


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ")[0]


def _judge_main(conn: Any, latency: float, constant: bool) -> None:
    """The test judge's own process: serves until told to stop; answers ``state`` / ``mark`` / ``clear``
    with its request count, requests in flight (and the most since the last mark) and its CPU time."""
    from tests.fakellm import FakeLLM
    from tests.judgefake import judge_script

    script = whole_examples(judge_script())
    if not constant:
        script = request_specific(script)
    fake = FakeLLM(script=script, latency_s=latency).start()
    conn.send(fake.base_url)
    seen = 0  # requests answered before the last clear
    while True:
        cmd = conn.recv()
        if cmd == "stop":
            break
        with fake._lock:
            if cmd == "mark":
                fake.max_in_flight = fake.in_flight
            if cmd == "clear":
                seen += len(fake.requests)
                fake.requests.clear()
            state = {
                "requests": seen + len(fake.requests),
                "in_flight": fake.in_flight,
                "max_in_flight": fake.max_in_flight,
            }
        state["cpu"] = time.process_time()
        conn.send(state)
    fake.stop()
    conn.send("stopped")


class JudgeProcess:
    """The loopback test judge in a process of its own: neither path shares a core's GIL with it, and its
    CPU is counted apart from both (column "judge")."""

    def __init__(self, latency: float, constant: bool) -> None:
        import multiprocessing

        mp = multiprocessing.get_context("spawn")
        self._conn, child = mp.Pipe()
        self._proc = mp.Process(
            target=_judge_main, args=(child, latency, constant), name="bench-test-judge", daemon=True
        )
        self._proc.start()
        self.base_url: str = self._conn.recv()
        self._lock = threading.Lock()

    def ask(self, cmd: str) -> dict[str, Any]:
        with self._lock:
            self._conn.send(cmd)
            state: dict[str, Any] = self._conn.recv()
            return state

    def stop(self) -> None:
        with contextlib.suppress(Exception), self._lock:
            self._conn.send("stop")
            self._conn.recv()
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.kill()


SAMPLER = "bench-in-flight"


@contextlib.contextmanager
def watching(judge: JudgeProcess) -> Iterator[dict[str, Any]]:
    """Within the block: requests the judge received and their max in flight, wall time, this process's CPU
    time (without the in-flight sampler's own), the judge process's CPU and the load average at the end."""
    first = judge.ask("mark")
    out: dict[str, Any] = {}
    samples: list[int] = []
    stop = threading.Event()

    def sample() -> None:  # the judge's requests in flight, every 0.1 s
        while not stop.wait(0.1):
            samples.append(int(judge.ask("state")["in_flight"]))

    sampler = threading.Thread(target=sample, name=SAMPLER, daemon=True)
    t0, c0, g0 = time.perf_counter(), time.process_time(), thread_cpu(GATEWAY)
    sampler.start()
    try:
        yield out
    finally:
        stop.set()
        sampler_cpu = thread_cpu(SAMPLER)
        sampler.join()
        # mean in flight per 5 s of the block
        out["timeline"] = [
            sum(samples[i : i + 50]) / len(samples[i : i + 50]) for i in range(0, len(samples), 50)
        ]
        out["wall"] = time.perf_counter() - t0
        out["cpu"] = time.process_time() - c0 - sampler_cpu
        out["gateway_cpu"] = thread_cpu(GATEWAY) - g0 if g0 else thread_cpu(GATEWAY)
        last = judge.ask("state")
        out["judge_cpu"] = last["cpu"] - first["cpu"]
        out["requests"] = last["requests"] - first["requests"]
        out["in_flight"] = last["max_in_flight"]
        out["load"] = loadavg()


def forget_requests(judge: JudgeProcess) -> None:
    judge.ask("clear")


def background_load() -> Any:
    """One extra CPU-bound process (a busy loop) until terminated: the efficiency figure on a machine
    where something else runs too."""
    import multiprocessing

    proc = multiprocessing.get_context("spawn").Process(target=_spin, name="bench-background", daemon=True)
    proc.start()
    return proc


def _spin() -> None:
    x = 0
    while True:
        x = (x * 1103515245 + 12345) % 2**31


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
    load: str = ""  # the 1-minute load average at the end of the run


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
            f"{'effic.':>8}{'cpu s':>8}{'judge':>7}{'cpu/req':>9}{'failed':>11}{'load':>7}"
        )
        for r in self.rows:
            name = ("  " if r.sub else "") + r.path
            eff = self.ideal(r.requests) / r.wall if r.wall > 0 else float("nan")
            asked = "" if r.asked is None else str(r.asked)
            print(
                f"{name:<44}{asked:>7}{r.requests:>9}{r.in_flight:>10}{r.wall:>9.1f}"
                f"{self.ideal(r.requests):>9.1f}{eff:>8.2f}{r.cpu:>8.1f}{r.judge_cpu:>7.1f}"
                f"{_per_request(r) * 1000:>7.1f}ms{f'{r.failed}/{r.scores}':>11}{r.load:>7}"
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
    gateway: Any  # JudgeGateway

    @property
    def pids(self) -> list[int]:
        return list(self.workers.pids) if self.workers is not None else []


def start_service(bench: Bench, judge: JudgeProcess, items: list[Item], tmp: Path, processes: int) -> Service:
    from services.config import JudgeSettings, Settings
    from services.db import make_engine, make_session_factory, upgrade
    from services.jobs.processes import WorkerProcesses
    from services.judge.gateway import JudgeGateway
    from services.judge.slots import judge_slots
    from services.metrics import registry
    from services.metrics.resources import ScoringResources
    from services.models import Dataset, Output, Question, RetrievedChunk, Run
    from services.workers import worker_runtime

    url = f"sqlite:///{tmp / 'bench.db'}"
    upgrade(url)
    factory = make_session_factory(make_engine(url))
    settings = Settings(
        database_url=url,
        data_dir=tmp / "data",
        judge=JudgeSettings(
            base_url=judge.base_url, model=MODEL, max_concurrency=bench.concurrency, retries=1, timeout_s=60.0
        ),
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
    # The gateway this process runs as the API process does (ScoringResources starts the same one), owned
    # here so that its cache can be turned off for the "cache off" rows.
    gateway = JudgeGateway(settings.judge, factory, shared=judge_slots(settings)).start()
    resources = ScoringResources(settings, factory, gateway_url=gateway.url)
    workers = None
    if not processes:  # the bench's own thread drains the jobs: its process needs the handlers
        from services.resources import register_job_handlers

        register_job_handlers()
    if processes:
        workers = WorkerProcesses(settings, gateway.url, processes, worker_runtime).start()
        # Library imports are excluded from every wall, the worker processes' too.
        if not workers.wait_ready(600):
            raise SystemExit("the worker processes did not import the judge libraries within 600 s")
    names = [spec.name for spec in registry.CATALOGUE if spec.needs_judge]
    return Service(settings, factory, resources, workers, run_id, names, gateway)


def stop_service(svc: Service) -> None:
    if svc.workers is not None:
        svc.workers.stop()
    svc.resources.close()
    svc.gateway.stop()


def service_job(
    svc: Service,
    fake: JudgeProcess,
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
        metrics=names or svc.names,
        k=k,
        recompute=recompute,
        refresh_judge_cache=refresh,
        repeats=REPEATS[0] if REPEATS else 1,
    )
    pids = svc.pids
    w0 = _children_cpu(pids)
    poll_cpu = 0.0
    with watching(fake) as seen:
        with svc.factory.begin() as s:
            created = create_scoring_job(s, svc.settings, svc.run_id, request)
        if svc.workers is None:
            Worker(JobContext(svc.factory, svc.settings, svc.resources)).drain()
        else:
            while True:
                # A client polling the job (a query in this process every 0.2 s): the client's CPU, not the
                # service's, and set by the wall time rather than the requests; counted apart.
                t0 = time.thread_time()
                with svc.factory() as s:
                    status = s.scalar(select(Job.status).where(Job.id == created.id))
                poll_cpu += time.thread_time() - t0
                if status in ("done", "failed", "cancelled"):
                    break
                time.sleep(0.2)
    seen["poll_cpu"] = poll_cpu
    seen["cpu"] -= poll_cpu
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
        forget_requests(fake)
        reruns: Any = None
        if rescore:
            with svc.factory.begin() as s:  # the previous path: no memo to read
                s.execute(delete(ScoreMemo))
            without, info_without = service_job(svc, fake, k, recompute=True)
            forget_requests(fake)
            again, info2 = service_job(svc, fake, k, recompute=True)
            forget_requests(fake)
            reruns = ((without, info_without), (again, info2))
        libs: dict[tuple[str, bool], tuple[dict[str, Any], dict[str, Any], int]] = {}
        if per_library:
            for lib in LIBRARIES:
                names = [n for n in svc.names if n.startswith(lib + ".")]
                # With the gateway's cache (a refreshed job: identical requests within it sent once), then
                # without (every request the library makes is sent, as by its own loop).
                for cache in (True, False):
                    svc.gateway.cache = cache
                    seen, linfo = service_job(svc, fake, k, names, recompute=True, refresh=True)
                    libs[(lib, cache)] = (seen, linfo, len(names))
                    forget_requests(fake)
                svc.gateway.cache = True
    finally:
        stop_service(svc)
    asked, upstream = _asked(info)
    where = f"{processes} worker processes" if processes else "one worker thread"
    note = (
        f"job {info['status']}: {info['total']} scores ({len(svc.names)} metrics x {len(items)} outputs), "
        f"{info['no_value']} without a value; gateway: {asked} calls asked by the libraries, {upstream} sent "
        f"upstream; CPU: workers {first['workers_cpu']:.1f} s, gateway thread {first['gateway_cpu']:.1f} s, "
        f"the client's polling (not counted) {first['poll_cpu']:.2f} s; "
        f"load average (1 min) at its end {first['load']}; judge requests in flight, mean per 5 s: "
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
            load=first["load"],
        )
    )
    for (lib, cache), (seen, linfo, n_metrics) in libs.items():
        bench.rows.append(
            Row(
                f"{lib} alone ({n_metrics} metrics), cache {'on' if cache else 'off'}",
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
                load=seen["load"],
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
# Each library's own loop, as a user would write it, run in ``--library-processes`` processes of its own
# (the samples split between them, the concurrency too: the same judge calls in flight in all, as the
# gateway's bound gives the service), with keep-alive connections (each SDK's default pool).


def ragas_path(
    items: list[Item], base_url: str, concurrency: int, tmp: Path, timeout: float
) -> tuple[int, str]:
    """Ragas' collections metrics (the ones the service runs), ``ascore`` per sample under a semaphore:
    Ragas documents asyncio for these (the legacy ``evaluate()`` runs other code: LangChain prompts)."""
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics import collections as rc

    embeddings = _ragas_embeddings()

    async def main() -> list[Any]:
        # One client, one keep-alive pool (the openai SDK's default limits), no SDK retries (as the service).
        llm = llm_factory(MODEL, client=AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0))
        metrics: list[tuple[Any, Callable[[Item], dict[str, Any]]]] = [
            (
                rc.Faithfulness(llm=llm),
                lambda it: {
                    "user_input": it.question,
                    "response": it.answer,
                    "retrieved_contexts": list(it.contexts),
                },
            ),
            (
                rc.AnswerRelevancy(llm=llm, embeddings=embeddings, strictness=3),
                lambda it: {"user_input": it.question, "response": it.answer},
            ),
            *(
                (
                    rc.FactualCorrectness(llm=llm, mode=m),
                    lambda it: {"response": it.answer, "reference": it.reference},
                )
                for m in ("f1", "recall", "precision")
            ),
            (
                rc.ContextPrecisionWithReference(llm=llm),
                lambda it: {
                    "user_input": it.question,
                    "reference": it.reference,
                    "retrieved_contexts": list(it.contexts),
                },
            ),
            (
                rc.ContextRecall(llm=llm),
                lambda it: {
                    "user_input": it.question,
                    "retrieved_contexts": list(it.contexts),
                    "reference": it.reference,
                },
            ),
        ]
        return await _bounded(concurrency, [(m.ascore, args(it)) for it in items for m, args in metrics])

    values = _run(main())
    return sum(1 for v in values if v is None or (isinstance(v, float) and math.isnan(v))), ""


@functools.cache
def _ragas_embeddings() -> Any:
    from services.metrics.judges import ragas as ragas_adapter
    from services.retrieval import default_model_path

    return ragas_adapter._load_embeddings(default_model_path())


def _run(coro: Any) -> Any:
    """``asyncio.run`` on the loop the own loops were asked to run on (``--library-loop``)."""
    if LIBRARY_LOOP and LIBRARY_LOOP[-1] == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coro)
    return asyncio.run(coro)


async def _bounded(concurrency: int, calls: list[tuple[Callable[..., Any], dict[str, Any]]]) -> list[Any]:
    """Every call at once under a semaphore (each metric call on one sample); None for a failure."""
    limit = asyncio.Semaphore(concurrency)

    async def one(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        async with limit:
            try:
                return (await fn(**kwargs)).value
            except Exception:
                return None

    return await asyncio.gather(*(one(fn, kw) for fn, kw in calls))


def deepeval_path(
    items: list[Item], base_url: str, concurrency: int, tmp: Path, timeout: float
) -> tuple[int, str]:
    """DeepEval's ``evaluate`` with ``LocalModel``; its ``max_concurrent`` bounds test cases, not calls, so
    the model's calls are bounded to ``concurrency`` in flight as well (what the gateway does for the
    service). LocalModel builds a new OpenAI client per call: that is the library's own cost."""
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

    class Bounded(LocalModel):  # type: ignore[misc,no-untyped-call]
        _limit: asyncio.Semaphore | None = None

        async def a_generate(self, *args: Any, **kwargs: Any) -> Any:
            if self._limit is None:
                self._limit = asyncio.Semaphore(concurrency)
            async with self._limit:
                return await super().a_generate(*args, **kwargs)

    judge = Bounded(model=MODEL, base_url=base_url, api_key=API_KEY, temperature=0)
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
    work = tmp / f"deepeval-cwd-{os.getpid()}"  # evaluate() writes ./.deepeval/ in the working directory
    work.mkdir(parents=True, exist_ok=True)
    os.chdir(work)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
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
    return sum(1 for md in done if md.error or md.score is None) + len(items) * len(classes) - len(done), ""


def opik_path(
    items: list[Item], base_url: str, concurrency: int, tmp: Path, timeout: float
) -> tuple[int, str]:
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
    full = lambda it: {  # noqa: E731
        "input": it.question,
        "output": it.answer,
        "expected_output": it.reference,
        "context": list(it.contexts),
    }
    metrics: list[tuple[Any, Callable[[Item], dict[str, Any]]]] = [
        (
            Hallucination(**kw),
            lambda it: {"input": it.question, "output": it.answer, "context": list(it.contexts)},
        ),
        (Moderation(**kw), lambda it: {"output": it.answer}),
        (
            AnswerRelevance(**kw),
            lambda it: {"input": it.question, "output": it.answer, "context": list(it.contexts)},
        ),
        (Usefulness(**kw), lambda it: {"input": it.question, "output": it.answer}),
        (ContextPrecision(**kw), full),
        (ContextRecall(**kw), full),
    ]
    values = _run(_bounded(concurrency, [(m.ascore, args(it)) for it in items for m, args in metrics]))
    return sum(1 for v in values if v is None), ""


def ragchecker_path(
    items: list[Item], base_url: str, concurrency: int, tmp: Path, timeout_s: float
) -> tuple[int, str]:
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
    worker.start()
    worker.join(timeout_s)
    scores = len(items) * 11
    if worker.is_alive():
        return scores, f"timed out after {timeout_s:.0f} s (abandoned; it may still be calling the judge)"
    if "error" in box:
        return scores, f"failed: {type(box['error']).__name__}: {box['error']}"[:200]
    nan = sum(
        1
        for group in box["metrics"].values()
        for v in group.values()
        if v is None or (isinstance(v, float) and math.isnan(v))
    )
    return 0, f"{nan} NaN batch means" if nan else ""


LIBRARY_PATHS: dict[str, tuple[int, Callable[..., tuple[int, str]], str]] = {
    "ragas": (7, ragas_path, "ragas collections ascore, Semaphore"),
    "deepeval": (6, deepeval_path, "deepeval evaluate(), calls bounded"),
    "opik": (6, opik_path, "opik ascore, Semaphore"),
    "ragchecker": (11, ragchecker_path, "ragchecker evaluate(all), batch sizes"),
}


# The own loops that run on a loop of the bench's choosing (the others start their libraries' own loops).
ASYNC_OWN = ("ragas", "opik")


def _library_main(conn: Any, loop: str = "asyncio") -> None:
    """One process of a library's own loop: imports every library first, then runs what it is sent and
    answers with its own CPU time for the run (every thread of the process), the failures and a note."""
    LIBRARY_LOOP.append(loop)
    with contextlib.redirect_stdout(io.StringIO()):
        warm_up()
        _ragas_embeddings()
    conn.send("ready")
    while True:
        cmd = conn.recv()
        if cmd is None:
            break
        lib, items, base_url, concurrency, tmp, timeout = cmd
        n_metrics, fn, _ = LIBRARY_PATHS[lib]
        c0 = time.process_time()
        try:
            failed, note = fn(items, base_url, concurrency, tmp, timeout)
        except Exception as exc:
            failed, note = len(items) * n_metrics, f"could not run: {exc!r}"[:300]
        conn.send((time.process_time() - c0, failed, note))


class LibraryProcesses:
    """``count`` processes that each run a share of the samples through a library's own loop."""

    def __init__(self, count: int, loop: str = "asyncio") -> None:
        import multiprocessing

        mp = multiprocessing.get_context("spawn")
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        for i in range(max(1, count)):
            conn, child = mp.Pipe()
            proc = mp.Process(
                target=_library_main, args=(child, loop), name=f"bench-library-{i}", daemon=True
            )
            proc.start()
            self.conns.append(conn)
            self.procs.append(proc)
        for conn in self.conns:  # imports and model loads, before any timing
            conn.recv()

    def run(
        self, lib: str, items: list[Item], base_url: str, concurrency: int, tmp: Path, timeout: float
    ) -> tuple[float, int, str]:
        n = len(self.conns)
        each = max(1, concurrency // n)
        for i, conn in enumerate(self.conns):
            conn.send((lib, items[i::n], base_url, each, tmp, timeout))
        cpu, failed, notes = 0.0, 0, []
        for conn in self.conns:
            c, f, note = conn.recv()
            cpu, failed = cpu + c, failed + f
            if note:
                notes.append(note)
        return cpu, failed, "; ".join(notes)

    def stop(self) -> None:
        for conn in self.conns:
            with contextlib.suppress(Exception):
                conn.send(None)
        for proc in self.procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()


def library_paths(
    bench: Bench,
    judge: JudgeProcess,
    items: list[Item],
    tmp: Path,
    rc_timeout: float,
    processes: int,
    loop: str = "asyncio",
) -> None:
    conc, n = bench.concurrency, len(items)
    pool = LibraryProcesses(processes, loop)
    try:
        for lib, (n_metrics, _, label) in LIBRARY_PATHS.items():
            if lib not in LIBRARIES:
                continue
            forget_requests(judge)
            with watching(judge) as seen:
                cpu, failed, note = pool.run(lib, items, judge.base_url, conc, tmp, rc_timeout)
            each = max(1, conc // processes)
            on = " uvloop" if loop == "uvloop" and lib in ASYNC_OWN else ""
            bench.rows.append(
                Row(
                    f"{label} {each} x {processes} proc.{on}",
                    seen["requests"],
                    seen["in_flight"],
                    seen["wall"],
                    cpu + seen["cpu"],
                    seen["judge_cpu"],
                    n * n_metrics,
                    failed,
                    note=note,
                    load=seen["load"],
                )
            )
    finally:
        pool.stop()
        forget_requests(judge)


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
    ap.add_argument(
        "--library-processes",
        type=int,
        default=0,
        help="processes of each library's own loop (0: as many as the service's worker processes)",
    )
    ap.add_argument(
        "--libraries",
        default="ragas,deepeval,opik,ragchecker",
        help="the libraries compared one by one (comma-separated)",
    )
    ap.add_argument(
        "--judge-repeats",
        type=int,
        default=1,
        help="the service's jobs ask every judge metric this many times per output (repeats=k)",
    )
    ap.add_argument(
        "--library-loop",
        choices=("asyncio", "uvloop"),
        default="asyncio",
        help="the event loop of Ragas' and Opik's own loops (the service's scoring loop runs on uvloop)",
    )
    ap.add_argument(
        "--background-load",
        action="store_true",
        help="one extra CPU-bound process (a busy loop) runs during every timed run",
    )
    args = ap.parse_args()
    if args.batch_size:
        BATCH.append(args.batch_size)
    if args.judge_repeats > 1:
        REPEATS.append(args.judge_repeats)
    LIBRARIES.extend(x for x in args.libraries.split(",") if x)
    counts = [int(x) for x in str(args.processes).split(",") if x.strip()]

    items = demo_items(args.samples)
    tmp = Path(tempfile.mkdtemp(prefix="bench-judges-"))
    warm = warm_up()
    fake = JudgeProcess(args.latency, args.constant_answers)
    spinner = background_load() if args.background_load else None
    bench = Bench(args.latency, args.concurrency)
    words = sum(len(it.answer.split()) for it in items) / len(items)
    ctx_words = sum(len(c.split()) for it in items for c in it.contexts) / (
        len(items) * len(items[0].contexts)
    )
    load = loadavg()
    print(
        f"{len(items)} samples (data/demo, French text, dataset language 'en'): answers ~{words:.0f} words, "
        f"{len(items[0].contexts)} contexts of ~{ctx_words:.0f} words each"
    )
    print(
        f"loopback judge: {args.latency * 1000:.0f} ms per request, concurrency {args.concurrency}, "
        f"{'constant' if args.constant_answers else 'request-specific'} answers; {os.cpu_count()} CPUs, load "
        f"average {load} at start; imports and model loads before timing: {warm:.1f} s; background load: "
        f"{'one busy process' if spinner else 'none'}"
    )
    print(
        "ideal = requests x latency / concurrency; efficiency = ideal / wall; cpu = CPU time of every "
        "process of the path (service: this process, the API's role with the gateway, + the worker "
        "processes; library: its own processes), never the test judge's (its own process, column judge); "
        "cpu/req = cpu / requests; load = 1-minute load average at the end of the run"
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
            library_paths(
                bench,
                fake,
                items,
                tmp,
                args.ragchecker_timeout,
                args.library_processes or max(1, counts[0]),
                args.library_loop,
            )
        if args.memory_jobs:
            print(f"memory: {args.memory_jobs} jobs of {args.memory_samples} samples x every judge metric")
            rss = memory_path(
                bench, fake, items[: args.memory_samples], tmp / "memory", counts[0], args.memory_jobs
            )
    finally:
        if spinner is not None:
            spinner.kill()
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
                f"{bench.ideal(row.requests) / row.wall:.2f}); load average at its end {first['load']}"
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
                f"{info['failed']}/{info['total']} failed; load average at its end {seen['load']}"
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
        subs = {r.path.split(" ", 1)[0] + r.path[-3:]: r for r in bench.rows if r.sub}
        print("per library, CPU per judge request, service / the library's own loop:")
        for r in libs:
            lib = r.path.split(" ", 1)[0]
            for cache in ("off", " on"):
                mine = subs.get(lib + cache)
                if mine is not None and r.requests and mine.requests:
                    mine_ms, own_ms = _per_request(mine) * 1000, _per_request(r) * 1000
                    line = (
                        f"  {lib:<11} gateway cache {cache.strip():<3}: {mine_ms:5.1f} ms vs "
                        f"{own_ms:5.1f} ms = {mine_ms / own_ms:.2f} x; requests {mine.requests} vs "
                        f"{r.requests}; wall {mine.wall:.1f} vs {r.wall:.1f} s; load {mine.load} / {r.load}"
                    )
                    if mine.asked and mine.asked != mine.requests:
                        # The cache answered some of the library's calls: per call the library made (the
                        # same work as its own loop's, which sends every call) the CPU compares like for like.
                        per_call = mine.cpu / mine.asked * 1000
                        line += f"\n  {'':<11} per call the library made ({mine.asked}): "
                        line += f"{per_call:5.1f} ms = {per_call / own_ms:.2f} x"
                    print(line)
    print(f"cpu per judge request, whole service job: {_per_request(service) * 1000:.1f} ms")
    if rss:
        print(
            "memory (this process + worker processes) after each job, MB: "
            + ", ".join(f"{x:.0f}" for x in rss)
            + f"; last / first = {rss[-1] / rss[0]:.3f}"
        )


def _per_request(row: Row) -> float:
    return row.cpu / row.requests if row.requests else float("nan")


if __name__ == "__main__":
    main()
