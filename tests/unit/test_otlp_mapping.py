"""Which spans make an output (services.otlp.mapping), on spans written out by hand."""

from __future__ import annotations

import json
from typing import Any

from services.otlp.decode import Span
from services.otlp.mapping import map_spans


def span(trace: str, sid: str, attrs: dict[str, Any], parent: str | None = None, t: int = 0) -> Span:
    return Span(trace, sid, parent, f"span-{sid}", t, t + 10, attrs, {}, None, "here")


def test_genai_message_json_gives_question_and_answer() -> None:
    messages_in = [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Is it waterproof?"}]},
    ]
    messages_out = [{"role": "assistant", "parts": [{"type": "text", "content": "Yes, to 50 m."}]}]
    llm = span(
        "t1",
        "s1",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(messages_in),
            "gen_ai.output.messages": json.dumps(messages_out),
            "gen_ai.response.model": "m-1",
        },
    )
    got = map_spans([llm])
    [out] = got.outputs
    assert (out.question, out.answer, out.model, out.chunks) == (
        "Is it waterproof?",
        "Yes, to 50 m.",
        "m-1",
        [],
    )
    assert got.unmapped == []


def test_a_json_root_input_gives_its_question_field_and_the_last_llm_answers() -> None:
    root = span("t", "r", {"openinference.span.kind": "CHAIN", "input.value": json.dumps({"question": "Q?"})})
    rewrite = span(
        "t", "a", {"openinference.span.kind": "LLM", "output.value": "rewritten query"}, parent="r", t=1
    )
    final = span("t", "b", {"openinference.span.kind": "LLM", "output.value": "final"}, parent="r", t=5)
    got = map_spans([final, rewrite, root])
    [out] = got.outputs
    assert (out.question, out.answer) == ("Q?", "final")
    [left] = got.unmapped
    assert left.span_id == "a" and "not the last one" in left.reason


def test_two_traces_of_one_question_keep_the_later_and_name_the_other() -> None:
    def trace(tid: str, t: int, answer: str) -> list[Span]:
        return [
            span(
                tid,
                f"{tid}-llm",
                {
                    "openinference.span.kind": "LLM",
                    "llm.input_messages.0.message.role": "user",
                    "llm.input_messages.0.message.content": "Same?",
                    "llm.output_messages.0.message.content": answer,
                },
                t=t,
            )
        ]

    got = map_spans(trace("old", 0, "first") + trace("new", 100, "second"))
    [out] = got.outputs
    assert (out.trace_id, out.answer) == ("new", "second")
    [left] = got.unmapped
    assert left.trace_id == "old" and "trace new" in left.reason


def test_a_trace_without_its_root_or_an_answer_is_named_whole() -> None:
    orphan = span(
        "t", "x", {"openinference.span.kind": "RETRIEVER", "input.value": "Q?"}, parent="missing-root"
    )
    got = map_spans([orphan])
    assert got.outputs == []
    [left] = got.unmapped
    assert "no answer" in left.reason and left.kind == "RETRIEVER"
    assert "root span was not in this request" in left.reason
