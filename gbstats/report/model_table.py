"""A model table: fitted models side by side, as papers print them.

    table = model_table({"lme4": lme4_fit, "Bayesian": twin},
                        variables={"gendered": "Name"}, groups={"frame": "Frames"})
    table.presented("Surprisal of they after a name")      # -> PresentedTable
    table.frame                                             # the numbers, one row per cell

One or more FitResults (lme4, statsmodels, blme, the Bayesian twin: every fit the
toolkit returns has the one result shape of `gbstats.mixed.results`) become one table
whose rows are terms and whose columns are models, following R's modelsummary
(Arel-Bundock 2022; docs/tables.md lists the conventions and where this table departs):

* **Fixed effects**: the estimate, and beneath it its SE in parentheses (the posterior
  SD for a Bayesian fit), or the 95% interval in brackets (`statistic="ci"`), or
  nothing (`statistic="none"`). One number of decimals per model column (3 below 10 in
  size, `table_grammar.choose_decimals`). A term fitted by several models is one row.
* **Term labels in words**, from each fit's recorded factor coding
  (fit_stats["contrasts"]): a treatment contrast reads "Stereotype: pro vs anti", a
  sum contrast "Close: near vs mean of levels", a Helmert or user contrast the levels
  its coefficient compares ("Pronoun: they vs he+she", read off the inverse of the
  coding matrix), an interaction "A × B", the intercept "Intercept". `variables=` and
  `levels=` give the words for variables and levels; `terms=` overrides whole labels.
* **Significance marks**, off by default (`stars=True`: * p < .05, ** p < .01,
  *** p < .001, the legend in the notes); never on a Bayesian column.
* **Random effects** in their own panel: the SD of every random intercept and slope,
  the residual SD, and with `correlations=True` the correlations lme4 or statsmodels
  estimated (read through `gbstats.mixed.ranef.random_effects`; a fit reused from
  the fit cache keeps no model to ask, which a note says).
* **Fit**: observations, groups per grouping factor, log-likelihood and AIC (BIC and
  Nakagawa's R² when asked for in `gof`; R² needs the fitted model, so a fit reused
  from the fit cache shows "--" and a note says why); for a Bayesian fit the LOO
  expected log predictive density where it was computed.
* **Notes**: the factor coding, each model's estimation method and intervals, every
  fit's convergence, singular-fit and separation warnings, the Bayesian twins'
  convergence figures, and the star legend.
* **A reproduction**: `published=` ({term: estimate} or a frame with `term`,
  `estimate` and optionally `se`) adds a "Published" column and the difference
  (ours - published) beside the model named by `compare=`.

`frame` holds every number at full precision (presentation stays in the table).
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gbstats.report.formatting import CONTROL_CHARS, MISSING, is_missing
from gbstats.report.table_grammar import (SIMULATED_NOTE, Column, Part, PresentedTable,
                                          as_sentence, choose_decimals, format_fixed,
                                          needs_landscape, shorten_caption, simulated_caption)

STATISTICS = ("se", "ci", "none")
GOF_ROWS = ("nobs", "groups", "loglik", "aic", "bic", "r2", "elpd")
DEFAULT_GOF = ("nobs", "groups", "loglik", "aic", "elpd")
STARS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))
STAR_LEGEND = "* p < .05, ** p < .01, *** p < .001."
INTERCEPT = "(Intercept)"
PANEL_FIXED, PANEL_RANDOM, PANEL_FIT, PANEL_PUBLISHED = ("Fixed effects", "Random effects (SD)",
                                                         "Fit", "Published")
# Decimals of the fit rows (as modelsummary's default gof_map: logLik/AIC/BIC to one).
GOF_DECIMALS = {"loglik": 1, "aic": 1, "bic": 1, "r2_marginal": 3, "r2_conditional": 3,
                "elpd": 1}
ESTIMATION = {
    "lme4": {"gaussian": "lme4 (REML)", "binomial": "lme4 (Laplace ML)"},
    "statsmodels": {"gaussian": "statsmodels (REML)"},
    "blme": {"binomial": "blme (penalised Laplace)"},
    "bambi": {"gaussian": "Bayesian (PyMC)", "bernoulli": "Bayesian (PyMC)",
              "binomial": "Bayesian (PyMC)"},
}


def is_bayesian(fit) -> bool:
    return getattr(fit, "backend", None) == "bambi"


# ---------------------------------------------------------------------------
# term labels from the design's codings

@dataclass(frozen=True)
class Coded:
    """What a fit's recorded coding says about one factor."""
    variable: str
    kind: str
    levels: tuple[str, ...]
    names: tuple[str, ...]
    matrix: np.ndarray


