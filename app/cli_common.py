"""What the `ragmeta` client commands share: the errors and exit codes, the one-line rendering of a service
error, file checks, uploads and writing a command's output (app.client, app.compare_client and app.cli all
use these; none of them imports another's internals)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

DEFAULT_URL = "http://127.0.0.1:8000"
OK, SERVICE_ERROR, USAGE, UNREACHABLE, JOB_FAILED, INTERRUPTED = 0, 1, 2, 3, 4, 130
NOT_QUALIFIED = 5
EXIT_CODES = f"""exit codes:
  {OK}    done
  {SERVICE_ERROR}    the service refused the request (its error and every bad field are printed)
  {USAGE}    bad command line: unknown option, missing or unreadable file, unsupported output format
  {UNREACHABLE}    the service cannot be reached at the URL
  {JOB_FAILED}    the job ended failed or cancelled
  {NOT_QUALIFIED}    ragmeta trust --metric NAME --require USE: that metric's verdict for that use is not yes
  {INTERRUPTED}  interrupted (Ctrl-C); a job that was being followed goes on in the service"""


class ClientError(Exception):
    """The service answered with an error."""


class UsageError(Exception):
    """The command line cannot be carried out as given (exit code 2)."""


class JobEnded(Exception):
    """A followed job ended failed or cancelled (exit code 4)."""


def service_url(args: argparse.Namespace) -> str:
    return str(getattr(args, "url", None) or os.environ.get("RAGMETA_URL") or DEFAULT_URL).rstrip("/")


def api_key(args: argparse.Namespace) -> str | None:
    return getattr(args, "key", None) or os.environ.get("RAGMETA_API_KEY") or None


def check(resp: httpx.Response) -> Any:
    """The JSON body of a success (the response itself when it is not JSON); ClientError, with the service's
    error and its first bad fields on one line each, otherwise."""
    if resp.status_code >= 400:
        try:
            body = resp.json()
            items = "".join(
                f"\n  - {i.get('field')}"
                + (f" (row {i['index']})" if i.get("index") is not None else "")
                + (f" (line {i['line']})" if i.get("line") is not None else "")
                + f": {i.get('reason')}"
                for i in body.get("items", [])[:20]
            )
            message = f"{resp.status_code} {body.get('error')}: {body.get('detail')}{items}"
        except (ValueError, AttributeError):
            message = f"{resp.status_code}: {resp.text[:500]}"
        raise ClientError(message)
    ctype = resp.headers.get("content-type", "")
    return resp.json() if ctype.startswith("application/json") else resp


# Rows asked per page when a command reads a whole list (the service's maximum).
PAGE_LIMIT = 1000


def get_all(c: httpx.Client, path: str, params: Mapping[str, Any] | None = None) -> list[Any]:
    """Every row of a paged list: the pages followed by their ``Link: rel="next"`` until the last one."""
    rows: list[Any] = []
    resp = c.get(path, params={"limit": PAGE_LIMIT, **(params or {})})
    while True:
        body = check(resp)
        rows.extend(body)
        following = resp.links.get("next", {}).get("url")
        if not following:
            return rows
        resp = c.get(following)


def get_pages(c: httpx.Client, path: str, params: Mapping[str, Any] | None = None) -> list[httpx.Response]:
    """Every page of a paged export (CSV, JSONL) in order, followed by their ``Link`` headers."""
    pages = []
    resp = c.get(path, params={"limit": PAGE_LIMIT, **(params or {})})
    while True:
        check(resp)
        pages.append(resp)
        following = resp.links.get("next", {}).get("url")
        if not following:
            return pages
        resp = c.get(following)


def readable(path: Path | None) -> Path | None:
    if path is not None and not path.is_file():
        raise UsageError(f"file not found: {path}")
    return path


def writable(path: Path) -> Path:
    if path.parent != Path("") and not path.parent.is_dir():
        raise UsageError(f"directory not found for {path}")
    return path


def upload(c: httpx.Client, path: str, file: Path, params: dict[str, Any] | None = None) -> Any:
    """POST the file's bytes as they are: decoding (encodings, separators) is the service's."""
    readable(file)
    with file.open("rb") as f:
        return check(c.post(path, params=params, files={"file": (file.name, f, "application/octet-stream")}))


def report_import(what: str, r: dict[str, Any]) -> None:
    print(
        f"{what}: {r['received']} received, {r['created']} created, {r['updated']} updated, "
        f"{r['unchanged']} unchanged"
    )
    for note in r.get("notes") or []:
        print(f"note: {note}")


def output_format(path: Path, allowed: Mapping[str, str], what: str) -> str:
    fmt = allowed.get(path.suffix.lower())
    if fmt is None:
        raise UsageError(
            f"cannot write {what} as {path.suffix or 'a file without extension'!s}: "
            f"use {', '.join(sorted(allowed))}"
        )
    return fmt


def write_output(output: Path | None, content: str) -> None:
    """The command's result into ``output`` (saying so), else on stdout."""
    if output is not None:
        writable(output).write_text(content, encoding="utf-8")
        print(f"wrote {output}")
    else:
        print(content, end="")


def as_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def print_issued(key: dict[str, Any]) -> None:
    print(f"key {key['id']} for {key['user']} ({key['role']}), shown once, keep it safe:")
    print(key["key"])
