"""Hostile cases of issue 44 that were still open after the first fixes: ratios out of their
range (cases 5 and 6), artefacts used unverified (case 8), Unicode in LaTeX, temporary files
(case 15), unclear errors, and new cases of the same classes that the issue does not list.

Each case is one a hostile user tried on main: what it did then is in its comment.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from hostile_cases import CASES, Wrong, case, study


def _noise_panel(seed: int, n_people: int = 24, n_items: int = 20) -> pd.DataFrame:
    """A pilot of pure-noise 1-7 ratings: two groups of 12, every person rates every item."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        [(f"p{p}", f"i{i}", "a" if p < n_people // 2 else "b", int(rng.integers(1, 8)))
         for p in range(n_people) for i in range(n_items)],
        columns=["participant", "item", "group", "rating"])


def _caught(function, *args, **kwargs):
    from gbstats.errors import EstimateWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = function(*args, **kwargs)
    return value, [str(w.message) for w in caught if issubclass(w.category, EstimateWarning)]


# --- issue 44, case 5: a 24-person pilot with pure-noise ratings ----------------------------

@case("group comparison: a 24-person pilot of pure noise (reliability, ceiling, not computed)",
      "group comparison", expect="correct_result")
def _(ws):
    # gave a reliability of -4.8, corrected-r intervals of [-4.0, 2.8], a ceiling of 3.4
    # (above its maximum 2), and "Neither shown" for comparisons never computed, which also
    # dropped out of the Holm family, all without a word
    from gbstats.alignment.group_comparison import (corrected_comparison_rows,
                                                    finish_comparisons, holm_family_note,
                                                    profile_agreement, short_verdict)

    out = []
    for seed in (0, 2, 7):
        trials = _noise_panel(seed)
        rng = np.random.default_rng(100 + seed)
        scores = pd.DataFrame({"item": [f"i{i}" for i in range(20)], "s": rng.normal(size=20)})
        (rel, _, rows), rel_warnings = _caught(
            corrected_comparison_rows, scores, trials, group="group", score="s",
            rating="rating", n_boot=60, n_var_boot=30, n_splits=40, n_boot_splits=10,
            seed=seed)
        finished = finish_comparisons(rows)
        prof, prof_warnings = _caught(profile_agreement, trials, group="group",
                                      rating="rating", n_boot=60, n_splits=40,
                                      n_boot_splits=10, seed=seed)
        out.append((rel, finished, prof, rel_warnings, prof_warnings,
                    holm_family_note(finished), [short_verdict(v) for v in finished["verdict"]]))
    return out


def _check_noise_pilot(ws, value):
    for rel, finished, prof, rel_warnings, prof_warnings, family, short in value:
        for row in rel.itertuples():
            out_of_range = (row.reliability <= 0 or abs(row.r_corrected) > 1
                            or abs(row.ci_low) > 1 or abs(row.ci_high) > 1)
            if out_of_range and not any(f"Group {row.group}" in w for w in rel_warnings):
                raise Wrong(f"group {row.group}: reliability {row.reliability:.3g}, corrected r "
                            f"{row.r_corrected:.3g} [{row.ci_low:.3g}, {row.ci_high:.3g}] "
                            f"without a warning ({rel_warnings})")
            if row.reliability <= 0 and np.isfinite(row.r_corrected):
                raise Wrong("a corrected r from a reliability that is not positive")
        ceilings = prof[["max_alignment_difference", "max_alignment_difference_upper"]]
        if (ceilings.dropna().to_numpy() > 2).any() or (ceilings.dropna().to_numpy() < 0).any():
            raise Wrong(f"a ceiling outside [0, 2]: {ceilings.to_dict('records')}")
        row = prof.iloc[0]
        # (an interval's upper end above 1 moves no ceiling: the table shows it at the bound)
        odd = (not np.isfinite(row.max_alignment_difference)
               or row.max_alignment_difference == 0 or row.ci_low < -1)
        if odd and not prof_warnings:
            raise Wrong(f"the ceiling {row.max_alignment_difference} came without a warning")
        for verdict, words in zip(finished["verdict"], short):
            if np.isnan(finished["p_value"]).any() and "neither" in words.lower():
                raise Wrong(f"a comparison never computed reads {words!r}")
        untested = finished["p_value"].isna()
        if untested.any():
            if not all(v.startswith("not computed (") for v in finished.loc[untested, "verdict"]):
                raise Wrong(f"verdicts {finished['verdict'].tolist()}")
            if "not computed, outside the family" not in family:
                raise Wrong(f"the Holm family does not say what it holds: {family}")
        if "test" not in family:
            raise Wrong(f"no family size: {family}")
    if not any(f["p_value"].isna().any() for _, f, *_ in value):
        raise Wrong("no seed gave a comparison that could not be computed; the case tests "
                    "nothing")


