"""One readable figure style for every study, and a savefig that insists on labelled axes.

Figures are plain `matplotlib.figure.Figure` objects drawn on the Agg canvas:
no pyplot, so nothing depends on a display or on the global backend, and
figures are not kept alive in pyplot's registry. Typical use:

    with figure_style():
        fig, ax = new_figure()
        ax.errorbar(...)
        ax.set_xlabel("antecedent type"); ax.set_ylabel("surprisal (bits)")
    savefig(fig, out / "figures" / "surprisal.png")

Draw inside `figure_style()` so that text and lines added after `new_figure`
get the style too (matplotlib reads most settings when an artist is made).
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from gbstats.report.palette import OKABE_ITO  # noqa: F401  (the house colours, re-exported)

STYLE = {
    "figure.figsize": (6.0, 4.0),
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "grid.alpha": 0.3,
    "axes.prop_cycle": matplotlib.cycler(color=OKABE_ITO),
    "lines.linewidth": 1.5,
    "errorbar.capsize": 3,
}


@contextlib.contextmanager
def figure_style():
    """Apply the gbstats style to everything drawn inside the block."""
    with matplotlib.rc_context(STYLE):
        yield


def new_figure(nrows: int = 1, ncols: int = 1, *, width: float | None = None,
               height: float | None = None, **subplots_options):
    """A styled Figure on the Agg canvas and its axes (as `Figure.subplots` returns them)."""
    with figure_style():
        # One panel: 6 x 4 in; grids: 3.5 x 3 in per panel.
        width = width or (STYLE["figure.figsize"][0] if ncols == 1 else 3.5 * ncols)
        height = height or (STYLE["figure.figsize"][1] if nrows == 1 else 3.0 * nrows)
        fig = Figure(figsize=(width, height), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(nrows, ncols, **subplots_options)
    return fig, axes


def _is_labelled(ax, axis: str, fig) -> bool:
    get = "get_xlabel" if axis == "x" else "get_ylabel"
    if getattr(ax, get)().strip():
        return True
    sup = fig.get_supxlabel() if axis == "x" else fig.get_supylabel()
    if sup.strip():
        return True
    # In a grid with shared axes, one label per shared axis is the convention.
    shared = ax.get_shared_x_axes() if axis == "x" else ax.get_shared_y_axes()
    return any(getattr(other, get)().strip() for other in shared.get_siblings(ax))


def unlabelled_axes(fig) -> list[str]:
    """Descriptions of the visible axes that lack an x or y label."""
    problems = []
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible() or not ax.axison or ax.get_label() == "<colorbar>":
            continue
        missing = [a for a in ("x", "y") if not _is_labelled(ax, a, fig)]
        if missing:
            title = ax.get_title() or "untitled"
            problems.append(f"axes {i} ({title!r}) has no {' or '.join(missing)} label")
    return problems


def savefig(fig, path: str | os.PathLike, *, dpi: int | None = None,
            require_labels: bool = True) -> Path:
    """Save `fig` as an image (format from the suffix), creating folders; return the path.

    With `require_labels` (the default), a figure whose axes lack a label
    raises ValueError: a figure in a report must say what it shows.
    """
    if require_labels:
        problems = unlabelled_axes(fig)
        if problems:
            raise ValueError(f"figure for {os.fspath(path)!r}: " + "; ".join(problems)
                             + " (set_xlabel/set_ylabel, or fig.supxlabel/supylabel)")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with figure_style():
        fig.savefig(path, dpi=dpi or STYLE["savefig.dpi"], bbox_inches="tight")
    return path
