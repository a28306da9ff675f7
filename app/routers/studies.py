"""A team's own study in one import: a Ragas, RAGChecker, DeepEval or plain file, optionally with a corpus
and gold passages."""

from __future__ import annotations

import json
from functools import partial
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from pydantic import ValidationError

from app.deps import CommittingRoute, SettingsDep, run_in_session
from app.errors import responses
from app.resources import get_resources
from app.uploads import check_form_text, form_names, read_form_file, upload_body
from services.db import run_transaction
from services.errors import InvalidItems, ItemError, MalformedInput
from services.studies import plan as study_plan
from services.studies import service, writer
from services.studies.schemas import StudyFormat, StudyImportRead, StudyOptions
from services.types import MAX_ID
from services.validation import loc_to_field

router = APIRouter(tags=["studies"], route_class=CommittingRoute)
# A plan made against a snapshot that another import changed before this one could write is made again.
ATTEMPTS = 3


def _json_object(value: str | None, field: str) -> Any:
    try:
        return json.loads(value) if value else {}
    except json.JSONDecodeError as exc:
        raise MalformedInput(f"{field} is not JSON", [ItemError(None, field, exc.msg)]) from exc


async def study_options(
    request: Request,
    dataset: Annotated[
        str | None, Form(description="dataset name: created, or added to if it exists")
    ] = None,
    dataset_id: Annotated[
        int | None, Form(ge=1, le=MAX_ID, description="an existing dataset to add to")
    ] = None,
    language: Annotated[str, Form(description="language of a new dataset")] = "en",
    run: Annotated[str | None, Form(description="name of the new run (default: the file name)")] = None,
    format: Annotated[StudyFormat, Form(description="auto detects Ragas, RAGChecker and DeepEval")] = "auto",
    columns: Annotated[
        str | None,
        Form(description='plain files: a JSON object field -> column, e.g. {"question": "Frage"}'),
    ] = None,
    list_separator: Annotated[str | None, Form(description="plain files: list cells joined with it")] = None,
    fuzzy_threshold: Annotated[float, Form(description="minimum fuzzy match score, 0-100")] = 90.0,
    fuzzy_word_changes: Annotated[
        str,
        Form(
            description="a gold passage found by a fuzzy match that changes a word: error refuses the "
            "import naming the question and the words; warn (default) imports it with a note the runs' "
            "reports repeat"
        ),
    ] = "warn",
    higher_is_better: Annotated[str | None, Form(description="comma-separated metric columns")] = None,
    lower_is_better: Annotated[str | None, Form(description="comma-separated metric columns")] = None,
    scores: Annotated[str, Form(description="auto: import the file's metric columns; skip: do not")] = "auto",
    ratings_columns: Annotated[
        str | None,
        Form(description='ratings files: a JSON object field -> column, e.g. {"question_id": "ID"}'),
    ] = None,
    ratings_join: Annotated[
        str,
        Form(
            description="auto: a rating finds its question by question_id, else by its text; order: rows "
            "naming neither match the run's questions by position"
        ),
    ] = "auto",
    preferences_columns: Annotated[
        str | None,
        Form(description='preference files: a JSON object field -> column, e.g. {"preference": "Choix"}'),
    ] = None,
) -> StudyOptions:
    """The import's form fields (beside its files) as the import's options; 422 naming the field."""
    # The form is parsed already (FastAPI read the fields from it): this reads no body.
    check_form_text(await request.form())
    mapping = _json_object(columns, "columns")
    rating_mapping = _json_object(ratings_columns, "ratings_columns")
    preference_mapping = _json_object(preferences_columns, "preferences_columns")
    try:
        return StudyOptions(
            dataset=dataset,
            dataset_id=dataset_id,
            language=language,
            run=run,
            format=format,
            columns=mapping,
            list_separator=list_separator,
            fuzzy_threshold=fuzzy_threshold,
            fuzzy_word_changes=fuzzy_word_changes,
            higher_is_better=form_names(higher_is_better),
            lower_is_better=form_names(lower_is_better),
            scores=scores,
            ratings_columns=rating_mapping,
            ratings_join=ratings_join,
            preferences_columns=preference_mapping,
        )
    except ValidationError as exc:
        raise InvalidItems(
            "the import options are not valid",
            [ItemError(None, loc_to_field(e["loc"]), e["msg"]) for e in exc.errors(include_url=False)],
        ) from exc


