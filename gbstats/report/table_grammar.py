"""The house grammar of gbstats' tables: how a data frame becomes a table a journal accepts.

Every table gbstats writes (LaTeX, Markdown) goes through `present`, which turns a
DataFrame into a `PresentedTable`: words, not code, and digits by kind. The writers
(`gbstats.report.latex.render_latex`, `gbstats.report.markdown.render_markdown`) only
typeset what it decided, so the two formats always show the same table. results.json
keeps the DataFrame itself, every column at full precision: the grammar is presentation
only.

The rules (issue 32; the model table follows R's modelsummary, see docs/tables.md):

* **Headers in words.** A column's header is the label the caller gives
  (`labels=`), else the house vocabulary's (`HOUSE_LABELS`: "SE", "95% CI", "p",
  "Participants"...), else the column's own name; a name that is still an
  identifier ("n_boot", "std_error") is what `grammar_problems` reports.
* **Cells in words.** Booleans print "yes"/"no"; values are mapped through
  `values=` ({column: {raw: shown}}); missing values print "--".
* **Digits by kind** (`KINDS`):
  - "number": a fixed number of decimals for the whole column, 3 when every value is
    below 10 in size, 2 below 1000, else 1 (`choose_decimals`); more where the
    column holds only tiny values, so that none reads 0.000. An estimate, its SE,
    SD and interval bounds share one count (`SHARED_DECIMALS`).
  - "count": integers.
  - "p": APA style, "< .001", ".034" (`format_p_value`).
  - "interval": a `<stem>_low` / `<stem>_high` pair merged into one "[lo, hi]" cell.
  - "text".
* **At most 8 columns** (`MAX_COLUMNS`). A column of settings (`SETTING_COLUMNS`, or
  named by the caller) that holds one value in every row moves to the notes (a
  result column stays, however uniform); a table still wider is split into parts that
  repeat its leading text columns.
* **Captions of at most about 25 words** (`MAX_CAPTION_WORDS`): what follows the
  first sentence of a longer caption moves to the notes.
* **Notes** hold the SIMULATED label (first), the caller's notes, the rest of
  the caption and the moved settings. A simulated table's caption begins "SIMULATED:" too
  (`simulated_caption`): the label sits where the eye lands.
* **Words, not code, in captions and notes** (issue 43): no identifiers, R formulas,
  camelCase names, function calls, module paths or code spans (`prose_problems`); a
  formula goes to results.json and the report's methods section, and a table's notes
  say it in words (gbstats.report.formula_words).

`grammar_problems` checks a presented table against these rules, and
`header_problems` / `cell_problems` do it for headers and cells read back from
a report (tests/studies/test_study_tables.py runs them over every study's tables).
"""
from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError
from gbstats.report.formatting import (CONTROL_CHARS, MISSING, format_p_value, is_missing,
                                       table_frame)

MAX_COLUMNS = 8
# A table set landscape on purpose may take this many.
MAX_LANDSCAPE_COLUMNS = 12
MAX_CAPTION_WORDS = 25
# What the check allows ("about 25 words").
CAPTION_WORD_LIMIT = 30
KINDS = ("text", "number", "count", "p", "interval", "model")
SIMULATED_WORD = "SIMULATED"
SIMULATED_NOTE = ("SIMULATED data: the numbers in this table come from a documented "
                  "simulation, not from real observations; they illustrate the method only.")

# Headers of the columns the toolkit's own tables use (FitResult.coefs, the tests,
# the alignment tables); a study adds its own words with `labels=`.
HOUSE_LABELS = {
    "term": "Term", "estimate": "Estimate", "se": "SE", "std_error": "SE", "sd": "SD",
    "ci": "95% CI", "stat": "Statistic", "df": "df", "p_value": "p", "p_holm": "p (Holm)",
    "p_adjusted": "p (adjusted)", "p_fdr": "p (FDR)", "p_bonferroni": "p (Bonferroni)",
    "backend": "Engine", "model": "Model", "dataset": "Data set", "source": "Source",
    "condition": "Condition", "n": "N", "nobs": "Observations", "n_obs": "Observations",
    "n_trials": "Trials", "n_participants": "Participants", "n_items": "Items",
    "n_correct": "Correct", "n_total": "Total", "accuracy": "Accuracy", "mean": "Mean",
    "median": "Median", "r": "r", "rho": "rho", "n_boot": "Bootstrap replicates",
    "converged": "Converged", "contrast": "Contrast", "difference": "Difference",
    "group": "Group", "rhat_max": "R-hat max", "ess_bulk_min": "Bulk ESS min",
    "ess_tail_min": "Tail ESS min", "divergences": "Divergences", "draws": "Draws",
    "chains": "Chains", "variance": "Variance", "level": "Level", "item": "Item",
    "participant": "Participant", "formula": "Formula",
}
# Columns that hold a setting of the analysis rather than a result: when one holds a single
# value in every row it moves to the notes (a study names its own with `settings=`).
SETTING_COLUMNS = frozenset({
    "n", "n_obs", "nobs", "n_boot", "n_perm", "n_permutations", "n_seeds", "n_draws", "draws",
    "n_chains", "chains", "chance", "unit", "test", "family", "family_size", "formula",
    "contrast", "backend", "model", "method", "alpha_level", "level_ci", "ci_level", "seed",
    "n_boot_defined", "note"})
