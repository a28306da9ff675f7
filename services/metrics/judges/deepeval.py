"""DeepEval metrics, computed by DeepEval's own metric classes with the judge gateway as their LLM.

Each registry metric is one DeepEval class, measured per sample with ``await metric.a_measure(test_case)``
(``include_reason=True``, ``async_mode=True``, ``eval_mode="llm"``, threshold unused). Judge calls per sample:

    deepeval.hallucination         HallucinationMetric        2      verdicts over all contexts, reason
    deepeval.answer_relevancy      AnswerRelevancyMetric      3      statements, verdicts, reason
    deepeval.faithfulness          FaithfulnessMetric         4      truths + claims at once, verdicts, reason
    deepeval.contextual_precision  ContextualPrecisionMetric  2      verdicts, reason
    deepeval.contextual_recall     ContextualRecallMetric     2      verdicts, reason
    deepeval.contextual_relevancy  ContextualRelevancyMetric  k + 1  one verdict call per context, reason

The reason call costs one call per sample; it is kept because it is the library's explanation of the score
(``details["explanation"]``). Values are on DeepEval's 0-1 scale, described per metric in
``details["scale"]``. Hallucination: since DeepEval 4 its score is the share of contexts the answer does NOT
contradict (1 = no hallucination, higher is better); the registry's "share of contexts contradicted, lower is
better" describes DeepEval 3.

The judge is a small ``DeepEvalBaseLLM``. DeepEval's ``LocalModel`` builds a new OpenAI client (and TLS
context) on every request, which made it CPU-bound (docs/judges.md, each library's own batch path); here
one judge per scoring call
runs on the batch's keep-alive pool to the gateway (each request's scope travels in a header), and the JSON
schema of each response class is built once per process.

Structured output: requests carry ``response_format`` ``json_schema`` built from the pydantic schema DeepEval
passes, and the reply is validated against that schema, so the metric takes its strict path. DeepEval's loose
path (plain text + ``trimAndLoadJson``) silently drops a verdict outside yes/no/borderline and scores what is
left: a judge prompted in French that answers "oui" would shift scores without any error. So it is never
taken: a reply that is not bare JSON (a server ignoring ``response_format``, code fences) is read with
``trimAndLoadJson``, its verdict words normalised as DeepEval does ("Yes." -> yes), and validated against the
schema; a reply that still does not fit fails the sample (``malformed_judge_output``). If the server rejects
``response_format`` (HTTP 400) the adapter retries that call once as plain text and keeps plain text for its
remaining calls.

Never a number from nothing: DeepEval scores an empty verdict list 1 (faithfulness, answer relevancy,
hallucination) or 0 (contextual precision, recall, relevancy), and scores whatever verdicts it got when the
judge gave fewer than it was asked for. After each measure the adapter checks one verdict per claim,
statement or context (``_undefined``): a different count fails the sample, and an answer without any claim
or statement, or a reference without any sentence, is stored undefined with that reason.

Prompts: for French datasets every prompt these six metrics send (15 templates, in
``prompts/deepeval/fr/<MetricClass>.<method>.jinja``) runs translated, through ``evaluation_template``
subclasses; JSON keys and the verdict words (yes / no / borderline) stay English
because DeepEval parses them. Other languages, and multimodal test cases (never built here), keep DeepEval's
English prompts. No DeepEval metric keeps English prompts for French.

Offline and files: the offline environment (``services.offline``: DEEPEVAL_TELEMETRY_OPT_OUT,
DEEPEVAL_DISABLE_DOTENV...) is applied before DeepEval is first imported. Without the opt-out, importing
DeepEval creates ``./.deepeval/`` in the working directory; with it, calling ``a_measure`` directly (no
``deepeval.evaluate``, so no test run and no ``.deepeval-cache.json``) writes no file at all (checked with an
empty working directory and HOME). Caching is the gateway's, not DeepEval's.
"""

from __future__ import annotations

import functools
import hashlib
import json
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from services.metrics.base import Sample, SampleScore
from services.metrics.context import ScoringContext
from services.metrics.judges import prompts
from services.metrics.judges.base import JudgeAdapter
from services.offline import apply_offline_env

# The gateway holds the real key; the SDK only refuses an empty one.
_API_KEY = "ragmeta-gateway"
_EXPLANATION_CHARS = 1000


@dataclass(frozen=True)
class _Metric:
    cls: str  # class in deepeval.metrics
    needs_answer: bool
    scale: str


