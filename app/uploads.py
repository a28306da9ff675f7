"""Reading a batch from a request: JSON/JSONL/CSV body or a multipart file, under the size limit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import Request
from starlette.datastructures import FormData, UploadFile

from services.errors import ItemError, MalformedInput, PayloadTooLarge
from services.ingest import Format, Row, guess_format, parse_rows
from services.nul import check_pairs


def too_large(limit: int, field: str = "body") -> PayloadTooLarge:
    what = "upload" if field == "body" else field
    return PayloadTooLarge(
        f"{what} exceeds the limit of {limit} bytes (setting RAGMETA_MAX_UPLOAD_BYTES)",
        [ItemError(None, field, f"more than {limit} bytes")],
    )


async def read_form_file(upload: UploadFile | None, field: str, limit: int) -> bytes | None:
    """A form's file part read whole, refused (413 naming ``field``) past ``limit`` bytes."""
    if upload is None:
        return None
    raw = await upload.read(limit + 1)
    if len(raw) > limit:
        raise too_large(limit, field)
    return raw


def form_names(value: str | None) -> list[str]:
    """A form field's comma-separated names, blanks dropped."""
    return [v.strip() for v in (value or "").split(",") if v.strip()]


@dataclass(frozen=True)
class Upload:
    """The bytes of a batch, read from the request; parsing is CPU work and belongs in a worker thread."""

    raw: bytes
    fmt: Format
    field: str

    def rows(self) -> list[Row]:
        """The batch's rows; 400 for a body of only whitespace (checked here: scanning up to the upload
        limit is work for the thread, not the event loop)."""
        if self.raw.isspace():
            raise MalformedInput(f"{self.field} is empty", [ItemError(None, self.field, "no data")])
        return parse_rows(self.raw, self.fmt, self.field)


async def read_upload(
    request: Request, limit: int, allowed: tuple[Format, ...] = ("json", "jsonl")
) -> Upload:
    """Read the request's batch (body or multipart file); raises 413 before reading a body announced as
    too large, 415 for a format the endpoint does not read and 400 for an empty one."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    ctype = request.headers.get("content-type", "")
    if ctype.startswith("multipart/form-data"):
        # The form owns spooled temporary files: close it as soon as the bytes are read.
        async with request.form(max_part_size=limit) as form:
            upload = form.get("file")
            if not isinstance(upload, UploadFile):
                raise MalformedInput(
                    "multipart upload needs a file field named 'file'", [ItemError(None, "file", "missing")]
                )
            raw = await upload.read(limit + 1)
            check_form_text(form)
        if len(raw) > limit:
            raise too_large(limit)
        fmt = guess_format(upload.content_type, upload.filename)
        field = "file"
    else:
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise too_large(limit)
            chunks.append(chunk)
        raw = b"".join(chunks)
        fmt = guess_format(ctype, None)
        field = "body"
    if fmt not in allowed:
        raise MalformedInput(
            f"this endpoint reads {', '.join(allowed)}, not {fmt}",
            [ItemError(None, field, f"{fmt} not accepted")],
        )
    if not raw:
        raise MalformedInput(f"{field} is empty", [ItemError(None, field, "no data")])
    return Upload(raw, fmt, field)


def declares_upload(openapi_extra: dict[str, Any] | None) -> bool:
    """Whether a route's OpenAPI extra (``batch_body``, ``upload_body``) says that it reads a batch upload
    itself: the request guard then streams its body under the upload limit, not the plain-body one."""
    content = (openapi_extra or {}).get("requestBody", {}).get("content", {})
    return "multipart/form-data" in content


def upload_body() -> dict[str, Any]:
    """OpenAPI extra of an endpoint whose multipart form (declared by its ``File`` parameters) is a batch
    upload: FastAPI merges it into the schema it derives; the request guard sees the route as an upload."""
    return {"requestBody": {"content": {"multipart/form-data": {}}}}


def check_form_text(form: FormData) -> None:
    """Refuse a multipart form whose text fields or file names hold NUL, naming the field (file contents are
    checked where they are parsed)."""
    pairs = [
        (name, value.filename or "" if isinstance(value, UploadFile) else value)
        for name, value in form.multi_items()
    ]
    check_pairs(pairs, "", "the form")


def batch_body(item_schema: dict[str, Any], csv: bool = False) -> dict[str, Any]:
    """OpenAPI requestBody for endpoints that take a JSON list, JSONL, (CSV) or a multipart file."""
    content: dict[str, Any] = {
        "application/json": {"schema": {"type": "array", "items": item_schema, "minItems": 1}},
        "application/x-ndjson": {"schema": {"type": "string", "description": "one JSON object per line"}},
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "properties": {"file": {"type": "string", "format": "binary"}},
                "required": ["file"],
            }
        },
    }
    if csv:
        content["text/csv"] = {"schema": {"type": "string", "description": "CSV with a header row"}}
    return {"requestBody": {"required": True, "content": content}}