# Columns that are p-values by name (any other column is one only when declared).
P_COLUMN = re.compile(r"^p_(value|holm|adj|adjusted|fdr|bonferroni|perm|permutation|boot|"
                      r"one_sided|two_sided)(_\w+)?$")
COUNT_COLUMN = re.compile(r"^(n|n_\w+|\w+_n|count|k)$")
# An estimate, its SE or SD and its interval bounds are shown with one number of decimals.
SHARED_DECIMALS = ("estimate", "se", "sd", "ci_low", "ci_high")
INTERVAL_PAIR = re.compile(r"^(?P<head>.*?)(?P<which>low|lower)(?P<tail>.*)$")

# What a cell may not be: code, not words.
LITERALS = {"True", "False", "None", "nan", "NaN", "NA", "<NA>", "NaT", "inf", "-inf",
            "Inf", "-Inf", "null"}
IDENTIFIER = re.compile(r"(?<![\w.\\/])[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9](?![\w/])")
R_TERM = re.compile(r"\(Intercept\)|(?<![\w])[a-z]\w*:[a-z]\w*(?!\w)")
# Header words that may start lower case: statistics' own symbols.
LOWER_CASE_HEADERS = re.compile(r"^(p|df|r|t|z|d|k|n|rho|tau|alpha|beta|sd|se|"
                                r"lme4|statsmodels|blme|brms|glmer|lmer|bambi)\b")
# "≤ .002": a resampling p at its resolution floor (`p_floors`)
APA_P = re.compile(r"^(< \.001|≤ \.\d{3}|\.\d{3}|1\.000)$")


@dataclass
class Column:
    """One presented column: its header (words), its kind and its cells as text."""
    label: str
    kind: str
    cells: list[str]
    # a header spanning several columns above this one (e.g. a data set over its models)
    span: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"column kind {self.kind!r}; expected one of {KINDS}")


@dataclass
class Part:
    """A tabular: columns of equal length, and group headings before some rows.

    `headings` maps a row index to the heading shown before it (a data set, a panel
    such as "Random effects (SD)"); `rules` lists the rows whose heading is set off
    by a rule (a model table's panels) rather than by space (groups of rows)."""
    columns: list[Column]
    headings: dict[int, str] = field(default_factory=dict)
    rules: set[int] = field(default_factory=set)

    @property
    def n_rows(self) -> int:
        return len(self.columns[0].cells) if self.columns else 0


@dataclass
class PresentedTable:
    """A table as the reader sees it: caption, parts (one tabular each), notes."""
    caption: str
    parts: list[Part]
    notes: list[str] = field(default_factory=list)
    label: str | None = None
    landscape: bool = False

    @property
    def max_columns(self) -> int:
        return MAX_LANDSCAPE_COLUMNS if self.landscape else MAX_COLUMNS


# ---------------------------------------------------------------------------
# digits by kind

def choose_decimals(values: Sequence[Any]) -> int:
    """Decimals for a column of numbers (the module doc's rule): 0 when every value is
    whole, 3 below 10 in size, 2 below 1000, else 1; more when every value would read
    0.000, enough for two significant digits of the largest (at most 6)."""
    finite = [abs(float(v)) for v in values
              if not is_missing(v) and math.isfinite(float(v))]
    if not finite:
        return 3
    if all(v == round(v) and v < 1e15 for v in finite):
        return 0
    largest = max(finite)
    if 0 < largest < 0.0005:
        return min(6, 1 - math.floor(math.log10(largest)))
    return 3 if largest < 10 else 2 if largest < 1000 else 1


def format_fixed(value: Any, decimals: int) -> str:
    """A number with a fixed number of decimals; "--" when missing, "∞" for infinity,
    never "-0.000"."""
    if is_missing(value):
        return MISSING
    x = float(value)
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    text = f"{x:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def format_count(value: Any, column: str = "", row: int | None = None) -> str:
    if is_missing(value):
        return MISSING
    x = float(value)
    if not math.isfinite(x) or x != round(x):
        raise DataValidationError("a count that is not a whole number", source="table",
                                  row=row, column=column, expected="a whole number",
                                  found=repr(value))
    return str(int(round(x)))


