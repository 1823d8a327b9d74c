"""The timeline picture: a lane per node (and source), phase bands, the first failure, the
cascade, and metric curves under it (KV cache, running / waiting requests, GPU memory).

matplotlib's object API on a bare `Figure` (no pyplot, no global state, no GUI backend):
PNG through Agg, SVG as vectors with text kept as text (`svg.fonttype: none`), so the SVG is
small, searchable, and inlines into the HTML report. Log text is never parsed as mathtext.
"""

from __future__ import annotations

import io
import warnings
from datetime import datetime
from typing import Any

import matplotlib
import polars as pl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter, date2num
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.text import Text

from k3forensics.report.model import Report
from k3forensics.report.series import PANELS

WIDTH_IN, DPI = 9.0, 150          # 9 in: readable at ~900 px ticket width; PNG at 1350 px for sharpness
PHASE_COLORS = {
    "container_init": "#d9d9d9", "gpu_detect": "#c6dbef", "dist_init": "#9ecae1", "weight_load": "#fdd0a2",
    "engine_init": "#fdae6b", "api_ready": "#c7e9c0", "serving": "#a1d99b", "shutdown": "#bdbdbd",
}
KIND_STYLE = {"event": ("#9e9e9e", 0.25, 14), "warning": ("#e69f00", 0.9, 40), "error": ("#d62728", 0.9, 60),
              "milestone": ("#444444", 0.8, 40)}
FIRST_COLOR, CASCADE_COLOR = "#c00018", "#ff7f0e"
NODE_COLORS = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]
MAX_CASCADE_LABELS = 6
RC: dict[Any, Any] = {"text.parse_math": False, "svg.fonttype": "none", "svg.hashsalt": "k3forensics", "font.size": 8,
      "font.family": ["DejaVu Sans"], "axes.titlesize": 9, "axes.labelsize": 8, "xtick.labelsize": 7.5,
      "ytick.labelsize": 8, "legend.fontsize": 7}


def to_png(report: Report, dpi: int = DPI) -> bytes:
    with matplotlib.rc_context(RC), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        buf = io.BytesIO()
        build_figure(report).savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def to_svg(report: Report) -> str:
    with matplotlib.rc_context(RC), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        buf = io.StringIO()
        build_figure(report).savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def figure_texts(fig: Figure) -> list[str]:
    """Every string drawn on the figure (what ends up as pixels in the PNG)."""
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def build_figure(report: Report) -> Figure:
    """Call inside `matplotlib.rc_context(RC)` (to_png / to_svg do) so log text stays literal."""
    lanes = _lane_order(report)
    panels = [p for p in PANELS if report.series.height and (report.series.get_column("panel") == p).any()]
    lane_h = max(1.0, 0.38 * len(lanes) + 0.5)
    fig = Figure(figsize=(WIDTH_IN, 1.2 + lane_h + 1.35 * len(panels)), layout="constrained")
    axes = fig.subplots(1 + len(panels), 1, sharex=True, squeeze=False,
                        height_ratios=[lane_h] + [1.35] * len(panels))[:, 0]
    fig.suptitle(_title(report), fontsize=10, fontweight="bold", color=FIRST_COLOR if report.first else "#222")
    if not _has_time(report):
        axes[0].text(0.5, 0.5, "no timestamps in this bundle: nothing to place on a time axis",
                     ha="center", va="center", transform=axes[0].transAxes)
        axes[0].set_axis_off()
        return fig
    lo, hi = _time_range(report)
    axes[0].set_xlim(lo, hi)
    nodes = sorted({p.node for p in report.phases} | set(report.marks.get_column("node").to_list()
                                                          if report.marks.height else []))
    colors = {n: NODE_COLORS[i % len(NODE_COLORS)] for i, n in enumerate(nodes)}
    _lanes(axes[0], report, lanes)
    for ax, panel in zip(axes[1:], panels, strict=True):
        _panel(ax, report.series.filter(pl.col("panel") == panel), PANELS[panel], colors)
    if report.first and isinstance(report.first.get("t"), datetime):
        for ax in axes:
            ax.axvline(date2num(report.first["t"]), color=FIRST_COLOR, linestyle="--", linewidth=1.1, zorder=5)
    locator = AutoDateLocator(minticks=4, maxticks=9)
    axes[-1].xaxis.set_major_locator(locator)
    axes[-1].xaxis.set_major_formatter(ConciseDateFormatter(locator))
    hidden = _earlier(report, lo)
    axes[-1].set_xlabel("time (UTC)" + (f"; {hidden} earlier lines (before start-up) not shown" if hidden else ""))
    return fig


