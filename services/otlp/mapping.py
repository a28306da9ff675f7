"""Which spans of a trace make an output, after the OpenInference and the GenAI (OpenLLMetry) semantic
conventions.

- OpenInference: ``openinference.span.kind`` (LLM, RETRIEVER, CHAIN, ...), ``input.value``/``output.value``,
  ``llm.input_messages.N.message.role|content``, ``llm.output_messages.N.message.content``,
  ``llm.model_name``, ``retrieval.documents.N.document.content|score|id``.
- GenAI / OpenLLMetry: ``gen_ai.prompt.N.role|content`` and ``gen_ai.completion.N.content`` (or the newer
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` JSON), ``gen_ai.request.model`` /
  ``gen_ai.response.model``.

One trace is one output: the question is the root span's input (else the last user message of the first
LLM span, else the query of the first retriever span), the answer the output of the last LLM span to end
(else the root span's output), the retrieved chunks the documents of the retriever spans in the order they
ran. Every span that gives none of these is listed with the reason, and so is every span of a trace that
gives no question or no answer: nothing is dropped without being named.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from services.otlp.decode import Span

KIND = "openinference.span.kind"
_DOC = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(content|score|id)$")
_OI_IN = re.compile(r"^llm\.input_messages\.(\d+)\.message\.(role|content)$")
_OI_OUT = re.compile(r"^llm\.output_messages\.(\d+)\.message\.(role|content)$")
_GENAI_PROMPT = re.compile(r"^gen_ai\.prompt\.(\d+)\.(role|content)$")
_GENAI_COMPLETION = re.compile(r"^gen_ai\.completion\.(\d+)\.(role|content)$")
# Keys of a JSON input whose string value is the question.
_QUESTION_KEYS = ("question", "query", "input", "user_input", "prompt")
_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})


@dataclass(frozen=True)
class Chunk:
    text: str
    score: float | None
    document_id: str | None


@dataclass
class TraceOutput:
    trace_id: str
    question: str
    answer: str
    chunks: list[Chunk]
    latency_ms: float | None
    model: str | None
    # The spans read, by span id.
    used: list[str] = field(default_factory=list)
    # Every span of the trace, by span id: a span annotation (Phoenix) finds its output by any of them.
    span_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Unmapped:
    trace_id: str
    span_id: str
    name: str
    kind: str | None
    reason: str


@dataclass
class Mapped:
    outputs: list[TraceOutput]
    unmapped: list[Unmapped]
    traces: int
    spans: int


def _indexed(attrs: dict[str, Any], pattern: re.Pattern[str]) -> list[dict[str, Any]]:
    found: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in attrs.items():
        m = pattern.match(key)
        if m:
            found[int(m.group(1))][m.group(2)] = value
    return [found[i] for i in sorted(found)]


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value if value.strip() else None
    return None


def _json_text(value: str, mime: Any) -> str:
    """``input.value`` as a question: the value itself, or for a JSON object its question-like field."""
    if mime == "application/json" or value.lstrip().startswith("{"):
        try:
            doc = json.loads(value)
        except json.JSONDecodeError:
            return value
        if isinstance(doc, dict):
            for key in _QUESTION_KEYS:
                if isinstance(doc.get(key), str) and doc[key].strip():
                    return str(doc[key])
    return value


def _messages_json(value: Any, role: str | None) -> str | None:
    """Content of the last message (with ``role``) of a GenAI ``gen_ai.input|output.messages`` JSON value."""
    if not isinstance(value, str):
        return None
    try:
        doc = json.loads(value)
    except json.JSONDecodeError:
        return None
    if not isinstance(doc, list):
        return None
    found = None
    for msg in doc:
        if not isinstance(msg, dict) or (role is not None and msg.get("role") != role):
            continue
        parts = msg.get("parts")
        if isinstance(parts, list):
            texts = [p.get("content") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
            text = "".join(t for t in texts if isinstance(t, str))
        else:
            content = msg.get("content")
            text = content if isinstance(content, str) else ""
        if text.strip():
            found = text
    return found


def kind_of(span: Span) -> str | None:
    """LLM, RETRIEVER, CHAIN, ... (OpenInference's kinds); GenAI spans read as LLM; None when unknown."""
    kind = span.attributes.get(KIND)
    if isinstance(kind, str) and kind:
        return kind.upper()
    attrs = span.attributes
    if any(k.startswith("retrieval.documents.") for k in attrs):
        return "RETRIEVER"
    if (
        attrs.get("gen_ai.operation.name") in _LLM_OPERATIONS
        or "gen_ai.input.messages" in attrs
        or "gen_ai.output.messages" in attrs
        or any(_GENAI_PROMPT.match(k) or _GENAI_COMPLETION.match(k) for k in attrs)
    ):
        return "LLM"
    return None


def llm_question(span: Span) -> str | None:
    attrs = span.attributes
    for pattern in (_OI_IN, _GENAI_PROMPT):
        users = [m.get("content") for m in _indexed(attrs, pattern) if m.get("role") == "user"]
        texts = [t for t in (_text(u) for u in users) if t]
        if texts:
            return texts[-1]
    return _messages_json(attrs.get("gen_ai.input.messages"), "user")


def llm_answer(span: Span) -> str | None:
    attrs = span.attributes
    for pattern in (_OI_OUT, _GENAI_COMPLETION):
        texts = [t for t in (_text(m.get("content")) for m in _indexed(attrs, pattern)) if t]
        if texts:
            return texts[0]
    found = _messages_json(attrs.get("gen_ai.output.messages"), None)
    if found:
        return found
    return _text(attrs.get("output.value"))


def documents(span: Span) -> list[Chunk]:
    out = []
    for doc in _indexed(span.attributes, _DOC):
        text = _text(doc.get("content"))
        if text is None:
            continue
        score = doc.get("score")
        ident = doc.get("id")
        out.append(
            Chunk(
                text,
                float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None,
                str(ident) if isinstance(ident, str | int) and not isinstance(ident, bool) else None,
            )
        )
    return out


def _model(span: Span) -> str | None:
    for key in ("llm.model_name", "gen_ai.response.model", "gen_ai.request.model"):
        if isinstance(span.attributes.get(key), str):
            return str(span.attributes[key])
    return None


def _input(span: Span) -> str | None:
    value = _text(span.attributes.get("input.value"))
    return _json_text(value, span.attributes.get("input.mime_type")) if value else None


def map_trace(trace_id: str, spans: list[Span]) -> tuple[TraceOutput | None, list[Unmapped]]:
    spans = sorted(spans, key=lambda s: (s.start_ns, s.end_ns))
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id is None or s.parent_id not in ids]
    root = next((s for s in roots if s.parent_id is None), roots[0] if roots else None)
    kinds = {s.span_id: kind_of(s) for s in spans}
    llms = [s for s in spans if kinds[s.span_id] == "LLM"]
    retrievers = [s for s in spans if kinds[s.span_id] == "RETRIEVER"]
    used: list[str] = []

    question, q_span = None, None
    if root is not None:
        question = llm_question(root) if kinds[root.span_id] == "LLM" else _input(root)
        q_span = root if question else None
    for s in llms:
        if question:
            break
        question, q_span = llm_question(s) or _input(s), s
    for s in retrievers:
        if question:
            break
        question, q_span = _input(s), s
    answer, a_span, model = None, None, None
    for s in sorted(llms, key=lambda s: s.end_ns, reverse=True):
        answer = llm_answer(s)
        if answer:
            a_span, model = s, _model(s)
            break
    if not answer and root is not None:
        answer = _text(root.attributes.get("output.value"))
        a_span = root if answer else None

    def unmapped(s: Span, reason: str) -> Unmapped:
        return Unmapped(trace_id, s.span_id, s.name, kinds[s.span_id], reason)

    if not question or not answer:
        missing = "no question" if not question else "no answer"
        where = (
            "no input.value on the root span and no user message on an LLM or retriever span"
            if not question
            else "no output on an LLM span (llm.output_messages, gen_ai.completion, output.value) nor "
            "output.value on the root span"
        )
        whole = root is not None and root.parent_id is None
        partial = "" if whole else " (its root span was not in this request)"
        return None, [unmapped(s, f"its trace has {missing}{partial}: {where}") for s in spans]
    assert q_span is not None and a_span is not None
    used += [q_span.span_id, a_span.span_id]
    chunks: list[Chunk] = []
    for s in retrievers:
        docs = documents(s)
        if docs:
            chunks += docs
            used.append(s.span_id)
    latency = None
    if root is not None and root.end_ns >= root.start_ns > 0:
        latency = (root.end_ns - root.start_ns) / 1e6
    out = TraceOutput(
        trace_id,
        question.strip(),
        answer,
        chunks,
        latency,
        model,
        list(dict.fromkeys(used)),
        [s.span_id for s in spans],
    )
    rest = []
    for s in spans:
        if s.span_id in out.used:
            continue
        kind = kinds[s.span_id]
        if kind == "LLM":
            reason = "an LLM span that is not the last one to end: its output is not the answer"
        elif kind == "RETRIEVER":
            reason = "a retriever span without retrieval.documents.N.document.content"
        elif kind is None:
            reason = "no openinference.span.kind and no GenAI attributes: nothing to read"
        else:
            reason = f"a {kind} span: questions come from the root or LLM spans, chunks from retriever spans"
        rest.append(unmapped(s, reason))
    return out, rest


def map_spans(spans: list[Span]) -> Mapped:
    """Group the spans by trace and map each trace; two traces with the same question keep the one that
    ended last (the other's spans are named)."""
    by_trace: dict[str, list[Span]] = defaultdict(list)
    for s in spans:
        by_trace[s.trace_id].append(s)
    outputs: dict[str, tuple[TraceOutput, int, list[Span]]] = {}
    unmapped: list[Unmapped] = []
    for trace_id, group in by_trace.items():
        out, rest = map_trace(trace_id, group)
        unmapped += rest
        if out is None:
            continue
        end = max(s.end_ns for s in group)
        prev = outputs.get(out.question)
        if prev is not None:
            older, newer = (prev, (out, end, group)) if prev[1] <= end else ((out, end, group), prev)
            unmapped += [
                Unmapped(
                    older[0].trace_id,
                    s.span_id,
                    s.name,
                    kind_of(s),
                    f"trace {newer[0].trace_id} of the "
                    "same request has the same question and ended later: its output is kept",
                )
                for s in older[2]
                if s.span_id in older[0].used
            ]
            outputs[out.question] = newer
        else:
            outputs[out.question] = (out, end, group)
    return Mapped([o for o, _, _ in outputs.values()], unmapped, len(by_trace), len(spans))
