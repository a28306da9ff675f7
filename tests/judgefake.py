"""Schema-valid answers for the loopback test judge, built from each request itself.

- ``tools[0].function.parameters``      -> a tool call with generated arguments
- ``response_format`` json_schema        -> JSON generated from that schema
- a JSON schema embedded in a message    -> JSON from it (instructor JSON mode: Ragas)
- RAGChecker / refchecker text prompts   -> KG triplets, one label per claim
- DeepEval plain prompts ending "JSON:"  -> the prompt's own example JSON
- DeepEval verdict lists "one per context" -> as many verdicts as the prompt says there are contexts

Tests script particular verdicts with ``override(body) -> str | None`` (the assistant text) to get scores
they can compute by hand. This is a test double: it never produces a report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tests.fakellm import FakeLLM

TEXT = "The capital of France is Paris."
Override = Callable[[dict[str, Any]], str | None]


def gen(schema: dict[str, Any], root: dict[str, Any], depth: int = 0) -> Any:
    if depth > 12:
        return None
    if "$ref" in schema:
        ref = schema["$ref"].split("/")[-1]
        defs = root.get("$defs") or root.get("definitions") or {}
        return gen(defs[ref], root, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            opts = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return gen(opts[0], root, depth + 1)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    if t == "object" or "properties" in schema:
        return {k: gen(v, root, depth + 1) for k, v in schema.get("properties", {}).items()}
    if t == "array":
        n = max(2, schema.get("minItems", 0))
        return [gen(schema.get("items", {"type": "string"}), root, depth + 1) for _ in range(n)]
    if t == "integer":
        return 1
    if t == "number":
        return 0.0
    if t == "boolean":
        return True
    if t == "null":
        return None
    return TEXT


def _objects(text: str) -> list[dict[str, Any]]:
    dec, found = json.JSONDecoder(), []
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = dec.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, dict) and obj:
            found.append(obj)
    return found


def embedded_schema(text: str) -> dict[str, Any] | None:
    for obj in _objects(text):
        if ("properties" in obj or "$defs" in obj) and "type" in obj:
            return obj
    return None


def example_json(text: str) -> dict[str, Any] | None:
    found = _objects(text)
    want = re.findall(r"""(?:the|with)\s+["'`](\w+)["'`]\s+key""", text)
    for k in want:
        for obj in found:
            if k in obj:
                return obj
    for k in want:
        inner = [o for o in found if k.rstrip("s") in o]
        if inner:
            return {k: inner}
    return found[-1] if found else None


_COUNT = re.compile(r"(?:EQUAL TO|ÉGAL À)\s*(\d+)|\((\d+) documents?\)", re.IGNORECASE)


def verdict_count(prompt: str) -> int | None:
    """The number of verdicts a DeepEval prompt asks for when it says it ("EQUAL TO 3", "(3 documents)"):
    one per context. Otherwise lists get two items, as the judge splitting any text in two."""
    m = _COUNT.search(prompt)
    return int(m.group(1) or m.group(2)) if m else None


def _two_of_each(example: dict[str, Any], verdicts: int | None) -> dict[str, Any]:
    """The prompt's example with every list cut or repeated to two items (``verdicts`` for the verdicts when
    the prompt says how many): consistent with the two statements the judge finds in any text."""
    out = dict(example)
    for key, value in example.items():
        if isinstance(value, list) and value:
            n = verdicts if key == "verdicts" and verdicts else 2
            out[key] = [value[i % len(value)] for i in range(n)]
    return out


def text_of(message: dict[str, Any]) -> str:
    c = message.get("content") or ""
    if isinstance(c, list):
        c = "\n".join(p.get("text", "") for p in c if isinstance(p, dict))
    return str(c)


def all_text(body: dict[str, Any]) -> str:
    return "\n".join(text_of(m) for m in body.get("messages", []))


def answer(body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
    msgs = body.get("messages", [])
    everything = all_text(body)
    last = text_of(msgs[-1]) if msgs else ""
    if body.get("tools"):
        fn = body["tools"][0]["function"]
        args = gen(fn.get("parameters", {}), fn.get("parameters", {}))
        return None, [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": fn["name"], "arguments": json.dumps(args)},
            }
        ]
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        s = rf["json_schema"].get("schema", {})
        obj = gen(s, s)
        wanted = verdict_count(last)
        if wanted and isinstance(obj, dict) and isinstance(obj.get("verdicts"), list) and obj["verdicts"]:
            obj["verdicts"] = [obj["verdicts"][0]] * wanted
        return json.dumps(obj), None
    s = embedded_schema(everything)
    if s is not None:
        return json.dumps(gen(s, s)), None
    if "### Claims:" in last and "Entailment" in last:
        block = last.rsplit("### Claims:", 1)[1].lstrip("\n").split("\n\n", 1)[0]
        n = sum(1 for ln in block.splitlines() if ln.strip())
        return "\n".join(["Entailment"] * max(n, 1)), None
    if "### KG:" in last or "extract a KG" in last:
        return '("Paris", "is capital of", "France")\n("France", "is", "a country")', None
    if "Entailment" in last:
        return "Entailment", None
    if re.search(r"JSON:\s*$", last):
        ex = example_json(last)
        if ex is not None:
            return json.dumps(_two_of_each(ex, verdict_count(last))), None
    if rf.get("type") == "json_object":
        return "{}", None
    return TEXT, None


def completion(
    body: dict[str, Any], content: str | None, tool_calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    n = int(body.get("n") or 1)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "judge"),
        "choices": [
            {
                "index": i,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
            for i in range(n)
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


def judge_script(override: Override | None = None) -> Callable[[dict[str, Any], int], dict[str, Any]]:
    """A FakeLLM script answering every request with schema-valid content (or the override's text)."""

    def script(body: dict[str, Any], _: int) -> dict[str, Any]:
        text = override(body) if override else None
        if text is not None:
            return completion(body, text)
        content, tools = answer(body)
        return completion(body, content, tools)

    return script


def start_judge(override: Override | None = None) -> FakeLLM:
    return FakeLLM(script=judge_script(override)).start()
