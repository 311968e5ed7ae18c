"""The fit cache returns a stored fit only for the very same fit, and refits otherwise."""
from __future__ import annotations

import os

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


# --- issue 33: the key holds the design matrix's meaning; entries are checksummed ----------

def _categorical(levels) -> pd.DataFrame:
    data = _data()
    return data.assign(x=pd.Categorical(data["x"], categories=levels))


def test_reordering_a_categorical_s_levels_refits_through_fit_with_twin(tmp_path):
    """The reference level is the first category: the same values with another level order
    are another model (other terms), so the stored fit must not answer for it."""
    from gbstats.mixed.fitting import fit_with_twin

    def fit(levels):
        return fit_with_twin(FORMULA, _categorical(levels), backends=["statsmodels"],
                             bayes=False, use_cache=True, cache_dir=tmp_path)["statsmodels"]

    first = fit(["a", "b", "c"])
    other = fit(["c", "a", "b"])
    assert other.fit_stats["reused_from_cache"] is False
    assert set(first.coefs["term"]) == {"(Intercept)", "xb", "xc"}
    assert set(other.coefs["term"]) == {"(Intercept)", "xa", "xb"}
    direct = fit_lmm(FORMULA, _categorical(["c", "a", "b"]), backend="statsmodels")
    pd.testing.assert_frame_equal(other.coefs, direct.coefs)
    # the reparametrisation identity: b - c under reference c equals b - c under reference a
    by_term = lambda fit: fit.coefs.set_index("term")["estimate"]  # noqa: E731
    assert by_term(other)["xb"] == pytest.approx(by_term(first)["xb"] - by_term(first)["xc"],
                                                 abs=1e-6)
    assert fit(["a", "b", "c"]).fit_stats["reused_from_cache"] is True


@pytest.mark.parametrize("change", ["ordered flag", "unused category", "category dtype"])
def test_other_dtype_metadata_of_a_categorical_changes_the_key(change):
    from gbstats.mixed.fit_cache import data_fingerprint

    base = _categorical(["a", "b", "c"])
    if change == "ordered flag":
        other = base.assign(x=base["x"].cat.as_ordered())
    elif change == "unused category":
        other = base.assign(x=base["x"].cat.add_categories(["d"]))
    else:
        other = base.assign(g=pd.Categorical(base["g"]))
    assert data_fingerprint(other) != data_fingerprint(base)
    assert data_fingerprint(base.copy()) == data_fingerprint(base)


def test_a_contrast_matrix_is_keyed_by_every_number_not_by_its_abbreviated_repr():
    """numpy abbreviates the repr of a large array ("..."): two matrices that differ only
    inside the elided part must still give two keys."""
    from gbstats.mixed.fit_cache import canonical

    big = np.zeros((40, 39))
    changed = big.copy()
    changed[20, 20] = 1.0
    assert repr(big) == repr(changed)  # what the old key used
    assert canonical({"x": big}) != canonical({"x": changed})
    assert canonical({"x": big}) == canonical({"x": big.copy()})
    frame = pd.DataFrame(big)
    assert canonical({"x": frame}) != canonical({"x": pd.DataFrame(changed)})


def _alignment_panel():
    from pathlib import Path

    ref = Path(__file__).resolve().parents[1] / "reference" / "alignment_panel.csv"
    data = pd.read_csv(ref)
    return (data[["item", "score"]].drop_duplicates().reset_index(drop=True),
            data[["participant", "group", "item", "rating"]])