CASES[-1].check = _check_noise_pilot


# --- issue 44, case 6: profile_agreement on pure noise --------------------------------------

@case("profile_agreement: pure noise in 8 seeds (ceiling 0 or NaN)", "group comparison",
      expect="correct_result")
def _(ws):
    # returned a ceiling of 0.0 ("no model could differ") or NaN in 5 of 8 seeds, no warning
    from gbstats.alignment.group_comparison import profile_agreement, profile_bounds_notes

    out = []
    for seed in range(8):
        table, caught = _caught(profile_agreement, _noise_panel(seed), group="group",
                                rating="rating", n_boot=40, n_splits=40, n_boot_splits=10,
                                seed=seed)
        out.append((table.iloc[0], caught, profile_bounds_notes(table)))
    return out


def _check_profile_noise(ws, value):
    for row, caught, notes in value:
        ceiling = row.max_alignment_difference
        defined = row.reliability_a > 0 and row.reliability_b > 0
        if not defined and (np.isfinite(ceiling) or not any("not computed" in w for w in caught)):
            raise Wrong(f"reliabilities {row.reliability_a:.3g}, {row.reliability_b:.3g}: ceiling "
                        f"{ceiling} (documented: NaN, 'not computed'), warnings {caught}")
        if defined and row.r_profiles_corrected > 1 and (
                ceiling != 0 or not any("not evidence" in w for w in caught)):
            raise Wrong(f"corrected r {row.r_profiles_corrected:.3g}: ceiling {ceiling}, "
                        f"warnings {caught}")
        if caught != notes:
            raise Wrong(f"the warnings {caught} and the report's notes {notes} differ")


CASES[-1].check = _check_profile_noise


# --- issue 44, case 8: artefacts used without verification ---------------------------------

@case("score CLI: a hub snapshot whose weights were edited in place", "score CLI",
      expect="correct_result", slow=True)
def _(ws):
    # was still served from the score cache: the key named the commit only
    import shutil

    from hostile_cases_stale import _hub_score, _hub_snapshot, _model, _stimuli

    folder = ws.fresh("stale_snapshot_edited")
    hub, repo, stimuli, commit = folder / "hub", "someone/tiny-gpt2", _stimuli(folder), "5" * 40
    first = _model(ws, folder / "v1", seed=0)
    second = _model(ws, folder / "v2", seed=1)
    _hub_snapshot(hub, repo, commit, first)
    common = ["--stimuli", stimuli, "--model", repo, "--revision", commit,
              "--cache-dir", folder / "cache"]
    _hub_score(folder, hub, *common, "--out", folder / "old.csv")
    snapshot = hub / f"models--{repo.replace('/', '--')}" / "snapshots" / commit
    shutil.copyfile(second / "model.safetensors", snapshot / "model.safetensors")
    err = _hub_score(folder, hub, *common, "--out", folder / "new.csv")
    again = _hub_score(folder, hub, *common, "--out", folder / "again.csv")
    return folder, second, err, again


def _check_snapshot_edited(ws, value):
    from hostile_cases_stale import _clean_scores, _counts, _same_scores

    folder, second, err, again = value
    if _counts(err)[0]:
        raise Wrong(f"after the edit, {_counts(err)[0]} scores came from the cache")
    if "no longer match what was recorded" not in err:
        raise Wrong(f"no warning that the snapshot changed: {err[-600:]}")
    _same_scores(pd.read_csv(folder / "new.csv"), _clean_scores(second), "edited snapshot")
    if _counts(again)[1]:
        raise Wrong(f"a third run scored {_counts(again)[1]} texts again instead of reusing the "
                    "edited snapshot's scores")


