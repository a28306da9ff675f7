"""Reading CSV files as spreadsheets write them.

A sheet saved by Excel, LibreOffice or Google Sheets may be UTF-8 with or without a byte-order mark, UTF-16
("Unicode text"), or Windows-1252 / Latin-1 when the bytes are not UTF-8; separated by commas, semicolons (the
default of locales whose decimal mark is a comma) or tabs; with CRLF line ends, cells holding quoted line
breaks, and trailing empty columns. This module reads all of them the same way and says what it had to assume
(an encoding fallback is never silent). Header names are matched case-insensitively, with spaces and
hyphens read as underscores.

Cell values stay text; ``number_cell`` and ``list_cell`` read a decimal comma and list cells written as JSON
or as Python literals (``['a', "b"]``, what Ragas' ``to_csv`` writes).
"""

from __future__ import annotations

import ast
import codecs
import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from services.errors import ItemError, MalformedInput
from services.nul import NUL, REASON, nul_refusal

DELIMITERS = (",", ";", "\t")
_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
_SAMPLE_RECORDS = 50
_HEADER_SPACES = re.compile(r"[\s\-]+")
_DECIMAL_COMMA = re.compile(r"^[+-]?\d+,\d+(?:[eE][+-]?\d+)?$")


@dataclass
class CsvTable:
    """Records of a CSV file keyed by normalised header names, with the 1-based line each record starts on."""

    columns: list[str]
    records: list[tuple[int, dict[str, str]]]
    encoding: str
    delimiter: str
    notes: list[str] = field(default_factory=list)


def decode(raw: bytes, field_name: str = "file") -> tuple[str, str, list[str]]:
    """Text of ``raw``, the encoding used and notes; UTF-8 first, then cp1252, then Latin-1 (never silent)."""
    if raw.startswith(codecs.BOM_UTF8):
        try:
            return raw[3:].decode("utf-8"), "utf-8", []
        except UnicodeDecodeError:
            raw = raw[3:]  # a BOM on bytes that are not UTF-8: read on as a legacy encoding below
    elif raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return raw.decode("utf-16"), "utf-16", []
        except UnicodeDecodeError as exc:
            raise MalformedInput(
                f"{field_name} starts with a UTF-16 byte-order mark but is not valid UTF-16",
                [ItemError(None, field_name, str(exc))],
            ) from exc
    try:
        return raw.decode("utf-8"), "utf-8", []
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        where = f"line {line}, byte {exc.start}"
    for encoding, label in (("cp1252", "Windows-1252 (cp1252)"), ("latin-1", "Latin-1 (ISO-8859-1)")):
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            continue
        note = (
            f"{field_name} is not valid UTF-8 (first bad byte at {where}); it was read as {label}, "
            "the encoding spreadsheets use when saving CSV on Windows. Check accented letters, or save as "
            "'CSV UTF-8'."
        )
        return text, encoding, [note]
    raise AssertionError("latin-1 decodes any bytes")  # pragma: no cover


def normalise_header(name: str) -> str:
    return _HEADER_SPACES.sub("_", name.strip().strip("\ufeff").strip()).lower()


