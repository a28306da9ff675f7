"""The report's computations as top-level functions ``fn(session, settings, *args)``: what the report
router runs, in a report worker process (``services.reports.pool``) or in a thread."""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy.orm import Session

from services.config import Settings
from services.reports import figure, html
from services.reports.schemas import ReportRead
from services.reports.service import agreement_block, build_report


def report(session: Session, settings: Settings, run_ids: list[int], kwargs: dict[str, Any]) -> ReportRead:
    return build_report(session, settings, run_ids, **kwargs)


def agreement(session: Session, settings: Settings, run_ids: list[int], seed: int) -> dict[str, Any]:
    return agreement_block(session, settings, run_ids, seed)


def figure_bytes(session: Session, settings: Settings, rep: ReportRead, fmt: Literal["svg", "png"]) -> bytes:
    return figure.render(rep, fmt)


def page(session: Session, settings: Settings, rep: ReportRead, run_ids: list[int]) -> str:
    svg = figure.render(rep, "svg").decode("utf-8")
    svg = svg[svg.index("<svg") :]
    if len(run_ids) == 1:
        base, query = f"/runs/{run_ids[0]}/report", "?"
    else:
        base, query = "/report", f"?runs={','.join(map(str, run_ids))}&"
    links = {
        "JSON": f"{base}{query.rstrip('?&')}",
        "CSV": f"{base}{query}format=csv",
        "PNG": f"{base}.png{query.rstrip('?&')}",
        "API docs": "/docs",
    }
    return html.render(rep, svg, links)
