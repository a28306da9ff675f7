"""The side files of a study import: a corpus (documents JSON/JSONL, or an archive of a folder of text
files) and gold passages given beside a file that has none (RAGChecker results)."""

from __future__ import annotations

import io
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from services.csvread import decode, is_missing, normalise_header
from services.datasets.schemas import DocumentCreate
from services.errors import InvalidItems, ItemError, MalformedInput, PayloadTooLarge
from services.studies.formats import Context, read_table
from services.validation import invalid_rows, validate_rows

ARCHIVES = (".zip", ".tar", ".tar.gz", ".tgz")
TEXT_FILES = (".txt", ".md", ".markdown", ".rst", ".text", ".html", ".htm", ".xml", ".csv", ".json")
MAX_FILES = 100_000
_DOC_KEYS = {
    "external_id": ("external_id", "id", "doc_id", "document_id", "_id"),
    "text": ("text", "content", "body", "page_content"),
    "title": ("title", "name"),
    "metadata": ("metadata", "meta"),
}


@dataclass
class CorpusDoc:
    external_id: str
    title: str | None
    text: str
    metadata: dict[str, Any]


@dataclass
class CorpusFile:
    name: str | None
    documents: list[CorpusDoc]
    notes: list[str]


def _is_archive(raw: bytes, name: str | None) -> bool:
    lower = (name or "").lower()
    return lower.endswith(ARCHIVES) or raw[:4] == b"PK\x03\x04" or raw[:2] == b"\x1f\x8b"


def _archive_members(raw: bytes, limit: int) -> list[tuple[str, bytes]]:
    """(path, bytes) of the regular files of a zip or tar archive, refusing more than ``limit`` bytes once
    unpacked (or more than MAX_FILES files)."""
    out: list[tuple[str, bytes]] = []
    total = 0

    def add(path: str, size: int, read: Any) -> None:
        nonlocal total
        parts = PurePosixPath(path).parts
        if any(p.startswith(".") or p == "__MACOSX" for p in parts):
            return
        total += size
        if total > limit or len(out) >= MAX_FILES:
            raise PayloadTooLarge(
                f"the corpus archive unpacks to more than {limit} bytes or {MAX_FILES} files",
                [ItemError(None, "corpus", "archive too large once unpacked")],
            )
        out.append((path, read()))

    try:
        if raw[:4] == b"PK\x03\x04":
            with zipfile.ZipFile(io.BytesIO(raw)) as zf:
                for info in zf.infolist():
                    if not info.is_dir():
                        add(info.filename, info.file_size, lambda info=info: zf.read(info))
        else:
            with tarfile.open(fileobj=io.BytesIO(raw), mode="r:*") as tf:
                for member in tf.getmembers():
                    if member.isfile():
                        f = tf.extractfile(member)
                        if f is not None:
                            add(member.name, member.size, f.read)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        raise MalformedInput(
            "the corpus is not a readable zip or tar archive", [ItemError(None, "corpus", str(exc))]
        ) from exc
    return out


