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
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from sqlalchemy.orm import Session

from services.corpus import Corpus, Match, word_changes
from services.csvread import to_float
from services.errors import Conflict, InvalidItems, ItemError, NotFound
from services.ratings.repository import RatingRepository
from services.scores.external import (
    detect_library,
    directions,
    metric_columns,
    resolve,
)
from services.studies.files import CorpusDoc, read_corpus, read_passages
from services.studies.formats import Context, ParsedStudy, StudyRow, parse_study
from services.studies.plan import (
    DocPlan,
    OutputPlan,
    Plan,
    QuestionPlan,
    RunPlan,
    Snapshot,
    SpanPlan,
    StudyFiles,
)
from services.studies.preferences import plan_preferences
from services.studies.ratings import plan_ratings
from services.studies.repository import StoredQuestion, StudyRepository
from services.studies.schemas import (
    Counts,
    FileInfo,
    Located,
    LocatedPassage,
    StudyOptions,
    WordChange,
)
from services.validation import invalid_rows

DERIVED = "contexts"


def snapshot(session: Session, options: StudyOptions) -> Snapshot:
    """What the import needs to know of the dataset (nothing when it does not exist yet)."""
    repo = StudyRepository(session)
    ratings = RatingRepository(session)
    raters = set(ratings.raters())
    rubrics = {name: (r.min_score, r.max_score) for name, r in ratings.rubrics().items()}
    if options.dataset_id is not None:
        ds = repo.dataset(options.dataset_id)
        if ds is None:
            raise NotFound(f"dataset {options.dataset_id} does not exist")
    else:
        assert options.dataset is not None
        ds = repo.dataset_by_name(options.dataset)
        if ds is None:
            return Snapshot(None, options.dataset, options.language, None, [], [], [], raters, rubrics)
    if options.run is not None:
        check_run_name(repo, ds.id, options.run)
    return Snapshot(
        ds.id,
        ds.name,
        ds.language,
        repo.stamp(ds.id),
        repo.documents(ds.id),
        repo.questions(ds.id),
        repo.passages(ds.id),
        raters,
        rubrics,
    )


def check_run_name(repo: StudyRepository, dataset_id: int, name: str) -> None:
    run = repo.run_by_name(dataset_id, name)
    if run is not None:
        raise Conflict(
            f"dataset {dataset_id} already has a run named {name!r} (id {run.id}); choose another run name",
            [ItemError(None, "run", f"already taken by run {run.id}")],
        )


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


def _located(ext: str, position: int, given: str, span: SpanPlan, docs: list[DocPlan]) -> LocatedPassage:
    assert span.doc is not None and span.start is not None and span.end is not None
    doc = docs[span.doc]
    changes = word_changes(given, doc.text[span.start : span.end]) if span.how == "fuzzy" else []
    return LocatedPassage(
        question_id=ext,
        passage=position,
        document_id=doc.external_id,
        start=span.start,
        end=span.end,
        location="fuzzy" if span.how == "fuzzy" else "normalized",
        match_score=span.score,
        word_changes=[WordChange(given=g, corpus=c) for g, c in changes],
    )


def _word_change_text(lp: LocatedPassage, question: str | None = None) -> str:
    words = ", ".join(f"{c.given or '(none)'!r} -> {c.corpus or '(none)'!r}" for c in lp.word_changes)
    about = f" ({question[:60]!r})" if question is not None else ""
    return (
        f"question {lp.question_id!r}{about} passage {lp.passage}: located by a fuzzy match "
        f"({lp.match_score:g}) in document {lp.document_id!r} that changes words: {words}"
    )


def count_located(spans: Sequence[SpanPlan]) -> Located:
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


@dataclass
class _Inputs:
    """The study files parsed, their rows numbered across the files."""

    sources: list[tuple[bytes, str | None]]
    parsed: list[ParsedStudy]
    rows: list[StudyRow]
    origin: dict[int, tuple[int, int]]  # index in ``rows`` -> (file, index in the file)