@pytest.mark.needs_r
def test_fit_alignment_lmm_group_order_refits_with_the_other_reference(tmp_path):
    """The public entry of issue 33, case 3: group_order changes the reference group.
    Reference (hand-derived): the two fits are reparametrisations of one model, so with
    gamma as the reference the score_z:group[alpha] difference is minus the alpha-reference
    fit's score_z:group[gamma]."""
    from gbstats.alignment.mixed_model import fit_alignment_lmm

    scores, trials = _alignment_panel()

    def fit(order):
        table, fits = fit_alignment_lmm(scores, trials, group="group", score="score",
                                        group_order=order, use_cache=True, cache_dir=tmp_path)
        return table.set_index("term")["estimate"], fits["lme4"]

    alpha_first, fit_a = fit(["alpha", "beta", "gamma"])
    gamma_first, fit_g = fit(["gamma", "alpha", "beta"])
    assert fit_g.fit_stats["reused_from_cache"] is False
    assert "score_z:group[gamma]" in alpha_first and "score_z:group[alpha]" in gamma_first
    assert "score_z:group[gamma]" not in gamma_first
    assert gamma_first["score_z:group[alpha]"] == pytest.approx(
        -alpha_first["score_z:group[gamma]"], rel=1e-3, abs=1e-6)
    assert fit(["alpha", "beta", "gamma"])[1].fit_stats["reused_from_cache"] is True


def test_a_flipped_bit_in_a_stored_fit_is_detected_and_refitted(tmp_path):
    from gbstats.mixed import fit_cache

    data = _data()
    first = cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    (entry,) = (tmp_path / "fits").glob("*.pickle")
    stored = bytearray(entry.read_bytes())
    stored[-40] ^= 0x01  # one bit inside the pickled tables
    entry.write_bytes(bytes(stored))
    before = len(fit_cache.rejected)
    refit = cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    assert refit.fit_stats["reused_from_cache"] is False
    pd.testing.assert_frame_equal(refit.coefs, first.coefs)
    note = fit_cache.rejected_note(since=before)
    assert note is not None and "checksum" in note and entry.name in note
    # the refit was stored again, verified: the next call reuses it
    assert cached_fit(fit_lmm, FORMULA, data, backend="statsmodels",
                      cache_dir=tmp_path).fit_stats["reused_from_cache"] is True
    assert fit_cache.rejected_note(since=len(fit_cache.rejected)) is None


def test_an_entry_copied_over_another_fit_s_key_is_not_loaded(tmp_path):
    """A valid entry under the wrong name (copied, renamed) fails its header check."""
    data = _data()
    cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    cached_fit(fit_lmm, "y ~ 1 + (1|g)", data, backend="statsmodels", cache_dir=tmp_path)
    first, second = sorted((tmp_path / "fits").glob("*.pickle"), key=lambda p: p.stat().st_mtime_ns)
    first.write_bytes(second.read_bytes())
    refit = cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    assert refit.fit_stats["reused_from_cache"] is False
    assert set(refit.coefs["term"]) == {"(Intercept)", "xb", "xc"}


def test_a_cached_study_function_is_keyed_by_its_own_source_too(tmp_path, monkeypatch):
    """gbstats' source is in every key (environment_fingerprint); a function of a study is
    not part of it, so its module's source is added: editing it makes the next call a
    miss instead of handing back what the old code computed."""
    import importlib
    import sys

    from gbstats.mixed.fit_cache import cached_call

    folder = tmp_path / "pkg"
    folder.mkdir()
    module = folder / "study_step.py"
    module.write_text("def total(frame):\n    return float(frame['x'].sum())\n")
    monkeypatch.syspath_prepend(str(folder))
    frame = pd.DataFrame({"x": [1.0, 2.0]})
    import study_step

    assert cached_call(study_step.total, frame, cache_dir=tmp_path / "c") == (3.0, False)
    assert cached_call(study_step.total, frame, cache_dir=tmp_path / "c") == (3.0, True)
    module.write_text("def total(frame):\n    return float(frame['x'].sum()) * 10\n")
    sys.modules.pop("study_step")
    study_step = importlib.import_module("study_step")
    assert cached_call(study_step.total, frame, cache_dir=tmp_path / "c") == (30.0, False)


