"""The fit cache returns a stored fit only for the very same fit, and refits otherwise."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gbstats.mixed.fit_cache import cached_fit
from gbstats.mixed.lmm import fit_lmm

FORMULA = "y ~ x + (1|g)"


def _data(seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(12), 6)
    return pd.DataFrame({"g": [f"g{i:02d}" for i in g], "x": np.tile(["a", "b", "c"], 24),
                         "y": rng.normal(size=g.size) + rng.normal(size=12)[g]})


def test_the_same_fit_is_reused_with_identical_tables(tmp_path):
    data = _data()
    first = cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    again = cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    assert first.fit_stats["reused_from_cache"] is False
    assert again.fit_stats["reused_from_cache"] is True
    pd.testing.assert_frame_equal(again.coefs, first.coefs)
    pd.testing.assert_frame_equal(again.ranef_var, first.ranef_var)
    assert again.warnings == first.warnings
    direct = fit_lmm(FORMULA, data, backend="statsmodels")
    pd.testing.assert_frame_equal(again.coefs, direct.coefs)


@pytest.mark.parametrize("change", ["value", "row order", "formula", "option"])
def test_anything_that_changes_the_fit_refits(tmp_path, change):
    data = _data()
    cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    formula, options = FORMULA, {"backend": "statsmodels"}
    if change == "value":
        data = data.copy()
        data.loc[5, "y"] += 1e-9
    elif change == "row order":
        data = data.iloc[::-1]
    elif change == "formula":
        formula = "y ~ 1 + (1|g)"
    else:
        options = {"backend": "statsmodels", "optimizer": None}
    refit = cached_fit(fit_lmm, formula, data, cache_dir=tmp_path, **options)
    assert refit.fit_stats["reused_from_cache"] is False


def test_use_cache_false_and_the_environment_switch_bypass_it(tmp_path, monkeypatch):
    data = _data()
    cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    bypass = cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path,
                        use_cache=False)
    assert "reused_from_cache" not in bypass.fit_stats
    monkeypatch.setenv("GBSTATS_NO_FIT_CACHE", "1")
    off = cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    assert "reused_from_cache" not in off.fit_stats


def test_a_damaged_entry_is_refitted(tmp_path):
    data = _data()
    cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    (entry,) = (tmp_path / "fits").glob("*.pickle")
    entry.write_bytes(b"not a pickle")
    refit = cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    assert refit.fit_stats["reused_from_cache"] is False
    assert cached_fit(fit_lmm, FORMULA, data, backend="statsmodels",
                      cache_dir=tmp_path).fit_stats["reused_from_cache"] is True


@pytest.mark.needs_r
def test_a_contrast_coded_lme4_fit_is_stored_and_reused_without_its_r_model(tmp_path):
    """lme4 fits carry a live R model (with contrasts, of a class local to the
    engine), which cannot be pickled: the cache stores the tables without it,
    so the study's rerun works, and a question that needs the model says so."""
    from pathlib import Path

    from gbstats.errors import GbstatsError
    from gbstats.mixed.marginal import marginal_means

    data = pd.read_csv(Path(__file__).resolve().parents[1] / "reference" / "factorial.csv")
    args = ("y ~ close * stance + (1 | subject)", data)
    first = cached_fit(fit_lmm, *args, backend="lme4", contrasts={"close": "sum"}, cache_dir=tmp_path)
    again = cached_fit(fit_lmm, *args, backend="lme4", contrasts={"close": "sum"}, cache_dir=tmp_path)
    assert first.fit_stats["reused_from_cache"] is False and first.handle is not None
    assert again.fit_stats["reused_from_cache"] is True and again.handle is None
    pd.testing.assert_frame_equal(again.coefs, first.coefs)
    assert "close1" in set(again.coefs["term"])
    with pytest.raises(GbstatsError, match="still carries its fitted model"):
        marginal_means(again, "close")


# --- cached_call: seeded resampling tables (the singular_they bootstraps) -----------------

def _bootstrap_means(data: pd.DataFrame, *, n_boot: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(data), size=(n_boot, len(data)))
    return pd.DataFrame({"mean": data["y"].to_numpy()[idx].mean(axis=1)})


def test_cached_call_returns_the_stored_table_of_the_very_same_call(tmp_path):
    from gbstats.mixed.fit_cache import cached_call

    data = _data()
    first, reused_first = cached_call(_bootstrap_means, data, n_boot=20, seed=3,
                                      cache_dir=tmp_path)
    again, reused_again = cached_call(_bootstrap_means, data, n_boot=20, seed=3,
                                      cache_dir=tmp_path)
    assert (reused_first, reused_again) == (False, True)
    pd.testing.assert_frame_equal(again, first)
    pd.testing.assert_frame_equal(again, _bootstrap_means(data, n_boot=20, seed=3))


@pytest.mark.parametrize("change", ["value", "seed", "n_boot", "off"])
def test_cached_call_recomputes_when_anything_changes(tmp_path, change, monkeypatch):
    from gbstats.mixed.fit_cache import cached_call

    data = _data()
    cached_call(_bootstrap_means, data, n_boot=20, seed=3, cache_dir=tmp_path)
    options = {"n_boot": 20, "seed": 3}
    if change == "value":
        data = data.copy()
        data.loc[0, "y"] += 1e-9
    elif change in ("seed", "n_boot"):
        options[change] += 1
    else:
        monkeypatch.setenv("GBSTATS_NO_FIT_CACHE", "1")
    value, reused = cached_call(_bootstrap_means, data, cache_dir=tmp_path, **options)
    assert reused is False
    pd.testing.assert_frame_equal(value, _bootstrap_means(data, **options))