def format_interval(low: Any, high: Any, decimals: int) -> str:
    if is_missing(low) and is_missing(high):
        return MISSING
    return f"[{format_fixed(low, decimals)}, {format_fixed(high, decimals)}]"


def correlation_caps(*columns: str) -> dict[str, tuple[float, float]]:
    """`caps` for columns that hold correlations (or their interval ends): [-1, 1]."""
    return {c: (-1.0, 1.0) for c in columns}


# The flag beside a value shown at its cap (the notes say what it means).
CAP_FLAG = "‡"


def _capped(frame: pd.DataFrame, caps: Mapping[str, tuple[float, float]]
            ) -> tuple[pd.DataFrame, dict[str, set[int]]]:
    """`frame` with the `caps` columns clipped to their bounds, and {column clipped: the
    positions of its clipped rows}."""
    out, capped = frame.copy(), {}
    for column, (low, high) in caps.items():
        if column not in out.columns:
            continue
        values = pd.to_numeric(out[column], errors="coerce")
        beyond = (values < low) | (values > high)
        if beyond.any():
            out[column] = values.clip(low, high)
            capped[column] = set(np.flatnonzero(beyond.to_numpy()))
    return out, capped


def format_p_column(values: Sequence[Any], column: str, floor: float | None = None) -> list[str]:
    """APA-style p cells. With `floor`, the smallest p the method can give (a bootstrap or
    permutation p of B replicates cannot be below about 2 / (B + 1)), a p at the floor is
    shown as "≤ .002": it says the data gave no replicate past the null, not that p is
    exactly .002."""
    cells = []
    for row, value in enumerate(values, start=1):
        if floor is not None and not is_missing(value) and isinstance(value, numbers.Real) \
                and not isinstance(value, (bool, np.bool_)) and float(value) <= floor * (1 + 1e-9) \
                and floor >= 0.001:
            cells.append(f"≤ {format_p_value(floor)}")
            continue
        if not is_missing(value) and (isinstance(value, (bool, np.bool_))
                                      or not isinstance(value, numbers.Real)):
            raise DataValidationError("p-value is not a number", source="table", row=row,
                                      column=column, expected="a number in [0, 1]",
                                      found=repr(value))
        try:
            cells.append(format_p_value(value))
        except ValueError:
            raise DataValidationError("p-value outside [0, 1]", source="table", row=row,
                                      column=column, expected="0 <= p <= 1",
                                      found=repr(value)) from None
    return cells


def format_text(value: Any, shown: Mapping | None = None) -> str:
    """A text cell: the caller's word for the value, yes/no for a boolean, "--" if missing."""
    if shown:
        try:
            if value in shown:
                return str(shown[value])
        except TypeError:  # an unhashable value has no entry
            pass
        if not is_missing(value) and str(value) in shown:
            return str(shown[str(value)])
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if is_missing(value):
        return MISSING
    if isinstance(value, (float, np.floating)):
        return format_fixed(value, choose_decimals([value]))
    return str(value)


def infer_kind(name: str, series: pd.Series) -> str:
    """The kind of a column nobody declared: p-values by name, counts by integer values
    (or a count's name and whole values), numbers, else text."""
    if pd.api.types.is_bool_dtype(series.dtype):
        return "text"
    if pd.api.types.is_numeric_dtype(series.dtype):
        if P_COLUMN.match(name):
            return "p"
        if pd.api.types.is_integer_dtype(series.dtype):
            return "count"
        finite = series[np.isfinite(series.astype(float))]
        if COUNT_COLUMN.match(name) and len(finite) and bool((finite == finite.round()).all()):
            return "count"
        return "number"
    return "text"


# ---------------------------------------------------------------------------
# present: a DataFrame -> PresentedTable

def _interval_pairs(columns: Sequence[str]) -> dict[str, tuple[str, str]]:
    """{stem: (low, high)} for column pairs like ci_low/ci_high or ci_low_wide/ci_high_wide."""
    pairs = {}
    for name in columns:
        match = INTERVAL_PAIR.match(name)
        if not match:
            continue
        high_word = "high" if match["which"] == "low" else "upper"
        partner = f"{match['head']}{high_word}{match['tail']}"
        if partner in columns:
            stem = (match["head"].rstrip("_") + match["tail"]) or "ci"
            pairs[stem] = (name, partner)
    return pairs


def header_label(name: str, labels: Mapping[str, str] | None) -> str:
    if labels and name in labels:
        return str(labels[name])
    return HOUSE_LABELS.get(name, name)


