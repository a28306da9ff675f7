"""The study's Figure 1 style: one row per metric grouped by library, point and CI whisker, sorted, a zero
line and the human ceiling, n in the title. matplotlib with the Agg backend, imported on first use."""

from __future__ import annotations

import io
import textwrap
from typing import Literal

from services.reports.schemas import Analysis, ReportRead

LIB_COLOURS = {
    "ragas": "#1f77b4",
    "deepeval": "#ff7f0e",
    "opik": "#2ca02c",
    "ragchecker": "#d62728",
    "classic": "#9467bd",
    "ref": "#17becf",
    "external": "#7f7f7f",
}


def render(report: ReportRead, fmt: Literal["svg", "png"] = "svg") -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [a for a in report.analyses if a.metrics]
    n_rows = sum(len(a.metrics) for a in panels) or 1
    fig, axes = plt.subplots(
        len(panels) or 1,
        1,
        figsize=(8.5, 1.4 + 0.32 * n_rows + 0.9 * len(panels)),
        squeeze=False,
        gridspec_kw={"height_ratios": [max(len(a.metrics), 1) for a in panels] or [1]},
    )
    if not panels:
        axes[0, 0].text(0.5, 0.5, "no metric scores yet", ha="center", va="center")
        axes[0, 0].set_axis_off()
    for ax, analysis in zip(axes[:, 0], panels, strict=False):
        _panel(ax, analysis, report.human_ceiling if analysis.id != 2 else None)
    notes = textwrap.fill(" ".join(report.notes), 120)
    fig.suptitle(
        f"Correlation with the reference (Pearson r, 95 % {'BCa' if report.bootstrap else 'Fisher'} CI)"
        + (f"\n{notes}" if notes else ""),
        fontsize=8,
    )
    libraries = sorted({m.library for a in panels for m in a.metrics})
    if libraries:
        from matplotlib.lines import Line2D

        handles = [
            Line2D([], [], marker="o", color=LIB_COLOURS.get(lib, "#333"), label=lib) for lib in libraries
        ]
        fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=150 if fmt == "png" else None)
    plt.close(fig)
    return buf.getvalue()


def _panel(ax: object, analysis: Analysis, ceiling: float | None) -> None:
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
    # Group by library, sort by r inside each group: the study's layout.
    rows = sorted(
        analysis.metrics,
        key=lambda m: (m.library, -(m.pearson.estimate if m.pearson.estimate is not None else -9)),
    )
    labels, ns = [], []
    for y, m in enumerate(reversed(rows)):
        colour = LIB_COLOURS.get(m.library, "#333333")
        r = m.pearson
        label = m.metric + ("" if m.higher_is_better else " (↓)")
        labels.append(label)
        ns.append(m.n)
        if r.estimate is None:
            ax.text(
                0, y, f"undefined: {r.undefined_reason}", va="center", ha="center", fontsize=6, color="#777"
            )
            continue
        if r.ci_low is not None and r.ci_high is not None:
            ax.plot([r.ci_low, r.ci_high], [y, y], color=colour, linewidth=1.6)
        ax.plot([r.estimate], [y], "o", color=colour, markersize=5)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.axvline(0, color="#444", linewidth=0.8)
    if ceiling is not None:
        ax.axvline(ceiling, color="#b00", linestyle="--", linewidth=0.9)
        ax.text(ceiling, -0.45, "human ceiling ", color="#b00", fontsize=6, va="bottom", ha="right")
    ax.set_xlim(-1, 1)
    n_text = f"n = {min(ns)}" if ns and min(ns) == max(ns) else f"n = {min(ns)}–{max(ns)}" if ns else ""
    ax.set_title(f"{analysis.id}. {analysis.title} ({n_text})", fontsize=8, loc="left")
    ax.grid(axis="x", color="#ddd", linewidth=0.5)
    ax.tick_params(axis="x", labelsize=7)
