"""Ragas 0.4.3 metrics, computed by Ragas' modern "collections" metrics (``ragas.metrics.collections``).

One ``AsyncOpenAI`` client per scoring call, on the batch's keep-alive pool to the judge gateway (each
request's scope in a header), wrapped by ``ragas.llms.llm_factory`` (instructor JSON mode), one metric object,
and the metric's own ``ascore`` per sample:

    ragas.faithfulness                  Faithfulness                    2 judge calls
    ragas.answer_relevancy              AnswerRelevancy(strictness=3)   3 judge calls + local embeddings
    ragas.factual_correctness:f1        FactualCorrectness(mode="f1")   4 judge calls (recall 4, precision 2)
    ragas.context_precision             ContextPrecisionWithReference   1 judge call per context
    ragas.context_recall                ContextRecall                   1 judge call

Language: for a non-English dataset (or ``judge.language``) every prompt of every metric is adapted with
Ragas' own ``BasePrompt.adapt(language, llm, adapt_instruction=True)``: instructions and few-shot examples are
translated once by the judge (through the gateway) and kept under ``<data_dir>/prompts/ragas/<language>/<judge
model>/`` (a job with ``refresh_judge_cache`` translates them again). Language codes map to the names Ragas
expects in ``prompts/languages.json``. No metric keeps English instructions or examples; what stays
English is Ragas' fixed JSON-format sentence ("Please return the output in a JSON format...") and instructor's
system message carrying the output schema. If the translation fails, the scores fail (set
``RAGMETA_JUDGE__LANGUAGE=en`` to score with the English prompts instead). A score's memo key
(services/metrics/memo.py) rests on the translated files of the prompts its own metric uses, never on the
other files of the folder: another metric translating its prompts (in the same batch or later) leaves it
alone.

Ragas returns no explanation with these metrics; ``details["explanation"]`` lists the judge's verdicts and
reasons as Ragas parsed them. Answer relevancy uses the local sentence-transformers model
(``embeddings.model``, else the all-MiniLM-L6-v2 copy shipped with ragmeta).
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import hashlib
import json
import math
import os
import re
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.metrics.base import Sample, SampleScore, in_thread
from services.metrics.context import ScoringContext
from services.metrics.judges import prompts
from services.metrics.judges.base import JudgeAdapter, PrepareFailed, classify
from services.offline import apply_offline_env

# The parsed outputs of the judge calls made for one sample (its explanation and checks), per task.
_OUTPUTS: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("ragas_outputs", default=None)

_SCALES = {
    "faithfulness": "0-1: share of the answer's statements the judge found supported by the contexts",
    "answer_relevancy": (
        "mean cosine similarity (-1..1, in practice 0-1) between the question and questions generated "
        "from the answer; 0 when the judge calls every generated question noncommittal"
    ),
    "factual_correctness": "0-1, rounded to 2 decimals by Ragas: claim-level {mode} of answer vs reference",
    "context_precision": "0-1: rank-weighted average precision of the contexts judged useful",
    "context_recall": "0-1: share of the reference's statements the judge attributed to the contexts",
}

_NAN_REASONS = {
    "faithfulness": "the judge extracted no statement from the answer (Ragas returns NaN)",
    "context_recall": "the judge classified no statement of the reference (Ragas returns NaN)",
}

_files_lock = threading.Lock()
_templates_lock = threading.Lock()
# {metric options: {prompt attribute: (English prompt, its translated file's name)}}
_templates: dict[str, dict[str, tuple[Any, str]]] = {}
_userid_lock = threading.Lock()
_userid_ready = False


def _quiet_userid() -> None:
    """Ragas reads its telemetry user id with ``json.load(open(...))`` (the file is never closed) every time
    it builds a usage event, even with tracking off; the result is cached, so reading it once here with the
    ResourceWarning silenced keeps that warning out of the scoring itself."""
    global _userid_ready
    with _userid_lock:
        if _userid_ready:
            return
        from ragas._analytics import get_userid

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            get_userid()
        _userid_ready = True


def import_library() -> None:
    """Import what scoring with Ragas imports (the collections metrics, instructor, the openai SDK)."""
    apply_offline_env()
    import openai  # noqa: F401
    from ragas.llms import llm_factory  # noqa: F401
    from ragas.metrics import collections  # noqa: F401

    _quiet_userid()


def _load_embeddings(path: str) -> Any:
    apply_offline_env()
    from ragas.embeddings import HuggingFaceEmbeddings

    if not os.path.isdir(path):
        raise FileNotFoundError(f"embedding model directory not found: {path}")
    return HuggingFaceEmbeddings(model=path, device="cpu", local_files_only=True)


_schema_lock = threading.Lock()
_schema_cached: set[type] = set()


def _cache_json_schema(model: type) -> None:
    """Make ``model.model_json_schema()`` build its schema once per process for each set of arguments.

    Every Ragas judge call generates its output model's JSON schema twice (Ragas' prompt text and
    instructor's JSON-mode system message): about a millisecond of pydantic work each, for a schema that
    cannot change (the output models are fixed classes). Callers get a copy, as from pydantic.

    instructor wraps the output model in a new subclass on every call (``response_schema``: the model and
    its ``ResponseSchema`` as bases, no field of its own). Such a subclass's schema is made of the same
    fields, so it is kept under what it is made of (its other bases, name and docstring), never under the
    class itself: a key per class kept every wrapper class of every call alive (a worker grew by ~3 MB per
    judge job of 24 samples). A subclass that declares fields or configuration of its own is not cached."""
    with _schema_lock:
        if model in _schema_cached or not hasattr(model, "model_json_schema"):
            return
        generate = model.model_json_schema.__func__
        built: dict[tuple[Any, ...], dict[str, Any]] = {}

        def cached(cls: type, *args: Any, **kwargs: Any) -> dict[str, Any]:
            shape = _wrapper_shape(cls, model)
            if shape is None:
                return generate(cls, *args, **kwargs)  # type: ignore[no-any-return]
            key = (shape, args, tuple(sorted(kwargs.items())))
            schema = built.get(key)
            if schema is None:
                schema = built[key] = generate(cls, *args, **kwargs)
            return copy.deepcopy(schema)

        type.__setattr__(model, "model_json_schema", classmethod(cached))
        _schema_cached.add(model)


def _wrapper_shape(cls: Any, model: Any) -> tuple[Any, ...] | None:
    """What the schema of ``cls`` is made of, for the model itself or a subclass of it that adds nothing
    but other bases (no annotation, field or configuration of its own); None for any other subclass."""
    if cls is model:
        return ()
    # functools.wraps (as instructor uses it) copies the model's annotations onto the wrapper: those are not
    # fields of its own.
    annotations = vars(cls).get("__annotations__")
    if annotations and annotations != vars(model).get("__annotations__"):
        return None
    if cls.model_fields.keys() != model.model_fields.keys():
        return None
    inherited: dict[str, Any] = {}
    for base in cls.__bases__:  # pydantic merges its bases' configurations in this order
        inherited.update(getattr(base, "model_config", None) or {})
    if cls.model_config != inherited:  # a configuration of its own
        return None
    return (tuple(b for b in cls.__bases__ if b is not model), cls.__name__, cls.__doc__)


def _language_name(code: str) -> str:
    """The name Ragas' prompt adaptation expects for a language code (prompts/languages.json)."""
    return prompts.language_name(code)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "_"


