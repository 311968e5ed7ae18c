"""Read-only, full and missing places told apart from damage (issue 33, item 5), for the
pieces under the hostile cases: the words for an OSError, the fit cache that cannot store,
a Bayesian posterior cut short by Ctrl-C, a mirror given as a folder path, and the data
directory `gbstats check` is pointed at. The hostile cases (tests/hostile/cases_files.py)
run the same on real read-only and full file systems."""
from __future__ import annotations

import errno
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import GbstatsError, place_problem, write_probe

REFERENCE = Path(__file__).resolve().parents[1] / "reference"


@pytest.mark.parametrize("code, words", [(errno.EROFS, "read-only"), (errno.ENOSPC, "full"),
                                         (errno.EACCES, "not writable"),
                                         (errno.ENOENT, None), (None, None)])
def test_place_problem_names_what_is_wrong_with_the_place(code, words):
    found = place_problem(OSError(code, "x") if code is not None else OSError("no errno"))
    assert (found is None) if words is None else (words in found)
    assert place_problem(ValueError("not an OSError")) is None


def test_write_probe_leaves_nothing_behind(tmp_path):
    assert write_probe(tmp_path) is None and list(tmp_path.iterdir()) == []
    assert isinstance(write_probe(tmp_path / "missing"), FileNotFoundError)


def test_a_fit_that_cannot_be_stored_is_returned_and_counted(tmp_path, monkeypatch):
    from gbstats.mixed import fit_cache
    from gbstats.mixed.lmm import fit_lmm

    def full_disk(self, data):  # the OS boundary: the write of the cache file
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    before = fit_cache.fit_cache_snapshot()
    data = pd.read_csv(REFERENCE / "random_intercept.csv")
    fit = fit_cache.cached_fit(fit_lmm, "y ~ x + cond + (1|subject)", data, cache_dir=tmp_path,
                               backend="statsmodels")
    assert fit.fit_stats["reused_from_cache"] is False and len(fit.coefs) == 4
    note = fit_cache.fit_cache_store_failures(since=before)
    assert note.startswith("Fit cache: 1 fit(s)") and "full disk" in note


def test_a_posterior_cut_short_by_ctrl_c_is_not_a_result():
    import arviz as az

    from gbstats.mixed.bayes import require_whole_posterior

    whole = az.from_dict(posterior={"b": np.zeros((2, 100))})
    require_whole_posterior(whole, draws=100, chains=2)
    with pytest.raises(KeyboardInterrupt, match="after 37 of 100 draws"):
        require_whole_posterior(az.from_dict(posterior={"b": np.zeros((2, 37))}), 100, 2)
    with pytest.raises(KeyboardInterrupt):
        require_whole_posterior(az.from_dict(posterior={"b": np.zeros((1, 100))}), 100, 2)


def test_a_mirror_given_as_a_folder_path_becomes_its_file_url(tmp_path, monkeypatch):
    from gbstats.data.fetch import DEFAULT_MIRROR, mirror_url

    monkeypatch.delenv("GBSTATS_MIRROR", raising=False)
    assert mirror_url() == DEFAULT_MIRROR
    assert mirror_url(str(tmp_path)) == tmp_path.resolve().as_uri()
    assert mirror_url("https://example.org/raw/") == "https://example.org/raw"
    monkeypatch.setenv("GBSTATS_MIRROR", str(tmp_path / "nope"))
    with pytest.raises(GbstatsError, match=r"\$GBSTATS_MIRROR .*nope.* neither a URL"):
        mirror_url()


def test_check_tells_a_data_directory_from_a_file_or_a_folder_of_other_things(tmp_path):
    from gbstats.check import data_directory_line
    from gbstats.data.registry import DATASETS

    (tmp_path / "file").write_text("x")
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "thesis.tex").write_text("x")
    (tmp_path / "data" / "watson2023").mkdir(parents=True)
    lines = {name: data_directory_line(tmp_path / name, DATASETS)
             for name in ("file", "empty", "other", "data", "missing")}
    assert (lines["file"].ok, lines["file"].required) == (False, True)
    assert "is a file, not a folder" in lines["file"].detail
    assert (lines["other"].ok, lines["other"].required) == (False, True)
    assert (lines["empty"].ok, lines["empty"].required) == (False, False)
    assert (lines["missing"].ok, lines["missing"].required) == (False, False)
    assert lines["data"].ok and f"1 of {len(DATASETS)}" in lines["data"].detail
