"""One-step study import: a Ragas, RAGChecker, DeepEval or plain file (and optionally a corpus and gold
passages) becomes, atomically, a dataset (or additions to one), its questions with reference answers and
gold passages, a run with its outputs, and the metric columns of the file as imported scores.

Three phases keep the write transaction short, as every write path of the service must:
1. ``snapshot`` (a short read): the dataset's documents, questions and passages, and a stamp of them;
2. ``plan`` (no database): parse, locate every passage and chunk given as text (services.corpus), validate;
   every bad row is listed (InvalidItems) and nothing is written;
3. ``write`` (one short transaction): checks the stamp (StaleSnapshot when another request changed the
   dataset meanwhile: plan again) and writes everything with multi-row INSERTs.
``import_study`` runs the three on one session.

Without a corpus, documents are taken from the dataset; a dataset without documents (or holding only
documents derived earlier) gets documents derived from the contexts: one per distinct context that is not
part of a longer one, so a gold passage and a retrieved chunk with words in common overlap by position.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from sqlalchemy.orm import Session

from services.corpus import Corpus, Match
from services.csvread import to_float
from services.errors import Conflict, InvalidItems, ItemError, NotFound
from services.models import (
    Dataset,
    Document,
    MetricScore,
    Output,
    Passage,
    Question,
    RetrievedChunk,
    Run,
    utcnow,
)
from services.scores.external import (
    ExternalMetric,
    detect_library,
    directions,
    metric_columns,
    resolve,
    score_row,
)
from services.studies.files import CorpusDoc, read_corpus, read_passages
from services.studies.formats import Context, ParsedStudy, StudyRow, parse_study
from services.studies.repository import StoredDocument, StoredPassage, StoredQuestion, StudyRepository
from services.studies.schemas import (
    CorpusInfo,
    Counts,
    DatasetRef,
    FileInfo,
    Located,
    QuestionCounts,
    RunRef,
    ScoresInfo,
    StudyImportRead,
    StudyOptions,
)
from services.validation import invalid_rows

DERIVED = "contexts"


class StaleSnapshot(Conflict):
    """The dataset changed between the snapshot and the write: plan again."""


@dataclass
class StudyFiles:
    study: bytes
    study_name: str | None = None
    corpus: bytes | None = None
    corpus_name: str | None = None
    passages: bytes | None = None
    passages_name: str | None = None


@dataclass
class Snapshot:
    dataset_id: int | None
    dataset_name: str
    language: str
    stamp: tuple[Any, ...] | None
    documents: list[StoredDocument]
    questions: list[StoredQuestion]
    passages: list[StoredPassage]


def snapshot(session: Session, options: StudyOptions) -> Snapshot:
    """What the import needs to know of the dataset (nothing when it does not exist yet)."""
    repo = StudyRepository(session)
    if options.dataset_id is not None:
        ds = repo.dataset(options.dataset_id)
        if ds is None:
            raise NotFound(f"dataset {options.dataset_id} does not exist")
    else:
        assert options.dataset is not None
        ds = repo.dataset_by_name(options.dataset)
        if ds is None:
            return Snapshot(None, options.dataset, options.language, None, [], [], [])
    if options.run is not None:
        _check_run_name(repo, ds.id, options.run)
    return Snapshot(
        ds.id,
        ds.name,
        ds.language,
        repo.stamp(ds.id),
        repo.documents(ds.id),
        repo.questions(ds.id),
        repo.passages(ds.id),
    )


def _check_run_name(repo: StudyRepository, dataset_id: int, name: str) -> None:
    run = repo.run_by_name(dataset_id, name)
    if run is not None:
        raise Conflict(
            f"dataset {dataset_id} already has a run named {name!r} (id {run.id}); choose another run name",
            [ItemError(None, "run", f"already taken by run {run.id}")],
        )


@dataclass
class DocPlan:
    external_id: str
    title: str | None
    text: str
    meta: dict[str, Any]
    stored_id: int | None
    action: str  # create | update | keep


@dataclass
class SpanPlan:
    doc: int | None  # index into Plan.documents
    start: int | None
    end: int | None
    how: str
    score: float | None
    text: str = ""


@dataclass
class QuestionPlan:
    external_id: str
    question: str
    reference_answer: str | None
    answerable: bool
    types: list[str]
    meta: dict[str, Any]
    passages: list[SpanPlan] | None  # None: keep the stored ones
    stored_id: int | None
    action: str


@dataclass
class OutputPlan:
    question: int  # index into Plan.questions
    answer: str
    chunks: list[SpanPlan]
    scores: dict[str, float | None]


@dataclass
class Plan:
    snapshot: Snapshot
    options: StudyOptions
    format: str
    file: FileInfo
    run_name: str | None
    corpus_source: str
    corpus_name: str | None
    documents: list[DocPlan]
    questions: list[QuestionPlan]
    outputs: list[OutputPlan]
    metrics: list[ExternalMetric]
    library: str
    not_imported: list[str]
    document_counts: Counts
    notes: list[str] = field(default_factory=list)


def _question_key(text: str) -> str:
    return "q-" + hashlib.sha1(text.strip().encode("utf-8")).hexdigest()[:12]


def _doc_key(text: str) -> str:
    return "context-" + hashlib.sha1(text.strip().encode("utf-8")).hexdigest()[:12]


def _field(row: StudyRow, name: str, default: str) -> str:
    return row.source.get(name, default)


def _merge_corpus(
    snap: Snapshot, corpus: list[CorpusDoc] | None, errors: list[ItemError]
) -> tuple[list[DocPlan], int, int, int]:
    docs = [DocPlan(d.external_id, d.title, d.text, d.meta, d.id, "keep") for d in snap.documents]
    if corpus is None:
        return docs, 0, 0, 0
    by_ext = {d.external_id: i for i, d in enumerate(docs)}
    ends: dict[int, int] = {}
    for p in snap.passages:
        ends[p.document_id] = max(ends.get(p.document_id, 0), p.end)
    created = updated = unchanged = 0
    for d in corpus:
        i = by_ext.get(d.external_id)
        if i is None:
            by_ext[d.external_id] = len(docs)
            docs.append(DocPlan(d.external_id, d.title, d.text, d.metadata, None, "create"))
            created += 1
            continue
        old = docs[i]
        if (old.title, old.text, old.meta) == (d.title, d.text, d.metadata):
            unchanged += 1
            continue
        assert old.stored_id is not None
        if ends.get(old.stored_id, 0) > len(d.text):
            errors.append(
                ItemError(
                    None,
                    f"corpus.{d.external_id}",
                    f"new text has {len(d.text)} characters but a stored passage ends at "
                    f"{ends[old.stored_id]}",
                )
            )
        docs[i] = DocPlan(d.external_id, d.title, d.text, d.metadata, old.stored_id, "update")
        updated += 1
    return docs, created, updated, unchanged


def _derive(docs: list[DocPlan], texts: list[str]) -> dict[str, SpanPlan]:
    """Documents made from the contexts: each distinct text becomes a document unless it lies inside a
    longer one (or an earlier derived document); returns where every text lies."""
    pool = [d.text for d in docs]
    known = set(pool)
    distinct = sorted({t.strip() for t in texts if t.strip()} - known, key=lambda t: (-len(t), t))
    first_new = len(pool)
    pool += distinct
    corpus = Corpus(pool)
    kept = set(range(first_new))
    where: dict[str, SpanPlan] = {}
    cands = corpus.candidates(distinct, limit=16)
    for offset, text in enumerate(distinct):
        i = first_new + offset

        def allowed(d: int, i: int = i) -> bool:
            return d in kept and d != i

        m = corpus.locate(text, cands[offset], threshold=None, allowed=allowed)
        if m.located:
            assert m.doc is not None
            where[text] = SpanPlan(m.doc, m.start, m.end, m.how, m.score)
        else:
            kept.add(i)
            where[text] = SpanPlan(i, 0, len(text), "exact", 100.0)
    renumber: dict[int, int] = {}
    for i in sorted(kept):
        if i >= first_new:
            renumber[i] = len(docs)
            docs.append(DocPlan(_doc_key(pool[i]), None, pool[i], {"derived_from": DERIVED}, None, "create"))
        else:
            renumber[i] = i
    for span in where.values():
        assert span.doc is not None
        span.doc = renumber[span.doc]
    # Texts equal to an existing document.
    for i, d in enumerate(docs[:first_new]):
        where.setdefault(d.text.strip(), SpanPlan(i, 0, len(d.text), "exact", 100.0))
    return where


class _Locator:
    """Locates the import's texts in the planned documents, batching the candidate search."""

    def __init__(self, docs: list[DocPlan], threshold: float) -> None:
        self.docs = docs
        self.by_ext = {d.external_id: i for i, d in enumerate(docs)}
        self.corpus = Corpus([d.text for d in docs])
        self.threshold = threshold
        self._cands: dict[str, list[int]] = {}
        self._memo: dict[tuple[str, int | None], Match] = {}

    def prepare(self, texts: Sequence[str]) -> None:
        todo = sorted({t.strip() for t in texts if t.strip()} - set(self._cands))
        for t, c in zip(todo, self.corpus.candidates(todo), strict=True):
            self._cands[t] = c

    def locate(self, text: str, hint: str | None) -> Match:
        needle = text.strip()
        h = self.by_ext.get(hint) if hint is not None else None
        key = (needle, h)
        if key not in self._memo:
            if needle not in self._cands:
                self.prepare([needle])
            self._memo[key] = self.corpus.locate(needle, self._cands[needle], h, self.threshold)
        return self._memo[key]