CASES[-1].check = _check_snapshot_edited


@case("embedded model: a converted copy edited after it was written", "score cache",
      expect="correct_result")
def _(ws):
    # was used as it was: only the GGUF file was fingerprinted, not the de-quantized copy
    from models.loading import CONVERTED_RECORD, ModelFilesChangedWarning, converted_copy_intact
    from models.fingerprint import fingerprint

    folder = ws.fresh("converted_copy") / "float32"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 16)
    (folder / CONVERTED_RECORD).write_text(fingerprint(folder))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        before = converted_copy_intact(folder)
        data = bytearray((folder / "model.safetensors").read_bytes())
        data[100] ^= 0xFF
        (folder / "model.safetensors").write_bytes(bytes(data))
        after = converted_copy_intact(folder)
    said = [str(w.message) for w in caught if issubclass(w.category, ModelFilesChangedWarning)]
    return before, after, said


def _check_converted(ws, value):
    before, after, said = value
    if not before or after or not any("no longer matches" in s for s in said):
        raise Wrong(f"intact before: {before}, after the edit: {after}; warnings {said}")


CASES[-1].check = _check_converted


# --- issue 44: unclear errors that were still open ------------------------------------------

@case("fit cache: the fits folder is a file", "fit cache", names=("fits", "is a file, not a folder"))
def _(ws):
    # every fit was reported as "N stored result(s) failed verification" before
    from gbstats.alignment.like_for_like import people_shares
    from gbstats.mixed.fit_cache import cached_call

    folder = ws.fresh("fit_cache_fits_file")
    (folder / "fits").write_text("not a folder\n")
    trials = pd.DataFrame({"cond": ["a", "a"], "he": [1, 0], "she": [0, 1]})
    return cached_call(people_shares, trials, option_sets={"binary": ["he", "she"]},
                       target="she", by=["cond"], cache_dir=folder)


@case("score CLI: --revision a short commit hash", "score CLI",
      names=("'abc1234'", "shortened commit", "full 40-character commit"), slow=True)
def _(ws):
    # was blamed on network access before
    from hostile_cases_stale import _hub_score, _hub_snapshot, _stimuli

    folder = ws.fresh("hub_short_revision")
    hub, repo = folder / "hub", "someone/tiny-gpt2"
    _hub_snapshot(hub, repo, "abc1234" + "0" * 33, ws.gpt2)
    return _hub_score(folder, hub, "--stimuli", _stimuli(folder), "--model", repo,
                      "--revision", "abc1234", "--out", folder / "o.csv")


@case("lme4 backend: R installed but not on the PATH", "fit_lmm",
      names=("not on the PATH", "is installed at"), needs=("r",))
def _(ws):
    # was "needs R and pymer4" (not installed) before
    import os

    from gbstats.mixed.engines import lme4

    old = os.environ["PATH"]
    os.environ["PATH"] = str(ws.fresh("empty_path"))
    try:
        return lme4.require()
    finally:
        os.environ["PATH"] = old


def _disjoint_trials() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [(f"p{p}", f"i{i}", "a" if p < 6 else "b", float(rng.integers(1, 8) + i % 3))
            for p in range(12) for i in (range(10) if p < 6 else range(10, 20))]
    return pd.DataFrame(rows, columns=["participant", "item", "group", "rating"])


@case("profile_agreement: two groups that rated disjoint item sets", "group comparison",
      names=("'a' and 'b'", "0 item(s) in common"))
def _(ws):
    # gave a row of NaN (n_items 0) before
    from gbstats.alignment.group_comparison import profile_agreement

    return profile_agreement(_disjoint_trials(), group="group", rating="rating", n_boot=20)


@case("compare_group_correlations: two groups that rated disjoint item sets",
      "group correlations", names=("in common", "0 shared item(s)"))
def _(ws):
    # raised scipy's ValueError "`x` and `y` must have length at least 2" before
    from gbstats.alignment.groups import compare_group_correlations

    scores = pd.DataFrame({"item": [f"i{i}" for i in range(20)], "surprisal": np.arange(20.0)})
    return compare_group_correlations(scores, _disjoint_trials(), group="group")