def test_r_package_versions_are_read_where_r_loads_them(tmp_path, monkeypatch):
    # issue 44, case 3: lme4 upgraded with install.packages() into a user library (or
    # R_LIBS) was not seen, so the key held the old version and old fits were reused
    from gbstats.mixed import fit_cache

    def package(folder, name, version):
        (folder / name).mkdir(parents=True)
        (folder / name / "DESCRIPTION").write_text(f"Package: {name}\nVersion: {version}\n")

    user, site = tmp_path / "user", tmp_path / "site"
    package(user, "lme4", "9.9-1")
    package(site, "lme4", "1.1-31")
    package(site, "blme", "1.0-5")
    monkeypatch.setattr(fit_cache, "R_LIBRARIES", (str(site),))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for variable in ("R_LIBS", "R_LIBS_USER", "R_LIBS_SITE"):
        monkeypatch.delenv(variable, raising=False)
    assert fit_cache.r_package_version("lme4") == "1.1-31"
    monkeypatch.setenv("R_LIBS_USER", str(user))
    assert fit_cache.r_package_version("lme4") == "9.9-1"       # R loads the user's copy
    monkeypatch.delenv("R_LIBS_USER")
    package(tmp_path / "home" / "R" / "x86_64-pc-linux-gnu-library" / "4.2", "lme4", "9.9-2")
    assert fit_cache.r_package_version("lme4") == "9.9-2"       # R's default user library
    assert "blme" in fit_cache.R_PACKAGES and fit_cache.r_package_version("blme") == "1.0-5"


@pytest.mark.slow
def test_a_reused_bayesian_fit_keeps_its_group_counts(tmp_path):
    # PyMC fits leave the levels per grouping factor to their live handle, which is not
    # stored: a warm study run's Bayesian column lost its Participants/Items rows, so its
    # tables differed from the cold run's (found by comparing the two runs' appendix sources)
    from gbstats.mixed.bayes import fit_bayes
    from gbstats.mixed.results import group_counts

    data = _data()
    options = dict(draws=100, tune=100, chains=1, loo=False, cache_dir=tmp_path)
    first = cached_fit(fit_bayes, FORMULA, data, **options)
    again = cached_fit(fit_bayes, FORMULA, data, **options)
    assert again.fit_stats["reused_from_cache"] is True and again.handle is None
    assert group_counts(first) == group_counts(again) == {"g": 12}
    # the sampled posterior, stored apart and read back when asked for, is the same draws
    xr = pytest.importorskip("xarray")
    xr.testing.assert_identical(again.idata.posterior, first.idata.posterior)


def _lmm_with_a_posterior(formula, data, draws_seed=0):
    """A real statsmodels fit carrying a real InferenceData (ArviZ's own constructor): the
    fit cache stores whatever posterior a FitResult holds, so its handling of one is tested
    here without a sampler; the sampled case is the slow test below."""
    import arviz as az

    fit = fit_lmm(formula, data, backend="statsmodels")
    draws = np.random.default_rng(draws_seed).normal(size=(2, 50, 3))
    fit.idata = az.from_dict(posterior={"beta": draws})
    return fit


def test_a_stored_posterior_is_unpickled_only_when_read_and_then_whole(tmp_path):
    # issue 41: unpickling every reused twin's InferenceData imported ArviZ (2 s) in each
    # warm study run, though most runs read only the tables
    from gbstats.mixed.results import StoredPosterior

    data = _data()
    first = cached_fit(_lmm_with_a_posterior, FORMULA, data, cache_dir=tmp_path)
    again = cached_fit(_lmm_with_a_posterior, FORMULA, data, cache_dir=tmp_path)
    assert again.fit_stats["reused_from_cache"] is True
    assert isinstance(again.__dict__["_idata"], StoredPosterior)       # not yet unpickled
    pd.testing.assert_frame_equal(again.coefs, first.coefs)
    assert isinstance(again.__dict__["_idata"], StoredPosterior)       # tables read: still not
    np.testing.assert_array_equal(again.idata.posterior["beta"].values,
                                  first.idata.posterior["beta"].values)
    assert not isinstance(again.__dict__["_idata"], StoredPosterior)   # read once, kept


