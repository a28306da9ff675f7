"""RAGChecker (ragchecker 0.1.9 on refchecker 0.2.17): eleven claim-level metrics from one pass of the judge.

What one sample costs. RAGChecker extracts KG-triplet claims from the answer and from the reference (one
extraction call each), then checks them jointly (up to 5 claims per prompt) in four directions: answer
claims against the reference (``answer2response``: precision), reference claims against the answer
(``response2answer``: recall), reference claims against each context (``retrieved2answer``: claim recall,
context precision) and answer claims against each context (``retrieved2response``: faithfulness). With 2
claims and 3 contexts that is 2 + 1 + 1 + 3 + 3 = 10 calls (docs/judges.md, RAGChecker). The metrics are numpy
formulas over those verdicts (``ragchecker.computation``), never recomputed here.

One pass, reused by every metric. Each sample's ``RAGResults`` is RAGChecker's own checkpoint JSON, kept
under ``settings.data_dir / "ragchecker" / <judge key> / o<output>-k<k>-<content hash>.json``; the judge key
covers model, endpoint, prompt language, prompt templates and library versions, the content hash covers
question, answer, reference and contexts (an updated output is a new file). The RAGChecker metrics of a
batch are scored together: the first of them to reach a sample (under a lock per checkpoint) calls
``RAGChecker.evaluate(results, <every RAGChecker metric of the batch>, save_path=checkpoint)``, and the others
find every verdict in the checkpoint (``RAGResults.from_json`` reload makes 0 calls). So each verdict is asked
once (all 11 metrics: 10 calls per sample above, exactly what one ``evaluate(all_metrics)`` makes), and
asking for one metric alone pays only for that metric's verdicts (faithfulness alone: 4 calls instead of
10). A sample that failed half-way resumes from its checkpoint; a job with ``refresh_judge_cache`` starts
each checkpoint afresh (once per batch) and overwrites it. The calls of that pass are accounted to the
group ("ragchecker" in the job's ``judge_usage``; every RAGChecker score of the sample shows them in
``details["judge_calls"]``).
No infinite retry. refchecker's own client (``refchecker.utils.get_model_batch_response``) loops forever on
any openai ``APIError`` (``while True`` + ``sleep 10``). It is never used: ``custom_llm_api_func`` is our
batch function, which sends the prompts to the judge gateway (openai SDK, ``max_retries=0``: the gateway
retries) with bounded concurrency and raises on the first failure, which fails that sample only.

One library call per sample, not per batch. ``RAGChecker.evaluate`` accepts many samples, but its prompts
are per sample anyway, and a batch call fails as a whole on one bad judge call (the library has no per-item
error) and waits for the slowest request of each batch (docs/judges.md, each library's own batch path: 0.30
efficiency). So each
sample is evaluated on its own, in the process's RAGChecker threads, which gives per-sample gateway scopes
(tokens and latency per score), per-sample errors and no batch barrier; the values are the same.

Values are RAGChecker's percentages (0-100): its per-sample fraction times 100, not rounded (the library
rounds only its batch means to 0.1).

Never a number from a failure. RAGChecker reads an extractor answer without any triplet as zero claims,
which every metric turns into 0, and pads a checker answer with fewer labels than claims with Neutral (it
drops extra ones). Here an extractor answer without a triplet, and a checker answer whose label count is not
its claim count, fail the sample (``malformed_judge_output``, with the judge's text), as does a checkpoint
holding zero claims. Context utilization with no reference claim entailed by any context is 0 of 0, which
RAGChecker scores 0: it is stored undefined with that reason. An empty answer or reference is undefined too
(no claim to extract).

Prompts. For French datasets (or ``judge.language`` fr) the triplet extraction prompt
(``LLM_TRIPLET_EXTRACTION_PROMPT_Q``) and the joint checking prompt (``JOINT_CHECKING_PROMPT_Q``), the only
two this configuration uses, run in French (``prompts/ragchecker/fr/*.txt``); the ``###`` section headers and
the labels Entailment / Neutral / Contradiction stay English because refchecker parses them. refchecker reads
these prompts from module globals at call time, so the language is process-wide state: evaluations in one
language share it and one in another language waits until they end (``_PromptSwitch``). Other languages keep
the English prompts (and record "en"). The LLM path needs no spaCy model: triplet extraction builds no
``RCText`` and ``max_reference_segment_length=0`` never calls ``refchecker.utils.split_text`` (verified with
``spacy.load`` made to fail)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import threading
import weakref
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.judge.gateway import SCOPE_HEADER, repeat_scope
from services.metrics.base import Sample, SampleScore, in_thread, package_version
from services.metrics.context import ScoringContext
from services.metrics.judges import prompts
from services.metrics.judges.base import JudgeAdapter
from services.offline import apply_offline_env

JOINT_CHECK_NUM = 5
EXTRACTOR_MAX_NEW_TOKENS = 1000
# Bump when the way prompts are built changes (their texts are digested separately): part of the checkpoint
# key and of the score configuration.
PROMPT_VERSION = 1
SCALE = "0-100 (percent; RAGChecker's per-sample fraction x 100, unrounded)"
# What refchecker's extractor and joint checker send (docs/judges.md, RAGChecker): requests look the same.
EXTRACT_TEMPERATURE = 1e-5
CHECK_TEMPERATURE = 0.0
CHECK_MAX_TOKENS = JOINT_CHECK_NUM * 10 + 100
_LABEL = re.compile(r"\b(Entailment|Neutral|Contradiction)\b", re.IGNORECASE)

# (module, global, template file) -> text, per language; English is whatever refchecker ships. The
# translations are prompts/ragchecker/<language>/<template>.txt.
_PROMPT_GLOBALS = (
    ("refchecker.extractor.llm_extractor", "LLM_TRIPLET_EXTRACTION_PROMPT_Q", "triplet_extraction"),
    ("refchecker.checker.llm_checker", "JOINT_CHECKING_PROMPT_Q", "joint_checking"),
)


def translations(language: str) -> tuple[str, ...] | None:
    """The translated prompts of ``language``, in ``_PROMPT_GLOBALS`` order; None when there are none."""
    found = prompts.templates("ragchecker", language)
    if not all(name in found for _, _, name in _PROMPT_GLOBALS):
        return None
    return tuple(found[name] for _, _, name in _PROMPT_GLOBALS)


def prompt_digest(language: str) -> str | None:
    """A digest of the translated prompts (part of the checkpoint key and of the score configuration)."""
    texts = translations(language)
    return _digest(list(texts)) if texts is not None else None


class _PromptSwitch:
    """refchecker formats its prompts from module globals at call time: the prompt language is process-wide.

    ``use(language)`` installs that language's prompts for as long as any evaluation in it runs; an evaluation
    in another language waits until they have all ended, then the English originals are put back.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._language: str | None = None
        self._users = 0
        self._english: tuple[str, ...] | None = None

    @contextlib.contextmanager
    def use(self, language: str) -> Iterator[None]:
        with self._cond:
            while self._users and self._language != language:
                self._cond.wait()
            if not self._users:
                self._install(language)
                self._language = language
            self._users += 1
        try:
            yield
        finally:
            with self._cond:
                self._users -= 1
                if not self._users:
                    self._install("en")
                    self._language = None
                    self._cond.notify_all()

    def _install(self, language: str) -> None:
        import importlib

        modules = [importlib.import_module(m) for m, _, _ in _PROMPT_GLOBALS]
        if self._english is None:
            self._english = tuple(
                getattr(mod, name) for mod, (_, name, _) in zip(modules, _PROMPT_GLOBALS, strict=True)
            )
        texts = translations(language) or self._english
        for mod, (_, name, _), text in zip(modules, _PROMPT_GLOBALS, texts, strict=True):
            setattr(mod, name, text)


