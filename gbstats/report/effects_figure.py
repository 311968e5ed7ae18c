"""The effects figure: the headline effects of a people-vs-model study, people and the model
side by side with their intervals, as a dot-and-whisker plot a paper prints.

`effects_figure(effects, simulated=..., ...)` draws it from a long DataFrame, one row per
effect and side:

    label     the effect in words ("full minus first name")
    side      "people" or "model"
    estimate  the point estimate
    ci_lo     the interval's lower end (NaN: no interval drawn)
    ci_hi     its upper end
    panel     optional: effects on one scale, or of one experiment, share a panel

Each label is one row of the plot; people's dot sits just above the model's, each with its
whisker, in the two colours of the Okabe & Ito palette that stay apart under the common
colour-vision deficiencies (and in two marker shapes, so that a grey print keeps them apart
too). A vertical line marks zero, the legend names both sides. `width` is a column width in
inches: ONE_COLUMN (3.5 in) or TWO_COLUMN (7 in), the widths of a two-column journal page.

`simulated` has no default on purpose: a caller must say whether the numbers are simulated,
and when they are, the title begins with SIMULATED where the eye lands.

`save_png_and_pdf` writes the figure as PNG and as a PDF beside it (a paper wants the vector
file, a report the PNG); `report_effects_figure` does the same into a study's report.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError
from gbstats.report.palette import OKABE_ITO

ONE_COLUMN = 3.5
TWO_COLUMN = 7.0
SIDES = ("people", "model")
REQUIRED = ("label", "side", "estimate", "ci_lo", "ci_hi")
# people blue and circles, the model vermillion and squares (Okabe & Ito 2008)
SIDE_STYLE = {"people": {"color": OKABE_ITO[0], "marker": "o"},
              "model": {"color": OKABE_ITO[3], "marker": "s"}}
# vertical offset of each side from its label's row, in rows
SIDE_OFFSET = {"people": -0.17, "model": 0.17}
SIMULATED = "SIMULATED"


def check_effects(effects: pd.DataFrame, source: str = "effects table") -> pd.DataFrame:
    """`effects` with its columns checked (see the module's docstring); a clear error names
    what is missing or wrong. Returns a copy with `panel` filled ("" when absent)."""
    if not isinstance(effects, pd.DataFrame):
        raise DataValidationError("the effects figure needs a DataFrame", source=source,
                                  expected="a pandas DataFrame with columns "
                                           + ", ".join(REQUIRED),
                                  found=type(effects).__name__)
    missing = [c for c in REQUIRED if c not in effects.columns]
    if missing:
        raise DataValidationError(
            f"the effects figure needs column(s) {', '.join(missing)}", source=source,
            expected="columns " + ", ".join(REQUIRED) + " (and optionally panel)",
            found="columns " + (", ".join(map(str, effects.columns)) or "none"))
    if effects.empty:
        raise DataValidationError("there are no effects to draw", source=source,
                                  expected="at least one row", found="0 rows")
    frame = effects.copy()
    bad_side = ~frame["side"].isin(SIDES)
    if bad_side.any():
        row = int(np.flatnonzero(bad_side.to_numpy())[0])
        raise DataValidationError("unknown side", source=source, row=row + 2, column="side",
                                  expected=" or ".join(repr(s) for s in SIDES),
                                  found=repr(frame["side"].iloc[row]))
    for column in ("estimate", "ci_lo", "ci_hi"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    no_estimate = ~np.isfinite(frame["estimate"].to_numpy(dtype=float))
    if no_estimate.any():
        row = int(np.flatnonzero(no_estimate)[0])
        raise DataValidationError("an effect has no finite estimate", source=source,
                                  row=row + 2, column="estimate", expected="a finite number",
                                  found=repr(effects["estimate"].iloc[row]))
    outside = (frame["ci_lo"] > frame["estimate"]) | (frame["ci_hi"] < frame["estimate"])
    if outside.any():
        row = int(np.flatnonzero(outside.to_numpy())[0])
        r = frame.iloc[row]
        raise DataValidationError("an interval does not contain its estimate", source=source,
                                  row=row + 2, column="ci_lo/ci_hi",
                                  expected="ci_lo <= estimate <= ci_hi",
                                  found=f"{r['ci_lo']} <= {r['estimate']} <= {r['ci_hi']}")
    if "panel" not in frame.columns:
        frame["panel"] = ""
    frame["panel"] = frame["panel"].fillna("").astype(str)
    frame["label"] = frame["label"].astype(str)
    doubled = frame.duplicated(["panel", "label", "side"])
    if doubled.any():
        row = int(np.flatnonzero(doubled.to_numpy())[0])
        raise DataValidationError("an effect is given twice for one side", source=source,
                                  row=row + 2, column="label",
                                  expected="one row per panel, label and side",
                                  found=f"{frame['label'].iloc[row]!r} ({frame['side'].iloc[row]})"
                                        " again")
    return frame


def effects_figure(effects: pd.DataFrame, *, simulated: bool, title: str,
                   xlabel: str, width: float = ONE_COLUMN,
                   ylabel: str = "effect", side_labels: dict | None = None,
                   sharex: bool = True):
    """The dot-and-whisker plot of `effects` (see the module's docstring) as a Figure.

    `title` says what the effects are; with `simulated` it begins "SIMULATED:". `xlabel`
    names the scale ("log-odds of she"), `ylabel` what the rows are. `side_labels` gives the legend's words for each
    side ({"model": "SmolLM2-135M"}); the sides are "people" and "model" otherwise.
    Panels keep the order of their first appearance, labels too. With `sharex` every panel
    has one x scale (the effects are comparable); without, each its own.
    """
    # matplotlib is imported where a figure is drawn: a run whose figures come from the
    # cache (StudyReport.drawn_figure) never imports it
    from gbstats.report.figures import figure_style, new_figure

    if not isinstance(simulated, bool):
        raise TypeError(f"simulated must be True or False, found {simulated!r}: say whether "
                        "the effects come from simulated data")
    frame = check_effects(effects)
    panels = list(dict.fromkeys(frame["panel"]))
    labels = {p: list(dict.fromkeys(frame.loc[frame["panel"] == p, "label"])) for p in panels}
    words = {side: (side_labels or {}).get(side, side) for side in SIDES}
    present = [s for s in SIDES if (frame["side"] == s).any()]

    rows = [len(labels[p]) for p in panels]
    # 0.32 in per effect row, room for each panel's title, the legend and the main title
    title_lines = len(_wrap(title, _title_characters(width)).splitlines()) + simulated
    label_lines = sum(max(len(_wrap(t, _label_characters(width)).splitlines()) for t in labels[p])
                      for p in panels)
    height = (0.32 * sum(rows) + 0.12 * label_lines + 0.35 * len(panels) + 0.8
              + 0.18 * title_lines)
    fig, axes = new_figure(len(panels), 1, width=width, height=max(height, 1.8),
                           sharex=sharex, squeeze=False,
                           gridspec_kw={"height_ratios": [n + 0.6 for n in rows]})
    axes = axes[:, 0]
    with figure_style():
        for ax, panel in zip(axes, panels):
            part = frame[frame["panel"] == panel]
            order = {label: k for k, label in enumerate(labels[panel])}
            ax.axvline(0, color="0.35", lw=0.8, zorder=1)
            for side in present:
                one = part[part["side"] == side]
                if one.empty:
                    continue
                # a panel with one side only draws it on its label's row
                alone = part["side"].nunique() == 1
                y = (one["label"].map(order).to_numpy(dtype=float)
                     + (0.0 if alone else SIDE_OFFSET[side]))
                est = one["estimate"].to_numpy(dtype=float)
                lo, hi = one["ci_lo"].to_numpy(dtype=float), one["ci_hi"].to_numpy(dtype=float)
                has = np.isfinite(lo) & np.isfinite(hi)
                ax.hlines(y[has], lo[has], hi[has], color=SIDE_STYLE[side]["color"], lw=1.4,
                          zorder=2)
                ax.plot(est, y, linestyle="none", markersize=5, zorder=3,
                        markeredgecolor="white", markeredgewidth=0.5, **SIDE_STYLE[side])
            ax.set_yticks(range(len(labels[panel])), [_wrap(t, _label_characters(width))
                                                  for t in labels[panel]])
            ax.set_ylim(len(labels[panel]) - 0.5, -0.5)      # first label on top
            ax.tick_params(axis="y", length=0)
            ax.grid(axis="y", visible=False)
            ax.grid(axis="x", alpha=0.3)
            if panel:
                ax.set_title(panel, loc="left", fontsize=9)
        for ax in (axes if not sharex else axes[-1:]):
            ax.set_xlabel(xlabel, fontsize=9)
        handles = [ax.plot([], [], linestyle="-", markersize=5, lw=1.4,
                           label=f"{words[side]} (95% interval)", **SIDE_STYLE[side])[0]
                   for side in present]
        # side by side where the width allows; stacked on one column, where two would not fit
        fig.legend(handles=handles, loc="outside lower center",
                   ncol=len(handles) if width >= 5 else 1,
                   fontsize=8, handlelength=1.6)
        shown = f"{SIMULATED}: {title}" if simulated and SIMULATED not in title else title
        fig.suptitle(_wrap(shown, _title_characters(width)), fontsize=9.5)
        fig.supylabel(ylabel, fontsize=9)
    return fig


def save_png_and_pdf(fig, path: str | os.PathLike) -> tuple[Path, Path]:
    """Write `fig` to `path` (.png) and to a PDF of the same name beside it."""
    from gbstats.report.figures import savefig

    path = Path(path)
    if path.suffix.lower() != ".png":
        raise ValueError(f"{os.fspath(path)!r}: give the .png path; the PDF goes beside it")
    png = savefig(fig, path)
    pdf = savefig(fig, path.with_suffix(".pdf"))
    return png, pdf


def report_effects_figure(report, name: str, effects: pd.DataFrame, caption: str, *,
                          simulated: bool, title: str, xlabel: str, width: float = ONE_COLUMN,
                          cache: dict | None = None, **options) -> Path:
    """Draw the effects figure and add it to `report` (a StudyReport) as figures/<name>.png
    with figures/<name>.pdf beside it; the name must say "effects", so that a reader (and a
    check) finds the headline figure of every study under one word. `cache`: the run's
    cache settings ({"cache_dir": ..., "use_cache": ...}, a study's `run.cache`), to write
    the files kept from an earlier run of the very same figure (`StudyReport.drawn_figure`);
    None draws it."""
    if "effects" not in name:
        raise ValueError(f"effects figure {name!r}: its name must contain 'effects' "
                         "(e.g. 'name_gender_effects')")
    return report.drawn_figure(name, effects_figure, [effects], caption, simulated=simulated,
                               pdf=True, draw_options=dict(simulated=simulated, title=title,
                                                           xlabel=xlabel, width=width, **options),
                               **(cache if cache is not None else {"use_cache": False}))


def _wrap(text: str, characters: int) -> str:
    """`text` broken into lines of at most `characters`, so that a long label or title never
    runs off a one-column figure."""
    import textwrap

    return "\n".join(textwrap.wrap(text, max(16, characters))) or text


def _label_characters(width: float) -> int:
    # tick labels get about 40% of the width, at about 13 characters per inch (9 pt)
    return int(0.4 * width * 13)


def _title_characters(width: float) -> int:
    return int(width * 13)