def _given(ctx: Context, locator_docs: dict[str, int], docs: list[DocPlan]) -> SpanPlan | str:
    """A passage or chunk given by offsets: checked against its document."""
    assert ctx.document_id is not None and ctx.start is not None and ctx.end is not None
    i = locator_docs.get(ctx.document_id)
    if i is None:
        return f"unknown document {ctx.document_id!r}"
    text = docs[i].text
    if not 0 <= ctx.start < ctx.end:
        return f"offsets {ctx.start}:{ctx.end} are not a span (0 <= start < end)"
    if ctx.end > len(text):
        return f"end {ctx.end} is beyond the length {len(text)} of document {ctx.document_id!r}"
    span = text[ctx.start : ctx.end]
    if not span.strip():
        return "the span holds only whitespace"
    if ctx.text is not None and ctx.text != span:
        return f"the text does not match the document span {ctx.start}:{ctx.end} ({span[:40]!r}...)"
    return SpanPlan(i, ctx.start, ctx.end, "given", None, span)


def _count(spans: Sequence[SpanPlan]) -> Located:
    c = Counter(s.how for s in spans)
    fuzzy = [s.score for s in spans if s.how == "fuzzy" and s.score is not None]
    return Located(
        total=len(spans),
        given=c["given"],
        exact=c["exact"],
        normalized=c["normalized"],
        fuzzy=c["fuzzy"],
        unlocated=c["unlocated"],
        lowest_fuzzy_score=min(fuzzy) if fuzzy else None,
    )


