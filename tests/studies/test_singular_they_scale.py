"""The model-side LMM on Watson et al.'s scale (issue 19, item 2; issue 23, A6).

Watson et al. (2023) fit `surprisal_they ~ gendered + close + (1|itm)`,
surprisal in nats with the two factors coded +1/-1 in the data
(camilliere/part_5_regression.R in juliawatson/bert-social-attitudes). The
paper-scale fit must equal gbstats' bits / 0-1 fit transformed by hand; the
derivation is written next to each check.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import DataValidationError
from studies.singular_they import analysis as A

LN2 = float(np.log(2))


def close_gendered_design(seed: int, n_frames: int = 40, interaction: float = 0.0) -> pd.DataFrame:
    """40 frames x the 4 closeness x gender conditions, surprisal in bits."""
    rng = np.random.default_rng(seed)
    rows = []
    frame_effects = rng.normal(0, 2.0, n_frames)
    for f in range(n_frames):
        for close in (0, 1):
            for gendered in (0, 1):
                bits = (8.0 - 1.4 * close - 1.0 * gendered + interaction * close * gendered
                        + frame_effects[f] + rng.normal(0, 1.3))
                rows.append({"item": f"f{f:02d}-{close}{gendered}", "frame": f"f{f:02d}",
                             "close": close, "gendered": gendered, "surprisal": bits})
    return pd.DataFrame(rows)


def by_term(fit) -> dict[str, pd.Series]:
    return {row["term"]: row for _, row in fit.coefs.iterrows()}


@pytest.mark.parametrize("backend", [
    "statsmodels", pytest.param("lme4", marks=pytest.mark.needs_r)])
def test_paper_scale_is_the_bits_indicator_fit_transformed_by_hand(backend):
    from gbstats.mixed.lmm import fit_lmm

    rows = close_gendered_design(seed=7)
    bits01 = by_term(fit_lmm(A.MODEL_FORMULA, rows, backend=backend))
    paper = by_term(fit_lmm(A.PAPER_FORMULA, A.paper_scale_rows(rows), backend=backend))
    # Derivation. The bits / 0-1 model is
    #   y_bits = a + b c + g d + u_frame + e,   c, d in {0, 1}.
    # Nats are bits times ln 2, and the +/-1 codes are x = 2c - 1, z = 2d - 1,
    # i.e. c = (x + 1)/2, d = (z + 1)/2. Substituting:
    #   y_nats = ln2 (a + b/2 + g/2) + (ln2 b/2) x + (ln2 g/2) z + ln2 u_frame + ln2 e,
    # with itm = frame (the rows carry no published item number).
    # Scaling y by ln 2 and reparameterising the fixed effects by an invertible
    # linear map change the REML criterion by a constant only, so the REML
    # estimates map exactly: slopes and their SEs times ln2/2, intercept
    # ln2 (a + b/2 + g/2); the Satterthwaite df do not change.
    a, b, g = (bits01[t]["estimate"] for t in ("(Intercept)", "close", "gendered"))
    assert paper["close"]["estimate"] == pytest.approx(LN2 * b / 2, rel=1e-4)
    assert paper["gendered"]["estimate"] == pytest.approx(LN2 * g / 2, rel=1e-4)
    assert paper["(Intercept)"]["estimate"] == pytest.approx(LN2 * (a + b / 2 + g / 2), rel=1e-4)
    for term in ("close", "gendered"):
        assert paper[term]["se"] == pytest.approx(LN2 / 2 * bits01[term]["se"], rel=1e-3)
        if backend == "lme4":
            assert paper[term]["df"] == pytest.approx(bits01[term]["df"], rel=1e-3)
    # The "2.9x": the bits / 0-1 slope is 2/ln2 = 2.885 times the paper's.
    assert b / paper["close"]["estimate"] == pytest.approx(2 / LN2, rel=1e-4)


@pytest.mark.needs_r
def test_with_the_interaction_the_main_effects_absorb_a_quarter_of_it():
    """With close x gendered in the model the +/-1 main effects are not b/2.

    y_bits = a + b c + g d + i c d, and c d = (x + 1)(z + 1)/4 = (xz + x + z + 1)/4, so
      y_nats = ln2 [(a + b/2 + g/2 + i/4) + (b/2 + i/4) x + (g/2 + i/4) z + (i/4) xz].
    The +/-1 main effects are averages over the other factor (b/2 + i/4), while
    the 0/1 'main effects' are simple effects at the other factor's 0 level.
    """
    from gbstats.mixed.lmm import fit_lmm

    rows = close_gendered_design(seed=11, interaction=0.9)
    bits01 = by_term(fit_lmm("surprisal ~ close * gendered + (1|frame)", rows, backend="lme4"))
    paper = by_term(fit_lmm("surprisal_they ~ close * gendered + (1|itm)",
                            A.paper_scale_rows(rows), backend="lme4"))
    a, b, g, i = (bits01[t]["estimate"]
                  for t in ("(Intercept)", "close", "gendered", "close:gendered"))
    assert paper["close"]["estimate"] == pytest.approx(LN2 * (b / 2 + i / 4), rel=1e-4)
    assert paper["gendered"]["estimate"] == pytest.approx(LN2 * (g / 2 + i / 4), rel=1e-4)
    assert paper["close:gendered"]["estimate"] == pytest.approx(LN2 * i / 4, rel=1e-4)
    assert paper["(Intercept)"]["estimate"] == pytest.approx(
        LN2 * (a + b / 2 + g / 2 + i / 4), rel=1e-4)
    # the old reading (b/2 alone) is off by ln2 i/4 here, which this design makes visible
    assert abs(paper["close"]["estimate"] - LN2 * b / 2) > 0.1


def test_paper_scale_rows_code_plus_minus_one_in_the_data():
    rows = close_gendered_design(seed=1, n_frames=2)
    paper = A.paper_scale_rows(rows)
    assert set(paper["close"]) == {-1, 1} and set(paper["gendered"]) == {-1, 1}
    assert (paper["close"] == np.where(rows["close"] == 1, 1, -1)).all()
    assert (paper["gendered"] == np.where(rows["gendered"] == 1, 1, -1)).all()
    assert paper["surprisal_they"].to_numpy() == pytest.approx(rows["surprisal"] * LN2)
    assert (paper["itm"] == rows["frame"]).all()  # no published item number: the frame
    # the caller's frame is left alone
    assert "surprisal_they" not in rows and set(rows["close"]) == {0, 1}


def test_paper_scale_rows_refuse_a_non_indicator():
    rows = close_gendered_design(seed=1, n_frames=2)
    rows.loc[3, "close"] = 2
    with pytest.raises(DataValidationError, match="close.*0 or 1.*f00-11"):
        A.paper_scale_rows(rows)


def test_every_model_table_says_its_units_and_coding():
    from gbstats.mixed.lmm import fit_lmm

    rows = close_gendered_design(seed=3)
    fits = {"statsmodels": fit_lmm(A.PAPER_FORMULA, A.paper_scale_rows(rows),
                                   backend="statsmodels")}
    table = A.model_fit_table(fits, A.PAPER_FORMULA)
    assert set(table["units"]) == {"surprisal in nats"}
    assert set(table["coding"]) == {"+1/-1 sum coding (+1 = close, +1 = gendered)"}
    old = A.model_fit_table({"statsmodels": fit_lmm(A.MODEL_FORMULA, rows,
                                                    backend="statsmodels")}, A.MODEL_FORMULA)
    assert set(old["units"]) == {"surprisal in bits"} and set(old["coding"]) == {
        "0/1 indicators (1 = close, 1 = gendered)"}
    side = A.side_by_side(fits, {})
    assert set(side["effect"]) == {"(Intercept)", "close", "gendered"}
    assert side[["units", "coding"]].notna().all().all()


def test_surprisal_by_type_can_carry_its_units():
    scored = pd.DataFrame({"antecedent_type": ["plural"] * 3, "surprisal": [1.0, 2.0, 3.0]})
    assert set(A.surprisal_by_type(scored, units="surprisal in bits")["units"]) == {
        "surprisal in bits"}
    assert "units" not in A.surprisal_by_type(scored)