def read_corpus(raw: bytes, name: str | None, max_bytes: int) -> CorpusFile:
    """Documents of a corpus file: JSON/JSONL documents ({external_id, title, text, metadata}; also
    id/doc_id and content/body), or an archive of text files (external id: the path inside the folder)."""
    if not raw.strip():
        raise MalformedInput("corpus is empty", [ItemError(None, "corpus", "no data")])
    if _is_archive(raw, name):
        members = _archive_members(raw, 4 * max_bytes)
        paths = [p for p, _ in members if p.lower().endswith(TEXT_FILES)]
        skipped = len(members) - len(paths)
        tops = {PurePosixPath(p).parts[0] for p in paths if len(PurePosixPath(p).parts) > 1}
        strip_top = len(tops) == 1 and all(len(PurePosixPath(p).parts) > 1 for p in paths)
        docs, notes = [], []
        legacy = []
        for path, data in members:
            if not path.lower().endswith(TEXT_FILES):
                continue
            text, encoding, _ = decode(data, path)
            if encoding not in ("utf-8", "utf-16"):
                legacy.append(path)
            ext = str(PurePosixPath(*PurePosixPath(path).parts[1:])) if strip_top else path
            if text.strip():
                docs.append(CorpusDoc(ext, PurePosixPath(path).stem, text, {"path": path}))
        if legacy:
            shown = ", ".join(legacy[:5]) + (" ..." if len(legacy) > 5 else "")
            notes.append(f"{len(legacy)} corpus file(s) are not UTF-8 and were read as Windows-1252: {shown}")
        if skipped:
            notes.append(
                f"{skipped} file(s) of the archive are not text files ({', '.join(TEXT_FILES)}): skipped"
            )
        if not docs:
            raise InvalidItems(
                "the corpus archive holds no text file", [ItemError(None, "corpus", "no documents")]
            )
        return CorpusFile(name, docs, notes)
    table = read_table(raw, name, "corpus")
    rows = []
    for r in table.rows:
        if isinstance(r.data, dict):
            fields = {normalise_header(str(k)): v for k, v in r.data.items()}
            mapped: dict[str, Any] = {}
            for fname, names in _DOC_KEYS.items():
                hit = next((n for n in names if n in fields), None)
                if hit is not None:
                    mapped[fname] = fields.pop(hit)
            if isinstance(mapped.get("external_id"), int):
                mapped["external_id"] = str(mapped["external_id"])
            if is_missing(mapped.get("title")):
                mapped["title"] = None
            if "metadata" not in mapped and fields:
                mapped["metadata"] = {k: v for k, v in fields.items() if not is_missing(v)}
            r = type(r)(r.index, r.line, mapped)
        rows.append(r)
    good, errors = validate_rows(rows, DocumentCreate)
    seen: dict[str, int] = {}
    for row, d in good:
        if d.external_id in seen:
            errors.append(ItemError(row.index, "external_id", f"duplicate {d.external_id!r}", row.line))
        seen[d.external_id] = row.index
    if errors:
        raise invalid_rows("corpus documents", rows, errors)
    return CorpusFile(
        name, [CorpusDoc(d.external_id, d.title, d.text, d.metadata) for _, d in good], list(table.notes)
    )


@dataclass
class GoldRow:
    index: int
    line: int | None
    question_id: str | None
    question: str | None
    passage: Context


def read_passages(raw: bytes, name: str | None) -> tuple[list[GoldRow], list[ItemError], list[str]]:
    """Gold passages given beside the study: one per row, {question_id | question, text} or
    {question_id | question, document_id, start, end}."""
    table = read_table(raw, name, "passages")
    out, errors = [], []
    for r in table.rows:
        if not isinstance(r.data, dict):
            errors.append(ItemError(r.index, "(row)", "must be an object", r.line))
            continue
        d = {normalise_header(str(k)): v for k, v in r.data.items()}
        qid = next((d[k] for k in ("question_id", "query_id", "qid") if not is_missing(d.get(k))), None)
        question = next((d[k] for k in ("question", "query", "user_input") if not is_missing(d.get(k))), None)
        text = next(
            (d[k] for k in ("text", "passage", "context", "gold_passage") if not is_missing(d.get(k))), None
        )
        doc = next((d[k] for k in ("document_id", "doc_id") if not is_missing(d.get(k))), None)
        start, end = d.get("start"), d.get("end")
        if qid is None and question is None:
            errors.append(
                ItemError(r.index, "question_id", "needs question_id (or the question text)", r.line)
            )
            continue
        try:
            if not is_missing(start) or not is_missing(end):
                if doc is None or is_missing(start) or is_missing(end):
                    raise ValueError("offsets need document_id, start and end")
                passage = Context(
                    str(text) if text is not None else None, str(doc), int(str(start)), int(str(end))
                )
            elif text is None or not str(text).strip():
                raise ValueError("needs a text (or document_id, start and end)")
            else:
                passage = Context(str(text), str(doc) if doc is not None else None)
        except ValueError as exc:
            errors.append(ItemError(r.index, "text", str(exc), r.line))
            continue
        out.append(
            GoldRow(
                r.index,
                r.line,
                str(qid).strip() if qid is not None else None,
                str(question) if question is not None else None,
                passage,
            )
        )
    return out, errors, list(table.notes)
