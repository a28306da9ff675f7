"""A toy RAG application instrumented with the OpenTelemetry SDK and OpenInference's semantic conventions,
exporting with the standard OTLP/HTTP (protobuf) exporter; and the corpus it retrieves from."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from openinference.semconv.trace import (
    DocumentAttributes,
    MessageAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

DOCS = {
    "returns": "Returns are accepted within 30 days of delivery. Items must be unused and in their box.",
    "shipping": "Standard shipping takes three to five working days. Express shipping arrives next day.",
    "warranty": "Every appliance carries a two year warranty covering parts and labour.",
    "payment": "We accept cards and bank transfers; invoices are payable within fourteen days.",
}
QUESTIONS = [
    "How long do I have to return an item?",
    "How fast is express shipping?",
    "What does the warranty cover?",
]
KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


class RecordingExporter(OTLPSpanExporter):
    """The standard exporter, remembering what each export returned."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.results: list[SpanExportResult] = []

    def export(self, spans: object) -> SpanExportResult:
        result = super().export(spans)  # type: ignore[arg-type]
        self.results.append(result)
        return result


@dataclass
class ToyRag:
    """Retrieves the two documents sharing most words with the question, answers with the first one's
    first sentence; a chunk of the second hit is sent with its spacing changed (located normalised)."""

    url: str
    headers: dict[str, str]
    provider: TracerProvider = field(init=False)
    exporter: RecordingExporter = field(init=False)

    def __post_init__(self) -> None:
        self.exporter = RecordingExporter(endpoint=f"{self.url}/v1/traces", headers=self.headers, timeout=30)
        self.provider = TracerProvider(resource=Resource.create({"service.name": "toy-rag"}))
        # Exported on force_flush: every trace's spans travel in one request.
        self.provider.add_span_processor(
            BatchSpanProcessor(self.exporter, schedule_delay_millis=60_000, max_export_batch_size=512)
        )

    def ask(self, question: str) -> str:
        tracer = self.provider.get_tracer("toy-rag")
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute(KIND, OpenInferenceSpanKindValues.CHAIN.value)
            root.set_attribute(SpanAttributes.INPUT_VALUE, question)
            with tracer.start_as_current_span("retrieve") as ret:
                ret.set_attribute(KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
                ret.set_attribute(SpanAttributes.INPUT_VALUE, question)
                ranked = sorted(DOCS, key=lambda d: (-len(_words(DOCS[d]) & _words(question)), d))[:2]
                for i, doc_id in enumerate(ranked):
                    text = DOCS[doc_id].split(". ")[0] if i == 0 else DOCS[doc_id].replace(" ", "  ", 2)
                    prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{i}"
                    ret.set_attribute(f"{prefix}.{DocumentAttributes.DOCUMENT_CONTENT}", text)
                    ret.set_attribute(f"{prefix}.{DocumentAttributes.DOCUMENT_SCORE}", 1.0 / (i + 1))
                    ret.set_attribute(f"{prefix}.{DocumentAttributes.DOCUMENT_ID}", doc_id)
            with tracer.start_as_current_span("embed") as emb:
                emb.set_attribute(KIND, OpenInferenceSpanKindValues.EMBEDDING.value)
            answer = DOCS[ranked[0]].split(". ")[0] + "."
            with tracer.start_as_current_span("generate") as llm:
                llm.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
                llm.set_attribute(SpanAttributes.LLM_MODEL_NAME, "toy-extractive")
                messages = SpanAttributes.LLM_INPUT_MESSAGES
                llm.set_attribute(f"{messages}.0.{MessageAttributes.MESSAGE_ROLE}", "system")
                llm.set_attribute(
                    f"{messages}.0.{MessageAttributes.MESSAGE_CONTENT}", "Answer from the context."
                )
                llm.set_attribute(f"{messages}.1.{MessageAttributes.MESSAGE_ROLE}", "user")
                llm.set_attribute(f"{messages}.1.{MessageAttributes.MESSAGE_CONTENT}", question)
                out = SpanAttributes.LLM_OUTPUT_MESSAGES
                llm.set_attribute(f"{out}.0.{MessageAttributes.MESSAGE_ROLE}", "assistant")
                llm.set_attribute(f"{out}.0.{MessageAttributes.MESSAGE_CONTENT}", answer)
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, answer)
        return answer

    def flush(self) -> list[SpanExportResult]:
        assert self.provider.force_flush(30_000)
        return self.exporter.results

    def close(self) -> None:
        self.provider.shutdown()
