"""What the `ragmeta` client commands share: the errors and exit codes, file checks and writing a command's
output (app.client, app.compare_client and app.cli all use these; none of them imports another's internals).
The requests themselves are the Python client's (app.sdk): no command holds HTTP code of its own."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from app.sdk import DEFAULT_URL, APIError

OK, SERVICE_ERROR, USAGE, UNREACHABLE, JOB_FAILED, INTERRUPTED = 0, 1, 2, 3, 4, 130
NOT_QUALIFIED = 5
EXIT_CODES = f"""exit codes:
  {OK}    done
  {SERVICE_ERROR}    the service refused the request (its error and every bad field are printed)
  {USAGE}    bad command line: unknown option, missing or unreadable file, unsupported output format
  {UNREACHABLE}    the service cannot be reached at the URL
  {JOB_FAILED}    the job ended failed or cancelled
  {NOT_QUALIFIED}    ragmeta trust --metric NAME --require USE: that metric's verdict for that use is not yes
  1    ragmeta gate: run B is not shown to beat run A (the evidence is printed)
  {INTERRUPTED}  interrupted (Ctrl-C); a job that was being followed goes on in the service"""


# The service answered with an error: its status, error and first bad fields on one line each.
ClientError = APIError


class UsageError(Exception):
    """The command line cannot be carried out as given (exit code 2)."""


class JobEnded(Exception):
    """A followed job ended failed or cancelled (exit code 4)."""


def service_url(args: argparse.Namespace) -> str:
    return str(getattr(args, "url", None) or os.environ.get("RAGMETA_URL") or DEFAULT_URL).rstrip("/")


def api_key(args: argparse.Namespace) -> str | None:
    return getattr(args, "key", None) or os.environ.get("RAGMETA_API_KEY") or None


def plain(value: Any) -> Any:
    """An answer of the client as the JSON data the service sent (what the terminal renderers read)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def readable(path: Path | None) -> Path | None:
    if path is not None and not path.is_file():
        raise UsageError(f"file not found: {path}")
    return path


def writable(path: Path) -> Path:
    if path.parent != Path("") and not path.parent.is_dir():
        raise UsageError(f"directory not found for {path}")
    return path


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
