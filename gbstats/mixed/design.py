"""A design check before any mixed fit: predictors that vary only between the levels of a
grouping factor that has no random effect.

Pseudo-replication in a mixed model is usually a missing random effect. The
name_gender model side fitted ``she_logit ~ Condition * GenderRatingCentered +
(1 | frame)``: the first name's gender rating varies only between 21 first
names, yet with no first-name random effect each prompt counted as independent
evidence about the rating, and Satterthwaite gave 118 df where about 19 are
there (issue 31). lme4 fits such a model without a word. This module says it:

    between_factor_terms("y ~ rating + (1|frame)", rows)
    # term "rating", factor "first_name" (21 levels), suggestion "(1 | first_name)"

The rule, for every fixed-effect term (main effect or interaction) and every
candidate grouping factor G:

* the term is *between G* when each of its variables takes one value within
  every level of G (rows with a missing value in a formula column are left out,
  as the fit leaves them out);
* G must be replicated: on average at least two rows per level (a row id is
  not a grouping factor);
* G must not be merely another name for the term. When G's levels and the
  term's values correspond one to one, G is a relabelling if the term is a
  factor (or a number with at most two values, a coded factor) or if G is
  itself numeric (a raw version of a centred predictor); it is reported when
  G is an identifier (text or a pandas Categorical) and the term is a number
  with more values: 21 first names each with its own rating is exactly the
  case above;
* G must not code the cells of the fixed design: when G is constant within every
  combination of the formula's categorical fixed predictors (factors, and numbers
  with at most two values), its levels are those cells (singular_they's
  `antecedent_type` is the 2 x 2 of close x gendered), and a random effect for
  it would be confounded with the fixed effects it relabels;
* nothing is reported when G has a random intercept in the formula, when G
  is one-to-one with a factor that has one, or when G is nested in a factor R
  that has one and the term is constant within R too (the term then varies
  between the levels of R, whose random intercept carries the variance
  between them, G's included).

Candidate factors are the formula's own grouping factors and every other
column of the data that is not a fixed-effect variable or the response and is
not a float: text, Categorical, boolean and integer columns (the ids that
usually name participants, items, frames, lists). Pass `factors=` to name the
candidates yourself. So the check sees the columns a caller passes along with
the formula's columns; the studies pass the identifiers that define their
design (first name, frame, list) for this reason.

Where several factors qualify for one term, the one with the fewest levels
(the coarsest unit of replication) is named, and the others are listed as
"also constant within". The result never changes a fit; it adds a warning
(`design_warnings`, prefixed DESIGN_CHECK_PREFIX) that the fit functions put
into the result's warnings and `gbstats.mixed.fitting.table_notes` into every
table of the fit.
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from gbstats.errors import DataValidationError
from gbstats.mixed.formula import ParsedFormula, is_factor, parse_formula

DESIGN_CHECK_PREFIX = "design check:"
DESIGN_CHECK_COLUMNS = ["term", "factor", "n_levels", "rows_per_level", "also_constant_within",
                        "suggestion"]
# A factor needs this many rows per level on average to count as a unit of replication.
MIN_ROWS_PER_LEVEL = 2.0


def _as_parsed(formula: str | ParsedFormula) -> ParsedFormula:
    return formula if isinstance(formula, ParsedFormula) else parse_formula(formula)


def term_label(term: tuple[str, ...]) -> str:
    return ":".join(term)


def candidate_factors(parsed: ParsedFormula, data: pd.DataFrame) -> list[str]:
    """Columns that could be units of replication: the formula's grouping factors and every
    other non-float column that is neither the response nor a fixed-effect variable."""
    fixed_vars = {v for t in parsed.fixed_terms for v in t}
    out = list(parsed.groups)
    for col in data.columns:
        if col in out or col == parsed.response or col in fixed_vars:
            continue
        if not pd.api.types.is_float_dtype(data[col]):
            out.append(col)
    return out


def _codes(values: pd.Series) -> pd.Series:
    """Integer codes of a column's values (NaN stays NaN): one cheap key for groupby."""
    return pd.Series(pd.factorize(values, use_na_sentinel=True)[0], index=values.index
                     ).where(values.notna())