_METRICS: dict[str, _Metric] = {
    "hallucination": _Metric(
        "HallucinationMetric",
        True,
        "0-1, share of the contexts the answer does not contradict (DeepEval >= 4: 1 = no hallucination)",
    ),
    "answer_relevancy": _Metric(
        "AnswerRelevancyMetric", True, "0-1, share of the answer's statements relevant (or borderline)"
    ),
    "faithfulness": _Metric(
        "FaithfulnessMetric", True, "0-1, share of the answer's claims not contradicted by the contexts"
    ),
    "contextual_precision": _Metric(
        "ContextualPrecisionMetric",
        False,
        "0-1, rank-weighted precision of the contexts useful for the reference",
    ),
    "contextual_recall": _Metric(
        "ContextualRecallMetric",
        False,
        "0-1, share of the reference's sentences attributable to the contexts",
    ),
    "contextual_relevancy": _Metric(
        "ContextualRelevancyMetric", False, "0-1, share of the contexts' statements relevant to the question"
    ),
}


# ------------------------------------------------------------------------------------------------ prompts
def _templates(language: str) -> dict[str, dict[str, str]]:
    """The translated prompts of ``language`` by metric class and template method: renderings of DeepEval
    4.3.1's templates (deepeval/templates/metrics/templates.json) with the variables the metrics pass, kept
    in prompts/deepeval/<language>/<MetricClass>.<method>.jinja."""
    out: dict[str, dict[str, str]] = {}
    for name, text in prompts.templates("deepeval", language).items():
        cls, _, method = name.partition(".")
        out.setdefault(cls, {})[method] = text
    return out


def _deepeval_metrics() -> Any:
    # DeepEval reads its telemetry opt-out at import time (without it the import creates ./.deepeval/).
    apply_offline_env()
    import deepeval.metrics

    return deepeval.metrics


@functools.cache
def _template_class(metric_cls: type[Any], language: str) -> type[Any] | None:
    """A subclass of the metric's template class whose prompts are the ``language`` renderings."""
    import inspect

    import jinja2

    texts = _templates(language).get(metric_cls.__name__)
    if not texts:
        return None
    base: type[Any] = inspect.signature(metric_cls.__init__).parameters["evaluation_template"].default
    # StrictUndefined as DeepEval's own renderer: a variable the metric stops passing fails loudly.
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)

    def render_method(method: str, text: str) -> staticmethod[..., str]:
        compiled = env.from_string(text)
        english: Callable[..., str] = getattr(base, method)

        def render(**context: Any) -> str:
            if context.get("multimodal"):
                return english(**context)
            return compiled.render(**context)

        return staticmethod(render)

    namespace = {method: render_method(method, text) for method, text in texts.items()}
    return type(f"{language.capitalize()}{base.__name__}", (base,), namespace)


# ------------------------------------------------------------------------------------------------- judge
@dataclass
class _Transport:
    """What the samples of one scoring call share: the judge (over the batch's keep-alive pool) and whether
    the judge server takes ``response_format``."""

    judge: Any = None
    structured: bool = True  # False once the judge server has rejected response_format


@functools.cache
def _json_schema(schema: type[Any]) -> dict[str, Any]:
    """A pydantic schema class's JSON schema, built once per class (pydantic rebuilds it on every call)."""
    result: dict[str, Any] = schema.model_json_schema()
    return result


def _parse(text: str, schema: Any) -> Any:
    """The reply as an instance of ``schema``, or ValueError: never DeepEval's lenient parser, which drops
    verdicts outside the vocabulary (and then scores what is left, or 1 for nothing left).

    A reply that is not the bare JSON object (code fences, a sentence around it) is read by DeepEval's own
    ``trimAndLoadJson``; verdict words are normalised the way DeepEval does ("Yes." -> yes, idk ->
    borderline) and must then be in the schema's vocabulary."""
    import pydantic
    from deepeval.metrics.utils import trimAndLoadJson

    try:
        return schema.model_validate_json(text)
    except pydantic.ValidationError:
        pass
    data = trimAndLoadJson(text)  # ValueError when there is no JSON object at all
    try:
        return schema.model_validate(_normalised(data))
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise ValueError(
            f"judge output does not fit {schema.__name__} ({problems}): {text[:200]!r}"
        ) from None


