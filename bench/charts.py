"""The performance page's figures: horizontal bar charts, one group of bars per row (a kernel, a
program), written as SVG with text kept as text (small files) and no date, with fixed ids: the
same data gives the same bytes. Needs matplotlib (pip install 'adgen[bench]')."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

STYLE = {"svg.fonttype": "none", "svg.hashsalt": "adgen-bench", "font.size": 9,
         "font.family": "sans-serif", "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"]}
FIXED = {"adgen": "#1f77b4", "Enzyme": "#ff7f0e", "hand-written": "#2ca02c", "manual": "#2ca02c",
         "Tapenade": "#9467bd", "primal": "#7f7f7f"}  # a series whose label starts so (the first such)
OTHERS = ("#17becf", "#8c564b", "#bcbd22", "#e377c2", "#d62728")


def _colors(labels) -> list[str]:
    found, others = [], iter(OTHERS)
    for label in labels:
        color = next((c for key, c in FIXED.items() if label.startswith(key)), None)
        found.append(color if color is not None and color not in found else next(others))
    return found


STEPS = (1.0, 2.0, 5.0)  # a narrow axis's ticks, per decade


def _label(value: float) -> str:
    return f"{value:g}" if 1e-4 <= value < 1e5 else f"{value:.0e}"


def _limits(low: float, high: float, margin: float, steps: tuple[float, ...] = STEPS) -> tuple[float, float]:
    """The axis's ends: the nearest 1, 2 or 5 times a power of ten beyond the values and a margin
    (a factor; powers of ten only where that spans more than three decades)."""
    ticks = [step * 10.0 ** e for e in range(math.floor(math.log10(low)) - 2, math.ceil(math.log10(high)) + 3)
             for step in steps]
    left, right = max(t for t in ticks if t <= low / margin), min(t for t in ticks if t >= high * margin)
    return _limits(low, high, margin, (1.0,)) if len(steps) > 1 and right / left > 1e3 else (left, right)


def bars(path: Path, title: str, xlabel: str, rows: list[str], series: dict[str, list[float | None]],
         line: tuple[float, str] | None = None, base: float | None = None) -> bool:
    """Writes the chart to `path` (SVG); False, writing nothing, where no value is positive.
    `series`: label -> one value per row (None: not measured, no bar; 0: marked "0" at the axis,
    which is logarithmic); `line`: a dashed vertical line (value, its legend label); `base`: where
    the bars start (a ratio's 1: they go left or right of it, each labelled with its value), else at
    the axis's left end."""
    values = [v for vs in series.values() for v in vs if v is not None and v > 0]
    if not values:
        return False
    ends = values + [x for x in (line and line[0], base) if x]
    left, right = _limits(min(ends), max(ends), 1.1 if base is None else 1.35)
    decades = math.log10(right / left)
    per_row = 0.16 * len(series) + 0.14
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(7.5, 1.6 + per_row * len(rows)), layout="constrained")
        ax = fig.add_subplot()
        height, handles = 0.8 / len(series), []
        for k, ((label, vs), color) in enumerate(zip(series.items(), _colors(series))):
            ys = [i - 0.4 + height * (k + 0.5) for i in range(len(rows))]
            shown = [(y, v) for y, v in zip(ys, vs) if v is not None and v > 0]
            start = base or left
            handles.append(ax.barh([y for y, _ in shown], [v - start for _, v in shown], height, left=start,
                                   color=color, label=label))
            for y, v in zip(ys, vs):
                if v == 0:
                    ax.text(left * 1.05, y, "0", va="center", ha="left", fontsize=7, color=color)
                elif v is not None and base is not None:  # (beyond the bar's end)
                    ax.text(v * (1.02 if v >= base else 1 / 1.02), y, f"{v:.2f}", va="center", fontsize=7,
                            ha="left" if v >= base else "right")
        if line:
            handles.append(ax.axvline(line[0], color="black", linestyle="--", linewidth=0.9, label=line[1]))
        ax.set_xscale("log")
        ax.set_xlim(left, right)
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=STEPS if decades <= 3 else (1.0,)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _label(x)))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yticks(range(len(rows)), rows)
        ax.set_ylim(len(rows) - 0.5, -0.5)  # the first row on top
        ax.grid(axis="x", which="major", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
        ax.set_xlabel(xlabel)
        ax.set_title(title)
        wide = sum(len(h.get_label()) for h in handles) > 80
        fig.legend(handles=handles, loc="outside lower center", ncols=2 if wide else len(handles), frameon=False)
        fig.savefig(path, format="svg", metadata={"Date": None})
    return True