def test_loading_a_stored_bayesian_fit_does_not_import_arviz_until_its_draws_are_read(tmp_path):
    import subprocess
    import sys

    cached_fit(_lmm_with_a_posterior, FORMULA, _data(), cache_dir=tmp_path)
    (entry,) = (tmp_path / "fits").glob("*.pickle")
    script = f"""
import sys
from pathlib import Path
from gbstats.mixed import fit_cache
fit = fit_cache._load(Path({str(entry)!r}), {entry.stem!r})
assert fit is not None and not fit_cache.rejected, fit_cache.rejected
print("tables", len(fit.coefs), "arviz" in sys.modules)
print("draws", fit.idata.posterior["beta"].shape, "arviz" in sys.modules)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:2] == ["tables 3 False", "draws (2, 50, 3) True"]


def test_a_flipped_bit_inside_a_stored_posterior_is_caught_before_anything_is_loaded(tmp_path):
    from gbstats.mixed import fit_cache

    data = _data()
    cached_fit(_lmm_with_a_posterior, FORMULA, data, cache_dir=tmp_path)
    (entry,) = (tmp_path / "fits").glob("*.pickle")
    stored = bytearray(entry.read_bytes())
    stored[-200] ^= 0x01   # inside the pickled posterior, at the payload's end
    entry.write_bytes(bytes(stored))
    before = len(fit_cache.rejected)
    again = cached_fit(_lmm_with_a_posterior, FORMULA, data, cache_dir=tmp_path)
    assert again.fit_stats["reused_from_cache"] is False
    assert "checksum" in fit_cache.rejected[before].reason


# --- the linear algebra in the key (issue 41: the baselines' second BLAS setting) ----------

def test_a_python_fit_under_other_blas_settings_is_refitted(tmp_path, monkeypatch):
    """numpy's, scipy's and PyTensor's OpenBLAS read OPENBLAS_CORETYPE and the thread
    variables, and sum in another order under them: another fit, not a stored one."""
    data = _data()
    for variable in ("OPENBLAS_CORETYPE", "OMP_NUM_THREADS"):
        monkeypatch.delenv(variable, raising=False)
    cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Sandybridge")
    other = cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    assert other.fit_stats["reused_from_cache"] is False
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    fewer = cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    assert fewer.fit_stats["reused_from_cache"] is False
    monkeypatch.delenv("OPENBLAS_CORETYPE")
    monkeypatch.delenv("OMP_NUM_THREADS")
    back = cached_fit(fit_lmm, FORMULA, data, backend="statsmodels", cache_dir=tmp_path)
    assert back.fit_stats["reused_from_cache"] is True


def test_an_r_fit_is_keyed_by_r_s_blas_and_by_the_variables_only_where_they_reach_it(
        monkeypatch):
    from gbstats.mixed import fit_cache

    data, options = _data(), {"backend": "lme4"}
    reference = ("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0",
                 "/usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3.11.0")
    openblas = ("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3",
                "/usr/lib/x86_64-linux-gnu/openblas-pthread/liblapack.so.3")

    def keys(libraries):
        monkeypatch.setattr(fit_cache, "r_linear_algebra", lambda: libraries)
        monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
        plain = fit_cache.fit_key(fit_lmm, FORMULA, data, options)
        monkeypatch.setenv("OPENBLAS_CORETYPE", "Sandybridge")
        return plain, fit_cache.fit_key(fit_lmm, FORMULA, data, options)

    on_reference, on_openblas, unknown = keys(reference), keys(openblas), keys(None)
    assert on_reference[0] == on_reference[1]   # the reference BLAS reads no variable
    assert on_openblas[0] != on_openblas[1]     # OpenBLAS picks its kernel by it
    assert unknown[0] != unknown[1]             # not found: keyed as if it could
    assert len({on_reference[0], on_openblas[0], unknown[0]}) == 3  # the library is keyed


@pytest.mark.needs_r
def test_r_s_blas_is_found_as_r_reports_it():
    import subprocess

    from gbstats.mixed import fit_cache

    fit_cache.r_linear_algebra.cache_clear()
    found = fit_cache.r_linear_algebra()
    printed = subprocess.run(["Rscript", "-e", 'cat(extSoftVersion()[["BLAS"]], La_library(), '
                              'sep = "\\n")'], capture_output=True, text=True, check=True).stdout
    reported = {os.path.realpath(line) for line in printed.split() if line}
    assert found is not None and reported <= set(found), (found, reported)


GLMM_IN_A_CLEAN_PROCESS = """
import pickle, sys
import pandas as pd
from gbstats.mixed.clean_process import in_clean_process
from gbstats.mixed.lmm import fit_glmm
fit = in_clean_process(fit_glmm, "y ~ x + (1 | g)", pd.read_csv(sys.argv[1]),
                       family="binomial", backend="lme4")
