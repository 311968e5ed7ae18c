"""Columns whose names R cannot take as they are (issue 24, defect 9).

A column named `if`, or with a space (quoted in backticks in the formula), gave an R parse
error that explained nothing ("unexpected '+'", "object 'mycond' not found"). The lme4
engine now hands R safe aliases and maps every table back to the user's names.

Reference values: tests/reference/lme4_refs.json (`Rscript tests/reference/make_refs.R`),
the random-intercept and crossed models fitted by lme4 on the same data under plain
names; the renamed fits must give those numbers (rtol 1e-4 for estimates and variances,
1e-3 for SEs, the lme4 tests' own tolerances) under the renamed terms.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gbstats.mixed.lmm import fit_lmm

REF_DIR = Path(__file__).resolve().parents[1] / "reference"
MODELS = json.loads((REF_DIR / "lme4_refs.json").read_text())["models"]
# plain name -> a name R mangles: a reserved word, a space, a leading underscore, a digit
HOSTILE = {"x": "if", "cond": "my cond", "subject": "sub ject", "y": "_y", "item": "2nd item"}


def quoted(name: str) -> str:
    return f"`{name}`"


def renamed_terms(terms) -> list[str]:
    """R's term names for the plain columns, rewritten for the hostile ones."""
    out = []
    for term in terms:
        parts = []
        for part in term.split(":"):
            for plain in ("cond", "x"):
                if part.startswith(plain) and part != "(Intercept)":
                    part = HOSTILE[plain] + part[len(plain):]
                    break
            parts.append(part)
        out.append(":".join(parts))
    return out


@pytest.mark.needs_r
def test_lme4_fits_reserved_and_spaced_names_and_maps_them_back():
    data = pd.read_csv(REF_DIR / "random_intercept.csv").rename(columns=HOSTILE)
    result = fit_lmm("`_y` ~ `if` + `my cond` + (1 | `sub ject`)", data, backend="lme4")
    ref = pd.DataFrame(MODELS["random_intercept"]["fixed"])
    assert list(result.coefs["term"]) == ["(Intercept)", "if", "my condneutral", "my condpro"]
    assert list(result.coefs["term"]) == renamed_terms(ref["term"])
    np.testing.assert_allclose(result.coefs["estimate"], ref["estimate"], rtol=1e-4)
    np.testing.assert_allclose(result.coefs["se"], ref["se"], rtol=1e-3)
    ref_var = pd.DataFrame(MODELS["random_intercept"]["varcor"])
    assert list(result.ranef_var["group"]) == ["sub ject", "Residual"]
    np.testing.assert_allclose(result.ranef_var["variance"], ref_var["variance"], rtol=1e-4)
    assert result.fit_stats["n_groups"] == {"sub ject": 30}
    assert not any("gbstats_col" in w for w in result.warnings)


@pytest.mark.needs_r
def test_crossed_groups_with_hostile_names_on_lme4():
    data = pd.read_csv(REF_DIR / "crossed.csv").rename(columns=HOSTILE)
    result = fit_lmm("`_y` ~ `my cond` + (1 | `sub ject`) + (1 | `2nd item`)", data, backend="lme4")
    ref = pd.DataFrame(MODELS["crossed"]["fixed"])
    assert list(result.coefs["term"]) == renamed_terms(ref["term"])
    np.testing.assert_allclose(result.coefs["estimate"], ref["estimate"], rtol=1e-4)
    ref_var = pd.DataFrame(MODELS["crossed"]["varcor"])
    want = ref_var.assign(group=ref_var["group"].map({"subject": "sub ject", "item": "2nd item",
                                                      "Residual": "Residual"}))
    pd.testing.assert_frame_equal(result.ranef_var[["group", "term"]], want[["group", "term"]])
    np.testing.assert_allclose(result.ranef_var["variance"], ref_var["variance"], rtol=1e-4)