@router.post(
    "/studies/import",
    status_code=201,
    response_model=StudyImportRead,
    responses=responses(400, 404, 409, 413, 415, 422),
    openapi_extra=upload_body(),
)
async def import_study(
    request: Request,
    settings: SettingsDep,
    file: Annotated[
        list[UploadFile],
        File(
            description="the study: Ragas rows (JSON, JSONL or Ragas' CSV), RAGChecker input/results JSON, "
            "DeepEval test cases / goldens (JSON, JSONL, CSV), or a plain CSV/JSONL with one row per "
            "question. Several files (the field repeated) are several runs of the same questions, each "
            "named after its file"
        ),
    ],
    options: Annotated[StudyOptions, Depends(study_options)],
    corpus: Annotated[
        UploadFile | None,
        File(description="documents (JSON/JSONL {external_id, title, text}) or a .zip/.tar.gz of text files"),
    ] = None,
    passages: Annotated[
        UploadFile | None,
        File(
            description="gold passages beside the file: {question_id, text} or {question_id, document_id, "
            "start, end}, one per row"
        ),
    ] = None,
    ratings: Annotated[
        list[UploadFile] | None,
        File(
            description="human ratings of the runs' outputs (JSON, JSONL, CSV): {question_id | question, "
            "rater, score, rubric?, comment?, run?}; `run` names the run (its file's name) when there are "
            "several; raters are registered as needed"
        ),
    ] = None,
    preferences: Annotated[
        list[UploadFile] | None,
        File(
            description="pairwise preferences between two runs' answers (JSON, JSONL, CSV): {question_id | "
            "question, rater, preference, run_a?, run_b?, rubric?, comment?}; run_a and run_b name two of "
            "the runs (default with two runs: the first file's and the second's); the preference is on the "
            "rubric's scale, its high end for run B (default preference-b-over-a, -2..2)"
        ),
    ] = None,
) -> StudyImportRead:
    """Create (or add to) a dataset, its questions with reference answers and gold passages, a run with its
    outputs and the file's metric columns, in one atomic import (with ratings and pairwise preferences of
    the runs' answers when given).

    Passages and chunks given as text are located in the corpus: exact, then Unicode- and
    whitespace-normalised, then fuzzy (rapidfuzz, at least `fuzzy_threshold`); each records how it was found
    and its score. A gold passage that cannot be found rejects the import (its question and best score are
    named); so does, with `fuzzy_word_changes=error`, one found by a fuzzy match that changes a word (the
    answer's `located_passages` lists every passage not found verbatim, with the words that differ); a
    retrieved chunk that cannot be found is kept as unlocated. Without a corpus, the dataset's
    documents are used, or documents are derived from the contexts (said in `notes`).
    """
    limit = settings.max_upload_bytes
    studies = [(await read_form_file(f, "file", limit) or b"", f.filename) for f in file]
    files = study_plan.StudyFiles(
        study=studies[0][0],
        study_name=studies[0][1],
        more=studies[1:],
        ratings=[(await read_form_file(f, "ratings", limit) or b"", f.filename) for f in ratings or []],
        preferences=[
            (await read_form_file(f, "preferences", limit) or b"", f.filename) for f in preferences or []
        ],
        corpus=await read_form_file(corpus, "corpus", limit),
        corpus_name=corpus.filename if corpus else None,
        passages=await read_form_file(passages, "passages", limit),
        passages_name=passages.filename if passages else None,
    )
    return await _plan_and_write(request, files, options, limit)


async def _plan_and_write(
    request: Request, files: study_plan.StudyFiles, options: StudyOptions, limit: int
) -> StudyImportRead:
    """A short read, planning (parsing, locating: CPU) outside any transaction, then one short write; a
    plan whose snapshot another import changed is made again."""
    state = get_resources(request)
    for attempt in range(1, ATTEMPTS + 1):
        snap = await anyio.to_thread.run_sync(
            partial(run_transaction, state.read_session_factory, service.snapshot, options)
        )
        plan = await anyio.to_thread.run_sync(
            service.plan, snap, files, options, limit, limiter=state.import_limiter
        )
        try:
            return await run_in_session(request, writer.write, plan)
        except study_plan.StaleSnapshot:
            if attempt == ATTEMPTS:
                raise
    raise AssertionError("unreachable")
