"""The study's Figure 1 style: one panel per analysis, one row per metric grouped by library, point and
95 % CI, the zero line and the human ceiling; the best metric (when there is one) and the group not
distinguishable from the top metric are marked; metrics not computed are listed with the reason; warnings
head the figure.

matplotlib with the Agg backend, imported on first use. SVG text stays text (searchable, selectable) and the
SVG scales to its container (no fixed size)."""

from __future__ import annotations

import io
import re
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from services.reports.presentation import text
from services.reports.schemas import Analysis, MetricRow, ReportRead

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Format = Literal["svg", "png", "pdf"]
LIB_COLOURS = {
    "ragas": "#1f77b4",
    "deepeval": "#ff7f0e",
    "opik": "#2ca02c",
    "ragchecker": "#d62728",
    "classic": "#9467bd",
    "ref": "#17becf",
    "external": "#7f7f7f",
}
LIB_ORDER = ["ragas", "deepeval", "opik", "ragchecker", "classic", "ref", "external"]
# The figure names the reason briefly; the page and the JSON give it in full.
SHORT_REASONS = {
    "no_judge": "no LLM judge configured",
    "not_requested": "not requested",
    "pending": "not scored yet",
}
WIDTH_IN = 9.0
FONT = 9.0
ROW_IN = 0.30
GROUP_COLOUR = "#fff1b8"
# Rows with no point (not computed, undefined) sit on a band drawn over the grid and the reference lines, so
# that their text is never crossed by the zero line and the rows read as "nothing to show here".
EMPTY_ROW_COLOUR = "#f4f4f4"
CEILING_COLOUR = "#b00020"


@dataclass
class _Row:
    kind: Literal["metric", "not_computed"]
    label: str
    library: str
    height: float  # in row units
    metric: MetricRow | None = None
    lines: list[str] | None = None


def _lib_rank(library: str) -> int:
    return LIB_ORDER.index(library) if library in LIB_ORDER else len(LIB_ORDER)


def _rows(analysis: Analysis) -> list[_Row]:
    rows = sorted(
        analysis.metrics,
        key=lambda m: (
            _lib_rank(m.library),
            m.library,
            -(m.pearson.estimate if m.pearson.estimate is not None else -9),
        ),
    )
    out = [
        _Row("metric", m.metric + ("" if m.higher_is_better else " (↓ better)"), m.library, 1.0, m)
        for m in rows
    ]
    groups: dict[tuple[str, str], list[str]] = {}
    for nc in analysis.not_computed:
        reason = SHORT_REASONS.get(nc.reason_code or "", nc.reason)
        groups.setdefault((nc.library, reason), []).append(nc.metric.split(".", 1)[-1])
    for (library, reason), names in sorted(groups.items(), key=lambda kv: (_lib_rank(kv[0][0]), kv[0])):
        lines = textwrap.wrap(f"not computed ({reason}): {', '.join(names)}", 90)
        label = f"{text.library_label(library)}: {len(names)} metric{'s' if len(names) > 1 else ''}"
        out.append(_Row("not_computed", label, library, max(1.0, 0.62 * len(lines) + 0.3), lines=lines))
    return out


def _ci_label(report: ReportRead) -> str:
    """The interval the Pearson panels show: the question jackknife when questions repeat."""
    if report.n_questions is not None and report.n_items is not None and report.n_questions < report.n_items:
        return "jackknife-t by question"
    return "BCa" if report.bootstrap else "Fisher"


def _x_range(panels: list[Analysis], ceiling: float | None) -> tuple[float, float]:
    """From the data: every point and interval, 0 and the ceiling visible, never beyond [-1, 1]."""
    xs = [0.0]
    if ceiling is not None:
        xs.append(ceiling)
    for a in panels:
        for m in a.metrics:
            for v in (m.pearson.estimate, m.pearson.ci_low, m.pearson.ci_high):
                if v is not None:
                    xs.append(v)
    if len(xs) == 1 + (ceiling is not None):  # nothing to place: show the positive half, 0 and 1 visible
        xs += [1.0]
    lo, hi = min(xs), max(xs)
    if hi - lo < 0.5:  # too narrow a span exaggerates differences
        hi = min(1.0, lo + 0.5)
        lo = min(lo, hi - 0.5)
    pad = 0.04 * (hi - lo)
    return max(-1.0, lo - pad) - (0.0 if lo - pad > -1 else 0.02), min(1.0, hi + pad) + (
        0.0 if hi + pad < 1 else 0.02
    )


