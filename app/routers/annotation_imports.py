"""Annotation and score exports of Langfuse, Opik, Phoenix and MLflow onto a run's outputs."""

from __future__ import annotations

import json
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from pydantic import ValidationError

from app.deps import CommittingRoute, RunId, SettingsDep, run_in_session
from app.errors import responses
from app.resources import get_resources
from app.uploads import check_form_text, form_names, read_form_file, upload_body
from services.annotations import platforms
from services.annotations.schemas import AnnotationImportRead, AnnotationOptions, Platform
from services.annotations.service import import_annotations
from services.errors import InvalidItems, ItemError, MalformedInput
from services.validation import loc_to_field

router = APIRouter(tags=["annotations"], route_class=CommittingRoute)


async def annotation_options(
    request: Request,
    platform: Annotated[Platform, Form(description="the platform that wrote the export")],
    human: Annotated[
        str | None, Form(description="the human score that becomes the ratings, when there are several")
    ] = None,
    rubric: Annotated[
        str | None, Form(description="an existing rubric for the ratings (default: inferred from configs)")
    ] = None,
    raters: Annotated[
        str | None, Form(description='a JSON object author -> rater name, e.g. {"u-17": "alice"}')
    ] = None,
    higher_is_better: Annotated[str | None, Form(description="comma-separated judge scores")] = None,
    lower_is_better: Annotated[str | None, Form(description="comma-separated judge scores")] = None,
) -> AnnotationOptions:
    """The form's fields as the import's options; 422 naming the field."""
    check_form_text(await request.form())
    try:
        mapping: Any = json.loads(raters) if raters else {}
    except json.JSONDecodeError as exc:
        raise MalformedInput("raters is not JSON", [ItemError(None, "raters", exc.msg)]) from exc
    try:
        return AnnotationOptions(
            platform=platform,
            human=human or None,
            rubric=rubric or None,
            raters=mapping,
            higher_is_better=form_names(higher_is_better),
            lower_is_better=form_names(lower_is_better),
        )
    except ValidationError as exc:
        raise InvalidItems(
            "the import options are not valid",
            [ItemError(None, loc_to_field(e["loc"]), e["msg"]) for e in exc.errors(include_url=False)],
        ) from exc


@router.post(
    "/runs/{run_id}/annotations",
    response_model=AnnotationImportRead,
    responses=responses(400, 404, 409, 413, 415, 422),
    openapi_extra=upload_body(),
)
async def import_run_annotations(
    run_id: RunId,
    request: Request,
    settings: SettingsDep,
    file: Annotated[
        UploadFile,
        File(
            description="the export (JSON or JSON lines): Langfuse scores ({data: [Score]}), Opik traces "
            "with feedback_scores ({content: [TracePublic]}), Phoenix span or trace annotations ({data: "
            "[SpanAnnotation]}), MLflow assessments (Assessment.to_dictionary(), or traces holding them)"
        ),
    ],
    options: Annotated[AnnotationOptions, Depends(annotation_options)],
    configs: Annotated[
        UploadFile | None,
        File(
            description="the platform's score configurations, giving the human score's scale and the "
            "labels' values: Langfuse score configs, Opik feedback definitions, Phoenix annotation configs"
        ),
    ] = None,
) -> AnnotationImportRead:
    """Human annotations and judge scores exported from Langfuse, Opik, Phoenix or MLflow onto the run's
    outputs, joined by the trace ids the outputs came in with (POST /v1/traces).

    The human scores of one name become the run's ratings under their authors (registered as raters, or
    renamed with `raters`), on the rubric named by `rubric` or one inferred from the score's configuration
    (numeric with integer bounds, categorical with integer values, boolean: 0..1). Every judge score (Langfuse
    EVAL and API, Opik sdk and online_scoring, Phoenix LLM and CODE, MLflow LLM_JUDGE and CODE) becomes the
    metric `external.<platform>.<name>`; one whose direction is unknown is listed in `not_imported` until
    `higher_is_better` or `lower_is_better` names it. Imported again, the same file changes nothing."""
    limit = settings.max_upload_bytes
    raw = await read_form_file(file, "file", limit) or b""
    raw_configs = await read_form_file(configs, "configs", limit)
    state = get_resources(request)
    parsed = await anyio.to_thread.run_sync(
        platforms.parse, options.platform, raw, raw_configs, limiter=state.import_limiter
    )
    return await run_in_session(request, import_annotations, run_id, parsed, options)