def plan(snap: Snapshot, files: StudyFiles, options: StudyOptions, max_bytes: int) -> Plan:
    """Parse, locate and validate everything; raises InvalidItems listing every bad row, or WrongKind."""
    parsed: ParsedStudy = parse_study(
        files.study, files.study_name, options.format, options.columns, options.list_separator
    )
    errors = list(parsed.errors)
    rows = parsed.rows
    notes = list(parsed.table.notes)
    fmt = parsed.format

    # Gold passages given beside the file.
    extra_gold: dict[int, list[Context]] = {}
    if files.passages is not None:
        gold_rows, gold_errors, gold_notes = read_passages(files.passages, files.passages_name)
        notes += gold_notes
        by_id = {r.question_id: r for r in rows if r.question_id}
        by_text: dict[str, list[StudyRow]] = {}
        for r in rows:
            by_text.setdefault(r.question.strip(), []).append(r)
        for e in gold_errors:
            errors.append(ItemError(None, f"passages[{e.index}].{e.field}", e.reason, e.line))
        for g in gold_rows:
            target = by_id.get(g.question_id) if g.question_id else None
            if target is None and g.question is not None:
                hits = by_text.get(g.question.strip(), [])
                target = hits[0] if len(hits) == 1 else None
            if target is None:
                errors.append(
                    ItemError(
                        None,
                        f"passages[{g.index}]",
                        f"no question {g.question_id or g.question!r} in the study file",
                        g.line,
                    )
                )
                continue
            extra_gold.setdefault(target.index, []).append(g.passage)

    # Question identities: given, else the stored question with exactly this text, else from the text.
    stored_by_ext = {q.external_id: q for q in snap.questions}
    stored_by_text: dict[str, list[StoredQuestion]] = {}
    for q in snap.questions:
        stored_by_text.setdefault(q.question, []).append(q)
    ids: dict[int, str] = {}
    first: dict[str, StudyRow] = {}
    for r in rows:
        ext = r.question_id
        if ext is None:
            alike = stored_by_text.get(r.question, [])
            ext = alike[0].external_id if len(alike) == 1 else _question_key(r.question)
        if len(ext) > 300:
            errors.append(
                ItemError(r.index, _field(r, "question_id", "question_id"), "longer than 300", r.line)
            )
            continue
        if ext in first:
            prev = first[ext]
            where = f"line {prev.line}" if prev.line is not None else f"index {prev.index}"
            what = "question id" if r.question_id else "question"
            errors.append(
                ItemError(
                    r.index,
                    _field(r, "question_id" if r.question_id else "question", "question"),
                    f"second row for the same {what} {ext!r} (first at {where}); one row per question",
                    r.line,
                )
            )
            continue
        first[ext] = r
        ids[r.index] = ext
    rows = [r for r in rows if r.index in ids]

    # Documents: the dataset's, plus the corpus; or derived from the contexts.
    corpus_file = (
        read_corpus(files.corpus, files.corpus_name, max_bytes) if files.corpus is not None else None
    )
    if corpus_file is not None:
        notes += corpus_file.notes
    docs, d_created, d_updated, d_unchanged = _merge_corpus(
        snap, corpus_file.documents if corpus_file else None, errors
    )
    derived_only = bool(docs) and all((d.meta or {}).get("derived_from") == DERIVED for d in docs)
    source = "corpus" if corpus_file else ("existing" if docs and not derived_only else "derived")
    texts = [
        c.text
        for r in rows
        for c in (*r.gold, *extra_gold.get(r.index, ()), *r.retrieved)
        if c.text is not None and c.start is None
    ]
    where_derived: dict[str, SpanPlan] = {}
    if source == "derived":
        before = len(docs)
        where_derived = _derive(docs, texts)
        d_created = len(docs) - before
        notes.append(
            f"no corpus was given: {d_created} document(s) were derived from the contexts of the file (one "
            "per distinct context not contained in a longer one). Word positions are positions in these "
            "derived documents: word-level recall counts the words of a gold passage that lie inside a "
            "retrieved context found in the same derived document."
        )
    locator = _Locator(docs, options.fuzzy_threshold)
    if source != "derived":
        locator.prepare(texts)

    def place(ctx: Context) -> SpanPlan | str | Match:
        if ctx.start is not None:
            return _given(ctx, locator.by_ext, docs)
        assert ctx.text is not None
        if source == "derived":
            return where_derived[ctx.text.strip()]
        m = locator.locate(ctx.text, ctx.document_id)
        if not m.located:
            return m
        return SpanPlan(m.doc, m.start, m.end, m.how, m.score)

    # Questions and their gold passages.
    stored_passages: dict[int, list[tuple[int, int, int]]] = {}
    for sp in snap.passages:
        stored_passages.setdefault(sp.question_id, []).append((sp.document_id, sp.start, sp.end))
    questions: list[QuestionPlan] = []
    q_index: dict[int, int] = {}
    q_counts = QuestionCounts(received=len(rows))
    for r in rows:
        ext = ids[r.index]
        gold = [*r.gold, *extra_gold.get(r.index, [])]
        gold_field = _field(r, "gold_passages", "gold_passages") if r.gold else "passages"
        spans: list[SpanPlan] = []
        bad = False
        for i, ctx in enumerate(gold):
            placed = place(ctx)
            fname = (
                f"{gold_field}[{i}]" if i < len(r.gold) else f"passages (beside the file) [{i - len(r.gold)}]"
            )
            if isinstance(placed, str):
                errors.append(ItemError(r.index, fname, f"question {ext!r}: {placed}", r.line))
                bad = True
            elif isinstance(placed, Match):
                if placed.score is None:
                    why = "no document shares two consecutive words with it"
                else:
                    assert placed.best_doc is not None
                    why = (
                        f"best match {placed.score:.1f} in document {docs[placed.best_doc].external_id!r}, "
                        f"below the threshold {options.fuzzy_threshold:g}"
                    )
                errors.append(
                    ItemError(
                        r.index,
                        fname,
                        f"question {ext!r} ({r.question[:60]!r}): gold passage not found in the corpus "
                        f"({why})",
                        r.line,
                    )
                )
                bad = True
            else:
                spans.append(placed)
        stored = stored_by_ext.get(ext)
        answerable = r.answerable if r.answerable is not None else (stored.answerable if stored else True)
        reference = (
            r.reference_answer
            if r.reference_answer is not None
            else (stored.reference_answer if stored else None)
        )
        if not answerable and (reference is not None or spans):
            errors.append(
                ItemError(
                    r.index,
                    _field(r, "answerable", "answerable"),
                    "an unanswerable question has no reference answer and no gold passages",
                    r.line,
                )
            )
            bad = True
        if bad:
            continue
        types = r.types or (stored.types if stored else [])
        passages = spans if gold else None
        plan_q = QuestionPlan(ext, r.question, reference, answerable, types, {}, passages, None, "create")
        if stored is not None:
            plan_q.stored_id, plan_q.meta = stored.id, stored.meta
            old = stored_passages.get(stored.id, [])
            same_passages = passages is None or old == [
                (docs[s.doc].stored_id, s.start, s.end) for s in passages if s.doc is not None
            ]
            same = (stored.question, stored.reference_answer, stored.answerable, stored.types) == (
                r.question,
                reference,
                answerable,
                types,
            )
            plan_q.action = "keep" if same and same_passages else "update"
        q_index[r.index] = len(questions)
        questions.append(plan_q)
    q_counts.created = sum(q.action == "create" for q in questions)
    q_counts.updated = sum(q.action == "update" for q in questions)
    q_counts.unchanged = sum(q.action == "keep" for q in questions)
    q_counts.with_reference_answer = sum(q.reference_answer is not None for q in questions)
    q_counts.with_gold_passages = sum(bool(q.passages) for q in questions)

    # Outputs and their chunks.
    outputs: list[OutputPlan] = []
    for r in rows:
        if r.answer is None or r.index not in q_index:
            continue
        chunks: list[SpanPlan] = []
        for i, ctx in enumerate(r.retrieved):
            placed = place(ctx)
            if isinstance(placed, str):
                fname = f"{_field(r, 'retrieved_contexts', 'retrieved_contexts')}[{i}]"
                errors.append(ItemError(r.index, fname, placed, r.line))
            elif isinstance(placed, Match):
                hint = locator.by_ext.get(ctx.document_id) if ctx.document_id else None
                chunks.append(SpanPlan(hint, None, None, "unlocated", placed.score, ctx.text or ""))
            else:
                placed.text = ctx.text if ctx.text is not None else placed.text
                chunks.append(placed)
        outputs.append(OutputPlan(q_index[r.index], r.answer, chunks, {}))
    without_answer = len(rows) - len(outputs)
    if without_answer and outputs:
        notes.append(f"{without_answer} question(s) have no answer in the file: imported without an output")

    # Metric columns of the file.
    library = fmt if fmt != "mapped" else (detect_library({k for r in rows for k in r.scores}) or "custom")
    metrics: list[ExternalMetric] = []
    not_imported: list[str] = []
    if outputs:
        score_rows = [r.scores for r in rows if r.answer is not None and r.index in q_index]
        numeric, _ = metric_columns(score_rows)
        resolved = [resolve(library, c) for c in numeric]
        asked = {n.strip().lower() for n in (*options.higher_is_better, *options.lower_is_better)}
        candidates = [m for m in resolved if fmt != "mapped" or m.column.lower() in asked]
        if options.scores == "skip":
            not_imported += [f"{m.column} (scores=skip)" for m in resolved]
            candidates = []
        metrics, unknown = directions(candidates, options.higher_is_better, options.lower_is_better)
        not_imported += [
            f"{e.field} (direction unknown: pass higher_is_better or lower_is_better)" for e in unknown
        ]
        if fmt == "mapped":
            not_imported += [
                f"{m.column} (a numeric column of a plain file is a score only when its direction is given)"
                for m in resolved
                if m.column.lower() not in asked
            ]
        by_row = {r.index: r for r in rows}
        out_rows = [r.index for r in rows if r.answer is not None and r.index in q_index]
        for o, ri in zip(outputs, out_rows, strict=True):
            for m in metrics:
                try:
                    o.scores[m.name] = to_float(by_row[ri].scores.get(m.column))
                except (TypeError, ValueError) as exc:
                    errors.append(ItemError(ri, m.column, f"not a number: {exc}", by_row[ri].line))

    if errors:
        errors.sort(key=lambda e: (e.index if e.index is not None else -1, e.field))
        raise invalid_rows(f"{fmt} study", parsed.table.rows, errors)
    if not questions:
        raise InvalidItems("the file has no question", [ItemError(None, "file", "no rows")])

    if fmt == "ragchecker" and not any(q.passages for q in questions):
        notes.append(
            "RAGChecker files carry no gold passages: the report's analysis 1 works, analyses 2 and 3 need "
            "gold passages. Supply them beside the file (passages: one row per passage, {question_id, text} "
            "or {question_id, document_id, start, end}) in a new import, or as offsets with "
            "POST /datasets/{id}/questions."
        )
    unlocated = sum(c.how == "unlocated" for o in outputs for c in o.chunks)
    if unlocated:
        notes.append(
            f"{unlocated} retrieved chunk(s) were not found in the corpus (kept, marked unlocated): their "
            "outputs have no word-level recall"
        )
    run_name = (
        options.run or (PurePath(files.study_name).stem if files.study_name else None) or f"{fmt}-import"
    )
    return Plan(
        snapshot=snap,
        options=options,
        format=fmt,
        file=FileInfo(
            name=files.study_name,
            kind=parsed.table.kind,
            encoding=parsed.table.encoding,
            delimiter=parsed.table.delimiter,
            rows=len(parsed.table.rows),
        ),
        run_name=run_name[:200] if outputs else None,
        corpus_source=source,
        corpus_name=files.corpus_name,
        documents=docs,
        questions=questions,
        outputs=outputs,
        metrics=metrics,
        library=library,
        not_imported=not_imported,
        document_counts=Counts(
            received=len(corpus_file.documents) if corpus_file else d_created,
            created=d_created,
            updated=d_updated,
            unchanged=d_unchanged if corpus_file else len(snap.documents),
        ),
        notes=notes,
    )