def codings_of(fit) -> dict[str, Coded]:
    records = (getattr(fit, "fit_stats", None) or {}).get("contrasts") or {}
    out = {}
    for var, r in records.items():
        levels = tuple(str(v) for v in r["levels"])
        names = tuple(str(n) for n in r["names"])
        matrix = np.asarray(r["matrix"], float).reshape(len(levels), len(names))
        out[var] = Coded(var, r["kind"], levels, names, matrix)
    return out


def predictors_of(fit) -> list[str]:
    from gbstats.mixed.formula import FormulaError, parse_formula

    try:
        return list(parse_formula(fit.formula).predictors)
    except FormulaError:
        return []


def contrast_weights(coded: Coded) -> np.ndarray:
    """Row j: the weights on the level means that coefficient j estimates (the inverse of
    [1 | coding matrix]); the intercept's row is dropped."""
    full = np.column_stack([np.ones(len(coded.levels)), coded.matrix])
    return np.linalg.inv(full)[1:]


def contrast_label(coded: Coded, column: int, level_words: Mapping[str, str]) -> str:
    """What one contrast column compares, in the levels' words."""
    def word(level: str) -> str:
        return str(level_words.get(level, level))

    if coded.kind == "treatment":
        return f"{word(coded.levels[column + 1])} vs {word(coded.levels[0])}"
    if coded.kind == "sum":
        return f"{word(coded.levels[column])} vs mean of levels"
    weights = contrast_weights(coded)[column]
    scale = np.max(np.abs(weights)) or 1.0
    plus = [word(lv) for lv, w in zip(coded.levels, weights) if w > 1e-9 * scale]
    minus = [word(lv) for lv, w in zip(coded.levels, weights) if w < -1e-9 * scale]
    return f"{'+'.join(plus)} vs {'+'.join(minus)}"