@dataclass
class _Documents:
    """The planned documents and how a passage or chunk finds its span in them."""

    docs: list[DocPlan]
    counts: Counts
    source: str
    locator: _Locator
    where_derived: dict[str, SpanPlan]

    def place(self, ctx: Context) -> SpanPlan | str | Match:
        if ctx.start is not None:
            return _given(ctx, self.locator.by_ext, self.docs)
        assert ctx.text is not None
        if self.source == "derived":
            return self.where_derived[ctx.text.strip()]
        m = self.locator.locate(ctx.text, ctx.document_id)
        if not m.located:
            return m
        return SpanPlan(m.doc, m.start, m.end, m.how, m.score)


def plan(snap: Snapshot, files: StudyFiles, options: StudyOptions, max_bytes: int) -> Plan:
    """Parse, locate and validate everything; raises InvalidItems listing every bad row, or WrongKind.

    Several study files are several runs of one set of questions: a question is one question whichever
    files hold it (by its id, else by its text), its reference answer and gold passages taken from the
    first file that gives them."""
    errors: list[ItemError] = []
    notes: list[str] = []
    inputs = _parse_files(files, options, errors, notes)
    ids, reps = _identify(snap, inputs, errors)
    inputs.rows = [r for r in inputs.rows if r.index in ids]
    extra_gold = _extra_gold(files, inputs.rows, ids, reps, errors, notes)
    texts = [
        c.text
        for r in inputs.rows
        for c in (*r.gold, *extra_gold.get(ids[r.index], ()), *r.retrieved)
        if c.text is not None and c.start is None
    ]
    docs = _documents(snap, files, texts, options, max_bytes, errors, notes)
    questions, located = _plan_questions(snap, reps, ids, extra_gold, docs, options, errors)
    q_index = {q.external_id: i for i, q in enumerate(questions)}
    runs = _plan_runs(inputs, ids, q_index, docs, options, errors, notes)
    fmt = inputs.parsed[0].format
    if errors:
        errors.sort(key=lambda e: (e.index if e.index is not None else -1, e.field))
        raise invalid_rows(
            f"{fmt} study",
            [r for ps in inputs.parsed for r in ps.table.rows],
            [_local(e, inputs.origin, inputs.sources) for e in errors],
        )
    if not questions:
        raise InvalidItems("the file has no question", [ItemError(None, "file", "no rows")])
    ratings = plan_ratings(snap, files, options, runs, questions)
    known = snap.raters | set(ratings.raters if ratings else [])
    preferences = plan_preferences(snap, files, options, runs, questions, known)
    passage_notes = _closing_notes(fmt, questions, located, runs, notes)
    return Plan(
        snapshot=snap,
        options=options,
        runs=runs,
        files=[_file_info(ps, name) for ps, (_, name) in zip(inputs.parsed, inputs.sources, strict=True)],
        formats=[ps.format for ps in inputs.parsed],
        corpus_source=docs.source,
        corpus_name=files.corpus_name,
        documents=docs.docs,
        questions=questions,
        ratings=ratings,
        preferences=preferences,
        located=located,
        passage_notes=passage_notes,
        document_counts=docs.counts,
        notes=notes,
    )


def _parse_files(
    files: StudyFiles, options: StudyOptions, errors: list[ItemError], notes: list[str]
) -> _Inputs:
    """Every study file parsed; its rows renumbered across the files (``origin`` maps them back)."""
    sources = [(files.study, files.study_name), *files.more]
    parsed_files = [
        parse_study(raw, name, options.format, options.columns, options.list_separator)
        for raw, name in sources
    ]
    rows: list[StudyRow] = []
    origin: dict[int, tuple[int, int]] = {}
    for f, ps in enumerate(parsed_files):
        errors += [_global(e, f, origin, sources) for e in ps.errors]
        notes += ps.table.notes
        for r in ps.rows:
            origin[len(origin)] = (f, r.index)
            r.file, r.index = f, len(origin) - 1
            rows.append(r)
    return _Inputs(sources, parsed_files, rows, origin)