def present(df: pd.DataFrame, caption: str, *, label: str | None = None,
            labels: Mapping[str, str] | None = None, kinds: Mapping[str, str] | None = None,
            decimals: Mapping[str, int] | int | None = None,
            values: Mapping[str, Mapping] | None = None, columns: Sequence[str] | None = None,
            groups: str | None = None, keep: Sequence[str] = (), notes: Sequence[str] = (),
            settings: Sequence[str] = (),
            simulated: bool = False, settings_to_notes: bool = True, split: bool = True,
            short_caption: bool = True, intervals: bool = True,
            landscape: bool = False,
            p_floors: Mapping[str, float] | None = None,
            caps: Mapping[str, tuple[float, float]] | None = None) -> PresentedTable:
    """`df` as the reader sees it, by the rules of the module doc.

    labels     {column: header} (house words by default)
    kinds      {column: "text" | "number" | "count" | "p"} (inferred by default)
    decimals   {column or interval stem: decimals} for number columns, or one count for all
    values     {column: {raw value: shown text}}
    columns    the columns to show (default all); results.json keeps every one anyway
    groups     a column whose values become headings of row groups instead of a column (one
               heading per group: a group's rows are gathered where it first appears)
    settings   columns that hold settings (besides SETTING_COLUMNS): one that holds the same
               value in every row moves to the notes
    keep       setting columns that stay in the table even if every row holds the same value
    notes      sentences for the notes, after the SIMULATED label
    simulated  put the SIMULATED label first in the notes
    p_floors   {p column: the smallest p its method can give}: a p at it shows as "≤ .002"
    caps       {number column: (low, high)}: shown clipped to the bounds, with a note (a
               corrected correlation of 1.355 shows as 1.000); results.json keeps the value
    settings_to_notes, split, short_caption, intervals
               the layout rules (on by default): a repeated setting moves to the notes,
               a table wider than MAX_COLUMNS is split, a caption over MAX_CAPTION_WORDS
               keeps its first sentence, ci_low/ci_high become one "95% CI" column.
    """
    frame = table_frame(df, columns)
    kinds = dict(kinds or {})
    values = dict(values or {})
    for name, kind in kinds.items():
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r} for column {name!r}; expected one of {KINDS}")
    note_list = [SIMULATED_NOTE] if simulated else []
    note_list += [as_sentence(n) for n in notes if str(n).strip()]
    caption = CONTROL_CHARS.sub(" ", str(caption)).strip()
    if short_caption:
        caption, rest = shorten_caption(caption)
        note_list += [as_sentence(rest)] if rest else []
    caption = simulated_caption(caption, simulated)

    headings: dict[int, str] = {}
    if groups is not None:
        if groups not in frame.columns:
            raise DataValidationError("the column to group rows by is missing", source="table",
                                      expected=f"a column {groups!r}",
                                      found=f"columns {list(frame.columns)}")
        # one heading per block, blocks in the order they first appear: rows of a group that
        # come back after another group's join their block (a table ordered Exp 1, 3, 1, 3
        # shows Exp 1, 1, 3, 3; one alternating Memory, Production shows each heading once)
        keys = frame[groups].map(lambda v: "\0missing" if is_missing(v) else v)
        first = {v: k for k, v in reversed(list(enumerate(keys)))}
        order = sorted(range(len(frame)), key=lambda i: (first[keys.iloc[i]], i))
        frame = frame.iloc[order].reset_index(drop=True)
        previous = object()
        for i, value in enumerate(frame[groups]):
            if i == 0 or value != previous:
                headings[i] = format_text(value, values.get(groups))
            previous = value
        frame = frame.drop(columns=groups)

    capped: dict[str, set[int]] = {}
    if caps:
        frame, capped = _capped(frame, caps)
        if capped:
            # an interval's end is named by the merged column it shows in ("95% CI")
            stems = {c: stem for stem, pair in _interval_pairs(list(frame.columns)).items()
                     for c in pair} if intervals else {}
            shown = ", ".join(dict.fromkeys(header_label(stems.get(c, c), labels)
                                            for c in capped))
            note_list.append(f"{shown}: values beyond their bounds (estimation noise, for "
                             f"example a corrected correlation above 1) are shown at the "
                             f"bound, marked {CAP_FLAG}; results.json keeps them as "
                             f"estimated.")

    def flag(cell: str, column: str, row: int) -> str:
        return cell + CAP_FLAG if row in capped.get(column, ()) and cell != MISSING else cell
    kind_of = {c: kinds.get(c) or infer_kind(c, frame[c]) for c in frame.columns}
    pairs = _interval_pairs([c for c in frame.columns if kind_of[c] == "number"]) \
        if intervals else {}
    paired = {c for pair in pairs.values() for c in pair}
    shared = [c for c in SHARED_DECIMALS if c in frame.columns and kind_of[c] == "number"]
    shared_values = np.concatenate([frame[c].to_numpy(float) for c in shared]) if shared else []
    # an estimate with its SE and interval: 2-3 decimals, never fewer than 2 (unless whole)
    shared_decimals = (choose_decimals(shared_values) if choose_decimals(shared_values) == 0
                       else max(2, choose_decimals(shared_values))) if shared else None

    def decimals_for(name: str, data: Sequence, share_with: str | None = None) -> int:
        if isinstance(decimals, int):
            return decimals
        if decimals and name in decimals:
            return int(decimals[name])
        if (share_with or name) in shared:
            return shared_decimals
        return choose_decimals(data)

    built: list[Column] = []
    moved: list[str] = []
    for name in frame.columns:
        if name in paired and name not in (low for low, _ in pairs.values()):
            continue
        if name in paired:
            stem = next(s for s, (low, _) in pairs.items() if low == name)
            low, high = pairs[stem]
            data = np.concatenate([frame[low].to_numpy(float), frame[high].to_numpy(float)])
            d = decimals_for(stem, data, share_with=low)
            cells = [MISSING if is_missing(lo) and is_missing(hi) else
                     f"[{flag(format_fixed(lo, d), low, i)}, {flag(format_fixed(hi, d), high, i)}]"
                     for i, (lo, hi) in enumerate(zip(frame[low], frame[high]))]
            built.append(Column(header_label(stem, labels), "interval", cells))
            continue
        series, kind = frame[name], kind_of[name]
        if kind == "p":
            cells = format_p_column(list(series), str(name), (p_floors or {}).get(name))
        elif kind == "count":
            cells = [format_count(v, str(name), i) for i, v in enumerate(series, start=1)]
        elif kind == "number":
            d = decimals_for(name, list(series))
            cells = [flag(format_fixed(v, d), name, i) for i, v in enumerate(series)]
        else:
            cells = [format_text(v, values.get(name)) for v in series]
        column = Column(header_label(name, labels), kind, cells)
        if settings_to_notes and name not in keep and len(frame) and set(cells) == {""}:
            continue  # an empty text column (notes nobody wrote) has nothing to show
        is_setting = name in SETTING_COLUMNS or name in settings
        if settings_to_notes and is_setting and name not in keep \
                and _is_setting(column, len(frame)):
            moved.append(f"{column.label}: {column.cells[0]}")
            continue
        if settings_to_notes and name not in keep and len(frame) and \
                all(c == MISSING for c in column.cells):
            moved.append(f"{column.label}: none")
            continue
        built.append(column)
    if not built:  # every column was a setting: show them after all
        return present(df, caption, label=label, labels=labels, kinds=kinds, decimals=decimals,
                       values=values, columns=columns, groups=groups, keep=keep, notes=notes,
                       simulated=simulated, settings_to_notes=False, split=split,
                       short_caption=short_caption, intervals=intervals, landscape=landscape,
                       p_floors=p_floors, caps=caps)
    if moved:
        note_list.append("In every row: " + "; ".join(moved) + ".")
    limit = MAX_LANDSCAPE_COLUMNS if landscape else MAX_COLUMNS
    parts = [Part(cols, dict(headings)) for cols in
             (split_columns(built, limit) if split else [built])]
    # a table no type size fits on the 6.5-inch block is set landscape (issue 43)
    return PresentedTable(caption, parts, note_list, label,
                          landscape or needs_landscape(parts))


