"""Spreadsheet-tolerant CSV: encodings, delimiters, line ends, quoted newlines, headers, cells."""

from __future__ import annotations

import pytest

from services.csvread import list_cell, number_cell, read_csv, sniff_delimiter, to_float
from services.errors import MalformedInput

ROWS = [("q1", "alice", "5", "très bien; net"), ("q2", "bob", "3", 'ligne 1\nligne "2"')]


def sheet(delimiter: str, newline: str = "\n") -> str:
    def cell(v: str) -> str:
        return f'"{v.replace(chr(34), chr(34) * 2)}"' if any(c in v for c in (delimiter, "\n", '"')) else v

    lines = [delimiter.join(["question_id", "rater", "score", "comment"])]
    lines += [delimiter.join(cell(v) for v in row) for row in ROWS]
    return newline.join(lines) + newline


@pytest.mark.parametrize(
    ("delimiter", "newline", "encoding", "bom"),
    [
        (",", "\n", "utf-8", False),
        (";", "\r\n", "utf-8", True),
        (";", "\r\n", "cp1252", False),
        ("\t", "\n", "utf-8", False),
        ("\t", "\r\n", "utf-16", True),
    ],
)
def test_every_spreadsheet_variant_reads_the_same(
    delimiter: str, newline: str, encoding: str, bom: bool
) -> None:
    raw = sheet(delimiter, newline).encode(encoding)
    if bom and encoding == "utf-8":
        raw = b"\xef\xbb\xbf" + raw
    t = read_csv(raw)
    assert t.delimiter == delimiter
    assert t.columns == ["question_id", "rater", "score", "comment"]
    assert [tuple(r.values()) for _, r in t.records] == ROWS
    assert [line for line, _ in t.records] == [2, 3]
    if encoding == "cp1252":
        assert t.encoding == "cp1252" and "not valid UTF-8" in t.notes[0] and "Windows-1252" in t.notes[0]
    else:
        assert t.notes == []


def test_latin1_when_not_even_cp1252() -> None:
    # 0x81 is undefined in cp1252: the fallback says it read Latin-1.
    t = read_csv(b"a,b\n\x81x,\xe9\n")
    assert t.encoding == "latin-1" and "Latin-1" in t.notes[0]
    assert t.records[0][1] == {"a": "\x81x", "b": "é"}


def test_headers_are_normalised_and_trailing_empty_columns_dropped() -> None:
    t = read_csv(b"Question ID;Rater-Name; SCORE ;;\nq1;a;4;;\n")
    assert t.columns == ["question_id", "rater_name", "score"]
    assert t.records[0][1] == {"question_id": "q1", "rater_name": "a", "score": "4"}


def test_short_rows_are_padded_and_blank_rows_skipped() -> None:
    t = read_csv(b"a,b,c\n1,2\n,,\n\n3,4,5\n")
    assert [r for _, r in t.records] == [{"a": "1", "b": "2", "c": ""}, {"a": "3", "b": "4", "c": "5"}]
    assert [line for line, _ in t.records] == [2, 5]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "empty CSV"),
        (b"a,b\n1,2,3\n", "more cells than the header"),
        (b"a,A\n1,2\n", "two columns named 'a'"),
        (b"a,,b\n1,2,3\n", "column without a name"),
    ],
)
def test_unreadable_csv_names_the_problem(raw: bytes, message: str) -> None:
    with pytest.raises(MalformedInput) as exc:
        read_csv(raw)
    assert message in exc.value.detail


def test_semicolon_wins_over_commas_inside_cells() -> None:
    text = "question_id;rater;score;comment\nq1;a;4;bien, très bien, parfait\nq2;b;2;non, pas du tout\n"
    assert sniff_delimiter(text) == ";"


def test_list_cells_json_python_literal_and_separator() -> None:
    assert list_cell('["a", "b"]') == ["a", "b"]
    assert list_cell("['c1 \\'x\\'', 'c2 \"y\"']") == ["c1 'x'", 'c2 "y"']
    assert list_cell("x|y", "|") == ["x", "y"]
    assert list_cell("") == []
    assert list_cell("plain") == "plain"
    with pytest.raises(ValueError, match="must be a list"):
        list_cell("[not a list")


def test_numbers_with_a_decimal_comma() -> None:
    assert number_cell("0,75") == "0.75"
    assert number_cell(" 4 ") == "4"
    assert number_cell("1,234,5") == "1,234,5"  # not a number: left for validation to refuse
    assert to_float("0,5") == 0.5
    assert to_float("NaN") is None and to_float("") is None and to_float(None) is None
    with pytest.raises(ValueError):
        to_float("inf")
    with pytest.raises(ValueError):
        to_float("abc")