def _records(text: str, delimiter: str, limit: int | None = None) -> list[list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    out: list[list[str]] = []
    try:
        for record in reader:
            out.append(record)
            if limit is not None and len(out) >= limit:
                break
    except csv.Error:
        if limit is None:
            raise
    return out


def sniff_delimiter(text: str) -> str:
    """The delimiter among , ; tab that splits the header into most columns with the rows agreeing."""
    sample = text[:65536]
    best, best_key = ",", (-1.0, 0)
    for delim in DELIMITERS:
        records = [r for r in _records(sample, delim, _SAMPLE_RECORDS) if any(c.strip() for c in r)]
        if not records:
            continue
        width = len(records[0])
        if width < 2:
            continue
        rows = records[1:-1] if len(sample) < len(text) else records[1:]
        agree = sum(1 for r in rows if len(r) == width or (len(r) > width and not any(r[width:]))) / max(
            len(rows), 1
        )
        key = (agree, width)
        if key > best_key:
            best, best_key = delim, key
    return best


def read_csv(raw: bytes, field_name: str = "file") -> CsvTable:
    """Parse CSV bytes into records; raises MalformedInput naming the line for anything unreadable."""
    text, encoding, notes = decode(raw, field_name)
    delimiter = sniff_delimiter(text)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header_row = next(reader, None)
        while header_row is not None and not any(c.strip() for c in header_row):
            header_row = next(reader, None)
        if header_row is None:
            raise MalformedInput(
                f"{field_name} is an empty CSV file", [ItemError(None, field_name, "no header row")]
            )
        header = [normalise_header(h) for h in header_row]
        # Spreadsheets often add empty columns at the right; they are dropped when they hold nothing.
        while header and header[-1] == "":
            header.pop()
        blank = [i for i, h in enumerate(header) if not h]
        if blank:
            raise MalformedInput(
                f"{field_name} has a column without a name (column {blank[0] + 1})",
                [ItemError(None, field_name, "empty header cell", line=reader.line_num)],
            )
        seen: dict[str, int] = {}
        for i, h in enumerate(header):
            if h in seen:
                raise MalformedInput(
                    f"{field_name} has two columns named {h!r} (columns {seen[h] + 1} and {i + 1}; "
                    "header names are compared ignoring case)",
                    [ItemError(None, field_name, f"duplicate column {h!r}", line=reader.line_num)],
                )
            seen[h] = i
        records: list[tuple[int, dict[str, str]]] = []
        last = reader.line_num
        for cells in reader:
            start = last + 1
            last = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if len(cells) > len(header) and any(c.strip() for c in cells[len(header) :]):
                raise MalformedInput(
                    f"{field_name} has a row with more cells than the header ({len(cells)} > {len(header)}, "
                    f"{_NAMES[delimiter]}-separated)",
                    [ItemError(None, field_name, "too many cells", line=start)],
                )
            cells = cells[: len(header)] + [""] * (len(header) - len(cells))
            records.append((start, dict(zip(header, cells, strict=True))))
    except csv.Error as exc:
        raise MalformedInput(
            f"{field_name} is not valid CSV", [ItemError(None, field_name, str(exc), line=reader.line_num)]
        ) from exc
    if NUL in text:
        _refuse_nul(header, records, field_name)
    return CsvTable(header, records, encoding, delimiter, notes)


def _refuse_nul(header: list[str], records: list[tuple[int, dict[str, str]]], field_name: str) -> None:
    errors = [ItemError(None, field_name, f"a column name {REASON}") for h in header if NUL in h]
    errors += [
        ItemError(index, column, REASON, line=line)
        for index, (line, record) in enumerate(records)
        for column, cell in record.items()
        if NUL in cell and NUL not in column
    ]
    if errors:
        raise nul_refusal(errors, field_name)


def number_cell(value: Any) -> Any:
    """A numeric cell as a float when it is text with a decimal comma ("0,75"); other values unchanged."""
    if isinstance(value, str):
        v = value.strip()
        if _DECIMAL_COMMA.match(v):
            return v.replace(",", ".")
        return v
    return value


_TRUE = frozenset({"true", "t", "yes", "y", "on", "1", "vrai", "oui"})
_FALSE = frozenset({"false", "f", "no", "n", "off", "0", "faux", "non"})


def bool_cell(value: Any) -> Any:
    """A yes/no cell as a bool (TRUE, false, yes, 0, ...: what spreadsheets and pandas write); other values
    unchanged, for the model to refuse by name. JSON rows never come here: there a boolean is a boolean."""
    if isinstance(value, str):
        v = value.strip().lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
    return value


def is_missing(value: Any) -> bool:
    """Empty cells, and the NaN/None that pandas and Ragas write for a value they do not have."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, str):
        return value.strip().lower() in ("", "nan", "none", "null", "n/a", "na")
    return False


def to_float(value: Any) -> float | None:
    """A numeric cell as a float (decimal comma accepted), None when missing; ValueError otherwise."""
    if is_missing(value):
        return None
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    out = float(value) if isinstance(value, int | float) else float(number_cell(str(value)))
    if not math.isfinite(out):
        raise ValueError("must be a finite number")
    return out


def list_cell(value: Any, separator: str | None = None) -> Any:
    """A list written in one cell: JSON (``["a", "b"]``), a Python literal (``['a', "b"]``), or, when
    ``separator`` is given, text joined with it ("a|b", what DeepEval writes). Empty cell: an empty list."""
    if not isinstance(value, str):
        return value
    v = value.strip()
    if not v:
        return []
    if v.startswith("["):
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            pass
        try:
            parsed = ast.literal_eval(v)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise ValueError(
                "must be a list, written as JSON ([\"a\", \"b\"]) or as Python writes it (['a', 'b'])"
            ) from None
        if isinstance(parsed, list | tuple):
            return list(parsed)
        raise ValueError("must be a list")
    if separator is not None:
        return [part for part in value.split(separator) if part.strip()]
    return value