def write(session: Session, p: Plan) -> StudyImportRead:
    """Write a plan in the current transaction (StaleSnapshot when the dataset changed since the snapshot)."""
    repo = StudyRepository(session)
    snap = p.snapshot
    now = utcnow()
    if snap.dataset_id is not None:
        ds = repo.lock_dataset(snap.dataset_id)
        if ds is None or repo.stamp(snap.dataset_id) != snap.stamp:
            raise StaleSnapshot(
                f"dataset {snap.dataset_id} changed while this import was prepared; nothing was written",
                [ItemError(None, "dataset", "changed concurrently")],
            )
        dataset_id, created_ds = snap.dataset_id, False
    else:
        taken = repo.dataset_by_name(snap.dataset_name)
        if taken is not None:
            raise StaleSnapshot(
                f"a dataset named {snap.dataset_name!r} was created meanwhile (id {taken.id}); "
                "nothing was written",
                [ItemError(None, "dataset", f"now taken by dataset {taken.id}")],
            )
        [dataset_id] = repo.insert_rows(
            Dataset,
            [{"name": snap.dataset_name, "language": snap.language, "description": None, "chunking": {}}],
            with_ids=True,
        )
        created_ds = True
    if p.run_name is not None:
        _check_run_name(repo, dataset_id, p.run_name)

    # Documents.
    new_docs = [d for d in p.documents if d.action == "create"]
    new_ids = repo.insert_rows(
        Document,
        [
            {
                "dataset_id": dataset_id,
                "external_id": d.external_id,
                "title": d.title,
                "text": d.text,
                "meta": d.meta,
            }
            for d in new_docs
        ],
        with_ids=True,
    )
    for d, i in zip(new_docs, new_ids, strict=True):
        d.stored_id = i
    repo.update_documents(
        [
            {"id": d.stored_id, "title": d.title, "text": d.text, "meta": d.meta, "updated_at": now}
            for d in p.documents
            if d.action == "update"
        ]
    )

    # Questions and passages.
    new_qs = [q for q in p.questions if q.action == "create"]
    q_ids = repo.insert_rows(
        Question,
        [
            {
                "dataset_id": dataset_id,
                "external_id": q.external_id,
                "question": q.question,
                "reference_answer": q.reference_answer,
                "answerable": q.answerable,
                "types": q.types,
                "meta": q.meta,
            }
            for q in new_qs
        ],
        with_ids=True,
    )
    for q, i in zip(new_qs, q_ids, strict=True):
        q.stored_id = i
    changed = [q for q in p.questions if q.action == "update"]
    repo.update_questions(
        [
            {
                "id": q.stored_id,
                "question": q.question,
                "reference_answer": q.reference_answer,
                "answerable": q.answerable,
                "types": q.types,
                "updated_at": now,
            }
            for q in changed
        ]
    )
    replaced = [q for q in p.questions if q.passages is not None and q.action != "keep"]
    repo.delete_passages([q.stored_id for q in replaced if q.action == "update" and q.stored_id is not None])
    passage_rows = []
    for q in replaced:
        assert q.passages is not None
        for pos, s in enumerate(q.passages):
            assert s.doc is not None
            passage_rows.append(
                {
                    "question_id": q.stored_id,
                    "document_id": p.documents[s.doc].stored_id,
                    "position": pos,
                    "start": s.start,
                    "end": s.end,
                    "location": s.how,
                    "match_score": s.score,
                }
            )
    repo.insert_rows(Passage, passage_rows)

    # The run, its outputs, chunks and scores.
    run_ref = None
    score_count = 0
    if p.run_name is not None:
        k = max((len(o.chunks) for o in p.outputs), default=0)
        notes = [n for n in p.notes if n.startswith(("no corpus", "RAGChecker"))]
        [run_id] = repo.insert_rows(
            Run,
            [
                {
                    "dataset_id": dataset_id,
                    "name": p.run_name,
                    "system": {
                        "retriever": "external",
                        "generator": "external",
                        "k": k or None,
                        "format": p.format,
                    },
                    "meta": {
                        "import": {"format": p.format, "file": p.file.name, "rows": p.file.rows},
                        "notes": notes,
                    },
                }
            ],
            with_ids=True,
        )
        run_ref = RunRef(id=run_id, name=p.run_name)
        out_ids = repo.insert_rows(
            Output,
            [
                {
                    "run_id": run_id,
                    "question_id": p.questions[o.question].stored_id,
                    "answer": o.answer,
                    "generator": {"kind": "external", "format": p.format},
                    "latency_ms": None,
                    "error": None,
                }
                for o in p.outputs
            ],
            with_ids=True,
        )
        chunk_rows = []
        score_rows = []
        for o, oid in zip(p.outputs, out_ids, strict=True):
            for rank, c in enumerate(o.chunks, start=1):
                chunk_rows.append(
                    {
                        "output_id": oid,
                        "rank": rank,
                        "document_id": p.documents[c.doc].stored_id if c.doc is not None else None,
                        "start": c.start,
                        "end": c.end,
                        "text": c.text,
                        "score": None,
                        "location": c.how,
                        "match_score": c.score,
                    }
                )
            for m in p.metrics:
                score_rows.append(score_row(m, p.library, oid, o.scores.get(m.name)))
        repo.insert_rows(RetrievedChunk, chunk_rows)
        repo.insert_rows(MetricScore, score_rows)
        score_count = len(score_rows)
    repo.flush()

    chunks = [c for o in p.outputs for c in o.chunks]
    passages = [s for q in p.questions if q.passages for s in q.passages]
    return StudyImportRead(
        dataset=DatasetRef(id=dataset_id, name=snap.dataset_name, created=created_ds),
        run=run_ref,
        format=p.format,
        file=p.file,
        corpus=CorpusInfo(source=p.corpus_source, name=p.corpus_name, documents=p.document_counts),
        questions=QuestionCounts(
            received=len(p.questions),
            created=len(new_qs),
            updated=len(changed),
            unchanged=sum(q.action == "keep" for q in p.questions),
            with_reference_answer=sum(q.reference_answer is not None for q in p.questions),
            with_gold_passages=sum(bool(q.passages) for q in p.questions),
        ),
        passages=_count(passages),
        outputs=len(p.outputs),
        chunks=_count(chunks),
        scores=ScoresInfo(
            metrics=[m.name for m in p.metrics], created=score_count, not_imported=p.not_imported
        ),
        fuzzy_threshold=p.options.fuzzy_threshold,
        notes=p.notes,
    )


def import_study(
    session: Session, files: StudyFiles, options: StudyOptions, max_bytes: int
) -> StudyImportRead:
    """All three phases on one session (one transaction): for the command line, tests and benchmarks."""
    return write(session, plan(snapshot(session, options), files, options, max_bytes))
