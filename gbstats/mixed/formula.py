"""lme4 formulas: parsing, the columns they reference, and R's term names.

Every backend (lme4, statsmodels, PyMC) reads the same lme4-style formula, for
example ``surprisal ~ close * gendered + (1 + close | frame) + (1 | item)``.
This module is the one place that

* parses it (`parse_formula`): response, fixed terms, random terms;
* decides which columns are factors and in which level order (`factor_levels`);
* names the coefficients as R's ``model.matrix`` does, with treatment contrasts
  or the codings of `gbstats.mixed.contrasts` (`r_term_names`, `model_matrix`), so
  that a term is called ``"genderedyes"``, ``"closedistant:genderedyes"`` or,
  sum-coded, ``"close1:gendered1"`` whatever the backend;
* maps bambi's names to those names (`bambi_to_r_name`).

Supported syntax: ``+``, ``-`` (only ``- 1`` / ``+ 0`` to drop the intercept),
``*``, ``:``, parentheses, ``1``/``0``, random terms ``(expr | group)``.
Not supported, with an error saying so: function calls (``log(x)``, ``I()``,
``scale()``: make a column instead), ``/``, ``^``, ``%in%``, ``||`` and
nested/interacted grouping factors (``(1|a/b)``, ``(1|a:b)``: make a column
holding the combined id).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from itertools import product

import numpy as np
import pandas as pd

from gbstats.mixed.contrasts import contr_treatment
from gbstats.errors import DataValidationError, GbstatsError

INTERCEPT = "(Intercept)"

_TOKEN = re.compile(r"\s*(?:(?P<name>`[^`]+`|[A-Za-z_.][A-Za-z0-9_.]*)|(?P<num>\d+(?:\.\d*)?)"
                    r"|(?P<op>[-+*:()|/^~%]))")
_NAME = re.compile(r"^[A-Za-z_.][A-Za-z0-9_.]*$")
_QUOTED = re.compile(r"^`[^`]+`$")


def _column_name(text: str) -> str | None:
    """The column a formula names: a bare name, or any name quoted in backticks
    (`` `my col` ``, `` `if` ``), as in R; None for anything else."""
    text = text.strip()
    if _QUOTED.match(text):
        return text[1:-1]
    return text if _NAME.match(text) else None


class FormulaError(GbstatsError, ValueError):
    """A formula that is malformed or uses syntax gbstats does not translate."""

    def __init__(self, formula: str, problem: str):
        super().__init__(f"formula {formula!r}: {problem}")


# A fixed-effect term is the tuple of its variables, in the order they first
# appear in the formula (that is how R labels interactions); () is the intercept.
Term = tuple[str, ...]


@dataclass(frozen=True)
class RandomTerm:
    """One ``(expr | group)`` term: the columns of expr vary by group."""

    text: str
    group: str
    intercept: bool
    terms: tuple[Term, ...]

    @property
    def variables(self) -> list[str]:
        return _unique(v for t in self.terms for v in t)


@dataclass(frozen=True)
class ParsedFormula:
    """A parsed lme4 formula. `fixed_terms` is in R's order (by degree, then
    as written); `variables` is the predictors in order of first appearance."""

    text: str
    response: str
    intercept: bool
    fixed_terms: tuple[Term, ...]
    random: tuple[RandomTerm, ...]
    variables: tuple[str, ...]

    @property
    def groups(self) -> list[str]:
        return _unique(r.group for r in self.random)

    @property
    def columns(self) -> list[str]:
        """Every data column the formula reads: response, predictors, groups."""
        return _unique([self.response, *self.variables, *self.groups])

    @property
    def predictors(self) -> list[str]:
        """Columns used as fixed or random-slope predictors (not groups)."""
        return list(self.variables)

    def without_random(self, texts: list[str]) -> "ParsedFormula":
        """This formula with the named random terms removed (see lmm.refit_simpler)."""
        def key(term: RandomTerm):
            return term.group, term.intercept, frozenset(frozenset(t) for t in term.terms)

        # Compare parsed terms, so "x | g", "(1 + x|g)" and "1 + x | g" all match.
        wanted = {key(_parse_random(self.text, "(" + t.strip().removeprefix("(").removesuffix(")") + ")")): t
                  for t in texts}
        known = {key(r) for r in self.random}
        unknown = [t for k, t in wanted.items() if k not in known]
        if unknown:
            raise FormulaError(self.text, f"no random term(s) {unknown}; "
                               f"its random terms are {[f'({r.text})' for r in self.random]}")
        kept = [r for r in self.random if key(r) not in wanted]
        return parse_formula(_render(self, kept))


def _unique(items) -> list:
    return list(dict.fromkeys(items))


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


# R's reserved words (?Reserved): a column so named must be quoted in an R formula.
R_RESERVED = frozenset({"if", "else", "repeat", "while", "function", "for", "in", "next",
                        "break", "TRUE", "FALSE", "NULL", "Inf", "NaN", "NA", "NA_integer_",
                        "NA_real_", "NA_character_", "NA_complex_", "..."})
# A syntactic R name (?make.names): letters, digits, "." and "_", starting with a letter
# or with a dot not followed by a digit.
_R_SYNTACTIC = re.compile(r"^(?:[A-Za-z]|\.(?![0-9]))[A-Za-z0-9._]*$")


def is_syntactic_r_name(name: str) -> bool:
    """Can R read this column name unquoted (`x`, `x.y`; not `if`, `my col`, `_x`, `..1`)?"""
    return (bool(_R_SYNTACTIC.match(name)) and name not in R_RESERVED
            and re.fullmatch(r"\.\.[0-9]+", name) is None)


def _quoted(name: str) -> str:
    """A column name as an R formula writes it: in backticks unless R reads it bare."""
    return name if is_syntactic_r_name(name) else f"`{name}`"


def _render(parsed: ParsedFormula, random: list[RandomTerm]) -> str:
    fixed = [":".join(_quoted(v) for v in t) for t in parsed.fixed_terms]
    if not parsed.intercept:
        fixed = ["0", *fixed]
    rhs = " + ".join(fixed + [f"({r.text})" for r in random]) or "1"
    return f"{_quoted(parsed.response)} ~ {rhs}"


def renamed(parsed: ParsedFormula, names: dict[str, str]) -> ParsedFormula:
    """The same formula over renamed columns ({old: new}; others kept), its text
    rendered from the parts. The new names must be plain (unquoted) names; the lme4
    engine uses this to hand R aliases for names R would mangle."""
    def name(v: str) -> str:
        return names.get(v, v)

    def term(t: Term) -> Term:
        return tuple(name(v) for v in t)

    random = tuple(RandomTerm(text=f"{_render_lhs(r.intercept, [term(t) for t in r.terms])} | "
                                   f"{_quoted(name(r.group))}",
                              group=name(r.group), intercept=r.intercept,
                              terms=tuple(term(t) for t in r.terms)) for r in parsed.random)
    out = ParsedFormula(text="", response=name(parsed.response), intercept=parsed.intercept,
                        fixed_terms=tuple(term(t) for t in parsed.fixed_terms), random=random,
                        variables=tuple(name(v) for v in parsed.variables))
    return replace(out, text=_render(out, list(random)))


# --------------------------------------------------------------------------
# parsing

def _tokenize(formula: str, text: str) -> list[str]:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise FormulaError(formula, f"cannot read {text[pos:].strip()!r}")
        tok = m.group("name") or m.group("num") or m.group("op")
        tokens.append(tok.strip("`") if tok.startswith("`") else tok)
        pos = m.end()
    return tokens


class _FixedParser:
    """Recursive descent over R's precedence: ``:`` binds tighter than ``*``,
    which binds tighter than ``+``/``-``. Each rule returns (terms, intercept),
    where intercept is True/False when ``1``/``0``/``-1`` was written, else None."""

    def __init__(self, formula: str, tokens: list[str]):
        self.formula, self.tokens, self.i = formula, tokens, 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def fail(self, problem: str):
        raise FormulaError(self.formula, problem)

    def parse(self):
        terms, intercept = self.sum()
        if self.peek() is not None:
            self.fail(f"unexpected {self.peek()!r}")
        return terms, intercept

    def sum(self):
        terms, intercept = [], None
        sign = "+"
        while True:
            if self.peek() in {"+", "-"}:  # leading sign, e.g. "~ -1 + x"
                sign = self.take()
            part, part_intercept = self.product()
            if sign == "-":
                if part or part_intercept is not True:
                    self.fail("'-' is supported only as '- 1' (drop the intercept)")
                intercept = False
            else:
                terms += [t for t in part if t not in terms]
                if part_intercept is not None:
                    intercept = part_intercept
            if self.peek() not in {"+", "-"}:
                return terms, intercept
            sign = self.take()

    def product(self):
        terms, intercept = self.interaction()
        while self.peek() == "*":
            self.take()
            right, right_intercept = self.interaction()
            if intercept is not None or right_intercept is not None:
                self.fail("'1'/'0' cannot be part of a '*' product")
            crossed = [_join(a, b) for a in terms for b in right]
            terms = _unique(terms + right + crossed)
        return terms, intercept

    def interaction(self):
        terms, intercept = self.atom()
        while self.peek() == ":":
            self.take()
            right, right_intercept = self.atom()
            if intercept is not None or right_intercept is not None:
                self.fail("'1'/'0' cannot be part of a ':' interaction")
            terms = _unique(_join(a, b) for a in terms for b in right)
        return terms, intercept

    def atom(self):
        tok = self.take()
        if tok is None:
            self.fail("ends where a term was expected")
        if tok == "(":
            inner = self.sum()
            if self.take() != ")":
                self.fail("unbalanced parentheses")
            return inner
        if tok in {"0", "1"}:
            return [], tok == "1"
        if tok[0].isdigit():
            self.fail(f"the number {tok!r} is not a term (only 0 and 1 are)")
        if tok in {"/", "^", "%", "|", "~", ")", "+", "-", "*", ":"}:
            self.fail(f"unsupported or misplaced operator {tok!r} "
                      "(gbstats reads +, -1, *, : and parentheses)")
        if self.peek() == "(":
            self.fail(f"function calls such as {tok}(...) are not translated by every backend; "
                      "compute the transformed column in the data frame and use its name")
        return [(tok,)], None


def _join(a: Term, b: Term) -> Term:
    return tuple(_unique(a + b))


def _split_top_level_plus(formula: str, rhs: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(rhs):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise FormulaError(formula, "unbalanced parentheses")
        elif ch == "+" and depth == 0:
            parts.append(rhs[start:i])
            start = i + 1
    if depth != 0:
        raise FormulaError(formula, "unbalanced parentheses")
    parts.append(rhs[start:])
    return [p.strip() for p in parts]


def _parse_random(formula: str, chunk: str) -> RandomTerm:
    inner = chunk.strip()[1:-1].strip()
    if "||" in inner:
        raise FormulaError(formula, f"'||' (uncorrelated random effects) in ({inner}) is not "
                           "translated by every backend; write separate terms, e.g. (1|g) + (0 + x|g)")
    lhs, _, group_text = inner.partition("|")
    group = _column_name(group_text)
    if group is None:
        group = group_text.strip()
        raise FormulaError(formula, f"grouping factor {group!r} in ({inner}) must be one column "
                           "name; for nested or combined groups make a column holding the combined id")
    terms, intercept = _FixedParser(formula, _tokenize(formula, lhs)).parse()
    intercept = True if intercept is None else intercept
    if not terms and not intercept:
        raise FormulaError(formula, f"random term ({inner}) has nothing that varies by {group}")
    text = f"{_render_lhs(intercept, terms)} | {_quoted(group)}"
    return RandomTerm(text=text, group=group, intercept=intercept, terms=tuple(_by_degree(terms)))


def _render_lhs(intercept: bool, terms: list[Term]) -> str:
    names = [":".join(_quoted(v) for v in t) for t in terms]
    if not names:
        return "1"
    return " + ".join((["1"] if intercept else ["0"]) + names)


def _by_degree(terms: list[Term]) -> list[Term]:
    # R's terms() orders main effects first, then two-way interactions, ...,
    # keeping the written order within a degree (sorted() is stable).
    return sorted(terms, key=len)


def parse_formula(formula: str) -> ParsedFormula:
    """Parse an lme4 formula such as ``y ~ a * b + (1 + a | g) + (1 | item)``."""
    if not isinstance(formula, str) or formula.count("~") != 1:
        raise FormulaError(str(formula), "expected exactly one '~' (response ~ predictors)")
    lhs, rhs = (s.strip() for s in formula.split("~"))
    response = _column_name(lhs)
    if response is None:
        raise FormulaError(formula, f"the response {lhs!r} must be a single column name")
    fixed_chunks, random = [], []
    for chunk in _split_top_level_plus(formula, rhs):
        if not chunk:
            raise FormulaError(formula, "empty term between '+' signs")
        if chunk.startswith("(") and "|" in chunk and _balanced_wrap(chunk):
            random.append(_parse_random(formula, chunk))
        elif "|" in chunk:
            raise FormulaError(formula, f"random term {chunk!r} must be written in parentheses: (x | g)")
        else:
            fixed_chunks.append(chunk)
    if fixed_chunks:
        tokens = _tokenize(formula, " + ".join(fixed_chunks))
        terms, intercept = _FixedParser(formula, tokens).parse()
    else:
        terms, intercept = [], None
    intercept = True if intercept is None else intercept
    if response in {v for t in terms for v in t}:
        raise FormulaError(formula, f"the response {response!r} also appears as a predictor")
    fixed = _by_degree(terms)
    variables = _unique([v for t in terms for v in t] + [v for r in random for v in r.variables])
    # Interaction labels follow the order in which variables first appear.
    order = {v: i for i, v in enumerate(variables)}
    fixed = [tuple(sorted(t, key=order.get)) for t in fixed]
    random = [RandomTerm(r.text, r.group, r.intercept,
                         tuple(tuple(sorted(t, key=order.get)) for t in r.terms)) for r in random]
    return ParsedFormula(text=formula, response=response, intercept=intercept,
                         fixed_terms=tuple(fixed), random=tuple(random), variables=tuple(variables))


def _balanced_wrap(chunk: str) -> bool:
    """True when chunk is one parenthesised group: "(1|g)" yes, "(a):(b|c)" no."""
    depth = 0
    for i, ch in enumerate(chunk):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and i < len(chunk) - 1:
            return False
    return True


# --------------------------------------------------------------------------
# factors and term names

def is_factor(series: pd.Series) -> bool:
    """R treats character, logical and factor columns as factors; numbers stay numeric."""
    return not (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series))


def factor_levels(series: pd.Series) -> list[str]:
    """Level order for a factor column, as strings (what R sees).

    A pandas Categorical keeps its declared category order (as an R factor
    does), minus categories absent from the data; anything else uses sorted
    order, R's default, with booleans named "FALSE"/"TRUE" as in R. The first
    level is the treatment-contrast reference.
    """
    values = series.dropna()
    if isinstance(series.dtype, pd.CategoricalDtype):
        present = set(values.astype(str))
        return [str(c) for c in series.cat.categories if str(c) in present]
    return sorted(set(as_factor_strings(values)))


def as_factor_strings(series: pd.Series) -> pd.Series:
    """Values as the strings R would use as factor labels (booleans -> FALSE/TRUE)."""
    if pd.api.types.is_bool_dtype(series):
        return series.map({True: "TRUE", False: "FALSE"})
    return series.astype(str)


def contrast_coded(term: Term, var: str, present: set[Term]) -> bool:
    # R's model.matrix rule: a factor in a term is coded by contrasts (k - 1
    # columns) when the term without it is also in the model (the intercept
    # counts as the empty term); otherwise it gets a column for every level.
    return tuple(v for v in term if v != var) in present


def _term_columns(term: Term, present: set[Term], levels: dict[str, list[str]],
                  codings: dict | None = None) -> list[list[tuple]]:
    """For one term, the list of its columns; each column is [(var, label, weights)],
    where weights is {level: value} for a factor and None for a numeric variable.

    A contrast-coded factor contributes its coding's columns (label = the
    contrast column's name: a level for treatment, "1", "2", ... for sum); a
    factor R codes by indicators (see `contrast_coded`) one column per level."""
    per_var = []
    for var in term:
        if var in levels:
            lv = levels[var]
            if contrast_coded(term, var, present):
                coding = (codings or {}).get(var) or contr_treatment(var, lv)
                per_var.append([(var, name, coding.weights(j)) for j, name in enumerate(coding.names)])
            else:
                per_var.append([(var, level, {other: float(other == level) for other in lv})
                                for level in lv])
        else:
            per_var.append([(var, None, None)])
    # R varies the first variable fastest: iterate product over reversed lists.
    return [list(reversed(combo)) for combo in product(*reversed(per_var))]


def r_term_name(parts) -> str:
    """R's name for one design column: [(var, label or None, ...), ...] joined by ':'.

    ``r_term_name([("gendered", "yes")]) == "genderedyes"``;
    ``r_term_name([("close", "distant"), ("gendered", "yes")]) == "closedistant:genderedyes"``;
    a numeric variable is ``(var, None)``; a sum-coded factor's label is "1", "2", ...
    """
    return ":".join(part[0] if part[1] is None else f"{part[0]}{part[1]}" for part in parts)


def _design_spec(intercept: bool, terms: tuple[Term, ...], levels: dict[str, list[str]],
                 codings: dict | None = None):
    present = set(terms) | {()}
    # Without an intercept R codes the first term that holds a factor by
    # indicators for every level (so the model keeps its full rank), and
    # every later term as if the intercept were there.
    first_factor_term = None if intercept else next(
        (t for t in terms if any(v in levels for v in t)), None)
    spec = [[]] if intercept else []
    for term in terms:
        spec += _term_columns(term, present - {()} if term == first_factor_term else present,
                              levels, codings)
    return spec


def r_term_names(intercept: bool, terms: tuple[Term, ...], levels: dict[str, list[str]],
                 codings: dict | None = None) -> list[str]:
    """Column names of R's model.matrix for these terms.

    `levels` maps each factor variable to its level list (first = reference);
    variables not in it are numeric. `codings` ({var: contrasts.Coding}) gives
    a factor's contrasts; a factor without one uses treatment contrasts.
    """
    return [INTERCEPT if not parts else r_term_name(parts)
            for parts in _design_spec(intercept, terms, levels, codings)]


def model_matrix(intercept: bool, terms: tuple[Term, ...], data: pd.DataFrame,
                 levels: dict[str, list[str]], codings: dict | None = None) -> pd.DataFrame:
    """R's model.matrix as a DataFrame with R's column names (treatment
    contrasts unless `codings` gives a factor another coding).

    Factor columns in `data` must already hold the level strings (see
    `as_factor_strings`); rows must have no missing values.
    """
    columns = {}
    for parts in _design_spec(intercept, terms, levels, codings):
        col = np.ones(len(data))
        for var, _label, weights in parts:
            values = data[var]
            col = col * (values.map(weights).to_numpy(dtype=float) if weights is not None
                         else values.to_numpy(dtype=float))
        columns[INTERCEPT if not parts else r_term_name(parts)] = col
    return pd.DataFrame(columns, index=data.index)


def fixed_effect_names(formula: str | ParsedFormula, data: pd.DataFrame,
                       codings: dict | None = None) -> list[str]:
    """The fixed-effect coefficient names every backend reports for this formula
    and data (`codings` as in `r_term_names`)."""
    parsed = parse_formula(formula) if isinstance(formula, str) else formula
    levels = factor_levels_for(parsed, data)
    return r_term_names(parsed.intercept, parsed.fixed_terms, levels, codings)


def factor_levels_for(parsed: ParsedFormula, data: pd.DataFrame) -> dict[str, list[str]]:
    """{predictor: levels} for every predictor column R would treat as a factor."""
    missing = [c for c in parsed.predictors if c not in data.columns]
    if missing:
        raise DataValidationError(f"formula {parsed.text!r} names column(s) {missing} that the data lacks",
                                  source="<data frame>", expected=f"columns {parsed.columns}",
                                  found=f"columns {list(data.columns)}")
    return {v: factor_levels(data[v]) for v in parsed.predictors if is_factor(data[v])}


# --------------------------------------------------------------------------
# bambi names -> R names

_BAMBI_LEVEL = re.compile(r"^(?P<var>[^\[\]]+)\[(?P<level>.*)\]$")


def bambi_to_r_name(name: str) -> str:
    """Map a bambi/formulae fixed-effect name to R's name.

    ``"Intercept" -> "(Intercept)"``, ``"gendered[yes]" -> "genderedyes"``,
    ``"close[distant]:gendered[yes]" -> "closedistant:genderedyes"``, ``"x" -> "x"``.
    Group-specific names (containing ``"|"``) are returned unchanged.
    """
    if name == "Intercept":
        return INTERCEPT
    if "|" in name:
        return name
    out = []
    for part in name.split(":"):
        m = _BAMBI_LEVEL.match(part)
        out.append(f"{m['var']}{m['level']}" if m else part)
    return ":".join(out)
