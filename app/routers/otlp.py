"""OpenTelemetry traces of a RAG application (OTLP/HTTP, protobuf or JSON) as the outputs of a run."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Header, Request, Response

from app.deps import CommittingRoute, run_in_session
from app.errors import responses
from app.resources import get_resources
from services.db import run_transaction
from services.otlp import decode, mapping, service
from services.otlp.schemas import TRACES_PATH, TraceIngestRead
from services.studies.plan import StaleSnapshot

router = APIRouter(tags=["traces"], route_class=CommittingRoute)
ATTEMPTS = 3


def _body() -> dict[str, Any]:
    """The request body: the two encodings OTLP/HTTP defines."""
    return {
        "requestBody": {
            "required": True,
            "content": {
                decode.PROTOBUF: {
                    "schema": {
                        "type": "string",
                        "format": "binary",
                        "description": "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest",
                    }
                },
                decode.JSON: {
                    "schema": {
                        "type": "object",
                        "description": "ExportTraceServiceRequest, OTLP JSON encoding (hex ids)",
                        "properties": {"resourceSpans": {"type": "array", "items": {"type": "object"}}},
                    }
                },
            },
        }
    }


def _decode_and_map(raw: bytes, ctype: str, encoding: str | None, limit: int, depth: int) -> mapping.Mapped:
    return mapping.map_spans(decode.decode(decode.inflate(raw, encoding, limit), ctype, depth))


@router.post(
    TRACES_PATH,
    response_model=TraceIngestRead,
    responses={
        **responses(400, 404, 409, 415, 422),
        200: {
            "description": "What became of the traces; a protobuf request is answered with an "
            "ExportTraceServiceResponse (OTLP's partial success) unless it accepts application/json",
            "content": {decode.PROTOBUF: {"schema": {"type": "string", "format": "binary"}}},
        },
    },
    openapi_extra=_body(),
)
async def export_traces(
    request: Request,
    x_ragmeta_dataset: Annotated[
        str | None, Header(description="name of the dataset whose outputs the traces are (it must exist)")
    ] = None,
    x_ragmeta_run: Annotated[
        str | None, Header(description="name of the run: created on the first request, added to after")
    ] = None,
    content_encoding: Annotated[str | None, Header(description="gzip or none")] = None,
) -> Any:
    """OTLP/HTTP trace export, as OpenTelemetry's exporters send it (point
    `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` here and name the target in `OTEL_EXPORTER_OTLP_TRACES_HEADERS`):
    each trace whose spans follow the OpenInference or GenAI (OpenLLMetry) conventions becomes an output of
    the run: the question from the root (or first LLM) span's input, the answer from the last LLM span's
    output, the retrieved chunks, with their scores, from the retriever spans, located in the dataset's
    documents as the study import locates them. Spans that give no part of an output are counted and named
    (`unmapped`, and OTLP's `partialSuccess.rejectedSpans`). Sending a trace again changes nothing.
    """
    ctype = decode.media_type(request.headers.get("content-type"))
    where = service.target(x_ragmeta_dataset, x_ragmeta_run)
    state = get_resources(request)
    raw = await request.body()
    limit = state.settings.max_request_bytes
    mapped = await anyio.to_thread.run_sync(
        _decode_and_map,
        raw,
        ctype,
        content_encoding,
        limit,
        state.settings.max_json_depth,
        limiter=state.import_limiter,
    )
    result: TraceIngestRead | None = None
    for attempt in range(1, ATTEMPTS + 1):
        snap = await anyio.to_thread.run_sync(
            partial(run_transaction, state.read_session_factory, service.snapshot, where)
        )
        plan = await anyio.to_thread.run_sync(service.plan, snap, where, mapped, limiter=state.import_limiter)
        try:
            result = await run_in_session(request, service.write, plan)
            break
        except StaleSnapshot:
            if attempt == ATTEMPTS:
                raise
    assert result is not None
    if ctype == decode.PROTOBUF and decode.JSON not in request.headers.get("accept", ""):
        body = decode.response_protobuf(
            result.partial_success.rejected_spans, result.partial_success.error_message
        )
        return Response(content=body, media_type=decode.PROTOBUF)
    return result
