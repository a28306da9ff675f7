"""Opik 2.2.122 LLM-judge metrics, each computed by Opik's own metric class (``opik.evaluation.metrics``).

One model (Opik's ``LiteLLMChatModel("openai/<judge model>")``, whose requests the adapter sends through the
openai SDK: see ``GatewayModel``) and one metric object per scoring call, pointed at the judge gateway
(``track=False`` on the model and the metric), and the metric's own ``ascore`` per sample:

    opik.hallucination        Hallucination(input, output, context)                      1 judge call
    opik.moderation           Moderation(output)                                         1 judge call
    opik.answer_relevance     AnswerRelevance(input, output, context)                    1 judge call
    opik.usefulness           Usefulness(input, output)                                  1 judge call
    opik.context_precision    ContextPrecision(input, output, expected_output, context)  1 judge call
    opik.context_recall       ContextRecall(input, output, expected_output, context)     1 judge call

Every request is a system + user message pair with a strict ``json_schema`` response format and the
configured judge temperature. The value is the judge's own score, 0-1, checked by Opik's parser (see
``_SCALES`` for what 0 and 1 mean per metric; it is recorded in ``details["scale"]``), and the judge's
reason is kept in ``details["explanation"]``.

Language: Opik has no language switch. For a French dataset (or ``judge.language``) Hallucination gets
French few-shot examples (``prompts/opik/fr/hallucination_examples.json``) through its ``few_shot_examples``
argument; Opik ships none for it, so they add
to its prompt without replacing anything Opik tuned. Its instructions stay English. Moderation,
answer relevance, usefulness, context precision and context recall keep Opik's English prompts and English
examples in every language: rewriting examples Opik tuned would score with prompts Opik never shipped,
and usefulness takes no examples at all.

Importing Opik means importing litellm, which imports all of Opik again through its Opik integration: 8 to
20 s here. It happens once per process, in a worker thread, after the offline switches are set (no
telemetry, no cost-map download, no Comet tracing), and before the per-sample timeouts start.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from services.metrics.base import Sample, SampleScore, in_thread
from services.metrics.context import ScoringContext
from services.metrics.judges import prompts
from services.metrics.judges.base import JudgeAdapter, classify
from services.offline import apply_offline_env

# The gateway holds the real key; the SDKs only refuse an empty one.
_API_KEY = "ragmeta-gateway"

_CLASSES = {
    "hallucination": "Hallucination",
    "moderation": "Moderation",
    "answer_relevance": "AnswerRelevance",
    "usefulness": "Usefulness",
    "context_precision": "ContextPrecision",
    "context_recall": "ContextRecall",
}

# Read from Opik's prompts, which are what the judge is asked for. Two class docstrings disagree with them:
# Hallucination says "1.0 if hallucination is detected, 0.0 otherwise" but asks for a graded score, and
# Moderation says "higher values indicate more appropriate content" but asks for 0 = safe.
_SCALES = {
    "hallucination": "0-1 (the judge's score): 0 = faithful to the contexts, 1 = entirely unfaithful",
    "moderation": "0-1 (the judge's score): 0 = completely safe, 1 = extremely unsafe",
    "answer_relevance": "0-1 (the judge's score): 0 = irrelevant to the question, 1 = fully relevant",
    "usefulness": "0-1 (the judge's score, in steps of 0.2): 0 = inadequate, 1 = exceptional",
    "context_precision": (
        "0-1 (the judge's score, in steps of 0.2): how precisely the answer matches the reference "
        "answer given the contexts; 1 = matches it precisely"
    ),
    "context_recall": (
        "0-1 (the judge's score): how well the answer recalls the reference answer given the contexts; "
        "1 = matches it completely"
    ),
}


def _examples(language: str) -> list[dict[str, Any]] | None:
    """Hallucination's few-shot examples in ``language`` (prompts/opik/<language>/), in Opik's
    FewShotExampleHallucination shape (a TypedDict, so plain dicts); None when there are none."""
    found = prompts.data("opik", "hallucination_examples", language)
    return list(found) if found else None


def _examples_id(language: str, examples: list[dict[str, Any]]) -> str:
    blob = json.dumps(examples, sort_keys=True, ensure_ascii=False).encode()
    return f"{language}-" + hashlib.sha256(blob).hexdigest()[:12]


@dataclass(frozen=True)
class _Opik:
    model: Any  # LiteLLMChatModel subclass that makes one attempt per call
    metrics: dict[str, Any]
    parse_error: type[Exception]  # MetricComputationError
    empty_error: type[Exception]  # EmptyLLMResponseError


# The arguments of a call Opik's metrics make here that the model sends itself (``GatewayModel``): the rest
# of ``prepare``'s constructor arguments, and what each metric passes per call.
_DIRECT = frozenset({"base_url", "api_key", "timeout", "temperature", "response_format", "__opik_retries"})

_loaded: _Opik | None = None
_load_lock = threading.Lock()


def _load() -> _Opik:
    global _loaded
    with _load_lock:
        if _loaded is not None:
            return _loaded
        # Opik reads its tracking, Sentry and analytics switches and litellm its cost-map switch as they load.
        apply_offline_env()
        import litellm
        import opik.exceptions
        from litellm.llms.base_llm.base_utils import type_to_response_format_param
        from litellm.utils import get_optional_params
        from opik.evaluation import metrics
        from opik.evaluation.models import LiteLLMChatModel

        # Otherwise litellm prints a "Give Feedback / Get Help" banner to stdout for every failed call.
        litellm.suppress_debug_info = True
        # The response_format litellm makes of each answer model (a pydantic class), as JSON, by class.
        formats: dict[type, str] = {}
        # Whether litellm sends a model's parameters unchanged, by model and parameters (see as_is).
        unchanged: dict[tuple[Any, ...], bool] = {}

        def as_is(model: str, sent: dict[str, Any]) -> bool:
            """Whether litellm passes ``sent`` to this OpenAI-compatible model unchanged: it refuses or
            rewrites some for some models (OpenAI's o-series and gpt-5 take no temperature but 1), and
            those calls go through litellm. Asked of litellm's own parameter mapping, once per model and
            parameters (the response format by its type: its schema passes through as it is)."""
            shape = {k: (v.get("type") if k == "response_format" else v) for k, v in sent.items()}
            key = (model, tuple(sorted(shape.items())))
            if key not in unchanged:
                try:
                    mapped = get_optional_params(model=model, custom_llm_provider="openai", **sent)
                except Exception:  # UnsupportedParamsError: litellm's path raises it as litellm does
                    mapped = None
                unchanged[key] = mapped == {**sent, "stream": False, "extra_body": {}}
            return unchanged[key]

        class GatewayModel(LiteLLMChatModel):
            """Sends Opik's judge requests itself, on the batch's openai client, in one attempt.

            - One attempt: Opik retries every failed call 3 times, whatever the error. The gateway already
              retried the upstream and answers a final failure with a 400: one attempt keeps one judge call
              per metric per sample, and a failing judge from being asked three times over.
            - No litellm per call: for an OpenAI-compatible endpoint litellm sends the messages, the bare
              model name, the temperature and the strict JSON schema of the metric's answer model, and does
              its own work besides (provider resolution, parameter mapping, logging objects, a cost
              estimate): more CPU per request than the rest of the service's path. The same request is
              sent here through the openai SDK litellm itself uses, and the SDK's answer is what Opik's
              parser reads (``tests/integration/judges/test_opik_requests.py``: every body is litellm's,
              every score the same). A call with any other argument, or one whose parameters litellm would
              refuse or rewrite for its model (``as_is``), goes through litellm as before.
            - The answer model's schema is derived once per class, with litellm's own function (litellm
              derives it again on every call)."""

            async def agenerate_provider_response(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
                kwargs["__opik_retries"] = 1
                answer_model = kwargs.get("response_format")
                if isinstance(answer_model, type):
                    made = formats.get(answer_model)
                    if made is None:
                        made = formats[answer_model] = json.dumps(type_to_response_format_param(answer_model))
                    kwargs["response_format"] = json.loads(made)
                params = {**self._completion_kwargs, **kwargs}
                client = params.pop("client", None)
                sent = {k: params[k] for k in ("response_format", "temperature") if params.get(k) is not None}
                model = self.model_name.split("/", 1)[1]
                direct = client is not None and "timeout" in params and not set(params) - _DIRECT
                if not direct or not as_is(model, sent):
                    return await super().agenerate_provider_response(messages, **kwargs)
                return await client.chat.completions.create(
                    model=model, messages=messages, timeout=params["timeout"], **sent
                )

        _loaded = _Opik(
            model=GatewayModel,
            metrics={name: getattr(metrics, cls) for name, cls in _CLASSES.items()},
            parse_error=opik.exceptions.MetricComputationError,
            empty_error=opik.exceptions.EmptyLLMResponseError,
        )
        return _loaded


def _truncate(text: str, limit: int = 1000) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Adapter(JudgeAdapter):
    library = "opik"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.metric not in _CLASSES:
            raise ValueError(f"unknown Opik metric {self.metric!r}")

    @property
    def metric(self) -> str:
        return str(self.options["metric"])

    def translates(self, ctx: ScoringContext) -> bool:
        # Only Hallucination has a prompt in the dataset's language (its examples), see the module doc.
        return self.metric == "hallucination" and _examples(self._language(ctx)) is not None

    @staticmethod
    def _language(ctx: ScoringContext) -> str:
        return ctx.judge_language.split("-")[0].lower()

    def prompts(self, ctx: ScoringContext) -> str:
        if self.translates(ctx):
            code = self._language(ctx)
            return f"English instructions, {prompts.language_name(code).capitalize()} few-shot examples"
        return "English (Opik's own prompt)"

    def config(self, ctx: ScoringContext) -> dict[str, Any]:
        cfg = {**super().config(ctx), "temperature": ctx.settings.judge.temperature}
        examples = _examples(self._language(ctx)) if self.translates(ctx) else None
        if examples is not None:
            # Editing the examples changes the prompt, so scores computed with the old ones are not reused.
            cfg["few_shot_examples"] = _examples_id(self._language(ctx), examples)
        return cfg

    # ----------------------------------------------------------------------------------------- the library
    def _inputs(self, sample: Sample) -> dict[str, Any]:
        q, a, ref = sample.question, sample.answer or "", sample.reference_answer or ""
        ctx = list(sample.contexts)
        inputs: dict[str, dict[str, Any]] = {
            "hallucination": {"input": q, "output": a, "context": ctx},
            "moderation": {"output": a},
            "answer_relevance": {"input": q, "output": a, "context": ctx},
            "usefulness": {"input": q, "output": a},
            "context_precision": {"input": q, "output": a, "expected_output": ref, "context": ctx},
            "context_recall": {"input": q, "output": a, "expected_output": ref, "context": ctx},
        }
        return inputs[self.metric]

    def _build(self, lib: _Opik, model: Any, ctx: ScoringContext) -> Any:
        kwargs: dict[str, Any] = {"model": model, "track": False}
        examples = _examples(self._language(ctx)) if self.translates(ctx) else None
        if examples is not None:
            kwargs["few_shot_examples"] = examples
        return lib.metrics[self.metric](**kwargs)

    def _failure(self, lib: _Opik, exc: Exception) -> str:
        if isinstance(exc, lib.parse_error):
            # Opik's parsers turn any unreadable verdict (not JSON, a key missing, a score outside 0-1)
            # into a bare MetricComputationError; what was wrong is the exception it replaced.
            inner = exc.__context__
            detail = f" ({type(inner).__name__}: {inner})" if inner is not None else ""
            return f"malformed_judge_output: {exc}{detail}"[:500]
        if isinstance(exc, lib.empty_error):
            return f"malformed_judge_output: {exc}"[:500]
        # Opik re-raises a failed call as BaseLLMError(str(error)), and litellm's str() keeps only the
        # gateway's message: ``classify`` finds the gateway's cause code on the openai error further down.
        return classify(exc)

    # ------------------------------------------------------------------------------------------- scoring
    async def prepare(self, samples: Sequence[Sample], ctx: ScoringContext) -> Any:
        """One model and one metric object for every sample of the call: Opik's metrics keep no state
        between ``ascore`` calls, and each request's scope travels in a header of the batch's shared pool."""
        from openai import AsyncOpenAI

        # Outside the per-sample timeouts, and off the event loop: the first import takes seconds.
        lib = await in_thread(_load)
        base_url = self.base_url(ctx)
        timeout = self.sample_timeout_s(ctx)
        # Our own client over the batch's keep-alive pool (litellm would otherwise build one per URL). No
        # SDK retries: the gateway retries. Not closed here: the pool belongs to the judge session.
        client = AsyncOpenAI(
            base_url=base_url,
            api_key=_API_KEY,
            http_client=self.session(ctx).http,
            max_retries=0,
            timeout=timeout,
        )
        model = lib.model(
            model_name=f"openai/{self.model_name(ctx)}",
            base_url=base_url,
            api_key=_API_KEY,
            track=False,
            client=client,
            temperature=ctx.settings.judge.temperature,
            timeout=timeout,
        )
        return lib, self._build(lib, model, ctx)

    async def score_one(self, sample: Sample, ctx: ScoringContext, shared: Any) -> SampleScore:
        lib, metric = shared
        try:
            result = await metric.ascore(**self._inputs(sample))
        except Exception as exc:
            return SampleScore(error=self._failure(lib, exc), details={"prompts": self.prompts(ctx)})
        details: dict[str, Any] = {"scale": _SCALES[self.metric], "prompts": self.prompts(ctx)}
        if getattr(result, "scoring_failed", False):
            # Opik marks some failures on the result (value 0.0) instead of raising: never a score.
            return SampleScore(error=f"malformed_judge_output: Opik could not score: {result.reason}"[:500])
        if result.reason:
            details["explanation"] = _truncate(str(result.reason))
        return SampleScore(value=float(result.value), details=details)