@pytest.mark.needs_r
def test_every_table_of_a_renamed_fit_speaks_the_users_names():
    """Sum coding, a random slope, random_effects and marginal_means (R's emmeans)."""
    from gbstats.mixed.marginal import marginal_means
    from gbstats.mixed.ranef import random_effects

    data = pd.read_csv(REF_DIR / "random_intercept.csv").rename(columns=HOSTILE)
    plain = fit_lmm("y ~ x + cond + (1 | subject)", pd.read_csv(REF_DIR / "random_intercept.csv"),
                    backend="lme4", contrasts={"cond": "sum"})
    result = fit_lmm("`_y` ~ `if` + `my cond` + (1 | `sub ject`)", data, backend="lme4",
                     contrasts={"my cond": "sum"})
    assert list(result.coefs["term"]) == ["(Intercept)", "if", "my cond1", "my cond2"]
    # the same R fit under other names: the same numbers
    np.testing.assert_allclose(result.coefs[["estimate", "se", "df", "p_value"]],
                               plain.coefs[["estimate", "se", "df", "p_value"]], rtol=1e-6)
    table = random_effects(result)
    assert set(table.loc[table["effect"] != "fixed", "group"]) == {"sub ject", "Residual"}
    assert (table.loc[table["effect"] == "ran_vals", "level"].str.startswith("s")).all()
    means = marginal_means(result, "my cond")
    assert "my cond" in means.means.columns
    assert list(means.means["my cond"]) == ["anti", "neutral", "pro"]
    np.testing.assert_allclose(means.means["estimate"],
                               marginal_means(plain, "cond").means["estimate"], rtol=1e-6)
    for frame in (result.coefs, result.ranef_var, table, means.means, means.contrasts):
        assert not frame.astype(str).apply(lambda c: c.str.contains("gbstats_col")).any().any()


def test_which_names_get_an_alias():
    from gbstats.mixed.engines.lme4 import needs_alias, r_aliases, restore_text
    from gbstats.mixed.formula import parse_formula

    for name in ("if", "for", "TRUE", "NA", "my cond", "_y", "2nd", "..1", ".2x", "a-b"):
        assert needs_alias(name), name
    for name in ("x", "x.y", ".x", "x_1", "If", "Condition2"):
        assert not needs_alias(name), name
    parsed = parse_formula("`_y` ~ x + `if` + `my cond` + (1 | `sub ject`)")
    aliases = r_aliases(parsed)
    assert list(aliases) == ["_y", "if", "my cond", "sub ject"]
    assert "x" not in aliases
    # eleven aliases: gbstats_col1_ is not a prefix of gbstats_col11_
    many = {f"c {i}": f"gbstats_col{i}_" for i in range(1, 12)}
    assert restore_text("gbstats_col11_a:gbstats_col1_b", many) == "c 11a:c 1b"


def test_a_quoted_response_and_grouping_factor_parse():
    from gbstats.mixed.formula import parse_formula, renamed

    parsed = parse_formula("`my y` ~ `if` * b + (1 + `if` | `sub ject`)")
    assert parsed.response == "my y" and parsed.groups == ["sub ject"]
    assert parsed.columns == ["my y", "if", "b", "sub ject"]
    safe = renamed(parsed, {"my y": "r", "if": "i", "sub ject": "s"})
    assert safe.text == "r ~ i + b + i:b + (1 + i | s)"
    assert parse_formula(safe.text).fixed_terms == safe.fixed_terms


def test_a_formula_with_quoted_names_renders_back_to_itself():
    """refit_simpler re-renders the formula without a random term; quoted names stay quoted."""
    from gbstats.mixed.formula import parse_formula

    parsed = parse_formula("`my y` ~ `if` * b + (1 + `if` | `sub ject`) + (1 | item)")
    simpler = parsed.without_random(["(1 | item)"])
    assert simpler.text == "`my y` ~ `if` + b + `if`:b + (1 + `if` | `sub ject`)"
    assert simpler.columns == ["my y", "if", "b", "sub ject"]