def term_label(term: str, codings: Mapping[str, Coded], predictors: Sequence[str],
               variables: Mapping[str, str] | None = None,
               levels: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """A coefficient's R name in words (see the module doc); a piece it cannot read is
    kept as written."""
    variables, levels = dict(variables or {}), dict(levels or {})
    if term == INTERCEPT:
        return "Intercept"
    known = sorted(set(predictors) | set(codings), key=len, reverse=True)
    pieces = []
    for piece in term.split(":"):
        pieces.append(_piece_label(piece, known, codings, variables, levels))
    return " × ".join(pieces)


def _piece_label(piece: str, known: Sequence[str], codings: Mapping[str, Coded],
                 variables: Mapping[str, str], levels: Mapping[str, Mapping[str, str]]) -> str:
    for var in known:
        if not piece.startswith(var):
            continue
        name, rest = variables.get(var, var), piece[len(var):]
        if rest == "":
            return name
        coded = codings.get(var)
        if coded is None:
            continue
        words = levels.get(var, {})
        if rest in coded.names:
            return f"{name}: {contrast_label(coded, coded.names.index(rest), words)}"
        if rest in coded.levels:  # a factor coded by indicators (no intercept, nested terms)
            return f"{name}: {words.get(rest, rest)}"
    return piece


def fit_term_labels(fit, variables: Mapping[str, str] | None = None,
                    levels: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, str]:
    """{R term name: label in words} for every coefficient of `fit` (term_label)."""
    codings, predictors = codings_of(fit), predictors_of(fit)
    return {t: term_label(t, codings, predictors, variables, levels) for t in fit.coefs["term"]}


def group_label(group: str, groups: Mapping[str, str] | None) -> str:
    base = re.sub(r"\.\d+$", "", str(group))  # lme4 numbers split terms: participant.1
    return str((groups or {}).get(base, base))


# ---------------------------------------------------------------------------
# the table

@dataclass
class Row:
    key: str          # what the row holds: "coef:<term>", "sd:<group>:<term>", "gof:<name>"
    label: str
    panel: str
    role: str = "estimate"   # "estimate" or "statistic" (the SE / interval line beneath)


@dataclass
class ModelTable:
    """The rows and cells of a model table, and its notes; `presented` typesets it."""
    models: dict[str, Any]
    rows: list[Row]
    cells: dict[str, list[str]]            # model label -> cell per row
    notes: list[str]
    frame: pd.DataFrame                    # every number, full precision, one row per cell
    spans: dict[str, str] = field(default_factory=dict)   # model label -> spanning header
    headers: dict[str, str] = field(default_factory=dict)  # model label -> column header

    def presented(self, caption: str, label: str | None = None, *, notes: Sequence[str] = (),
                  simulated: bool = False) -> PresentedTable:
        """The table for the writers: a Term column, one column per model, panels for
        random effects and fit, notes after the caller's `notes`."""
        caption, rest = shorten_caption(CONTROL_CHARS.sub(" ", str(caption)).strip())
        caption = simulated_caption(caption, simulated)
        note_list = ([SIMULATED_NOTE] if simulated else []) + [as_sentence(n) for n in notes
                                                                if str(n).strip()]
        note_list += ([as_sentence(rest)] if rest else []) + [as_sentence(n) for n in self.notes]
        columns = [Column("Term", "text", [r.label if r.role == "estimate" else ""
                                           for r in self.rows])]
        for model in self.cells:
            columns.append(Column(self.headers.get(model, model), "model", self.cells[model],
                                  span=self.spans.get(model, "")))
        headings, rules, previous = {}, set(), PANEL_FIXED
        for i, row in enumerate(self.rows):
            if row.panel != previous:
                headings[i] = row.panel
                rules.add(i)
                previous = row.panel
        parts = [Part(columns, headings, rules)]
        return PresentedTable(caption, parts, note_list, label, needs_landscape(parts))


def model_table(models, *, statistic: str = "se", stars: bool = False,
                variables: Mapping[str, str] | None = None,
                levels: Mapping[str, Mapping[str, str]] | None = None,
                terms: Mapping[str, str] | None = None,
                groups: Mapping[str, str] | None = None, correlations: bool = False,
                gof: Sequence[str] = DEFAULT_GOF, published=None, compare: str | None = None,
                decimals: int | None = None, coding_note: bool = True,
                drop_terms: Sequence[str] = ()) -> ModelTable:
    """Build the model table of `models` (see the module doc).

    models     a FitResult, a sequence of them (headed (1), (2), ...), or {label: FitResult};
               a label may be a (span, label) pair: models sharing a span get one header
               above them (e.g. a data set over its engines)
    statistic  "se" (default), "ci" or "none": the line beneath each estimate
    stars      significance marks (* p < .05, ** p < .01, *** p < .001), off by default
    variables, levels, terms, groups
               words for variables ({"gendered": "Name"}), levels
               ({"gendered": {"yes": "gendered"}}), whole terms ({"close1": "Close"})
               and grouping factors ({"participant": "Participants"})
    correlations  the random-effect correlations too (they need the fitted model)
    gof        fit rows, from GOF_ROWS
    published  {term: estimate} or a frame with term, estimate (and se) of a published
               fit; `compare` names the model it is set beside (default: the first)
    decimals   one number of decimals for every estimate (default: chosen per model)
    drop_terms R term names left out of the table (they stay in `frame`)
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic {statistic!r}; expected one of {STATISTICS}")
    unknown = [g for g in gof if g not in GOF_ROWS]
    if unknown:
        raise ValueError(f"gof rows {unknown} unknown; expected some of {GOF_ROWS}")
    given = _as_models(models)
    fits, spans, headers = {}, {}, {}
    for key, fit in given.items():
        span, header = (str(key[0]), str(key[1])) if isinstance(key, tuple) else ("", str(key))
        name = f"{span}: {header}" if span else header
        if name in fits:
            raise ValueError(f"two models are labelled {name!r}; give each model its own label")
        fits[name], spans[name], headers[name] = fit, span, header
    rows, numbers = _coef_rows(fits, variables, levels, terms, statistic, drop_terms)
    rows += _ranef_rows(fits, groups, correlations, numbers, variables, levels)
    rows += _gof_rows(fits, gof, groups, numbers)
    notes = []
    cells = {label: _format_model(label, fit, rows, numbers, statistic, stars, decimals)
             for label, fit in fits.items()}
    if published is not None:
        target = compare or next(iter(fits))
        if target not in fits:
            raise ValueError(f"compare={target!r} is not one of the models {list(fits)}")
        pub_cells, diff_cells, pub_numbers = _published_columns(published, rows, numbers, target,
                                                                statistic, cells[target])
        numbers += pub_numbers
        ordered = {}
        for label in fits:
            ordered[label] = cells[label]
            if label == target:
                for header, column in (("Published", pub_cells), ("Difference", diff_cells)):
                    name = f"{spans[target]}: {header}" if spans[target] else header
                    ordered[name], spans[name], headers[name] = column, spans[target], header
        cells = ordered
        notes.append(f"Published: the published estimates{' (SE)' if statistic == 'se' else ''}; "
                     f"Difference: {target} minus published.")
    notes += _scale_notes(rows, cells)
    notes += _notes(fits, stars, statistic, coding_note, variables, levels,
                    likelihood_rows=bool({"loglik", "aic", "bic"} & set(gof)))
    if correlations and any(getattr(f, "handle", None) is None for f in fits.values()):
        notes.append("Random-effect correlations need the fitted model; fits reused from the "
                     "fit cache show none (rerun with --no-cache).")
    if "r2" in gof and any(getattr(f, "handle", None) is None or is_bayesian(f)
                           for f in fits.values()):
        notes.append("R² (Nakagawa) needs a fresh frequentist fit: a Bayesian fit or one reused "
                     "from the fit cache shows --.")
    frame = pd.DataFrame(numbers, columns=["model", "row", "quantity", "value"])
    return ModelTable(fits, rows, cells, notes, frame,
                      {k: v for k, v in spans.items() if v}, headers)


def _as_models(models) -> dict:
    from gbstats.mixed.results import FitResult

    if isinstance(models, FitResult):
        return {"(1)": models}
    if isinstance(models, Mapping):
        out = dict(models)
    elif isinstance(models, Sequence) and not isinstance(models, str):
        out = {f"({i})": m for i, m in enumerate(models, start=1)}
    else:
        raise TypeError(f"model_table takes FitResults (one, a list or a dict), found "
                        f"{type(models).__name__}")
    if not out:
        raise ValueError("model_table needs at least one fitted model")
    bad = {str(k): type(v).__name__ for k, v in out.items() if not isinstance(v, FitResult)}
    if bad:
        raise TypeError(f"model_table takes FitResults; found {bad}")
    return out


def _coef_rows(fits, variables, levels, terms, statistic, drop_terms):
    rows, numbers, seen = [], [], {}
    for label, fit in fits.items():
        codings, predictors = codings_of(fit), predictors_of(fit)
        for rec in fit.coefs.itertuples(index=False):
            key = f"coef:{rec.term}"
            for quantity in ("estimate", "se", "ci_low", "ci_high", "p_value"):
                numbers.append((label, key, quantity, float(getattr(rec, quantity))))
            if rec.term in drop_terms or key in seen:
                continue
            text = (terms or {}).get(rec.term) or term_label(rec.term, codings, predictors,
                                                            variables, levels)
            seen[key] = text
            rows.append(Row(key, text, PANEL_FIXED))
            if statistic != "none":
                rows.append(Row(key, text, PANEL_FIXED, role="statistic"))
    # the intercept first, as R prints it
    intercept = [r for r in rows if r.key == f"coef:{INTERCEPT}"]
    return intercept + [r for r in rows if r.key != f"coef:{INTERCEPT}"], numbers


def _ranef_term_words(term: str, codings_by_fit, predictors, variables, levels) -> str:
    if term in ("(Intercept)", "Intercept", "1"):
        return "Intercept"
    labels = {term_label(term, c, p, variables, levels) for c, p in zip(codings_by_fit, predictors)}
    return sorted(labels)[0]


def ranef_label(group: str, term_words: str, groups: Mapping[str, str] | None) -> str:
    """A random-effect SD's row: the term, then the grouping factor in parentheses,
    e.g. "Intercept (participants)"."""
    word = group_label(group, groups)
    return f"{term_words} ({word[:1].lower() + word[1:] if word[1:2].islower() else word})"


def _ranef_rows(fits, groups, correlations, numbers, variables=None, levels=None):
    rows, seen = [], set()
    codings = [codings_of(f) for f in fits.values()]
    predictors = [predictors_of(f) for f in fits.values()]
    for label, fit in fits.items():
        table = fit.ranef_var
        for rec in table.itertuples(index=False):
            group, term = str(rec.group), "" if is_missing(rec.term) else str(rec.term)
            key = f"sd:{group}:{term}"
            numbers.append((label, key, "sd", float(rec.sd)))
            if key in seen:
                continue
            seen.add(key)
            if group == "Residual":
                text = "Residual"
            else:
                text = ranef_label(group, _ranef_term_words(term, codings, predictors,
                                                            variables, levels), groups)
            rows.append(Row(key, text, PANEL_RANDOM))
        if correlations:
            for key, text, value in _correlations(fit, groups, variables, levels):
                numbers.append((label, key, "cor", value))
                if key not in seen:
                    seen.add(key)
                    rows.append(Row(key, text, PANEL_RANDOM))
    residual = [r for r in rows if r.key.startswith("sd:Residual:")]
    return [r for r in rows if not r.key.startswith("sd:Residual:")] + residual


def _correlations(fit, groups, variables=None, levels=None):
    if getattr(fit, "handle", None) is None or is_bayesian(fit):
        return []
    from gbstats.mixed.ranef import random_effects

    pars = random_effects(fit)
    pars = pars[(pars["effect"] == "ran_pars") & pars["term"].str.startswith("cor__")]
    out = []
    for rec in pars.itertuples(index=False):
        first, _, second = rec.term.removeprefix("cor__").partition(".")
        codings, predictors = codings_of(fit), predictors_of(fit)
        words = [("intercept" if t == INTERCEPT else term_label(t, codings, predictors,
                                                                variables, levels))
                 for t in (first, second)]
        out.append((f"cor:{rec.group}:{first}:{second}",
                    ranef_label(rec.group, f"Correlation of {words[0]} and {words[1]}", groups),
                    float(rec.estimate)))
    return out


def _n_groups(fit) -> dict[str, int]:
    from gbstats.mixed.results import group_counts

    return group_counts(fit)


def _gof_rows(fits, gof, groups, numbers):
    rows = []
    wanted = list(gof)
    for name in wanted:
        if name == "nobs":
            for label, fit in fits.items():
                if "nobs" in fit.fit_stats:
                    numbers.append((label, "gof:nobs", "nobs", float(fit.fit_stats["nobs"])))
            rows.append(Row("gof:nobs", "Observations", PANEL_FIT))
        elif name == "groups":
            seen = []
            for label, fit in fits.items():
                for group, n in _n_groups(fit).items():
                    numbers.append((label, f"gof:groups:{group}", "n_groups", float(n)))
                    if group not in seen:
                        seen.append(group)
            rows += [Row(f"gof:groups:{g}", group_label(g, groups), PANEL_FIT) for g in seen]
        elif name in ("loglik", "aic", "bic"):
            present = False
            for label, fit in fits.items():
                value = fit.fit_stats.get(name)
                if value is not None and not is_bayesian(fit):
                    numbers.append((label, f"gof:{name}", name, float(value)))
                    present = True
            if present:
                text = {"loglik": "Log-likelihood", "aic": "AIC", "bic": "BIC"}[name]
                rows.append(Row(f"gof:{name}", text, PANEL_FIT))
        elif name == "elpd":
            present = False
            for label, fit in fits.items():
                if fit.fit_stats.get("elpd_loo") is not None:
                    numbers.append((label, "gof:elpd", "elpd", float(fit.fit_stats["elpd_loo"])))
                    present = True
            if present:
                rows.append(Row("gof:elpd", "ELPD (LOO)", PANEL_FIT))
        elif name == "r2":
            for label, fit in fits.items():
                for quantity, value in _r2(fit).items():
                    numbers.append((label, f"gof:{quantity}", quantity, value))
            rows += [Row("gof:r2_marginal", "R² marginal", PANEL_FIT),
                     Row("gof:r2_conditional", "R² conditional", PANEL_FIT)]
    return rows


def _r2(fit) -> dict[str, float]:
    if getattr(fit, "handle", None) is None or is_bayesian(fit):
        return {}
    from gbstats.mixed.ranef import r2_nakagawa

    values = r2_nakagawa(fit)
    return {"r2_marginal": values["r2_marginal"], "r2_conditional": values["r2_conditional"]}


def _lookup(numbers, model: str) -> dict[tuple[str, str], float]:
    return {(row, quantity): value for m, row, quantity, value in numbers if m == model}


def _stars(p: float) -> str:
    if is_missing(p):
        return ""
    return next((mark for bound, mark in STARS if p < bound), "")


def _format_model(label, fit, rows, numbers, statistic, stars, decimals) -> list[str]:
    values = _lookup(numbers, label)
    coef_values = [v for (row, q), v in values.items()
                   if row.startswith("coef:") and q in ("estimate", "se")]
    coef_values += [v for (row, q), v in values.items() if q in ("sd", "cor")]
    d = decimals if decimals is not None else max(choose_decimals(coef_values), 2)
    cells = []
    for row in rows:
        kind, _, name = row.key.partition(":")
        if kind == "coef":
            if (row.key, "estimate") not in values:
                cells.append("")
                continue
            # An estimate the column's decimals would print as 0 (a slope per raw count:
            # 1.8e-9 with p = 3e-15 read "0.000 (0.000)") is shown with its own scale.
            show = (format_scientific if below_precision(values[(row.key, "estimate")], d)
                    else lambda v: format_fixed(v, d))
            if row.role == "estimate":
                mark = _stars(values[(row.key, "p_value")]) if stars and not is_bayesian(fit) else ""
                cells.append(show(values[(row.key, "estimate")]) + mark)
            elif statistic == "se":
                se = values[(row.key, "se")]
                cells.append(MISSING if is_missing(se) else f"({show(se)})")
            else:
                low, high = values[(row.key, "ci_low")], values[(row.key, "ci_high")]
                cells.append(f"[{show(low)}, {show(high)}]")
        elif kind in ("sd", "cor"):
            value = values.get((row.key, kind))
            cells.append("" if value is None else format_fixed(value, d))
        else:
            quantity = name.split(":")[0]
            value = values.get((row.key, {"nobs": "nobs", "groups": "n_groups"}.get(quantity,
                                                                                     quantity)))
            if value is None:
                cells.append("" if quantity not in ("r2_marginal", "r2_conditional")
                             else MISSING)
            elif quantity in ("nobs", "groups"):
                cells.append(str(int(round(value))))
            else:
                cells.append(format_fixed(value, GOF_DECIMALS.get(quantity, 1)))
    return cells


def below_precision(value, decimals: int) -> bool:
    """True for a non-zero estimate that `decimals` fixed decimals would print as 0."""
    if is_missing(value):
        return False
    x = abs(float(value))
    return 0 < x < 0.5 * 10.0 ** -decimals


def format_scientific(value) -> str:
    """Two significant digits in scientific notation ("1.8e-09"); siunitx reads it."""
    return MISSING if is_missing(value) else f"{float(value):.1e}"


def _scale_notes(rows, cells) -> list[str]:
    """One sentence naming the terms shown in scientific notation, and what to do."""
    shown = []
    for i, row in enumerate(rows):
        if row.role == "estimate" and row.key.startswith("coef:") and any(
                "e" in column[i].lower() and column[i] not in ("", MISSING)
                for column in cells.values()):
            shown.append(row.label)
    if not shown:
        return []
    return [f"{', '.join(shown)}: estimates too small for the table's decimals are shown in "
            f"scientific notation; rescaling the predictor (for example per thousand units) "
            f"would show them in fixed digits."]


def _published_columns(published, rows, numbers, target, statistic, target_cells):
    if isinstance(published, Mapping):
        pub = pd.DataFrame({"term": list(published), "estimate": list(published.values())})
    elif isinstance(published, pd.DataFrame) and {"term", "estimate"} <= set(published.columns):
        pub = published
    else:
        raise TypeError("published: expected {term: estimate} or a frame with columns term, "
                        "estimate (and se)")
    ours = _lookup(numbers, target)
    est = dict(zip(pub["term"].astype(str), pub["estimate"].astype(float)))
    se = dict(zip(pub["term"].astype(str), pub["se"].astype(float))) if "se" in pub else {}
    unknown = sorted(set(est) - {r.key.removeprefix("coef:") for r in rows if r.panel == PANEL_FIXED})
    if unknown:
        raise ValueError(f"published values for terms {unknown} that the model {target!r} "
                         f"does not have")
    decimals = _cell_decimals(target_cells)
    pub_cells, diff_cells, extra = [], [], []
    for row in rows:
        term = row.key.removeprefix("coef:")
        if row.panel != PANEL_FIXED or term not in est:
            pub_cells.append("")
            diff_cells.append("")
            continue
        if row.role == "estimate":
            difference = ours.get((row.key, "estimate"), np.nan) - est[term]
            pub_cells.append(format_fixed(est[term], decimals))
            diff_cells.append(format_fixed(difference, decimals))
            extra += [("Published", row.key, "estimate", est[term]),
                      ("Difference", row.key, "estimate", difference)]
        else:
            value = se.get(term)
            pub_cells.append(f"({format_fixed(value, decimals)})"
                             if statistic == "se" and value is not None and not is_missing(value)
                             else "")
            diff_cells.append("")
            if value is not None:
                extra.append(("Published", row.key, "se", value))
    return pub_cells, diff_cells, extra


def _cell_decimals(cells: Sequence[str]) -> int:
    for cell in cells:
        match = re.fullmatch(r"-?\d+\.(\d+)\**", cell)
        if match:
            return len(match.group(1))
    return 3


def _notes(fits, stars, statistic, coding_note, variables, levels,
           likelihood_rows: bool = True) -> list[str]:
    from gbstats.mixed.fitting import table_notes

    notes = []
    bayesian = any(is_bayesian(f) for f in fits.values())
    beneath = {"se": "Beneath each estimate: its SE in parentheses"
                     + (" (for a Bayesian model the posterior mean and SD)" if bayesian else ""),
               "ci": "Beneath each estimate: its 95% interval in brackets"
                     + (" (for a Bayesian model the 95% equal-tailed posterior interval)"
                        if bayesian else ""),
               "none": ""}[statistic]
    if beneath:
        notes.append(beneath + ".")
    if coding_note:
        notes += _coding_notes(fits, variables, levels)
    methods: dict[str, list[str]] = {}
    for label, fit in fits.items():
        method = fit.fit_stats.get("ci_method")
        if method:
            methods.setdefault(method, []).append(label)
    for method, labels in methods.items():
        who = "" if len(methods) == 1 else f"{', '.join(labels)}: "
        method = method_in_words(method)
        text = f"{method[0].upper()}{method[1:]}" if not who else method
        notes.append(f"Estimation: {who}{text}.")
    # said only where the table shows a likelihood-based row
    if likelihood_rows and any(fit.fit_stats.get("reml") for fit in fits.values()):
        notes.append("Log-likelihood and AIC of a REML fit are REML criteria: compare them only "
                     "between models with the same fixed effects.")
    words = {}
    for fit in fits.values():
        words.update(fit_term_labels(fit, variables, levels))
    from gbstats.mixed.design import is_design_warning

    # a prior is a formula's term and a distribution's code ("1|frame ~ HalfNormal(...)"):
    # the table points to where they are listed (issue 43: priors are no table note)
    noted = table_notes(fits)
    priors = [n for n in noted if n.startswith("Priors [")]
    notes += [as_sentence(method_in_words(in_words(clean_message(n), words))) for n in noted
              if not is_design_warning(n) and n not in priors]
    if priors:
        notes.append("The Bayesian model's priors are listed in the report's section on the "
                     "Bayesian twins, and in results.json.")
    notes += design_check_note(fits, variables)
    if stars:
        notes.append(STAR_LEGEND)
    return notes


# An engine's description of its intervals (fit_stats["ci_method"]) as a table note says it:
# R's calls and operators in words (issue 43: no code in notes).
METHOD_WORDS = (("estimate +/- qt(0.975, df) x SE", "the estimate ± the .975 quantile of t "
                 "with those df × SE"),
                ("+/- 1.96 x SE", "± 1.96 × SE"),
                ("fit_glmm(..., penalised=True), blme::bglmer", "blme's bglmer"),
                ("blme::bglmer", "blme's bglmer"), ("+/-", "±"))


def method_in_words(text: str) -> str:
    for code, words in METHOD_WORDS:
        text = text.replace(code, words)
    return text


def design_check_note(fits, variables: Mapping[str, str] | None = None) -> list[str]:
    """The design check's findings (fit_stats["design_check"], gbstats.mixed.design) of these
    fits as one sentence in the study's words, or none: each finding once (every engine fits
    the same rows), the variables as `variables` names them (issue 43: at most one
    design-check sentence per table, in words)."""
    from gbstats.report.formula_words import plain_words

    def word(name: str) -> str:
        return (variables or {}).get(name, plain_words(name))

    found = {}
    for fit in fits.values():
        for row in fit.fit_stats.get("design_check") or []:
            term = " × ".join(word(v) for v in str(row["term"]).split(":"))
            found.setdefault((term, row["factor"]), (word(str(row["factor"])),
                                                     int(row["n_levels"])))
    if not found:
        return []
    clauses = [f"{term} varies only between the {n} levels of {factor}"
               for (term, _), (factor, n) in found.items()]
    factors = list(dict.fromkeys(factor for factor, _ in found.values()))
    return [f"Design check: {'; '.join(clauses)}, which the model gives no random effect, so "
            f"its test counts rows within one level as independent evidence "
            f"(pseudo-replication); random intercepts for {' and '.join(factors)} would "
            f"account for it."]


def in_words(text: str, terms: Mapping[str, str]) -> str:
    """`text` (an engine's message) with every quoted R term name ('pronoun_setshe') written as
    the table labels it ("Pronoun set: she vs he")."""
    for term in sorted(terms, key=len, reverse=True):
        text = text.replace(f"'{term}'", f"\"{terms[term]}\"")
    return text


def clean_message(text: str) -> str:
    """An engine's message as a sentence: R's `[1] "..."` print wrapper and escaped newlines
    removed, white space collapsed."""
    text = re.sub(r'\[\d+\]\s*"([^"]*)"', r"\1", str(text))
    text = text.replace("\\n", " ").replace("\n", " ")
    return re.sub(r"\s+", " ", text).strip().rstrip(" .") + ""


def _coding_notes(fits, variables, levels) -> list[str]:
    """One sentence per coded factor: its coding and reference, in the study's words."""
    seen, notes = set(), []
    for fit in fits.values():
        for var, coded in codings_of(fit).items():
            key = (var, coded.kind, coded.levels, coded.matrix.tobytes())
            if key in seen:
                continue
            seen.add(key)
            name = (variables or {}).get(var, var)
            words = (levels or {}).get(var, {})
            shown = [str(words.get(lv, lv)) for lv in coded.levels]
            if coded.kind == "treatment":
                notes.append(f"{name}: treatment coding, reference level {shown[0]}.")
            elif coded.kind == "sum":
                notes.append(f"{name}: sum-to-zero coding (each contrast is a level's deviation "
                             f"from the mean of the {len(shown)} level means).")
            else:
                what = {"centered_helmert": "weighted, centred Helmert coding",
                        "matrix": "a user coding matrix"}.get(coded.kind, coded.kind)
                rows = "; ".join(f"{lv} = ({', '.join(f'{x:.3g}' for x in coded.matrix[i])})"
                                 for i, lv in enumerate(shown))
                notes.append(f"{name}: {what} ({rows}).")
    return notes