def simulated_caption(caption: str, simulated: bool) -> str:
    """The caption of a table computed from simulated data begins "SIMULATED:", where the
    eye lands, not only in the notes (issue 43)."""
    if simulated and SIMULATED_WORD not in caption:
        return f"{SIMULATED_WORD}: {caption}"
    return caption


# The text block a table must fit (issue 43): 6.5 inches, in points.
TEXT_WIDTH_PT = 469.8
# The smallest type a table is set in before it runs into the margin (LaTeX's \scriptsize
# at 11 pt: 8 pt, with 3 pt between columns; gbstats.report.latex.SHRINK_STEPS).
SMALLEST_TYPE_SCALE = 8 / 11


def estimated_width(part: "Part", char_pt: float = 5.5, gap_pt: float = 12.0) -> float:
    """About how wide `part` is set at 11 pt, in points: `char_pt` a character of each
    column's widest cell or header line, `gap_pt` between columns."""
    widths = []
    for column in part.columns:
        header = max((len(w) for w in column.label.split()), default=0) \
            if len(column.label) > 12 else len(column.label)
        widths.append(max([header, *(len(c) for c in column.cells)]) * char_pt)
    return sum(widths) + gap_pt * max(0, len(widths) - 1)


def needs_landscape(parts: Sequence["Part"]) -> bool:
    """Whether a part would still be wider than the text block in the smallest type (a
    generous 6 pt a character at 11 pt): the grammar then sets the table landscape."""
    return any(estimated_width(part, 6.0 * SMALLEST_TYPE_SCALE, 6.0) > TEXT_WIDTH_PT
               for part in parts)


