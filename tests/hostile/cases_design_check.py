"""Hostile cases of the design check (gbstats.mixed.design, issue 31): columns a formula
does not use are read to see what each predictor varies between, so odd columns there
must neither break a fit nor raise a false alarm."""
from __future__ import annotations

import numpy as np
import pandas as pd

from hostile_cases import REPO, Wrong, case


def _frame() -> pd.DataFrame:
    return pd.read_csv(REPO / "tests" / "reference" / "random_intercept.csv")


def _lmm(data, formula):
    from gbstats.mixed.lmm import fit_lmm

    return fit_lmm(formula, data, "statsmodels")


def _no_design_warning(ws, fit):
    found = [w for w in fit.warnings if w.startswith("design check:")]
    if found:
        raise Wrong(f"a false alarm: {found}")
    if fit.fit_stats.get("design_check") != []:
        raise Wrong(f"design_check {fit.fit_stats.get('design_check')!r}")


@case("fit_lmm: unused columns holding lists, dicts and a relabelled subject id raise no "
      "false design alarm", "fit_lmm", "correct_result", check=_no_design_warning)
def _(ws):
    data = _frame()
    data["lists"] = [[i % 3] for i in range(len(data))]
    data["dicts"] = [{"k": i % 4} for i in range(len(data))]
    data["subject_code"] = "id-" + data["subject"].astype(str)
    return _lmm(data, "y ~ x + cond + (1|subject)")


def _warns_about_site(ws, fit):
    found = [w for w in fit.warnings if w.startswith("design check:")]
    if len(found) != 1 or "site_x" not in found[0] or "(1 | site)" not in found[0]:
        raise Wrong(f"expected one finding naming site_x and (1 | site), got {found}")


@case("fit_lmm: a site-level predictor with subjects nested in sites and no site term is "
      "reported", "fit_lmm", "correct_result", check=_warns_about_site)
def _(ws):
    data = _frame()
    subjects = sorted(data["subject"].unique())
    site = {s: f"site{k % 5}" for k, s in enumerate(subjects)}
    data["site"] = data["subject"].map(site)
    data["site_x"] = data["site"].map({f"site{k}": float(k) for k in range(5)}) + np.pi
    return _lmm(data, "y ~ x + site_x + (1|subject)")