# --- levels, alphas and coverages given as percentages (issue 44: "a coverage of 40.0") -------

def _rating_trials() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame([(f"p{p}", f"i{i}", "a" if p < 6 else "b",
                          float(rng.integers(1, 8) + i % 4)) for p in range(12)
                         for i in range(12)], columns=["participant", "item", "group", "rating"])


def _scores() -> pd.DataFrame:
    return pd.DataFrame({"item": [f"i{i}" for i in range(12)], "surprisal": np.arange(12.0)})


def _comparison_rows() -> pd.DataFrame:
    return pd.DataFrame({"family": ["f"], "group_a": ["a"], "group_b": ["b"], "test": ["t"],
                         "primary": [True], "scale": ["s"], "estimate": [0.1], "se": [0.1],
                         "ci_low": [0.0], "ci_high": [0.2], "p_value": [0.3],
                         "equivalence_bound": [0.1]})


def _percent_cases():
    from gbstats.alignment import group_comparison as GC
    from gbstats.alignment import groups as G
    from gbstats.alignment import like_for_like as L
    from gbstats.alignment import reliability as R
    from gbstats.inference import hypothesis_tests as H

    draws = np.random.default_rng(0).uniform(-0.5, 0.5, 200)
    model_probs = pd.DataFrame({"item": [f"i{i}" for i in range(12) for _ in "xy"],
                                "variant": list("xy") * 12, "prob": [0.5] * 24})
    choices = _rating_trials().assign(
        response=lambda d: np.where(d["rating"] > 4, "x", "y"))
    return [
        # (entry, what was done, call; the old outcome in the comment)
        ("people_shares", "confidence=40", "confidence", lambda: L.people_shares(  # NaN bounds
            pd.DataFrame({"cond": ["a"], "he": [1], "she": [0]}), {"b": ["he", "she"]},
            target="she", by=["cond"], confidence=40.0)),
        ("wilson_interval", "confidence=95", "confidence",                          # NaN bounds
         lambda: L.wilson_interval(np.array([3]), np.array([10]), confidence=95)),
        ("group_loglik", "confidence=40", "confidence",                            # raw ValueError
         lambda: G.group_loglik(choices, model_probs, group="group", n_boot=20, confidence=40.0)),
        ("group correlations", "group_correlations confidence=40", "confidence",   # raw ValueError
         lambda: G.group_correlations(_scores(), _rating_trials(), group="group", n_boot=20,
                                      confidence=40.0)),
        ("group correlations", "compare_dependent_correlations confidence=40",     # accepted
         "confidence", lambda: G.compare_dependent_correlations(0.3, 0.2, 0.5, 30,
                                                                confidence=40.0)),
        ("group correlations", "compare_group_correlations confidence=40",         # accepted
         "confidence", lambda: G.compare_group_correlations(_scores(), _rating_trials(),
                                                            group="group", confidence=40.0)),
        ("group comparison", "profile_agreement confidence=40", "confidence",      # raw ValueError
         lambda: GC.profile_agreement(_rating_trials(), group="group", rating="rating",
                                      n_boot=20, confidence=40.0)),
        ("group comparison", "finish_comparisons alpha=5", "alpha",                # accepted
         lambda: GC.finish_comparisons(_comparison_rows(), alpha=5)),
        ("group comparison", "smallest_equivalence_bound alpha=5", "alpha",        # NaN
         lambda: GC.smallest_equivalence_bound(0.1, 0.1, alpha=5)),
        ("hypothesis tests", "correlation confidence=40", "confidence",            # NaN interval
         lambda: H.correlation(np.arange(10.0), np.arange(10.0) ** 2, confidence=40.0)),
        ("hypothesis tests", "welch_ttest confidence=95", "confidence",            # AssertionError
         lambda: H.welch_ttest(np.arange(10.0), np.arange(10.0) + 1, confidence=95)),
        ("hypothesis tests", "mann_whitney confidence=True", "confidence",         # accepted
         lambda: H.mann_whitney(np.arange(10.0), np.arange(10.0) + 1, confidence=True,
                                n_boot=20)),
        ("reliability", "bc_interval confidence=40", "confidence",                 # raw ValueError
         lambda: R.bc_interval(0.1, draws, confidence=40.0)),
        ("reliability", "centred_percentile_interval confidence=nan", "confidence",  # NaN bounds
         lambda: R.centred_percentile_interval(0.1, draws, confidence=float("nan"))),
    ]