def _normalised(data: Any) -> Any:
    """Verdict words as DeepEval normalises them on its loose path; anything else is left for validation."""
    from deepeval.metrics.base_metric import YES_NO_BORDERLINE
    from deepeval.metrics.utils.qag import normalize_qag_verdict

    def fix(item: Any) -> Any:
        if isinstance(item, dict) and "verdict" in item:
            verdict = normalize_qag_verdict(item["verdict"], YES_NO_BORDERLINE)
            return {**item, "verdict": verdict.value} if verdict is not None else item
        return item

    if isinstance(data, dict) and isinstance(data.get("verdicts"), list):
        return {**data, "verdicts": [fix(v) for v in data["verdicts"]]}
    return fix(data)


def _rejects_response_format(exc: Exception) -> bool:
    import openai

    # The gateway reports an upstream 4xx as a 400 whose error code is "http_<status>".
    return isinstance(exc, openai.BadRequestError) and getattr(exc, "code", None) in ("http_400", "http_422")


@functools.cache
def _judge_class() -> type[Any]:
    from deepeval.models import DeepEvalBaseLLM

    class GatewayJudge(DeepEvalBaseLLM):  # type: ignore[no-untyped-call]
        """DeepEval's model interface over the judge gateway, on the batch's keep-alive pool (each request's
        scope travels in a header), shared by every metric object of one scoring call."""

        def __init__(self, model: str, base_url: str, http: Any, timeout_s: float, transport: _Transport):
            import openai

            self._model = model
            self._base_url = base_url
            self._timeout_s = timeout_s
            self._transport = transport
            # Not closed here: it does not own the pool, which belongs to the judge session.
            self._aio = openai.AsyncOpenAI(
                base_url=base_url,
                api_key=_API_KEY,
                http_client=http,
                max_retries=0,  # the gateway retries
                timeout=timeout_s,
            )
            super().__init__(model)

        def load_model(self) -> Any:
            return self._aio

        def get_model_name(self) -> str:
            return self._model

        def _request(self, prompt: str, schema: Any, structured: bool) -> dict[str, Any]:
            body: dict[str, Any] = {
                "model": self._model,
                "messages": [{"role": "user", "content": prompt}],
                "temperature": 0,
            }
            if schema is not None and structured:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": schema.__name__, "schema": _json_schema(schema)},
                }
            return body

        async def a_generate(self, prompt: str, schema: Any = None) -> Any:
            structured = schema is not None and self._transport.structured
            try:
                resp = await self._aio.chat.completions.create(**self._request(prompt, schema, structured))
            except Exception as exc:
                if not (structured and _rejects_response_format(exc)):
                    raise
                resp = await self._aio.chat.completions.create(**self._request(prompt, schema, False))
                self._transport.structured = False
            text = resp.choices[0].message.content or ""
            return text if schema is None else _parse(text, schema)

        def generate(self, prompt: str, schema: Any = None) -> Any:
            # Only metric.measure(async_mode=False) lands here; the adapter always awaits a_measure.
            import openai

            from services.judge.gateway import SCOPE_HEADER
            from services.metrics.context import SCOPE

            scope = SCOPE.get()
            with openai.OpenAI(
                base_url=self._base_url,
                api_key=_API_KEY,
                max_retries=0,
                timeout=self._timeout_s,
                default_headers={SCOPE_HEADER: scope} if scope else None,
            ) as client:
                structured = schema is not None and self._transport.structured
                resp = client.chat.completions.create(**self._request(prompt, schema, structured))
            text = resp.choices[0].message.content or ""
            return text if schema is None else _parse(text, schema)

    return GatewayJudge


# ------------------------------------------------------------------------------------------ the verdicts
def _undefined(cls: str, metric: Any, contexts: int) -> str | None:
    """Whether DeepEval's score rests on one verdict per item it asked the judge about.

    None when it does; the reason the score is undefined when there was nothing to judge (DeepEval scores an
    empty list 1 for faithfulness and answer relevancy, 0 for contextual recall); ValueError when the judge
    gave another number of verdicts than items (DeepEval would score the verdicts it got)."""
    verdicts = list(getattr(metric, "verdicts", None) or [])

    def expect(items: int, what: str) -> None:
        if len(verdicts) != items:
            raise ValueError(f"the judge gave {len(verdicts)} verdict(s) for {items} {what}")

    if cls == "FaithfulnessMetric":
        if not metric.claims:
            return "the judge found no claim in the answer (DeepEval scores 1)"
        expect(len(metric.claims), "claim(s) of the answer")
    elif cls == "AnswerRelevancyMetric":
        if not metric.statements:
            return "the judge found no statement in the answer (DeepEval scores 1)"
        expect(len(metric.statements), "statement(s) of the answer")
    elif cls in ("HallucinationMetric", "ContextualPrecisionMetric"):
        expect(contexts, "context(s)")
    elif cls == "ContextualRecallMetric":
        if not verdicts:
            return "the judge found no sentence in the reference answer (DeepEval scores 0)"
    elif cls == "ContextualRelevancyMetric":
        groups = list(metric.verdicts_list or [])
        if len(groups) != contexts or not all(g.verdicts for g in groups):
            counts = [len(g.verdicts) for g in groups]
            raise ValueError(f"the judge gave no verdict for some of the {contexts} context(s): {counts}")
    return None