def _title(report: Report) -> str:
    first = report.first
    if not first:
        return "k3forensics: no failure found"
    return f"first failure: {first['category']} at {first['file']}:{first['line_no']} (node {first['node']})"


def _time_range(report: Report) -> tuple[float, float]:
    """The time axis: everything, with a 3 % margin, unless lines long before start-up (a kernel log
    from boot) would squeeze the incident into a corner: then it starts at the first phase."""
    times: list[datetime] = [t for p in report.phases for t in (p.start, p.end) if t is not None]
    for frame in (report.marks, report.series):
        if frame.height:
            column = frame.get_column("t").drop_nulls()
            times += [column.min(), column.max()] if column.len() else []  # type: ignore[list-item]
    lo, hi = date2num(min(times)), date2num(max(times))
    starts = [date2num(p.start) for p in report.phases if p.start is not None]
    if starts and report.first and isinstance(report.first.get("t"), datetime):
        starts.append(date2num(report.first["t"]))   # a failure before start-up stays on the axis
    if starts and min(starts) - lo > 0.25 * (hi - lo):
        lo = min(starts)
    pad = max((hi - lo) * 0.03, 1 / 86400)
    return lo - pad, hi + pad


def _earlier(report: Report, lo: float) -> int:
    """How many log lines fall before the axis (left out by `_time_range`)."""
    if not report.marks.height:
        return 0
    ts = date2num(report.marks.get_column("t").dt.replace_time_zone(None).to_numpy())
    return int((ts < lo).sum())


def _has_time(report: Report) -> bool:
    return bool(report.marks.height) or any(p.start for p in report.phases) or bool(report.series.height)


def _lane_order(report: Report) -> list[str]:
    lanes = report.marks.select("node", "lane").unique().sort("node", "lane").get_column("lane").to_list() \
        if report.marks.height else []
    for hit in [report.first, *report.cascade]:
        if hit and hit.get("lane") not in lanes and isinstance(hit.get("t"), datetime):
            lanes.append(hit["lane"])
    for p in report.phases:
        if not any(lane == p.node or lane.startswith(p.node + " · ") for lane in lanes):
            lanes.append(p.node)
    return lanes or ["(no timed events)"]


def _lanes(ax: Axes, report: Report, lanes: list[str]) -> None:
    y = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
    seen: dict[str, None] = {}
    for span in report.phases:
        if span.start is None or span.end is None:
            continue
        start, width = date2num(span.start), max(date2num(span.end) - date2num(span.start), 1e-6)
        for lane, row in y.items():
            if lane == span.node or lane.startswith(span.node + " · "):
                ax.broken_barh([(start, width)], (row - 0.42, 0.84), facecolors=PHASE_COLORS.get(span.phase, "#eee"),
                               edgecolors="none", zorder=1)
                seen[span.phase] = None
    marks = report.marks
    for kind, (color, alpha, size) in KIND_STYLE.items():
        rows = marks.filter(pl.col("kind") == kind) if marks.height else marks
        if rows.height:
            ax.scatter(date2num(rows.get_column("t").dt.replace_time_zone(None).to_numpy()),
                       [y[lane] for lane in rows.get_column("lane").to_list()], marker="|", s=size,
                       color=color, alpha=alpha, linewidths=0.8, zorder=2)
    _cascade(ax, report, y)
    _first(ax, report, y)
    ax.set_yticks(list(y.values()), [_short(lane, 28) for lane in y])
    ax.set_ylim(-0.6, len(lanes) - 0.4 + 0.9)  # headroom for the labels above the top lane
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    handles = [Patch(facecolor=PHASE_COLORS.get(p, "#eee"), label=p) for p in PHASE_COLORS if p in seen]
    handles += [Patch(facecolor=KIND_STYLE["error"][0], label="error line"),
                Patch(facecolor=KIND_STYLE["warning"][0], label="warning line")]
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=min(len(handles), 5),
              frameon=False, handlelength=1.2, columnspacing=1.0, borderaxespad=0.2)