def _identify(
    snap: Snapshot, inputs: _Inputs, errors: list[ItemError]
) -> tuple[dict[int, str], dict[str, StudyRow]]:
    """Question identities: given, else the id another file gives this text, else the stored question with
    exactly this text, else made from the text. Returns the id of every accepted row and the first row of
    each question, completed from the later ones."""
    stored_by_text: dict[str, list[StoredQuestion]] = {}
    for q in snap.questions:
        stored_by_text.setdefault(q.question, []).append(q)
    given_by_text: dict[str, set[str]] = {}
    for r in inputs.rows:
        if r.question_id:
            given_by_text.setdefault(r.question.strip(), set()).add(r.question_id)
    ids: dict[int, str] = {}
    first: dict[tuple[int, str], StudyRow] = {}
    reps: dict[str, StudyRow] = {}
    for r in inputs.rows:
        ext = r.question_id
        if ext is None:
            named = given_by_text.get(r.question.strip(), set())
            alike = stored_by_text.get(r.question, [])
            if len(named) == 1:
                ext = next(iter(named))
            else:
                ext = alike[0].external_id if len(alike) == 1 else _question_key(r.question)
        if len(ext) > 300:
            errors.append(
                ItemError(r.index, _field(r, "question_id", "question_id"), "longer than 300", r.line)
            )
            continue
        if (r.file, ext) in first:
            prev = first[(r.file, ext)]
            where = f"line {prev.line}" if prev.line is not None else f"index {inputs.origin[prev.index][1]}"
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
        first[(r.file, ext)] = r
        ids[r.index] = ext
        rep = reps.setdefault(ext, r)
        if rep is not r:
            rep.reference_answer = rep.reference_answer or r.reference_answer
            rep.gold = rep.gold or r.gold
            rep.types = rep.types or r.types
            rep.answerable = rep.answerable if rep.answerable is not None else r.answerable
    return ids, reps


def _extra_gold(
    files: StudyFiles,
    rows: list[StudyRow],
    ids: dict[int, str],
    reps: dict[str, StudyRow],
    errors: list[ItemError],
    notes: list[str],
) -> dict[str, list[Context]]:
    """Gold passages given beside the files, by question id (found by id, else by the question's text)."""
    extra_gold: dict[str, list[Context]] = {}
    if files.passages is None:
        return extra_gold
    gold_rows, gold_errors, gold_notes = read_passages(files.passages, files.passages_name)
    notes += gold_notes
    by_text: dict[str, set[str]] = {}
    for r in rows:
        by_text.setdefault(r.question.strip(), set()).add(ids[r.index])
    for e in gold_errors:
        errors.append(ItemError(None, f"passages[{e.index}].{e.field}", e.reason, e.line))
    for g in gold_rows:
        target = g.question_id if g.question_id in reps else None
        if target is None and g.question is not None:
            hits = by_text.get(g.question.strip(), set())
            target = next(iter(hits)) if len(hits) == 1 else None
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
        extra_gold.setdefault(target, []).append(g.passage)
    return extra_gold


def _documents(
    snap: Snapshot,
    files: StudyFiles,
    texts: list[str],
    options: StudyOptions,
    max_bytes: int,
    errors: list[ItemError],
    notes: list[str],
) -> _Documents:
    """Documents: the dataset's, plus the corpus; or derived from the contexts (``texts``)."""
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
    counts = Counts(
        received=len(corpus_file.documents) if corpus_file else d_created,
        created=d_created,
        updated=d_updated,
        unchanged=d_unchanged if corpus_file else len(snap.documents),
    )
    return _Documents(docs, counts, source, locator, where_derived)