# ----------------------------------------------------------------------------------------------- adapter
class Adapter(JudgeAdapter):
    library = "deepeval"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.metric = _METRICS[str(self.options["metric"])]

    def translates(self, ctx: ScoringContext) -> bool:
        return self.metric.cls in _templates(ctx.judge_language.split("-")[0].lower())

    def config(self, ctx: ScoringContext) -> dict[str, Any]:
        cfg = super().config(ctx)
        if self.translates(ctx):
            # Scores computed with an older version of the translated prompts are not reused.
            texts = _templates(self.prompt_language(ctx))[self.metric.cls]
            blob = json.dumps(texts, sort_keys=True, ensure_ascii=False).encode()
            cfg["prompt_templates"] = hashlib.sha256(blob).hexdigest()[:12]
        return cfg

    async def prepare(self, samples: Sequence[Sample], ctx: ScoringContext) -> _Transport:
        """One judge for the call's samples; DeepEval's metric objects keep per-measure state, so each
        sample gets its own (``_build``)."""
        transport = _Transport()
        transport.judge = _judge_class()(
            self.model_name(ctx),
            self.base_url(ctx),
            self.session(ctx).http,
            self.sample_timeout_s(ctx),
            transport,
        )
        return transport

    def _build(self, judge: Any, ctx: ScoringContext) -> Any:
        metric_cls = getattr(_deepeval_metrics(), self.metric.cls)
        kwargs: dict[str, Any] = {
            "model": judge,
            "include_reason": True,  # one call more, for details["explanation"]
            "async_mode": True,
            "eval_mode": "llm",  # never DeepEval's hosted System One model, whatever DEEPEVAL_EVAL_MODE says
            "verbose_mode": False,
        }
        template = _template_class(metric_cls, self.prompt_language(ctx))
        if template is not None:
            kwargs["evaluation_template"] = template
        with warnings.catch_warnings():
            # HallucinationMetric announces its DeepEval 4 score direction; details["scale"] records it.
            warnings.filterwarnings(
                "ignore", message=".*now scores in the same direction", category=DeprecationWarning
            )
            return metric_cls(**kwargs)

    async def score_one(self, sample: Sample, ctx: ScoringContext, shared: _Transport) -> SampleScore:
        from deepeval.test_case import LLMTestCase

        if self.metric.needs_answer and not (sample.answer or "").strip():
            return SampleScore(reason="empty answer (DeepEval does not judge an empty actual_output)")
        metric = self._build(shared.judge, ctx)
        contexts = list(sample.contexts)
        test_case = LLMTestCase(
            input=sample.question,
            actual_output=sample.answer,
            expected_output=sample.reference_answer,
            retrieval_context=contexts,
            context=contexts,
        )
        await metric.a_measure(test_case, _show_indicator=False)
        if metric.score is None:
            raise ValueError(f"DeepEval returned no score: {metric.error or 'no error given'}")
        undefined = _undefined(self.metric.cls, metric, len(contexts))
        if undefined is not None:
            return SampleScore(reason=undefined, details=self._details(metric, ctx, shared))
        return SampleScore(value=float(metric.score), details=self._details(metric, ctx, shared))

    def _details(self, metric: Any, ctx: ScoringContext, shared: _Transport) -> dict[str, Any]:
        details: dict[str, Any] = {
            "scale": self.metric.scale,
            "prompts": self.prompt_language(ctx),
            "structured_output": "json_schema" if shared.structured else "text",
        }
        if metric.reason:
            details["explanation"] = str(metric.reason)[:_EXPLANATION_CHARS]
        verdicts = getattr(metric, "verdicts", None)
        if verdicts is None and hasattr(metric, "verdicts_list"):  # contextual relevancy: a list per context
            verdicts = [v for group in metric.verdicts_list for v in group.verdicts]
        if verdicts is not None:
            details["verdicts"] = [str(v.verdict) for v in verdicts]
        return details


__all__ = ["Adapter"]