def _cascade(ax: Axes, report: Report, y: dict[str, int]) -> None:
    """Cascade hits as diamonds; one label per cluster (same lane, within 2 % of the time axis)."""
    lo, hi = ax.get_xlim()
    near = (hi - lo) * 0.02
    clusters: list[tuple[float, int, list[str]]] = []
    for hit in report.cascade:
        t = hit.get("t")
        if not isinstance(t, datetime) or hit.get("lane") not in y:
            continue
        x, row = date2num(t), y[hit["lane"]]
        ax.scatter([x], [row], marker="D", s=30, color=CASCADE_COLOR, edgecolors="#333", linewidths=0.6, zorder=6)
        cluster = next((c for c in clusters if c[1] == row and abs(c[0] - x) <= near), None)
        if cluster is None:
            clusters.append((x, row, [str(hit["category"])]))
        elif str(hit["category"]) not in cluster[2]:
            cluster[2].append(str(hit["category"]))
    taken: list[tuple[int, int, float, float]] = []   # (row, offset, from, to): label boxes in data units
    per_char = (hi - lo) / (WIDTH_IN * 0.8 * 72) * 6.5 * 0.6
    for x, row, categories in clusters[:MAX_CASCADE_LABELS]:
        right_half = (x - lo) / (hi - lo) > 0.55
        label = "cascade: " + ", ".join(categories[:3]) + (" …" if len(categories) > 3 else "")
        span = (x - len(label) * per_char, x) if right_half else (x, x + len(label) * per_char)
        offset = next((o for o in (-9, 9) if not any(r == row and oo == o and a < span[1] and span[0] < b
                                                      for r, oo, a, b in taken)), None)
        if offset is None:
            continue   # no room: the diamond stays, the HTML table names it
        taken.append((row, offset, *span))
        ax.annotate(label, xy=(x, row), xytext=(-9 if right_half else 9, offset), textcoords="offset points",
                    ha="right" if right_half else "left", va="center", fontsize=6.5, color="#7a3b00", zorder=7,
                    bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})


def _first(ax: Axes, report: Report, y: dict[str, int]) -> None:
    first = report.first
    if not first or not isinstance(first.get("t"), datetime) or first.get("lane") not in y:
        return
    x, row = date2num(first["t"]), y[first["lane"]]
    ax.scatter([x], [row], marker="*", s=260, color=FIRST_COLOR, edgecolors="white", linewidths=0.8, zorder=8)
    lo, hi = ax.get_xlim()
    right_half = (x - lo) / (hi - lo) > 0.55
    top = len(y) - 0.4 + 0.45   # in the headroom above the top lane
    ax.annotate(f"FIRST FAILURE: {first['category']}", xy=(x, row), xytext=(x, top),
                ha="right" if right_half else "left", va="center", fontsize=7.5, fontweight="bold",
                color=FIRST_COLOR, zorder=9,
                bbox={"boxstyle": "round,pad=0.25", "facecolor": "white", "edgecolor": FIRST_COLOR},
                arrowprops={"arrowstyle": "-", "color": FIRST_COLOR, "linewidth": 0.8})


def _panel(ax: Axes, rows: pl.DataFrame, title: str, colors: dict[str, str]) -> None:
    styles = {"waiting": "--", "total": ":"}
    for (node, series), group in rows.group_by("node", "series", maintain_order=True):
        group = group.sort("t")
        x = date2num(group.get_column("t").dt.replace_time_zone(None).to_numpy())
        ax.plot(x, group.get_column("value").to_numpy(), linestyle=styles.get(str(series), "-"),
                marker="." if group.height < 40 else None, markersize=3, linewidth=1.3,
                color=colors.get(str(node), "#333"), label=_short(f"{node} {series}", 32))
    ax.set_ylabel(title)
    if title.startswith("KV"):
        ax.set_ylim(0, 105)
    else:
        ax.set_ylim(bottom=0)
    ax.grid(axis="y", color="#e5e5e5", linewidth=0.6)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles[:8], labels[:8], loc="upper left", ncol=min(4, len(handles)), frameon=True,
                  framealpha=0.85, edgecolor="none")


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1):]


def render_texts(report: Report) -> list[str]:
    """The strings the PNG shows, tick labels included (for checks that no secret reaches the pixels)."""
    with matplotlib.rc_context(RC), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig = build_figure(report)
        FigureCanvasAgg(fig).draw()
        return figure_texts(fig)