def _place_gold(
    r: StudyRow,
    ext: str,
    gold: list[Context],
    docs: _Documents,
    options: StudyOptions,
    errors: list[ItemError],
    located: list[LocatedPassage],
) -> tuple[list[SpanPlan], bool]:
    """The spans of one question's gold passages, and whether any was refused (listed in ``errors``)."""
    gold_field = _field(r, "gold_passages", "gold_passages") if r.gold else "passages"
    spans: list[SpanPlan] = []
    bad = False
    for i, ctx in enumerate(gold):
        placed = docs.place(ctx)
        fname = f"{gold_field}[{i}]" if i < len(r.gold) else f"passages (beside the file) [{i - len(r.gold)}]"
        if isinstance(placed, str):
            errors.append(ItemError(r.index, fname, f"question {ext!r}: {placed}", r.line))
            bad = True
        elif isinstance(placed, Match):
            if placed.score is None:
                why = "no document shares two consecutive words with it"
            else:
                assert placed.best_doc is not None
                why = (
                    f"best match {placed.score:.1f} in document {docs.docs[placed.best_doc].external_id!r}, "
                    f"below the threshold {options.fuzzy_threshold:g}"
                )
            errors.append(
                ItemError(
                    r.index,
                    fname,
                    f"question {ext!r} ({r.question[:60]!r}): gold passage not found in the corpus ({why})",
                    r.line,
                )
            )
            bad = True
        else:
            spans.append(placed)
            if placed.how in ("normalized", "fuzzy") and ctx.text is not None:
                lp = _located(ext, len(spans) - 1, ctx.text, placed, docs.docs)
                located.append(lp)
                if lp.word_changes and options.fuzzy_word_changes == "error":
                    errors.append(ItemError(r.index, fname, _word_change_text(lp, r.question), r.line))
                    bad = True
    return spans, bad