def _examples_dump(examples: Any) -> list[list[dict[str, Any]]]:
    return [[i.model_dump(mode="json"), o.model_dump(mode="json")] for i, o in examples]


def _prompt_dump(prompt: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "language": prompt.language,
        "instruction": prompt.instruction,
        "examples": _examples_dump(prompt.examples),
    }
    # FactualCorrectness' claim decomposition keeps one example set per (atomicity, coverage).
    all_examples = getattr(prompt, "_all_examples", None)
    if isinstance(all_examples, dict):
        data["all_examples"] = [[list(k), _examples_dump(v)] for k, v in all_examples.items()]
    return data


def _prompt_load(template: Any, data: dict[str, Any]) -> Any:
    prompt = copy.deepcopy(template)

    def examples(rows: list[list[dict[str, Any]]]) -> list[tuple[Any, Any]]:
        return [
            (prompt.input_model.model_validate(i), prompt.output_model.model_validate(o)) for i, o in rows
        ]

    prompt.language = data["language"]
    prompt.instruction = data["instruction"]
    prompt.examples = examples(data["examples"])
    if "all_examples" in data:
        prompt._all_examples = {tuple(k): examples(v) for k, v in data["all_examples"]}
    return prompt


def _stand_ins() -> tuple[Any, Any]:
    """A judge and embeddings that pass the collections metrics' checks, for building a metric only to
    read its prompt templates: neither is ever called."""
    from ragas.embeddings.base import BaseRagasEmbedding
    from ragas.llms.base import InstructorBaseRagasLLM

    def unused(*_: Any, **__: Any) -> Any:
        raise RuntimeError("a metric built to read its prompts is never scored")

    async def aunused(*_: Any, **__: Any) -> Any:
        unused()

    class NoJudge(InstructorBaseRagasLLM):
        generate = unused
        agenerate = aunused

    class NoEmbeddings(BaseRagasEmbedding):
        embed_text = unused
        aembed_text = aunused

    return NoJudge(), NoEmbeddings()