for _pos, (_entry, _label, _name) in enumerate(
        [(e, label, n) for e, label, n, _ in [
            ("people_shares", "confidence=40", "confidence", None),
            ("wilson_interval", "confidence=95", "confidence", None),
            ("group_loglik", "confidence=40", "confidence", None),
            ("group correlations", "group_correlations confidence=40", "confidence", None),
            ("group correlations", "compare_dependent_correlations confidence=40", "confidence",
             None),
            ("group correlations", "compare_group_correlations confidence=40", "confidence",
             None),
            ("group comparison", "profile_agreement confidence=40", "confidence", None),
            ("group comparison", "finish_comparisons alpha=5", "alpha", None),
            ("group comparison", "smallest_equivalence_bound alpha=5", "alpha", None),
            ("hypothesis tests", "correlation confidence=40", "confidence", None),
            ("hypothesis tests", "welch_ttest confidence=95", "confidence", None),
            ("hypothesis tests", "mann_whitney confidence=True", "confidence", None),
            ("reliability", "bc_interval confidence=40", "confidence", None),
            ("reliability", "centred_percentile_interval confidence=nan", "confidence", None),
        ]]):
    @case(f"{_entry}: {_label} (a percentage, or not a probability)", _entry,
          names=(f"{_name} must be a probability",))
    def _(ws, _pos=_pos):
        return _percent_cases()[_pos][3]()


@case("wilson_interval: 12 successes of 10", "wilson_interval", names=("0..n", "12 of 10"))
def _(ws):
    # gave a NaN interval without a word before
    from gbstats.alignment.like_for_like import wilson_interval

    return wilson_interval(np.array([3, 12]), np.array([10, 10]))


# --- files given a folder (issue 44: "a folder passed as --predictions is 'not found'") ---------

for _study in ("winopron", "genda_lens"):
    @case(f"{_study} CLI: --predictions names a folder", f"{_study} CLI",
          names=("--predictions", "a folder, not a file"))
    def _(ws, _study=_study):
        # winopron said "unknown predictions file type", genda_lens "not found"
        from hostile_cases import study

        folder = ws.fresh(f"predictions_folder_{_study}")
        (folder / "preds.tsv").mkdir()
        return study(_study, "--predictions", folder / "preds.tsv", "--model", "none",
                     "--out", folder / "r")


# --- temporary files (issue 44, case 15) ----------------------------------------------------

BAYES_CHILD = """
import sys
import numpy as np, pandas as pd
from gbstats.mixed.bayes import fit_bayes
rng = np.random.default_rng(0)
g = np.repeat(np.arange(8), 5)
data = pd.DataFrame({"g": [f"g{i}" for i in g], "x": rng.normal(size=g.size)})
data["y"] = data["x"] + rng.normal(size=8)[g] + rng.normal(size=g.size)
fit_bayes("y ~ x + (1|g)", data, draws=50, tune=50, chains=1, loo=False)
if sys.argv[1] == "error":
    raise SystemExit("stopped by an error after the fit")
"""


@case("fit_bayes: a fit's numba source files are gone when the process ends",
      "fit_bayes", expect="correct_result", needs=("pymc",), slow=True)
def _(ws):
    # each Bayesian fit left about 11 numba source files in TMPDIR before
    import subprocess
    import sys

    from hostile_cases import _env

    left = {}
    for how in ("end",):  # an error or Ctrl-C ends through the same atexit
        tmp = ws.fresh(f"bayes_tmp_{how}")
        env = dict(_env(), TMPDIR=str(tmp))
        done = subprocess.run([sys.executable, "-c", BAYES_CHILD, how], env=env,
                              capture_output=True, text=True, timeout=600)
        if how == "end" and done.returncode:
            raise RuntimeError(f"the fit failed: {done.stderr[-800:]}")
        left[how] = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))
    return left