sys.stdout.buffer.write(pickle.dumps((fit.coefs, fit.ranef_var, fit.fit_stats.get("loglik"))))
"""


@pytest.mark.needs_r
def test_on_the_reference_blas_an_r_fit_is_the_same_bits_under_the_other_blas_settings(
        tmp_path):
    """What lets the baselines' second BLAS setting read the R fits from the cache
    (tests/studies/test_study_baselines.py): in the clean R server on the reference BLAS,
    OPENBLAS_CORETYPE=Sandybridge with one thread leaves a glmer fit bit for bit as it was."""
    import pickle
    import subprocess
    import sys

    from gbstats.mixed import fit_cache

    fit_cache.r_linear_algebra.cache_clear()
    libraries = fit_cache.r_linear_algebra()
    if libraries is None or not all(map(fit_cache.is_reference_blas, libraries)):
        pytest.skip(f"R runs on {libraries}: its fits are keyed by the BLAS variables too")
    rng = np.random.default_rng(7)
    g = np.repeat(np.arange(30), 12)
    x = rng.normal(size=g.size)
    y = rng.random(g.size) < 1 / (1 + np.exp(-(0.5 * x + rng.normal(size=30)[g])))
    data = tmp_path / "glmm.csv"
    pd.DataFrame({"g": [f"g{i}" for i in g], "x": x, "y": y.astype(int)}).to_csv(data, index=False)
    base = {k: v for k, v in os.environ.items() if k not in fit_cache.BLAS_VARIABLES}
    runs = [subprocess.run([sys.executable, "-c", GLMM_IN_A_CLEAN_PROCESS, str(data)],
                           capture_output=True, check=True, env={**base, **extra}).stdout
            for extra in ({}, {"OPENBLAS_CORETYPE": "Sandybridge", "OMP_NUM_THREADS": "1"})]
    (coefs, ranef, loglik), (coefs2, ranef2, loglik2) = map(pickle.loads, runs)
    pd.testing.assert_frame_equal(coefs, coefs2, check_exact=True)
    pd.testing.assert_frame_equal(ranef, ranef2, check_exact=True)
    assert loglik == loglik2


def test_a_cached_call_that_r_computes_is_keyed_as_an_r_fit(tmp_path, monkeypatch):
    """cognitive_bias's factor GLMM and its emmeans means come from R through cached_call:
    computed_by_r keys them by R's linear algebra, every other call by the BLAS variables."""
    from gbstats.mixed import fit_cache

    monkeypatch.setattr(fit_cache, "r_linear_algebra", lambda: (
        "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0",
        "/usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3.11.0"))
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    data = _data()
    for by_r in (True, False):
        fit_cache.cached_call(_bootstrap_means, data, n_boot=5, seed=1, cache_dir=tmp_path,
                              computed_by_r=by_r)
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Sandybridge")
    _, r_reused = fit_cache.cached_call(_bootstrap_means, data, n_boot=5, seed=1,
                                        cache_dir=tmp_path, computed_by_r=True)
    _, python_reused = fit_cache.cached_call(_bootstrap_means, data, n_boot=5, seed=1,
                                             cache_dir=tmp_path)
    assert r_reused and not python_reused