PROMPTS = _PromptSwitch()

_setup_lock = threading.Lock()
_ready = False


class _PathLock:
    """A lock per checkpoint file, kept while a thread uses it (a bare Lock cannot be weakly referenced)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()


_path_locks: weakref.WeakValueDictionary[str, _PathLock] = weakref.WeakValueDictionary()


def _library() -> None:
    """Import RAGChecker once (it imports litellm: seconds), offline, with its per-call logging muted."""
    global _ready
    with _setup_lock:
        if _ready:
            return
        apply_offline_env()  # before litellm is imported: it would fetch its cost map
        import functools

        import ragchecker  # noqa: F401
        import refchecker.checker.llm_checker as checker
        import refchecker.extractor.llm_extractor as extractor
        from loguru import logger
        from tqdm import tqdm

        # One INFO line and one progress bar per step per sample would flood the worker's log.
        logger.disable("ragchecker")
        for module in (checker, extractor):
            module.tqdm = functools.partial(tqdm, disable=True)
        _ready = True


def _path_lock(path: Path) -> _PathLock:
    # Two jobs scoring the same output at once: the second waits, then finds the first one's verdicts.
    with _setup_lock:
        return _path_locks.setdefault(str(path), _PathLock())


class JudgeCallError(ValueError):
    """A judge answer refchecker would silently misread (no text, no label); ``classify`` says malformed."""


@dataclass
class _Run:
    """What one scoring call shares between its samples: the judge client (the batch's keep-alive pool to
    the gateway) and the event loop it runs on, the thread pool refchecker runs in, and the samples' cancel
    flags."""

    client: Any  # openai.AsyncOpenAI
    loop: asyncio.AbstractEventLoop
    samples: ThreadPoolExecutor
    own_pools: bool
    cancels: list[threading.Event] = field(default_factory=list)


class _BatchCaller:
    """refchecker's ``custom_llm_api_func``: a batch of prompts -> one answer each, or an exception.

    refchecker calls it from a thread; the prompts of a batch go out in parallel as tasks of the scoring
    loop, on the batch's HTTP pool to the gateway (its connections bound the calls in flight): no thread and
    no blocking client per call. The first failure cancels the calls still running and is raised, so
    RAGChecker stops at once instead of retrying (its own client loops forever on API errors).
    """

    def __init__(
        self,
        client: Any,
        model: str,
        loop: asyncio.AbstractEventLoop,
        cancelled: threading.Event,
        max_tokens: int,
        temperature: float,
        labels: bool,
        scope: str,
    ) -> None:
        self.client, self.model, self.loop, self.cancelled = client, model, loop, cancelled
        self.max_tokens, self.temperature, self.labels = max_tokens, temperature, labels
        self.headers = {SCOPE_HEADER: scope}

    def __call__(self, batch: list[str]) -> list[str]:
        futures: list[Future[str]] = [
            asyncio.run_coroutine_threadsafe(self._one(p), self.loop) for p in batch
        ]
        pending: set[Future[str]] = set(futures)
        while pending:
            done, pending = wait(pending, timeout=1.0, return_when=FIRST_EXCEPTION)
            if any(not f.cancelled() and f.exception() is not None for f in done):
                break
            # Abandoned, or the loop is gone (shutting down): this thread must not wait for ever.
            if pending and (self.cancelled.is_set() or self.loop.is_closed() or not self.loop.is_running()):
                break
        for f in pending:
            f.cancel()
        for f in futures:
            exc = f.exception() if f.done() and not f.cancelled() else None
            if exc is not None:
                raise exc
        if pending:
            raise TimeoutError("the sample was abandoned (timeout or end of the batch)")
        return [f.result() for f in futures]

    async def _one(self, prompt: str) -> str:
        import openai

        if self.cancelled.is_set():
            raise TimeoutError("the sample was abandoned (timeout or end of the batch)")
        try:
            resp = await self.client.chat.completions.create(
                model=self.model,
                messages=[{"role": "user", "content": prompt}],
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                n=1,
                extra_headers=self.headers,
            )
        except openai.APITimeoutError as exc:
            raise TimeoutError(f"no answer from the judge gateway: {exc}") from exc
        content = resp.choices[0].message.content if resp.choices else None
        if not content:
            raise JudgeCallError("the judge returned no text")
        if self.labels:
            # refchecker pads missing labels with Neutral and drops extra ones: a judge that answers fewer
            # (or more) labels than claims would be counted as verdicts it never gave.
            claims, labels = _claims_in(prompt), len(_LABEL.findall(content))
            if labels != claims:
                raise JudgeCallError(
                    f"{labels} Entailment/Neutral/Contradiction label(s) for {claims} claim(s) in the "
                    f"checker's answer {content[:200]!r}"
                )
        elif not _triplets(content):
            # refchecker reads an answer without any ("subject", "predicate", "object") line as zero
            # claims, which its metrics turn into 0.
            raise JudgeCallError(f"no claim triplet in the extractor's answer {content[:200]!r}")
        return str(content)


def _claims_in(prompt: str) -> int:
    """How many claims a joint checking prompt lists: one triplet per line after its "### Claims:"."""
    block = prompt.rsplit("### Claims:", 1)[-1].lstrip("\n").split("\n\n", 1)[0]
    return sum(1 for line in block.splitlines() if line.strip())


def _triplets(text: str) -> list[Any]:
    """The claims refchecker's own parser reads in an extractor answer."""
    from refchecker.extractor.extractor_base import ExtractorBase

    return list(ExtractorBase("triplet").parse_claims(text, "###"))