def _files_digest(files: dict[str, bytes]) -> str:
    """The memo basis of translated prompts: a digest of their files' names and contents."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name] + b"\0")
    return digest.hexdigest()[:32]


def _explain(outputs: list[Any]) -> str:
    """The judge's verdicts and reasons, one line each, from the structured outputs Ragas parsed."""
    lines: list[str] = []
    for out in outputs:
        data = out.model_dump() if hasattr(out, "model_dump") else {}
        items = data.get("statements") or data.get("classifications")
        if isinstance(items, list) and items and isinstance(items[0], dict):
            for it in items:
                ok = it.get("verdict", it.get("attributed"))
                lines.append(f"[{ok}] {it.get('statement', '')} — {it.get('reason', '')}")
        elif "verdict" in data and "reason" in data:
            lines.append(f"context verdict [{data['verdict']}] — {data['reason']}")
        elif "question" in data and "noncommittal" in data:
            lines.append(f"generated question: {data['question']} (noncommittal={data['noncommittal']})")
    text = "\n".join(lines)
    return text if len(text) <= 1000 else text[:999] + "…"


def _undefined(metric: str, outputs: list[Any]) -> str | None:
    """Whether Ragas' value rests on what the judge was asked for (the parsed outputs, in call order).

    None when it does; the reason the value is undefined when there was nothing to judge; ValueError when
    the judge's answers cannot carry the value (Ragas would compute one anyway):

    - a verdict outside 0/1 (Ragas counts any non-zero as 1, or weighs ranks by it);
    - fewer or more NLI verdicts than the statements or claims sent (Ragas scores the ones it got);
    - factual correctness with no claim on one side: Ragas scores 0 of 0 as 0;
    - answer relevancy whose generated questions are all empty: Ragas scores 0.
    """
    sent: int | None = None  # statements or claims the previous call produced, sent to the NLI call
    for out in outputs:
        data = out.model_dump() if hasattr(out, "model_dump") else {}
        items = data.get("statements") if isinstance(data.get("statements"), list) else None
        if "claims" in data:
            sent = len(data["claims"])
            if not sent and metric == "factual_correctness":
                return "the judge found no claim in one of the texts (Ragas scores 0 of 0 as 0)"
        elif items and isinstance(items[0], str):
            sent = len(items)
        elif items is not None:  # NLI verdicts on the statements or claims just sent
            bad = [it.get("verdict") for it in items if it.get("verdict") not in (0, 1)]
            if bad:
                raise ValueError(f"verdicts must be 0 or 1, the judge gave {bad[:3]}")
            if sent is not None and len(items) != sent:
                raise ValueError(f"the judge gave {len(items)} verdict(s) for {sent} statement(s)")
        for key in ("verdict", "attributed"):
            values = [data.get(key)] if key in data else []
            values += [c[key] for c in data.get("classifications") or [] if isinstance(c, dict) and key in c]
            bad = [v for v in values if v not in (0, 1)]
            if bad:
                raise ValueError(f"{key} must be 0 or 1, the judge gave {bad[:3]}")
    asked = [str(getattr(out, "question", "") or "").strip() for out in outputs]
    if metric == "answer_relevancy" and outputs and not any(asked):
        raise ValueError("the judge generated no question from the answer (Ragas would score 0)")
    return None


@dataclass(frozen=True)
class _Prepared:
    metric: Any  # the collections metric object every sample of the call uses
    basis: str  # the memo basis of the prompts it was given (their files as read or written)