def as_sentence(note: Any) -> str:
    """A note as a sentence of the notes: stripped, ending in a full stop (or its own mark)."""
    text = str(note).strip()
    return text if not text or text.endswith((".", "!", "?", ")", "]", ":")) else text + "."


def _is_setting(column: Column, n_rows: int) -> bool:
    """A text or count column holding one value in every row (of two or more)."""
    if column.kind not in ("text", "count") or n_rows < 2:
        return False
    distinct = set(column.cells)
    return len(distinct) == 1 and MISSING not in distinct


def split_columns(columns: list[Column], limit: int) -> list[list[Column]]:
    """Parts of at most `limit` columns, each repeating the leading text columns (the
    row's keys, at most 3)."""
    if len(columns) <= limit:
        return [columns]
    keys = []
    for column in columns:
        if column.kind != "text" or len(keys) == 3:
            break
        keys.append(column)
    rest = columns[len(keys):]
    width = max(1, limit - len(keys))
    return [keys + rest[i:i + width] for i in range(0, len(rest), width)]


def shorten_caption(caption: str, limit: int = MAX_CAPTION_WORDS) -> tuple[str, str]:
    """(caption, rest): a caption over `limit` words keeps its first sentence (or clause
    before "; "); the rest goes to the notes."""
    if len(caption.split()) <= limit:
        return caption, ""
    for mark in (". ", "; ", ": ", " ("):
        head, sep, tail = caption.partition(mark)
        if sep and len(head.split()) <= limit and head:
            rest = tail.strip()
            if mark == " (":
                rest = "(" + rest
            rest = rest[0].upper() + rest[1:] if rest else rest
            return head.rstrip(".") + ".", rest if rest.endswith((".", ")")) else rest + "."
    return caption, ""


# ---------------------------------------------------------------------------
# the checks

def header_problems(headers: Sequence[str]) -> list[str]:
    """Headers that are code, not words: an underscore, or a lower-case start that is no
    statistic's symbol ("delta", "nobs")."""
    problems = []
    for header in headers:
        text = str(header).strip()
        if not text:
            continue
        if "_" in text:
            problems.append(f"header {text!r} is an identifier")
        elif text[0].isascii() and text[0].islower() and not LOWER_CASE_HEADERS.match(text):
            problems.append(f"header {text!r} starts in lower case (an identifier?)")
    return problems


def cell_problems(cells: Sequence[str]) -> list[str]:
    """Cells that are code: Python/R literals, snake_case names, R term names."""
    problems = []
    for cell in cells:
        text = str(cell).strip()
        if text in LITERALS:
            problems.append(f"cell {text!r} is a literal")
        elif IDENTIFIER.search(text):
            problems.append(f"cell {text!r} holds an identifier "
                            f"({IDENTIFIER.search(text).group()!r})")
        elif R_TERM.search(text):
            problems.append(f"cell {text!r} holds an R term name ({R_TERM.search(text).group()!r})")
        else:   # a variable's name joined up, as a formula spells it ("StoryCondition")
            joined = [m.group() for what, pattern in PROSE_CODE
                      if what in ("a camelCase name", "a joined-up name")
                      for m in pattern.finditer(text) if m.group() not in PROSE_NAMES]
            if joined:
                problems.append(f"cell {text!r} holds a joined-up name ({joined[0]!r})")
    return problems


