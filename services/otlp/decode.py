"""An OTLP/HTTP trace export request (``ExportTraceServiceRequest``, binary protobuf or the OTLP JSON
encoding) decoded into plain spans.

OTLP JSON differs from protobuf's canonical JSON mapping in one point that matters here: trace and span ids
are hex strings, not base64; they are turned into base64 before protobuf's own JSON parser reads the rest
(which ignores unknown fields, as receivers must). Every refusal names the part of the request at fault.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from services.errors import ItemError, MalformedInput, UnsupportedMediaType
from services.ingest import MAX_JSON_DEPTH, check_json
from services.nul import REASON, nul_fields, nul_refusal

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# Nesting of array/kvlist attribute values followed; deeper values are kept as their JSON text.
_MAX_VALUE_DEPTH = 8


@dataclass(frozen=True)
class Span:
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    # The span's status message when its status is ERROR.
    error: str | None
    # Where the span sits in the request, for answers that name it.
    where: str


def media_type(content_type: str | None) -> str:
    """``application/x-protobuf`` or ``application/json``; 415 naming the header otherwise."""
    ctype = (content_type or "").split(";")[0].strip().lower()
    if ctype in (PROTOBUF, "application/protobuf"):
        return PROTOBUF
    if ctype == JSON:
        return JSON
    shown = ctype or "(none)"
    raise UnsupportedMediaType(
        f"OTLP/HTTP bodies are {PROTOBUF} or {JSON}, not {shown}",
        [ItemError(None, "Content-Type", f"{shown} is not {PROTOBUF} or {JSON}")],
    )


def inflate(raw: bytes, encoding: str | None, limit: int) -> bytes:
    """The body with its ``Content-Encoding`` (gzip, or none) undone, at most ``limit`` bytes inflated."""
    enc = (encoding or "").strip().lower()
    if enc in ("", "identity"):
        return raw
    if enc != "gzip":
        raise UnsupportedMediaType(
            f"Content-Encoding {enc!r} is not read (gzip or none)",
            [ItemError(None, "Content-Encoding", f"{enc!r} is not gzip")],
        )
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise MalformedInput(
            "the body is not gzip data although Content-Encoding says gzip",
            [ItemError(None, "Content-Encoding", f"gzip: {exc}")],
        ) from exc
    if len(out) > limit or inflater.unconsumed_tail:
        raise MalformedInput(
            f"the gzip body inflates to more than {limit} bytes (setting RAGMETA_MAX_REQUEST_BYTES)",
            [ItemError(None, "body", f"inflates to more than {limit} bytes")],
        )
    if not inflater.eof:
        raise MalformedInput(
            "the gzip body is truncated", [ItemError(None, "Content-Encoding", "gzip stream ends early")]
        )
    return out


def _hex_to_b64(value: Any, where: str, size: int, required: bool) -> Any:
    if value in (None, "") and not required:
        return value
    if not isinstance(value, str):
        raise MalformedInput(
            f"{where} is not a hex string", [ItemError(None, where, f"a string of {size * 2} hex digits")]
        )
    try:
        raw = bytes.fromhex(value)
    except ValueError as exc:
        raise MalformedInput(
            f"{where} is not hex", [ItemError(None, where, f"{value[:40]!r} is not {size * 2} hex digits")]
        ) from exc
    if len(raw) != size:
        raise MalformedInput(
            f"{where} has {len(raw)} bytes, not {size}",
            [ItemError(None, where, f"{len(raw) * 2} hex digits, expected {size * 2}")],
        )
    return base64.b64encode(raw).decode("ascii")


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedInput(f"{where} is not a list", [ItemError(None, where, "expected a list")])
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedInput(f"{where} is not an object", [ItemError(None, where, "expected an object")])
    return value


def parse_json(raw: bytes, max_depth: int = MAX_JSON_DEPTH) -> ExportTraceServiceRequest:
    # Not UTF-8, not JSON, too deep, NaN: 400; a string holding NUL: 422 naming where (services.nul).
    check_json(raw, max_depth)
    doc = json.loads(raw)
    doc = _object(doc, "body")
    for i, rs in enumerate(_list(doc.get("resourceSpans"), "resourceSpans")):
        rs = _object(rs, f"resourceSpans[{i}]")
        for j, ss in enumerate(_list(rs.get("scopeSpans"), f"resourceSpans[{i}].scopeSpans")):
            ss = _object(ss, f"resourceSpans[{i}].scopeSpans[{j}]")
            for k, sp in enumerate(_list(ss.get("spans"), f"resourceSpans[{i}].scopeSpans[{j}].spans")):
                where = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                sp = _object(sp, where)
                for key, size, required in (
                    ("traceId", 16, True),
                    ("spanId", 8, True),
                    ("parentSpanId", 8, False),
                ):
                    if key in sp or required:
                        sp[key] = _hex_to_b64(sp.get(key), f"{where}.{key}", size, required)
                for n, link in enumerate(_list(sp.get("links"), f"{where}.links")):
                    link = _object(link, f"{where}.links[{n}]")
                    link["traceId"] = _hex_to_b64(
                        link.get("traceId"), f"{where}.links[{n}].traceId", 16, True
                    )
                    link["spanId"] = _hex_to_b64(link.get("spanId"), f"{where}.links[{n}].spanId", 8, True)
    message = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(doc, message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise MalformedInput(
            "the body is not an OTLP ExportTraceServiceRequest",
            [ItemError(None, _part(doc, str(exc)), str(exc).split("....")[0])],
        ) from exc
    return message


_FIELD = re.compile(r"Failed to parse (\w+) field")


def _chain(message: str) -> list[str]:
    return _FIELD.findall(message)


def _part(doc: dict[str, Any], message: str) -> str:
    """Where protobuf's JSON parser failed, with indices: it names the fields on the way ("Failed to parse
    resourceSpans field: Failed to parse scopeSpans field: ... name field"), not the list positions, so
    each resource, scope and span is parsed alone until one fails."""
    chain = _chain(message)
    for i, rs in enumerate(doc.get("resourceSpans") or []):
        if "resource" in rs:
            try:
                json_format.ParseDict(rs["resource"], resource_pb2.Resource(), ignore_unknown_fields=True)
            except json_format.ParseError as exc:
                return ".".join([f"resourceSpans[{i}].resource", *_chain(str(exc))])
        for j, ss in enumerate(rs.get("scopeSpans") or []):
            for k, sp in enumerate(ss.get("spans") or []):
                try:
                    json_format.ParseDict(sp, trace_pb2.Span(), ignore_unknown_fields=True)
                except json_format.ParseError as exc:
                    return ".".join([f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]", *_chain(str(exc))])
            if "scope" in ss:
                try:
                    json_format.ParseDict(
                        ss["scope"], common_pb2.InstrumentationScope(), ignore_unknown_fields=True
                    )
                except json_format.ParseError as exc:
                    return ".".join([f"resourceSpans[{i}].scopeSpans[{j}].scope", *_chain(str(exc))])
    return ".".join(chain) or "body"


def parse_protobuf(raw: bytes) -> ExportTraceServiceRequest:
    message = ExportTraceServiceRequest()
    try:
        message.ParseFromString(raw)
    except DecodeError as exc:
        raise MalformedInput(
            "the body is not a protobuf ExportTraceServiceRequest", [ItemError(None, "body", str(exc))]
        ) from exc
    return message


def value_of(v: AnyValue, depth: int = 0) -> Any:
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind in ("array_value", "kvlist_value") and depth >= _MAX_VALUE_DEPTH:
        return json_format.MessageToJson(v, indent=None)
    if kind == "array_value":
        return [value_of(x, depth + 1) for x in v.array_value.values]
    if kind == "kvlist_value":
        return attributes_of(v.kvlist_value.values, depth + 1)
    if kind == "bytes_value":
        return base64.b64encode(v.bytes_value).decode("ascii")
    return getattr(v, kind)


def attributes_of(items: Any, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in items:
        assert isinstance(kv, KeyValue)
        out[kv.key] = value_of(kv.value, depth)
    return out


def decode(raw: bytes, ctype: str, max_depth: int = MAX_JSON_DEPTH) -> list[Span]:
    """The spans of a request body of media type ``ctype`` (``media_type``); MalformedInput naming the
    part that does not decode or whose ids are not OTLP ids, InvalidItems naming text that holds NUL."""
    message = parse_protobuf(raw) if ctype == PROTOBUF else parse_json(raw, max_depth)
    spans: list[Span] = []
    for i, rs in enumerate(message.resource_spans):
        resource = attributes_of(rs.resource.attributes)
        for j, ss in enumerate(rs.scope_spans):
            for k, sp in enumerate(ss.spans):
                where = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                for name, value, size in (("traceId", sp.trace_id, 16), ("spanId", sp.span_id, 8)):
                    if len(value) != size or not any(value):
                        raise MalformedInput(
                            f"{where}.{name} is not a valid id",
                            [
                                ItemError(
                                    None,
                                    f"{where}.{name}",
                                    f"{len(value)} bytes, expected {size} not all zero",
                                )
                            ],
                        )
                if sp.parent_span_id and len(sp.parent_span_id) != 8:
                    raise MalformedInput(
                        f"{where}.parentSpanId is not a valid id",
                        [
                            ItemError(
                                None, f"{where}.parentSpanId", f"{len(sp.parent_span_id)} bytes, expected 8"
                            )
                        ],
                    )
                error = (sp.status.message or "error") if sp.status.code == 2 else None
                attributes = attributes_of(sp.attributes)
                held = nul_fields({"name": sp.name, "attributes": attributes}, where)
                if held:
                    raise nul_refusal([ItemError(None, f, REASON) for f in held], "a span")
                spans.append(
                    Span(
                        trace_id=binascii.hexlify(sp.trace_id).decode(),
                        span_id=binascii.hexlify(sp.span_id).decode(),
                        parent_id=binascii.hexlify(sp.parent_span_id).decode() if sp.parent_span_id else None,
                        name=sp.name,
                        start_ns=sp.start_time_unix_nano,
                        end_ns=sp.end_time_unix_nano,
                        attributes=attributes,
                        resource=resource,
                        error=error,
                        where=where,
                    )
                )
    return spans


def response_protobuf(rejected_spans: int, error_message: str) -> bytes:
    """An ``ExportTraceServiceResponse`` with OTLP's partial success: the answer to a protobuf request."""
    out = ExportTraceServiceResponse()
    if rejected_spans or error_message:
        out.partial_success.rejected_spans = rejected_spans
        out.partial_success.error_message = error_message
    body: bytes = out.SerializeToString()
    return body