class Adapter(JudgeAdapter):
    """All eleven ``ragchecker.*`` metrics; ``options["metric"]`` names the one this instance reports."""

    library = "ragchecker"
    translates_prompts = True

    @property
    def metric(self) -> str:
        return str(self.options["metric"])

    def ledger_metric(self) -> str:
        # One judge pass serves every RAGChecker metric of a sample: its calls are the group's.
        return "ragchecker"

    def translates(self, ctx: ScoringContext) -> bool:
        return translations(ctx.judge_language.split("-")[0].lower()) is not None

    def config(self, ctx: ScoringContext) -> dict[str, Any]:
        return {
            **super().config(ctx),
            "ragchecker": {
                "joint_check_num": JOINT_CHECK_NUM,
                "extractor_max_new_tokens": EXTRACTOR_MAX_NEW_TOKENS,
                "prompt_version": PROMPT_VERSION,
                "prompt_templates": prompt_digest(self.prompt_language(ctx)),
                "refchecker_version": package_version("refchecker"),
            },
        }

    def sample_timeout_s(self, ctx: ScoringContext) -> float:
        # A safety net only (the gateway bounds every call): every call of a sample one after the other,
        # 4 + 2 per context with up to 5 claims, each with all its retries and back-offs.
        judge = ctx.settings.judge
        retries = max(0, judge.retries)
        backoff = sum(min(20.0, 0.5 * 2.0**i) * 1.5 for i in range(retries))
        per_call = judge.timeout_s * (2 * retries + 1) + backoff
        return per_call * (4 + 2 * max(1, ctx.k))

    def checkpoint(self, sample: Sample, ctx: ScoringContext) -> Path:
        """Where this sample's RAGChecker checkpoint lives (see the module docstring)."""
        language = self.prompt_language(ctx)
        judge = {
            "model": self.model_name(ctx),
            "endpoint": ctx.settings.judge.host,
            "prompts": language,
            "prompt_version": PROMPT_VERSION,
            "prompt_templates": prompt_digest(language),
            "joint_check_num": JOINT_CHECK_NUM,
            "extractor_max_new_tokens": EXTRACTOR_MAX_NEW_TOKENS,
            "ragchecker": package_version("ragchecker"),
            "refchecker": package_version("refchecker"),
        }
        content = [sample.question, sample.answer, sample.reference_answer, list(sample.contexts)]
        # Each repeat keeps its own verdicts: one repeat's checkpoint would answer the next without a call.
        name = repeat_scope(f"o{sample.output_id}" if sample.output_id >= 0 else "inline", sample.repeat)
        root = ctx.settings.data_dir / "ragchecker" / _digest(judge)
        return root / f"{name}-k{sample.k}-{_digest(content)}.json"

    def companions(self, ctx: ScoringContext) -> list[str]:
        """The RAGChecker metrics scored with this one in the batch: the first of them to reach a sample
        computes the verdicts all of them need, in one pass."""
        group = sorted(
            {n.split(".", 1)[1] for n in ctx.batch_metrics if n.startswith("ragchecker.")} | {self.metric}
        )
        return group

    def admission(self, sample: Sample, ctx: ScoringContext) -> contextlib.AbstractAsyncContextManager[Any]:
        # One metric at a time per checkpoint: the first computes every companion's verdicts, the others
        # then read them (without holding a slot while they wait).
        return self.session(ctx).lock(str(self.checkpoint(sample, ctx)))

    async def prepare(self, samples: Sequence[Sample], ctx: ScoringContext) -> _Run:
        import openai

        await in_thread(_library)
        workers = 2 * max(1, ctx.settings.judge.max_concurrency)
        own = ctx.resources is None
        if own:
            sample_pool = ThreadPoolExecutor(workers, thread_name_prefix="ragchecker-sample")
        else:
            assert ctx.resources is not None
            sample_pool = ctx.resources.threads("ragchecker-sample", workers)
        return _Run(
            # On the batch's keep-alive pool to the gateway (not closed here: it belongs to the session).
            client=openai.AsyncOpenAI(
                base_url=self.base_url(ctx),
                api_key="ragmeta-gateway",  # the gateway holds the real key
                max_retries=0,
                timeout=self.sample_timeout_s(ctx),
                http_client=self.session(ctx).http,
            ),
            loop=asyncio.get_running_loop(),
            samples=sample_pool,
            own_pools=own,
        )

    async def release(self, shared: Any) -> None:
        run: _Run = shared
        for cancel in run.cancels:  # a sample abandoned on timeout stops before its next call
            cancel.set()
        if run.own_pools:
            run.samples.shutdown(wait=False, cancel_futures=True)

    async def score_one(self, sample: Sample, ctx: ScoringContext, shared: Any) -> SampleScore:
        run: _Run = shared
        blank = [
            n
            for n, t in (("answer", sample.answer), ("reference answer", sample.reference_answer))
            if not (t or "").strip()
        ]
        if blank:
            return SampleScore(reason=f"empty {' and '.join(blank)} (RAGChecker extracts no claim from it)")
        session = self.session(ctx)
        path = self.checkpoint(sample, ctx)
        cancelled = threading.Event()
        run.cancels.append(cancelled)
        loop = asyncio.get_running_loop()
        # A refreshed job asks the judge again, once per checkpoint (then reads what it wrote).
        fresh = session.refresh and str(path) not in session.refreshed
        try:
            result, status, basis = await loop.run_in_executor(
                run.samples, self._evaluate, run, sample, ctx, path, fresh, self.scope(sample), cancelled
            )
        except BaseException:
            cancelled.set()
            raise
        if fresh:
            session.refreshed.add(str(path))
        details = _details(result, status)
        # Checkpoints written before the extraction check may hold zero claims: never scored.
        for side, claims in (("answer", result.response_claims), ("reference", result.gt_answer_claims)):
            if claims is not None and not claims:
                raise JudgeCallError(f"the extractor found no claim in the {side} (RAGChecker would score 0)")
        if self.metric == "context_utilization" and _none_retrieved(result):
            # RAGChecker scores 0 when no reference claim is found in any context: 0 of 0 used.
            return SampleScore(reason=UNDEFINED_UTILIZATION, details=details, memo_basis=basis)
        value = float(result.metrics[self.metric]) * 100
        return SampleScore(value=value, details=details, memo_basis=basis)

    def _evaluate(
        self,
        run: _Run,
        sample: Sample,
        ctx: ScoringContext,
        path: Path,
        fresh: bool,
        scope: str,
        cancelled: threading.Event,
    ) -> tuple[Any, str, str | None]:
        """RAGChecker on one sample, resumed from its checkpoint (unless ``fresh``): its RAGResult and the
        checkpoint status. Computes the verdicts of every companion metric, so they find them there."""
        from ragchecker import RAGChecker, RAGResults
        from ragchecker.metrics import METRIC_REQUIREMENTS

        metrics = self.companions(ctx)
        needed = {r for m in metrics for r in METRIC_REQUIREMENTS[m]}
        mine = METRIC_REQUIREMENTS[self.metric]
        model = self.model_name(ctx)
        held = _path_lock(path)
        done = self.session(ctx).results
        with held.lock:
            # A companion of this batch evaluated this checkpoint already (every companion's verdicts and
            # metrics, just written): what reading the file back would give, without parsing it again.
            known = None if fresh else done.get(str(path))
            if known is not None and self.metric in known[0].metrics:
                return known[0], "hit", known[1]
            results = None if fresh else _load(path)
            if results is None:
                results = RAGResults.from_dict({"results": [_rag_result(sample)]})
            have = [r for r in mine if getattr(results.results[0], r) is not None]
            status = "hit" if len(have) == len(mine) else "resumed" if have else "miss"
            if fresh:
                status = "refreshed"
            complete = all(getattr(results.results[0], r) is not None for r in needed)
            extract = _BatchCaller(
                run.client,
                model,
                run.loop,
                cancelled,
                EXTRACTOR_MAX_NEW_TOKENS,
                EXTRACT_TEMPERATURE,
                labels=False,
                scope=scope,
            )
            check = _BatchCaller(
                run.client,
                model,
                run.loop,
                cancelled,
                CHECK_MAX_TOKENS,
                CHECK_TEMPERATURE,
                labels=True,
                scope=scope,
            )
            evaluator = RAGChecker(
                extractor_name=f"openai/{model}",
                checker_name=f"openai/{model}",
                extractor_max_new_tokens=EXTRACTOR_MAX_NEW_TOKENS,
                joint_check=True,
                joint_check_num=JOINT_CHECK_NUM,
                custom_llm_api_func=check,
            )
            # RAGChecker hands one custom function to both its extractor and its checker; they need different
            # token limits and temperatures, and only checker answers must carry labels.
            library_extract = evaluator.extractor.extract
            evaluator.extractor.extract = lambda *a, **kw: library_extract(
                *a, **{**kw, "custom_llm_api_func": extract}
            )
            if complete:
                evaluator.evaluate(results, metrics)  # every verdict is there: 0 calls, nothing to save
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                with PROMPTS.use(self.prompt_language(ctx)):
                    evaluator.evaluate(results, metrics, save_path=str(path))
            # The checkpoint the verdicts were read from or written to (still under its lock).
            basis = _file_digest(path)
            done[str(path)] = (results.results[0], basis)
        return results.results[0], status, basis

    def memo_basis(self, sample: Sample, ctx: ScoringContext) -> str | None:
        """RAGChecker's scores are computed from the sample's checkpoint: its digest (None without one)."""
        return _file_digest(self.checkpoint(sample, ctx))


