"""Hostile cases of issue 44 that were still open after the first fixes: ratios out of their
range (cases 5 and 6), artefacts used unverified (case 8), Unicode in LaTeX, temporary files
(case 15), unclear errors, and new cases of the same classes that the issue does not list.

Each case is one a hostile user tried on main: what it did then is in its comment.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from hostile_cases import CASES, Wrong, case


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
        odd = (not np.isfinite(row.max_alignment_difference)
               or row.max_alignment_difference == 0 or abs(row.ci_low) > 1
               or abs(row.ci_high) > 1)
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