def _term_codes(frame: pd.DataFrame, term: tuple[str, ...]) -> pd.Series:
    """One code per distinct combination of the term's values (rows are complete here)."""
    if len(term) == 1:
        return _codes(frame[term[0]])
    return frame.groupby(list(term), sort=False, observed=True).ngroup().astype(float)


def _constant_within(values: pd.Series, factor: pd.Series) -> bool:
    keep = factor.notna() & values.notna()
    if not keep.any():
        return False
    return bool((values[keep].groupby(factor[keep]).nunique() <= 1).all())


def _nested_in(inner: pd.Series, outer: pd.Series) -> bool:
    """Every level of `inner` sits within a single level of `outer`."""
    keep = inner.notna() & outer.notna()
    return bool((outer[keep].groupby(inner[keep]).nunique() <= 1).all())


def _coarsens_few(unit: pd.Series, factor: pd.Series) -> bool:
    """`unit` (a factor with a random intercept) is nested in `factor`, with fewer than
    MIN_ROWS_PER_LEVEL units per level of it on average: `factor` groups the units that
    already carry the term's between-unit variance, too thinly to be a unit of replication
    of its own. An integer age column beside a participant intercept (most ages held by one
    participant) is such a column; schools holding many participants are not (issue 44)."""
    keep = unit.notna() & factor.notna()
    if not keep.any() or not _nested_in(unit[keep], factor[keep]):
        return False
    per_level = unit[keep].groupby(factor[keep]).nunique()
    return bool(per_level.mean() < MIN_ROWS_PER_LEVEL)


def _is_relabelling(term: tuple[str, ...], frame: pd.DataFrame, factor: pd.Series,
                    n_values: int, n_levels: int) -> bool:
    if n_levels != n_values:
        return False
    term_is_categorical = all(is_factor(frame[v]) or frame[v].nunique() <= 2 for v in term)
    factor_is_numeric = (pd.api.types.is_numeric_dtype(factor)
                         and not pd.api.types.is_bool_dtype(factor))
    return term_is_categorical or factor_is_numeric


def between_factor_terms(formula: str | ParsedFormula, data: pd.DataFrame, *,
                         factors: Sequence[str] | None = None) -> pd.DataFrame:
    """Fixed-effect terms that vary only between the levels of a grouping factor with no
    random intercept (module docstring): one row per term, DESIGN_CHECK_COLUMNS.

    `factors` names the candidate grouping factors (default: `candidate_factors`).
    An empty table means the check found nothing.
    """
    parsed = _as_parsed(formula)
    if factors is None:
        factors = candidate_factors(parsed, data)
    missing = [f for f in factors if f not in data.columns]
    if missing:
        raise DataValidationError("design check: a named grouping factor is not in the data",
                                  source="<data frame passed to the fit>", column=missing[0],
                                  expected=f"one of {list(data.columns)}", found=repr(missing[0]))
    formula_columns = [c for c in parsed.columns if c in data.columns]
    frame = data.loc[data[formula_columns].notna().all(axis=1)]
    if frame.empty:
        return pd.DataFrame(columns=DESIGN_CHECK_COLUMNS)
    with_intercept = [r.group for r in parsed.random if r.intercept]
    fixed_vars = list(dict.fromkeys(v for t in parsed.fixed_terms for v in t))
    categorical = [v for v in fixed_vars if is_factor(frame[v]) or frame[v].nunique() <= 2]
    design_cells = _term_codes(frame, tuple(categorical)) if categorical else None
    codes = {}
    for f in dict.fromkeys([*factors, *with_intercept]):
        try:
            codes[f] = _codes(frame[f])
        except TypeError:
            # values that cannot be hashed (lists, dicts) name no levels: not a factor
            continue
    factors = [f for f in factors if f in codes]
    rows = []
    for term in parsed.fixed_terms:
        if not term:
            continue
        values = _term_codes(frame, term)
        n_values = int(values.nunique())
        if n_values < 2:
            continue
        # random factors within which the term is constant: they carry its between-unit variance
        covering = [r for r in with_intercept if _constant_within(values, codes[r])]
        found = []
        for f in factors:
            if f in with_intercept:
                continue
            g = codes[f]
            n_levels = int(g.nunique())
            if n_levels < 2 or g.notna().sum() < MIN_ROWS_PER_LEVEL * n_levels:
                continue
            if not _constant_within(values, g):
                continue
            if _is_relabelling(term, frame, frame[f], n_values, n_levels):
                continue
            if design_cells is not None and _constant_within(g, design_cells):
                continue                       # G codes the fixed design's cells
            if any(_nested_in(g, codes[r]) for r in covering):
                continue
            if any(_coarsens_few(codes[r], g) for r in covering):
                continue                       # G barely groups units that have one
            found.append((n_levels, f, float(g.notna().sum() / n_levels)))
        if found:
            found.sort()
            n_levels, factor, per_level = found[0]
            rows.append({"term": term_label(term), "factor": factor, "n_levels": n_levels,
                         "rows_per_level": per_level,
                         "also_constant_within": ", ".join(f for _, f, _ in found[1:]),
                         "suggestion": f"(1 | {factor})"})
    return pd.DataFrame(rows, columns=DESIGN_CHECK_COLUMNS)