class Adapter(JudgeAdapter):
    library = "ragas"
    translates_prompts = True

    # ------------------------------------------------------------------------------------------ identity
    @property
    def metric(self) -> str:
        return str(self.options["metric"]).partition(":")[0]

    @staticmethod
    def embeddings_path(ctx: ScoringContext) -> str:
        from services.retrieval.dense import default_model_path

        return ctx.settings.embeddings.model or default_model_path()

    def config(self, ctx: ScoringContext) -> dict[str, Any]:
        cfg = {**super().config(ctx), "api": "collections"}
        if self.metric == "answer_relevancy":
            path = self.embeddings_path(ctx)
            cfg["embeddings"] = path if ctx.settings.embeddings.model else "all-MiniLM-L6-v2"
            cfg["strictness"] = int(self.options.get("strictness", 3))
        if self.metric == "factual_correctness":
            cfg["mode"] = self.options.get("mode", "f1")
        return cfg

    # ----------------------------------------------------------------------------------------- the library
    def _llm(self, ctx: ScoringContext) -> Any:
        """Ragas' instructor LLM over the batch's keep-alive pool to the gateway (not closed here: the pool
        belongs to the judge session). The gateway retries and turns failures into non-retryable 400s: the
        SDK must not retry again."""
        from openai import AsyncOpenAI
        from ragas.llms import llm_factory

        client = AsyncOpenAI(
            base_url=self.base_url(ctx),
            api_key="ragmeta-gateway",
            http_client=self.session(ctx).http,
            max_retries=0,
            timeout=self.sample_timeout_s(ctx),
        )
        return llm_factory(self.model_name(ctx), client=client)

    def _build(self, llm: Any, embeddings: Any = None) -> Any:
        from ragas.metrics import collections as rc

        metric = self.metric
        if metric == "faithfulness":
            return rc.Faithfulness(llm=llm)
        if metric == "answer_relevancy":
            strictness = int(self.options.get("strictness", 3))
            return rc.AnswerRelevancy(llm=llm, embeddings=embeddings, strictness=strictness)
        if metric == "factual_correctness":
            return rc.FactualCorrectness(llm=llm, mode=self.options.get("mode", "f1"))
        if metric == "context_precision":
            return rc.ContextPrecisionWithReference(llm=llm)
        if metric == "context_recall":
            return rc.ContextRecall(llm=llm)
        raise ValueError(f"unknown Ragas metric {metric!r}")

    def _inputs(self, sample: Sample) -> dict[str, Any]:
        q, a, ref = sample.question, sample.answer or "", sample.reference_answer or ""
        ctx = list(sample.contexts)
        by_metric: dict[str, dict[str, Any]] = {
            "faithfulness": {"user_input": q, "response": a, "retrieved_contexts": ctx},
            "answer_relevancy": {"user_input": q, "response": a},
            "factual_correctness": {"response": a, "reference": ref},
            "context_precision": {"user_input": q, "reference": ref, "retrieved_contexts": ctx},
            "context_recall": {"user_input": q, "retrieved_contexts": ctx, "reference": ref},
        }
        return by_metric[self.metric]

    @staticmethod
    def _prompt_attrs(metric: Any) -> dict[str, Any]:
        from ragas.prompt.metrics.base_prompt import BasePrompt

        return {k: v for k, v in vars(metric).items() if isinstance(v, BasePrompt)}

    # ------------------------------------------------------------------------------------ prompt language
    def _templates(self) -> dict[str, tuple[Any, str]]:
        """The metric's English prompts as Ragas builds them, each with the name of its translated file
        (the prompt's class and a digest of its English text): {attribute: (prompt, file name)}. Built once
        per process and metric configuration; never modified (adapting or loading a prompt copies it)."""
        key = json.dumps(self.options, sort_keys=True, default=str)
        with _templates_lock:
            found = _templates.get(key)
            if found is None:
                judge, embeddings = _stand_ins()
                found = {}
                for attr, prompt in self._prompt_attrs(self._build(judge, embeddings)).items():
                    blob = json.dumps(_prompt_dump(prompt), sort_keys=True, ensure_ascii=False)
                    digest = hashlib.sha256(blob.encode()).hexdigest()[:16]
                    found[attr] = (
                        prompt,
                        f"{type(prompt).__module__}.{type(prompt).__qualname__}-{digest}.json",
                    )
                _templates[key] = found
            return found

    def _prompt_dir(self, ctx: ScoringContext) -> Path:
        root = ctx.settings.data_dir / "prompts" / "ragas" / self.prompt_language(ctx)
        return root / _slug(self.model_name(ctx))

    async def _adapt_prompts(self, llm: Any, ctx: ScoringContext) -> tuple[dict[str, Any], str]:
        """The metric's prompts in the judge language: read from disk, else translated once by Ragas. A
        refreshed job translates them again (once per batch, whichever metric asks first). With their memo
        basis: the digest of the files' contents as read or written here, whatever other files of the folder
        other metrics are writing meanwhile."""
        session = self.session(ctx)
        language = _language_name(self.prompt_language(ctx))
        adapted: dict[str, Any] = {}
        files: dict[str, bytes] = {}
        for attr, (prompt, name) in self._templates().items():
            path = self._prompt_dir(ctx) / name
            async with session.lock(str(path)):
                fresh = session.refresh and str(path) not in session.refreshed
                if path.is_file() and not fresh:
                    files[name] = path.read_bytes()
                    adapted[attr] = _prompt_load(prompt, json.loads(files[name].decode("utf-8")))
                    continue
                new = await prompt.adapt(language, llm, adapt_instruction=True)
                files[name] = json.dumps(_prompt_dump(new), ensure_ascii=False, indent=1).encode("utf-8")
                with _files_lock:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
                    tmp.write_bytes(files[name])
                    os.replace(tmp, path)
                session.refreshed.add(str(path))
                adapted[attr] = new
        return adapted, _files_digest(files)

    # ------------------------------------------------------------------------------------------- scoring
    async def prepare(self, samples: Sequence[Sample], ctx: ScoringContext) -> Any:
        """One LLM and one metric object for every sample of the call (Ragas' collections metrics keep no
        state between ``ascore`` calls); the judge's parsed outputs are recorded per sample task."""
        apply_offline_env()
        _quiet_userid()
        embeddings = None
        if self.metric == "answer_relevancy":
            path = self.embeddings_path(ctx)
            try:
                embeddings = await in_thread(
                    lambda: ctx.model(("ragas-embeddings", path), lambda: _load_embeddings(path))
                )
            except Exception as exc:
                raise PrepareFailed(
                    f"embeddings: cannot load {path}: {type(exc).__name__}: {exc}"[:2000]
                ) from exc
        llm = self._llm(ctx)
        generate = llm.agenerate

        async def recording(prompt: str, response_model: Any) -> Any:
            result = await generate(prompt, response_model)
            outputs = _OUTPUTS.get()
            if outputs is not None:
                outputs.append(result)
            return result

        # Ragas keeps the judge's intermediate verdicts to itself; recording them gives the explanation.
        llm.agenerate = recording
        adapted: dict[str, Any] = {}
        basis = ""  # English prompts: the library's own (its version is in the configuration)
        if self.prompt_language(ctx) != "en":
            try:
                adapted, basis = await asyncio.wait_for(
                    self._adapt_prompts(llm, ctx), self.sample_timeout_s(ctx) * 4
                )
            except Exception as exc:
                cause, _, message = classify(exc).partition(": ")
                raise PrepareFailed(
                    f"{cause}: adapting the Ragas prompts to {self.prompt_language(ctx)!r} failed: {message}"
                ) from exc
        metric = self._build(llm, embeddings)
        for attr, prompt in adapted.items():
            setattr(metric, attr, prompt)
        for prompt in self._prompt_attrs(metric).values():
            _cache_json_schema(prompt.output_model)
        return _Prepared(metric, basis)

    def memo_basis(self, sample: Sample | None, ctx: ScoringContext) -> str | None:
        """English prompts are the library's own (its version is in the configuration): "". Translated ones
        are this metric's own files under ``<data_dir>/prompts/ragas/<language>/<judge model>/`` (a
        refreshed job rewrites them): their digest, None while one of them is missing or unreadable (or the
        library cannot say which they are: scoring reports why)."""
        if self.prompt_language(ctx) == "en":
            return ""
        try:
            names = [name for _, name in self._templates().values()]
        except Exception:
            return None
        root = self._prompt_dir(ctx)
        try:
            return _files_digest({name: (root / name).read_bytes() for name in names})
        except OSError:
            return None

    async def score_one(self, sample: Sample, ctx: ScoringContext, shared: Any) -> SampleScore:
        inputs = self._inputs(sample)
        blank = [k for k, v in inputs.items() if isinstance(v, str) and not v.strip()]
        if blank:
            return SampleScore(reason=f"empty input for Ragas: {', '.join(blank)}")
        outputs: list[Any] = []
        _OUTPUTS.set(outputs)
        result = await shared.metric.ascore(**inputs)
        details: dict[str, Any] = {
            "scale": _SCALES[self.metric].format(mode=self.options.get("mode", "f1")),
            "prompts": self.prompt_language(ctx),
        }
        explanation = result.reason or _explain(outputs)
        if explanation:
            details["explanation"] = explanation
        undefined = _undefined(self.metric, outputs)
        if undefined is not None:
            return SampleScore(reason=undefined, details=details, memo_basis=shared.basis)
        value = result.value
        if value is None or (isinstance(value, float) and math.isnan(value)):
            why = _NAN_REASONS.get(self.metric, "Ragas returned NaN (nothing the judge could assess)")
            return SampleScore(reason=why, details=details, memo_basis=shared.basis)
        return SampleScore(value=float(value), details=details, memo_basis=shared.basis)