def _plan_questions(
    snap: Snapshot,
    reps: dict[str, StudyRow],
    ids: dict[int, str],
    extra_gold: dict[str, list[Context]],
    docs: _Documents,
    options: StudyOptions,
    errors: list[ItemError],
) -> tuple[list[QuestionPlan], list[LocatedPassage]]:
    """Questions and their gold passages, each to create, update or keep."""
    stored_by_ext = {q.external_id: q for q in snap.questions}
    stored_passages: dict[int, list[tuple[int, int, int]]] = {}
    for sp in snap.passages:
        stored_passages.setdefault(sp.question_id, []).append((sp.document_id, sp.start, sp.end))
    questions: list[QuestionPlan] = []
    located: list[LocatedPassage] = []
    for r in reps.values():
        ext = ids[r.index]
        gold = [*r.gold, *extra_gold.get(ext, [])]
        spans, bad = _place_gold(r, ext, gold, docs, options, errors, located)
        stored = stored_by_ext.get(ext)
        answerable = r.answerable if r.answerable is not None else (stored.answerable if stored else True)
        reference = (
            r.reference_answer
            if r.reference_answer is not None
            else (stored.reference_answer if stored else None)
        )
        # An unanswerable question's reference answer is the expected refusal, as POST .../questions keeps it.
        if not answerable and spans:
            errors.append(
                ItemError(
                    r.index,
                    _field(r, "answerable", "answerable"),
                    "an unanswerable question (answerable=false) carries no gold passages; its reference "
                    "answer, if given, is the expected refusal",
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
                (docs.docs[s.doc].stored_id, s.start, s.end) for s in passages if s.doc is not None
            ]
            same = (stored.question, stored.reference_answer, stored.answerable, stored.types) == (
                r.question,
                reference,
                answerable,
                types,
            )
            plan_q.action = "keep" if same and same_passages else "update"
        questions.append(plan_q)
    return questions, located


def _plan_runs(
    inputs: _Inputs,
    ids: dict[int, str],
    q_index: dict[str, int],
    docs: _Documents,
    options: StudyOptions,
    errors: list[ItemError],
    notes: list[str],
) -> list[RunPlan]:
    """One run per file: its outputs, their chunks and the file's metric columns."""
    runs: list[RunPlan] = []
    taken_names: dict[str, int] = {}
    for f, ps in enumerate(inputs.parsed):
        file_rows = [r for r in inputs.rows if r.file == f]
        name = inputs.sources[f][1]
        run = _run_plan(
            f, ps, name, file_rows, ids, q_index, docs.place, docs.locator, options, errors, notes
        )
        if run is None:
            continue
        if run.name in taken_names:
            errors.append(
                ItemError(
                    None,
                    "run",
                    f"files {taken_names[run.name] + 1} and {f + 1} would both be run {run.name!r}: give the "
                    "files distinct names",
                )
            )
        taken_names[run.name] = f
        runs.append(run)
    return runs


def _closing_notes(
    fmt: str,
    questions: list[QuestionPlan],
    located: list[LocatedPassage],
    runs: list[RunPlan],
    notes: list[str],
) -> list[str]:
    """Notes on what the import cannot give (added to ``notes``); returns the notes on the passages."""
    if fmt == "ragchecker" and not any(q.passages for q in questions):
        notes.append(
            "RAGChecker files carry no gold passages: the report's analysis 1 works, analyses 2 and 3 need "
            "gold passages. Supply them beside the file (passages: one row per passage, {question_id, text} "
            "or {question_id, document_id, start, end}) in a new import, or as offsets with "
            "POST /datasets/{id}/questions."
        )
    changed = [lp for lp in located if lp.word_changes]
    passage_notes = []
    if changed:
        passage_notes.append(
            f"{len(changed)} gold passage(s) were located by a fuzzy match that changes words (check that "
            "the corpus span says what the passage says; fuzzy_word_changes=error refuses them): "
            + "; ".join(_word_change_text(lp) for lp in changed)
        )
    unlocated = sum(c.how == "unlocated" for run in runs for o in run.outputs for c in o.chunks)
    if unlocated:
        notes.append(
            f"{unlocated} retrieved chunk(s) were not found in the corpus (kept, marked unlocated): their "
            "outputs have no word-level recall"
        )
    return passage_notes


def _file_info(ps: ParsedStudy, name: str | None) -> FileInfo:
    t = ps.table
    return FileInfo(name=name, kind=t.kind, encoding=t.encoding, delimiter=t.delimiter, rows=len(t.rows))


def _global(e: ItemError, f: int, origin: dict[int, tuple[int, int]], sources: list[Any]) -> ItemError:
    """A parse error of file ``f`` (local index) as an error of the import (global index)."""
    if e.index is None or f == 0:
        return e if f == 0 else ItemError(None, _prefix(f, sources) + e.field, e.reason, e.line)
    return ItemError(None, _prefix(f, sources) + e.field, f"row {e.index}: {e.reason}", e.line)


def _prefix(f: int, sources: list[Any]) -> str:
    # The first file's fields stay bare, as when it is the only one.
    return "" if f == 0 else f"{sources[f][1] or f'file {f + 1}'}: "


def _local(e: ItemError, origin: dict[int, tuple[int, int]], sources: list[Any]) -> ItemError:
    if e.index is None or e.index not in origin:
        return e
    f, local = origin[e.index]
    return ItemError(local, _prefix(f, sources) + e.field, e.reason, e.line)


def _run_plan(
    f: int,
    ps: ParsedStudy,
    name: str | None,
    rows: list[StudyRow],
    ids: dict[int, str],
    q_index: dict[str, int],
    place: Any,
    locator: _Locator,
    options: StudyOptions,
    errors: list[ItemError],
    notes: list[str],
) -> RunPlan | None:
    """The run of one study file (None when the file has no answer)."""
    fmt = ps.format
    answered = [r for r in rows if r.answer is not None and ids[r.index] in q_index]
    outputs: list[OutputPlan] = []
    for r in answered:
        assert r.answer is not None
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
        outputs.append(OutputPlan(q_index[ids[r.index]], r.answer, chunks, {}))
    if not outputs:
        return None
    without_answer = len(rows) - len(outputs)
    if without_answer:
        notes.append(
            f"{without_answer} question(s) have no answer in {name or 'the file'}: imported without an output"
        )

    # Metric columns of the file.
    library = fmt if fmt != "mapped" else (detect_library({k for r in rows for k in r.scores}) or "custom")
    not_imported: list[str] = []
    numeric, _ = metric_columns([r.scores for r in answered])
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
    for o, r in zip(outputs, answered, strict=True):
        for m in metrics:
            try:
                o.scores[m.name] = to_float(r.scores.get(m.column))
            except (TypeError, ValueError) as exc:
                errors.append(ItemError(r.index, m.column, f"not a number: {exc}", r.line))
    stem = PurePath(name).stem if name else None
    run_name = (options.run if f == 0 else None) or stem or f"{fmt}-import" + (f"-{f + 1}" if f else "")
    return RunPlan(
        name=run_name[:200],
        format=fmt,
        file=_file_info(ps, name),
        outputs=outputs,
        metrics=metrics,
        library=library,
        not_imported=not_imported,
    )