UNDEFINED_UTILIZATION = (
    "no reference claim is entailed by any retrieved context, so none could be used "
    "(RAGChecker scores 0 of 0 as 0)"
)


def _none_retrieved(result: Any) -> bool:
    rows = result.retrieved2answer or []
    return not any(label == "Entailment" for row in rows for label in row)


def _file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:32]
    except OSError:
        return None


def _digest(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _rag_result(sample: Sample) -> dict[str, Any]:
    return {
        "query_id": str(sample.output_id),
        "query": sample.question,
        "gt_answer": sample.reference_answer or "",
        "response": sample.answer or "",
        "retrieved_context": [{"doc_id": f"c{i + 1}", "text": t} for i, t in enumerate(sample.contexts)],
    }


def _load(path: Path) -> Any:
    """The checkpoint, or None when absent or unreadable (a crash while RAGChecker was writing it)."""
    from ragchecker import RAGResults

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        results = RAGResults.from_json(text)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return results if len(results.results) == 1 else None


def _claim(c: Sequence[str]) -> str:
    return "(" + ", ".join(f'"{x}"' for x in c) + ")"


def _labels(rows: Any, i: int) -> str:
    if rows is None or i >= len(rows):
        return "-"
    row = rows[i]
    return " ".join(x[0] for x in row) if isinstance(row, list) else str(row)


def _details(result: Any, status: str) -> dict[str, Any]:
    """The verdicts behind the score, as the library stored them (the checkpoint has them in full)."""
    answer_claims = result.response_claims or []
    reference_claims = result.gt_answer_claims or []
    lines = []
    if result.response_claims is not None:
        lines.append("answer claims: vs reference | vs contexts")
        lines += [
            f"{_claim(c)}: {_labels(result.answer2response, i)} | {_labels(result.retrieved2response, i)}"
            for i, c in enumerate(answer_claims)
        ]
    if result.gt_answer_claims is not None:
        lines.append("reference claims: vs answer | vs contexts")
        lines += [
            f"{_claim(c)}: {_labels(result.response2answer, i)} | {_labels(result.retrieved2answer, i)}"
            for i, c in enumerate(reference_claims)
        ]
    return {
        "scale": SCALE,
        "checkpoint": status,
        "answer_claims": None if result.response_claims is None else len(answer_claims),
        "reference_claims": None if result.gt_answer_claims is None else len(reference_claims),
        "contexts": len(result.retrieved_context or []),
        "explanation": "\n".join(lines)[:1000],
    }