def warm_up() -> None:
    """Import matplotlib and draw an empty SVG once (its font list and the SVG backend load then), so that a
    process's first figure does not pay for them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(1, 1))
    try:
        fig.text(0.5, 0.5, "r")
        fig.savefig(io.BytesIO(), format="svg")
    finally:
        plt.close(fig)


def render(report: ReportRead, fmt: Format = "svg") -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"  # real <text> in the SVG
    panels = [a for a in report.analyses if a.metrics or a.not_computed]
    panel_rows = [_rows(a) for a in panels]
    heights = [max(sum(r.height for r in rows), 1.0) for rows in panel_rows] or [1.0]
    warning_lines = [
        line for w in report.warnings for line in textwrap.wrap(f"⚠ {w.scope}: {w.message}", 120)
    ][:10]
    note_lines = textwrap.wrap(" ".join(report.notes), 130)[:4]
    head_in = 0.55 + 0.17 * (len(warning_lines) + len(note_lines))
    title_in, ticks_in = 0.5, 0.38  # title and verdict above each panel's axes; x tick labels below
    # The legend explains colours and marks, so only the libraries with a point in the figure.
    libraries = sorted(
        {m.library for a in panels for m in a.metrics if m.pearson.estimate is not None}, key=_lib_rank
    )
    any_group = any(len(a.top_group) > 1 and any(m.metric in a.top_group for m in a.metrics) for a in panels)
    any_best = any(a.best for a in panels)
    n_handles = len(libraries) + (report.human_ceiling is not None) + any_group + any_best
    legend_in = 0.2 + 0.17 * -(-n_handles // 4) if n_handles else 0.15  # rows of 4 entries
    fig_h = head_in + sum(h * ROW_IN + title_in + ticks_in for h in heights) + legend_in
    fig = plt.figure(figsize=(WIDTH_IN, fig_h))
    ceiling = report.human_ceiling
    x_lo, x_hi = _x_range(panels, ceiling)

    _head(fig, report, fig_h, warning_lines, note_lines, bool(panels))
    y_top = 1 - head_in / fig_h
    _draw_panels(fig, panels, panel_rows, heights, (ceiling, x_lo, x_hi), (y_top, fig_h, title_in, ticks_in))
    _legend(fig, libraries, ceiling, any_group, any_best)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=150 if fmt == "png" else None, metadata=_metadata(fmt))
    plt.close(fig)
    data = buf.getvalue()
    if fmt == "svg":
        data = _fluid_svg(data)
    return data


def _head(
    fig: Figure,
    report: ReportRead,
    fig_h: float,
    warning_lines: list[str],
    note_lines: list[str],
    any_panel: bool,
) -> None:
    """The title, then the warnings and the notes, above the panels."""
    fig.text(
        0.01,
        1 - 0.12 / fig_h,
        f"Correlation with the reference — Pearson r, 95 % {_ci_label(report)} CI — "
        f"{text.runs_label(report)}",
        fontsize=FONT + 1.5,
        weight="bold",
        va="top",
    )
    y_text = 1 - 0.42 / fig_h
    for line in warning_lines:
        fig.text(0.01, y_text, line, fontsize=FONT - 0.5, color="#b3261e", va="top")
        y_text -= 0.17 / fig_h
    for line in note_lines:
        fig.text(0.01, y_text, line, fontsize=FONT - 1, color="#555", va="top")
        y_text -= 0.17 / fig_h
    if not any_panel:
        fig.text(0.5, 0.5, "no metric scores yet", ha="center", va="center", fontsize=FONT + 1)


def _draw_panels(
    fig: Figure,
    panels: list[Analysis],
    panel_rows: list[list[_Row]],
    heights: list[float],
    x_axis: tuple[float | None, float, float],
    layout: tuple[float, float, float, float],
) -> None:
    """One panel per analysis, top down: its title and verdict, then its axes. ``x_axis``: the human
    ceiling and the x range; ``layout``: the top of the first panel and the figure's height (figure
    fraction), then the title and tick label heights (inches)."""
    ceiling, x_lo, x_hi = x_axis
    y_top, fig_h, title_in, ticks_in = layout
    for analysis, rows, h in zip(panels, panel_rows, heights, strict=True):
        ax_h = h * ROW_IN
        bottom = y_top - (title_in + ax_h) / fig_h
        ax = fig.add_axes((0.34, bottom, 0.62, ax_h / fig_h))
        _panel(ax, analysis, rows, h, ceiling if analysis.id != 2 else None, x_lo, x_hi)
        n_text = _n_text(analysis)
        fig.text(
            0.01,
            y_top - 0.05 / fig_h,
            f"{analysis.id}. {analysis.title}" + (f" ({n_text})" if n_text else ""),
            fontsize=FONT + 0.5,
            weight="bold",
            va="top",
        )
        if analysis.verdict:
            fig.text(
                0.01,
                y_top - 0.25 / fig_h,
                textwrap.shorten(f"Verdict: {analysis.verdict}", 150),
                fontsize=FONT - 0.5,
                va="top",
                color="#333",
            )
        y_top = bottom - ticks_in / fig_h


def _legend(
    fig: Figure, libraries: list[str], ceiling: float | None, any_group: bool, any_best: bool
) -> None:
    """Colours and marks: only the libraries with a point in the figure, the ceiling, group and best."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Line2D | Patch] = [
        Line2D([], [], marker="o", color=LIB_COLOURS.get(lib, "#333"), label=text.library_label(lib))
        for lib in libraries
    ]
    if ceiling is not None:
        handles.append(
            Line2D(
                [], [], color=CEILING_COLOUR, linestyle="--", label=f"human ceiling √ICC(A,k) = {ceiling:.2f}"
            )
        )
    if any_group:
        handles.append(Patch(facecolor=GROUP_COLOUR, label="not distinguishable from the top metric (95 %)"))
    if any_best:
        handles.append(
            Line2D([], [], marker="*", color="#000", linestyle="", markersize=9, label="best metric")
        )
    if handles:
        fig.legend(
            handles=handles,
            loc="lower center",
            ncol=min(len(handles), 4),
            fontsize=FONT - 0.5,
            frameon=False,
            bbox_to_anchor=(0.5, 0.0),
        )