def _check_no_sources(ws, left):
    if any(left.values()):
        raise Wrong(f"left in TMPDIR: {left}")


CASES[-1].check = _check_no_sources


# --- Unicode anywhere (issue 44): names in any script must not cost the appendix ------------

UNICODE_NAMES = {"Cyrillic": "Алексей Ёлкин", "Greek": "Ζωή Παππά", "CJK": "王小明",
                 "emoji": "Sam 😀", "Latin": "José Zoë", "Arabic": "مريم", "Hebrew": "נועה"}


@case("StudyReport: group names in Cyrillic, Greek, CJK, Arabic, Hebrew and emoji; the appendix "
      "still compiles", "StudyReport", "correct_result")
def _(ws):
    # pdflatex stopped on the first such character (\tracinglostchars=3): no tables.pdf
    from gbstats.report.provenance import provenance
    from gbstats.report.study_report import StudyReport

    out = ws.fresh("latex_unicode") / "report"
    report = StudyReport("hostile", out, "Names in every script")
    table = pd.DataFrame({"group": list(UNICODE_NAMES.values()),
                          "n": range(len(UNICODE_NAMES))})
    report.table("names", table, "Groups named in many scripts",
                 labels={"group": "Group", "n": "Participants"})
    paths = report.write(provenance("hostile", [], seed=None))
    return paths, out


def _check_unicode(ws, value):
    import shutil

    paths, out = value
    tex = (out / "tables" / "names.tex").read_text(encoding="utf-8")
    # Greek letters become math commands (escape_latex's LATEX_SYMBOLS): the first letter stays
    missing = [n for n in UNICODE_NAMES.values() if n.split()[0][:1] not in tex]
    if missing:
        raise Wrong(f"tables/names.tex lost {missing}")
    if not shutil.which("pdflatex"):
        return
    if "appendix_pdf" not in paths:
        log = out / "tables" / "tables.log"
        raise Wrong("tables/tables.tex did not compile: "
                    + (log.read_text(errors="replace")[-600:] if log.exists() else "no log"))
    md = (out / "report.md").read_text(encoding="utf-8")
    from gbstats.report.appendix import unicode_engine

    if unicode_engine() is None and "shown in the PDF in Latin letters or as code points" not in md:
        raise Wrong("report.md does not say that the PDF shows some names transliterated")


CASES[-1].check = _check_unicode


# --- more of the same classes, not listed in the issue ------------------------------------------

for _label, _value, _names in [
        ("names a folder", "FOLDER", ("--stimuli", "a folder, not a file")),
        ("- (standard input)", "-", ("--stimuli", "standard input")),
        ("/dev/null (a device)", "/dev/null", ("--stimuli", "not a regular file")),
]:
    @case(f"score CLI: --stimuli {_label}", "score CLI", names=_names)
    def _(ws, _value=_value):
        # each was "unknown stimulus file type" before
        from hostile_cases import score

        folder = ws.fresh("score_stimuli_not_a_file")
        value = str(folder) if _value == "FOLDER" else _value
        return score(ws, "--stimuli", value, "--model", ws.gpt2, "--out", folder / "o.csv")


@case("finish_comparisons: a negative equivalence bound", "group comparison",
      names=("equivalence_bound", "cannot be negative", "-0.1"))
def _(ws):
    # read as "no bound": the verdict said "no evidence of a difference" before
    from gbstats.alignment.group_comparison import finish_comparisons

    return finish_comparisons(_comparison_rows().assign(equivalence_bound=-0.1))


@case("verdict: alpha=5", "group comparison", names=("alpha must be a probability",))
def _(ws):
    # p = .3 gave "difference" at alpha 5 before
    from gbstats.alignment.group_comparison import verdict

    return verdict(0.3, 0.2, 0.1, alpha=5)


# --ruff-results given a folder said "no such file" (issue 44: "a folder passed as ... is
# 'not found'"); it names what the path is instead
case("pronoun_memory CLI: --ruff-results names a folder", "pronoun_memory CLI",
     names=("--ruff-results", "a folder, not a file"))(
    lambda ws: study("pronoun_memory", "--ruff-results", str(ws.fresh("ruff_results_folder")),
                     "--out", ws.fresh("ruff_results_folder_out") / "r"))