# Code in a caption or note (issue 43): what a paper's reader would take for a program's
# output. Each pattern is (what it is, regex); `prose_problems` reports every match.
PROSE_CODE = (
    # (an underscore escaped for LaTeX, score\_z, is one too)
    ("an identifier", re.compile(r"(?<![\w.\\])[A-Za-z][A-Za-z0-9]*\\?_[A-Za-z0-9_\\]*"
                                 r"[A-Za-z0-9](?![\w])")),
    ("formula syntax", re.compile(r"\(\s*1\s*\+?[^()|]*\||\|\s*[A-Za-z]\w*(?::\w+)?\s*\)|~")),
    ("a camelCase name", re.compile(r"(?<![\w/.-])[a-z]+[A-Z][A-Za-z]*\b")),
    ("a joined-up name", re.compile(r"(?<![\w/.-])(?:[A-Z][a-z]+){3,}\b|"
                                    r"(?<![\w/.-])[A-Z][a-z]+(?:Centered|Centred|Rating|Name|"
                                    r"Gender|Score|Type|Id|Count|Condition|Group|Level|Unit|Key)\b")),
    ("a function call", re.compile(r"\b(?!s\))[a-z][a-z0-9]*\((?=[\w'\"])")),
    ("a module path", re.compile(r"\b[a-z][a-z0-9]+(?:\.[a-z_][a-z0-9_]+){2,}\b|"
                                 r"\bgbstats\.[a-z_]+|\bstudies\.[a-z_]+")),
    ("a code span", re.compile(r"`")),
    ("a command-line option", re.compile(r"(?<![\w-])--[a-z][a-z-]+")),
    ("an R term name", re.compile(r"\(Intercept\)|(?<![\w/])[a-z]\w*:[a-z]\w*(?![\w/])")),
)
# Names of software and models a paper may print as they are spelled.
PROSE_NAMES = frozenset({
    "lmerTest", "glmmTMB", "pymer4", "statsmodels", "lme4", "blme", "bglmer", "glmer", "lmer",
    "brms", "bambi", "emmeans", "mixedpower", "simr", "PyMC", "ArviZ", "SciPy", "NumPy",
    "pandas", "minicons", "pdflatex", "siunitx", "booktabs", "lmerControl", "optimx",
    "nloptwrap", "bobyqa", "TinyLlama", "SmolLM", "RoBERTa", "DeBERTa", "ModernBERT",
    "DistilBERT", "ALBERT", "GPT", "OLMo", "OpenWebText", "WinoBias", "WinoGender",
    "WinoPron", "GenderLens", "GenDaLens", "DaWinoBias", "GenDa", "MultiBERTs", "BookCorpus", "HuggingFace",
    "GitHub", "MacKinnon", "McDonald", "McFadden", "DeBruine", "LaTeX", "BibTeX",
    "iOS", "eLife", "bioRxiv", "arXiv", "PsyArXiv", "OSF", "mTurk", "MTurk", "iPhone",
})
# A quantized model's published scheme ("SmolLM2-135M-Instruct, 4-bit (Q4_1)", Q4_K_M): part
# of the model's name as its publisher writes it, not code.
QUANTIZATION = re.compile(r"[QF]\d+(?:_[A-Z0-9]+)+")
# One design-check sentence per table at most (issue 43): how such a sentence begins.
DESIGN_CHECK_WORDS = re.compile(r"[Dd]esign check\b")


def prose_problems(text: str, where: str = "note") -> list[str]:
    """Code in a caption or note (`where` names which): identifiers, R formula syntax,
    camelCase or joined-up variable names, function calls ("help('isSingular')"),
    module paths, Markdown code spans, command-line options, R term names; and a
    design-check sentence said more than once. [] for words a paper would print."""
    text = str(text)
    problems = []
    for what, pattern in PROSE_CODE:
        for match in pattern.finditer(text):
            found = match.group()
            if found.strip("(`") in PROSE_NAMES or _is_file_name(text, match) \
                    or QUANTIZATION.fullmatch(found):
                continue
            problems.append(f"{where} holds {what}: {found!r}")
    if len(DESIGN_CHECK_WORDS.findall(text)) > 1:
        problems.append(f"{where} says the design check {len(DESIGN_CHECK_WORDS.findall(text))} "
                        "times (at most once per table)")
    return list(dict.fromkeys(problems))


_FILE_NAME = re.compile(r"[\w-]+\.(?:json|csv|tex|pdf|md|png|txt)\b")


def _is_file_name(text: str, match: re.Match) -> bool:
    """`match` is part of an output file's name ("results.json") with no underscore: a file
    the reader is pointed to, not code."""
    for name in _FILE_NAME.finditer(text):
        if name.start() <= match.start() and match.end() <= name.end() and "_" not in name.group():
            return True
    return False


# How a table states its N (issue 43: every table does): a count column, a row of
# observations, or a count of units in its caption or notes.
N_HEADER = re.compile(r"^(N|n)\b|^(Participants|People|Items|Stimuli|Trials|Observations|"
                      r"Responses|Sentences|Names|Instances|Texts|Ratings|Questions|Pairs|"
                      r"Templates|Occupations|Sets|Cells|Raters|Subjects|Words|Nouns|Lists|"
                      r"Frames|Groups|Models|Replicates|Seeds|Characters|Prompts|"
                      r"Completions|Occurrences|Errors|Sentences|Questions|Total)\b",
                      re.IGNORECASE)