def _metadata(fmt: Format) -> dict[str, str | None] | None:
    # Reproducible files: no creation date in SVG/PDF.
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return None


def _fluid_svg(data: bytes) -> bytes:
    """Drop the fixed width/height (in pt) so that the SVG scales to its container; the viewBox stays."""
    head, sep, rest = data.partition(b"<svg")
    tag_end = rest.index(b">")
    tag = rest[:tag_end]
    tag = re.sub(rb'\swidth="[^"]*"', b' width="100%"', tag, count=1)
    tag = re.sub(rb'\sheight="[^"]*"', b"", tag, count=1)
    return head + sep + tag + rest[tag_end:]


def _n_text(analysis: Analysis) -> str:
    ns = [m.n for m in analysis.metrics]
    if not ns:
        return ""
    return f"n = {min(ns)}" if min(ns) == max(ns) else f"n = {min(ns)}–{max(ns)}"


def _panel(
    ax: object,
    analysis: Analysis,
    rows: list[_Row],
    height: float,
    ceiling: float | None,
    x_lo: float,
    x_hi: float,
) -> None:
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
    group = set(analysis.top_group) if len(analysis.top_group) > 1 else set()
    y = height
    ticks, labels = [], []
    empty: list[list[float]] = []  # [low, high] of runs of adjacent rows without a point, one band each
    for r in rows:
        centre = y - r.height / 2
        y -= r.height
        ticks.append(centre)
        labels.append(r.label)
        colour = LIB_COLOURS.get(r.library, "#333333")
        if r.kind == "not_computed" or (r.metric is not None and r.metric.pearson.estimate is None):
            if empty and abs(empty[-1][0] - (y + r.height)) < 1e-9:
                empty[-1][0] = y
            else:
                empty.append([y, y + r.height])
        if r.kind == "not_computed":
            ax.text(
                x_lo + 0.01 * (x_hi - x_lo),
                centre,
                "\n".join(r.lines or []),
                va="center",
                ha="left",
                fontsize=FONT - 1.5,
                color="#555",
                linespacing=1.1,
                zorder=3,
            )
            continue
        m = r.metric
        assert m is not None
        if m.metric in group:
            ax.axhspan(centre - 0.5, centre + 0.5, color=GROUP_COLOUR, zorder=0, linewidth=0)
        c = m.pearson
        if c.estimate is None:
            ax.text(
                x_lo + 0.01 * (x_hi - x_lo),
                centre,
                textwrap.shorten(f"undefined: {c.undefined_reason}", 90),
                va="center",
                ha="left",
                fontsize=FONT - 1.5,
                color="#666",
                zorder=3,
            )
            continue
        if c.ci_low is not None and c.ci_high is not None:
            ax.plot([c.ci_low, c.ci_high], [centre, centre], color=colour, linewidth=2, zorder=2)
        best = analysis.best == m.metric
        ax.plot(
            [c.estimate],
            [centre],
            "*" if best else "o",
            color=colour,
            markersize=12 if best else 6,
            markeredgecolor="#000" if best else colour,
            zorder=3,
        )
    for low, high in empty:  # one band per run: adjacent bands leave anti-aliasing seams
        ax.axhspan(low, high, color=EMPTY_ROW_COLOUR, zorder=1.5, linewidth=0)
    ax.set_ylim(0, height)
    ax.set_yticks(ticks, labels, fontsize=FONT)
    for tick, r in zip(ax.get_yticklabels(), rows, strict=True):
        if r.kind == "not_computed":
            tick.set_color("#777")
        elif r.metric is not None and r.metric.metric == analysis.best:
            tick.set_fontweight("bold")
    ax.set_xlim(x_lo, x_hi)
    ax.axvline(0, color="#444", linewidth=0.9, zorder=1)
    if ceiling is not None and x_lo <= ceiling <= x_hi:
        ax.axvline(ceiling, color=CEILING_COLOUR, linestyle="--", linewidth=1.0, zorder=1)
    ax.set_axisbelow(True)  # grid under the bands of empty rows
    ax.grid(axis="x", color="#e3e3e3", linewidth=0.6)
    ax.tick_params(axis="x", labelsize=FONT - 0.5)
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