def design_warning_text(row) -> str:
    also = (f"; it is also constant within {row['also_constant_within']}"
            if row["also_constant_within"] else "")
    return (f"{DESIGN_CHECK_PREFIX} {row['term']} varies only between the levels of "
            f"{row['factor']} ({row['n_levels']} levels, {row['rows_per_level']:.1f} rows each "
            f"on average{also}), which has no random effect, so its test counts rows of one "
            f"{row['factor']} as independent evidence (pseudo-replication); add "
            f"{row['suggestion']} to the formula")


def design_warnings(formula: str | ParsedFormula, data: pd.DataFrame, *,
                    factors: Sequence[str] | None = None) -> list[str]:
    """`between_factor_terms` as warning sentences, one per term."""
    table = between_factor_terms(formula, data, factors=factors)
    return [design_warning_text(row) for _, row in table.iterrows()]


def with_design_check(result, table: pd.DataFrame):
    """Add a design check's findings (`between_factor_terms`, run before the fit) to the fit's
    result: fit_stats["design_check"] (its rows as records) and one warning per finding,
    after the engine's own warnings."""
    result.fit_stats["design_check"] = table.to_dict("records")
    result.warnings.extend(design_warning_text(row) for _, row in table.iterrows())
    return result


def is_design_warning(text: str) -> bool:
    return text.startswith(DESIGN_CHECK_PREFIX)


# --------------------------------------------------------------------------
# the two sides of a comparison: a grouping factor one side models and the other leaves out

def grouping_parity(sides: dict, counterparts: Sequence[Sequence[str]]) -> list[str]:
    """Warnings for a comparison fitted on two sides (people and a model, say) whose random
    effects differ: a grouping factor that one side's formula has, whose counterpart is a
    column of the other side's data with two or more levels, yet is not in the other side's
    formula. Such a pair tests the same effect against different noise: the side without
    the term counts the rows of one level (one story) as independent evidence.

    `sides`: {side name: (formula, rows)}; `counterparts`: tuples of column names that are
    one factor under each side's name (("frame", "Story"): the model's frame is people's
    story). A factor's name on its own counts as its counterpart. Interaction factors are
    columns of their own (a story x condition column), named in `counterparts` the same way.
    """
    if len(sides) != 2:
        raise DataValidationError("a grouping parity check compares two sides",
                                  source="grouping_parity", expected="two sides",
                                  found=f"{len(sides)}: {list(sides)}")
    (name_a, (formula_a, rows_a)), (name_b, (formula_b, rows_b)) = sides.items()
    groups = {name_a: set(_as_parsed(formula_a).groups), name_b: set(_as_parsed(formula_b).groups)}
    rows = {name_a: rows_a, name_b: rows_b}
    warnings = []
    for this, other in ((name_a, name_b), (name_b, name_a)):
        for factor in sorted(groups[this]):
            names = next((set(c) for c in counterparts if factor in c), {factor})
            if names & groups[other]:
                continue
            present = [c for c in sorted(names) if c in rows[other].columns
                       and rows[other][c].nunique(dropna=True) >= 2]
            if present:
                column = present[0]
                warnings.append(
                    f"{DESIGN_CHECK_PREFIX} the {this} side's formula has a random effect for "
                    f"{factor}, and the {other} side's data hold it ({column}, "
                    f"{rows[other][column].nunique()} levels), but the {other} side's formula "
                    f"leaves it out, so the two sides' effects are tested against different "
                    f"noise; add (1 | {column}) to the {other} side's formula")
    return warnings