# a count column moved to the notes ("In every row: Occupations: 3")
N_SETTING = re.compile(r"(?:^|[\s;:])(?:N|Participants|People|Items|Stimuli|Trials|Observations|"
                       r"Responses|Sentences|Names|Instances|Occupations|Characters|Prompts|"
                       r"Questions|Errors|Pairs|Sets|Cells|Raters|Words|Templates)\s*:\s*\d")
N_WORDS = re.compile(r"\b[Nn]\s*[=:]\s*\d|\b\d[\d,]*\s+(?:[a-z-]+\s+){0,2}?(?:participants?|people|"
                     r"persons?|items?|stimuli|stimulus|trials?|observations?|responses?|"
                     r"sentences?|names?|instances?|texts?|ratings?|questions?|pairs?|"
                     r"templates?|occupations?|sets?|cells?|raters?|subjects?|words?|nouns?|"
                     r"lists?|frames?|forms?|answers?|replicates?|seeds?|rows?|models?|"
                     r"contexts?|choices?|groups?|experiments?)\b")


def states_n(headers: Sequence[str], row_labels: Sequence[str], caption: str,
             notes: Sequence[str] | str) -> bool:
    """Whether a table states its N: a count column (`N_HEADER`), a row of counts (a model
    table's "Observations"), or a count of units in its caption or notes (`N_WORDS`)."""
    text = f"{caption} " + (notes if isinstance(notes, str) else " ".join(notes)) + " " \
        + " ".join(str(r) for r in row_labels)   # a group heading: "all items (335 items)"
    return (any(N_HEADER.match(str(h).strip().split(": ")[-1]) for h in headers)
            or any(N_HEADER.match(str(r).strip("* ")) for r in row_labels)
            or bool(N_WORDS.search(text)) or bool(N_SETTING.search(text)))


def simulated_problems(caption: str, notes: Sequence[str] | str) -> list[str]:
    """A table whose notes carry the SIMULATED label must say SIMULATED in its caption
    too, where the eye lands (issue 43)."""
    text = notes if isinstance(notes, str) else " ".join(notes)
    if SIMULATED_WORD in text and SIMULATED_WORD not in str(caption):
        return ["the notes say SIMULATED but the caption does not"]
    return []


def caption_problems(caption: str) -> list[str]:
    words = len(str(caption).split())
    return [f"caption has {words} words (at most about {MAX_CAPTION_WORDS})"] \
        if words > CAPTION_WORD_LIMIT else []


def decimals_of(cell: str) -> int | None:
    match = re.fullmatch(r"-?\d+(?:\.(\d+))?", cell.strip())
    if not match:
        return None
    return len(match.group(1) or "")


def digit_problems(label: str, kind: str, cells: Sequence[str]) -> list[str]:
    if kind == "p":
        bad = [c for c in cells if c != MISSING and not APA_P.match(c)]
        return [f"column {label!r}: p-values not in APA style: {bad[:3]}"] if bad else []
    if kind == "count":
        bad = [c for c in cells if c != MISSING and decimals_of(c) not in (0,)]
        return [f"column {label!r}: counts with decimals: {bad[:3]}"] if bad else []
    if kind == "number":
        found = {decimals_of(c) for c in cells if decimals_of(c) is not None}
        return [f"column {label!r}: uneven decimals {sorted(found)}"] if len(found) > 1 else []
    return []


def grammar_problems(table: PresentedTable) -> list[str]:
    """Every way `table` breaks the rules of the module doc; [] for a table a journal accepts."""
    problems = caption_problems(table.caption)
    problems += prose_problems(table.caption, "caption")
    problems += [p for note in table.notes for p in prose_problems(note, "note")]
    problems += prose_problems(" ".join(table.notes), "notes")[-1:] \
        if len(DESIGN_CHECK_WORDS.findall(" ".join(table.notes))) > 1 else []
    problems += simulated_problems(table.caption, table.notes)
    for number, part in enumerate(table.parts, start=1):
        where = f"part {number}: " if len(table.parts) > 1 else ""
        if len(part.columns) > table.max_columns:
            problems.append(f"{where}{len(part.columns)} columns (at most {table.max_columns})")
        problems += [where + p for p in header_problems([c.label for c in part.columns])]
        problems += [where + p for p in header_problems(sorted({c.span for c in part.columns
                                                                if c.span}))]
        for column in part.columns:
            problems += [where + p for p in cell_problems(column.cells)]
            problems += [where + p for p in digit_problems(column.label, column.kind,
                                                           column.cells)]
        problems += [where + p for p in cell_problems(list(part.headings.values()))]
    return list(dict.fromkeys(problems))


# the name `from gbstats import present_table` gives `present`
present_table = present
