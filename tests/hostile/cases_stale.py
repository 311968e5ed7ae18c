"""Hostile cases of issue 33, "stale answers": caches keyed by what their answers depend on,
ambiguous text normalised or refused, non-finite scores refused.

The issue's silent-wrong cases 1-7 and 10 come first (their names start with "issue 33
case N"), then the cases this review added on the same surfaces (cache keys, the fit
cache, text joins, non-finite scores). Each is registered in the one CASES table of
tests/hostile/cases.py (loaded as `hostile_cases`).
"""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from hostile_cases import (CASES, REPO, SCORE_ATOL, CliFailure, Workspace, Wrong, _env,
                           as_a_new_process, case, cli, score, study)

TEXTS = ["My sister said they would come tomorrow.", "The dentists said they were busy.",
         "Our neighbour said she had seen the fox.", "Each student must hand in the essay."]


def _model(ws: Workspace, folder: Path, seed: int = 0) -> Path:
    from tiny_models import build_tiny_gpt2

    return build_tiny_gpt2(folder, ws.bert, seed=seed)


def _clean_scores(model: Path, texts=TEXTS) -> pd.DataFrame:
    """The reference: the library, no cache, a fresh handle."""
    from models.causal import score_sentences
    from models.loading import clear_loaded_models

    clear_loaded_models()
    return score_sentences(texts, lm=str(model), use_cache=False, progress=False)


def _stimuli(folder: Path, texts=TEXTS) -> Path:
    path = folder / "stimuli.csv"
    pd.DataFrame({"item": [f"s{i}" for i in range(len(texts))], "text": texts}).to_csv(
        path, index=False)
    return path


def _same_scores(got: pd.DataFrame, want: pd.DataFrame, what: str) -> None:
    diff = np.abs(got["logprob"].to_numpy(dtype=float) - want["logprob"].to_numpy(dtype=float))
    if not np.all(diff <= SCORE_ATOL):
        raise Wrong(f"{what}: logprob differs from a clean run by up to {np.nanmax(diff):.3g}")


def _counts(err: str) -> tuple[int, int]:
    """(from the cache, scored) of the score CLI's summary line."""
    line = next(ln for ln in err.splitlines() if "from the cache" in ln)
    hits = int(line.split(" from the cache")[0].split()[-1])
    scored = int(line.split(" scored")[0].split()[-1])
    return hits, scored


def _verbose_score(*args) -> str:
    from models.__main__ import main

    return cli(main, ["score", *args])


def _score_twice(ws, name: str, change) -> tuple[Path, Path, str]:
    """Score a fresh tiny model's stimuli into a cache (old.csv), apply `change(model folder)`
    (which returns the folder to score next), score again (new.csv) through the same cache.
    Returns (the folder scored second, the case folder, what the second run said)."""
    folder = ws.fresh(name)
    model = _model(ws, folder / "model", seed=0)
    stimuli, cache = _stimuli(folder), folder / "cache"
    _verbose_score("--stimuli", stimuli, "--model", model, "--out", folder / "old.csv",
                   "--cache-dir", cache)
    second = change(model)
    err = _verbose_score("--stimuli", stimuli, "--model", second, "--out", folder / "new.csv",
                         "--cache-dir", cache)
    return second, folder, err


def _check_rescored(ws, value):
    """The second run scored everything afresh, and its scores are the changed model's."""
    model, folder, err = value
    if _counts(err) != (0, len(TEXTS)):
        raise Wrong(f"after the change: {_counts(err)} (from the cache, scored); expected "
                    f"(0, {len(TEXTS)})")
    _same_scores(pd.read_csv(folder / "new.csv"), _clean_scores(model), "changed model")


# ===========================================================================================
# The cases
# ===========================================================================================

@case("issue 33 case 1: a local model retrained into the same folder is rescored",
      "score CLI", "correct_result")
def _(ws):
    # retrained: the same architecture, so the same file sizes and safetensors header
    return _score_twice(ws, "stale_local", lambda model: _model(ws, model, seed=1))


def _check_retrained(ws, value):
    _check_rescored(ws, value)
    _, folder, _ = value
    old, new = pd.read_csv(folder / "old.csv"), pd.read_csv(folder / "new.csv")
    if set(new["revision"]) == set(old["revision"]) or "local" == new["revision"].iloc[0]:
        raise Wrong(f"the output records the same revision for two different weights: "
                    f"{set(new['revision'])}")


CASES[-1].check = _check_retrained


HUB_CHILD = """
import sys
from models.__main__ import main
sys.exit(main(["score", *sys.argv[1:]]))
"""


def _hub_snapshot(hub: Path, repo: str, commit: str, model: Path) -> None:
    root = hub / f"models--{repo.replace('/', '--')}"
    shutil.copytree(model, root / "snapshots" / commit)
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(commit)


def _hub_score(folder: Path, hub: Path, *args) -> str:
    env = dict(_env(), HF_HUB_CACHE=str(hub), GBSTATS_MODEL_CACHE=str(folder / "models"))
    done = subprocess.run([sys.executable, "-c", HUB_CHILD, *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise CliFailure(done.returncode, done.stderr)
    return done.stderr


@case("issue 33 case 2: --revision main after the branch moved is rescored, the commit recorded",
      "score CLI", "correct_result", slow=True)
def _(ws):
    folder = ws.fresh("stale_branch")
    hub, repo, stimuli = folder / "hub", "someone/tiny-gpt2", _stimuli(folder)
    first = _model(ws, folder / "v1", seed=0)
    second = _model(ws, folder / "v2", seed=1)
    _hub_snapshot(hub, repo, "1" * 40, first)
    common = ["--stimuli", stimuli, "--model", repo, "--revision", "main",
              "--cache-dir", folder / "cache"]
    _hub_score(folder, hub, *common, "--out", folder / "old.csv")
    _hub_snapshot(hub, repo, "2" * 40, second)  # the branch moves to a new commit
    err = _hub_score(folder, hub, *common, "--out", folder / "new.csv")
    return folder, second, err


def _check_branch(ws, value):
    folder, second, err = value
    new = pd.read_csv(folder / "new.csv")
    if set(new["revision"]) != {"2" * 40}:
        raise Wrong(f"the output records {set(new['revision'])}, not the commit main points to")
    if _counts(err)[0]:
        raise Wrong(f"after the branch moved, {_counts(err)[0]} scores came from the cache")
    _same_scores(new, _clean_scores(second), "moved branch")


CASES[-1].check = _check_branch


def _fit_data() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    g = np.repeat(np.arange(12), 6)
    return pd.DataFrame({"g": [f"g{i:02d}" for i in g], "x": np.tile(["a", "b", "c"], 24),
                         "y": rng.normal(size=g.size) + rng.normal(size=12)[g]})


def _with_levels(levels) -> pd.DataFrame:
    data = _fit_data()
    return data.assign(x=pd.Categorical(data["x"], categories=levels))


@case("issue 33 case 3: fit_with_twin(use_cache=True) after the reference level changed",
      "fit cache", "correct_result")
def _(ws):
    from gbstats.mixed.fitting import fit_with_twin

    cache = ws.fresh("stale_levels")
    for levels in (["a", "b", "c"], ["c", "a", "b"]):
        fits = fit_with_twin("y ~ x + (1|g)", _with_levels(levels), backends=["statsmodels"],
                             bayes=False, use_cache=True, cache_dir=cache)
    return fits["statsmodels"]


def _check_levels(ws, fit):
    from gbstats.mixed.lmm import fit_lmm

    direct = fit_lmm("y ~ x + (1|g)", _with_levels(["c", "a", "b"]), backend="statsmodels")
    if fit.fit_stats.get("reused_from_cache"):
        raise Wrong("the fit with reference level 'c' was served from the cache")
    if list(fit.coefs["term"]) != list(direct.coefs["term"]) or not np.allclose(
            fit.coefs["estimate"], direct.coefs["estimate"], rtol=1e-9):
        raise Wrong(f"terms {list(fit.coefs['term'])}, expected {list(direct.coefs['term'])}")


CASES[-1].check = _check_levels


def _alignment_panel():
    data = pd.read_csv(REPO / "tests" / "reference" / "alignment_panel.csv")
    return (data[["item", "score"]].drop_duplicates().reset_index(drop=True),
            data[["participant", "group", "item", "rating"]])


@case("issue 33 case 3: fit_alignment_lmm(group_order=...) after the reference group changed",
      "fit cache", "correct_result", needs=("r",), slow=True)
def _(ws):
    from gbstats.alignment.mixed_model import fit_alignment_lmm

    cache, (scores, trials) = ws.fresh("stale_group_order"), _alignment_panel()
    tables = {}
    for order in (["alpha", "beta", "gamma"], ["gamma", "alpha", "beta"]):
        tables[order[0]], fits = fit_alignment_lmm(scores, trials, group="group", score="score",
                                                   group_order=order, use_cache=True,
                                                   cache_dir=cache)
    return tables, fits["lme4"]


def _check_group_order(ws, value):
    tables, fit = value
    alpha, gamma = (tables[k].set_index("term")["estimate"] for k in ("alpha", "gamma"))
    if fit.fit_stats.get("reused_from_cache") or "score_z:group[alpha]" not in gamma:
        raise Wrong(f"the gamma-reference fit has the terms {list(gamma.index)} "
                    f"(reused: {fit.fit_stats.get('reused_from_cache')})")
    # one model, two parametrisations (hand-derived): gamma - alpha = -(alpha's gamma term)
    if not np.isclose(gamma["score_z:group[alpha]"], -alpha["score_z:group[gamma]"],
                      rtol=1e-3, atol=1e-6):
        raise Wrong(f"{gamma['score_z:group[alpha]']} is not -{alpha['score_z:group[gamma]']}")


CASES[-1].check = _check_group_order


def _damaged_fit(ws, name: str, damage) -> tuple:
    from gbstats.mixed import fit_cache
    from gbstats.mixed.fit_cache import cached_fit
    from gbstats.mixed.lmm import fit_lmm

    cache = ws.fresh(name)
    data = _fit_data()
    first = cached_fit(fit_lmm, "y ~ x + (1|g)", data, backend="statsmodels", cache_dir=cache)
    (entry,) = (cache / "fits").glob("*.pickle")
    damage(entry, cache)
    since = len(fit_cache.rejected)
    again = cached_fit(fit_lmm, "y ~ x + (1|g)", data, backend="statsmodels", cache_dir=cache)
    return first, again, fit_cache.rejected_note(since=since)


def _check_refitted(ws, value):
    first, again, note = value
    if again.fit_stats.get("reused_from_cache"):
        raise Wrong("the damaged entry was loaded")
    if not np.allclose(again.coefs["estimate"], first.coefs["estimate"], rtol=1e-9):
        raise Wrong("the refit differs from the first fit")
    if not note or "recomputed" not in note:
        raise Wrong(f"no note says that a stored fit was damaged: {note!r}")


def _flip_bit(entry: Path, cache: Path) -> None:
    data = bytearray(entry.read_bytes())
    data[-40] ^= 0x01
    entry.write_bytes(bytes(data))


@case("issue 33 case 4: a flipped bit in a cached fit is detected and refitted, with a note",
      "fit cache", "correct_result", check=_check_refitted)
def _(ws):
    return _damaged_fit(ws, "stale_fit_bit", _flip_bit)


def _camilliere_like(folder: Path, edit) -> Path:
    """data/singular_they/stimuli.tsv (gbstats' own 335 sentences) with `edit` applied."""
    table = pd.read_csv(REPO / "data" / "singular_they" / "stimuli.tsv", sep="\t", dtype=str,
                        keep_default_na=False)
    path = folder / "stimuli.tsv"
    edit(table).to_csv(path, sep="\t", index=False)
    return path


def _they_run(ws, folder: Path, stimuli: Path, reuse_fits_of: Path | None = None) -> Path:
    if reuse_fits_of is not None:
        # The stored fits, resampling results and compiled appendix of another run (never its
        # scores.sqlite: this run's texts are scored afresh). Both are content-keyed, so they
        # serve this run only where its scored table is the other run's to the bit; anything
        # else is refitted.
        for part in ("fits", "latex"):
            shutil.copytree(reuse_fits_of / "cache" / part, folder / "cache" / part)
    study("singular_they", "--stimuli", stimuli, "--model", ws.gpt2, "--no-bayes",
          "--backend", "statsmodels", "--n-boot", "20", "--cache-dir", folder / "cache",
          "--out", folder / "r")
    return folder / "r"


def _they_reference(ws) -> tuple[pd.DataFrame, Path]:
    """(item scores of the run with clean prefixes, its folder)."""
    def make():
        folder = ws.fresh("stale_they_clean")
        out = _they_run(ws, folder, _camilliere_like(folder, lambda t: t))
        return pd.read_csv(out / "item_scores.csv"), folder
    return ws.memo("they_clean_item_scores", make)


@case("issue 33 case 5: singular_they --stimuli whose prefixes end in a space",
      "singular_they CLI", "correct_result", needs=("r",), slow=True)
def _(ws):
    # The clean run first, and its fits reused: the case is about the texts scored, and the
    # fits on the same scores (the whole second half of a run, about 15 s) would be refitted
    # to the same answer, which no check here reads. The score cache is this run's own.
    _, clean = _they_reference(ws)
    folder = ws.fresh("stale_they_space")
    stimuli = _camilliere_like(folder, lambda t: t.assign(prefix=t["prefix"] + " "))
    return _they_run(ws, folder, stimuli, reuse_fits_of=clean)


def _check_they_space(ws, out):
    got, want = pd.read_csv(out / "item_scores.csv"), _they_reference(ws)[0]
    if list(got["item"]) != list(want["item"]):
        raise Wrong("the items differ from the clean run's")
    diff = np.abs(got["surprisal"] - want["surprisal"]).max()
    if not diff <= SCORE_ATOL:
        raise Wrong(f"surprisal differs from the run with clean prefixes by up to {diff:.3g} bits")
    if "ended in whitespace" not in (out / "report.md").read_text():
        raise Wrong("the report does not say that 335 prefixes were normalised")


CASES[-1].check = _check_they_space


def _pairs(folder: Path, continuations, prefixes=None) -> Path:
    path = folder / "pairs.csv"
    prefixes = prefixes or ["My sister said that", "The dentists said that",
                            "Our neighbour said that", "Each student said that"]
    pd.DataFrame({"item": [f"p{i}" for i in range(len(prefixes))], "prefix": prefixes,
                  "continuation": continuations}).to_csv(path, index=False)
    return path


def _clean_pairs(ws) -> pd.DataFrame:
    def make():
        from models.causal import score_continuations

        return score_continuations(["My sister said that", "The dentists said that",
                                    "Our neighbour said that", "Each student said that"],
                                   [" they would come."] * 4, lm=str(ws.gpt2), use_cache=False)
    return ws.memo("clean_pairs", make)


def _check_pairs(ws, value):
    out, err, note = value
    _same_scores(pd.read_csv(out), _clean_pairs(ws), "continuations")
    if note not in err:
        raise Wrong(f"the normalisation is not counted: {err!r}")


@case("issue 33 case 6: continuations without their leading space (a spreadsheet stripped it)",
      "score CLI", "correct_result", check=_check_pairs)
def _(ws):
    folder = ws.fresh("stale_no_space")
    out = folder / "o.csv"
    err = _verbose_score("--stimuli", _pairs(folder, ["they would come."] * 4), "--measure",
                         "continuation", "--model", ws.gpt2, "--out", out, "--no-cache")
    return out, err, "4 continuation(s)"


@case("issue 33 case 5 (score CLI): prefixes ending in a space before ' they'", "score CLI",
      "correct_result", check=_check_pairs)
def _(ws):
    folder = ws.fresh("stale_double_space")
    prefixes = ["My sister said that ", "The dentists said that ", "Our neighbour said that ",
                "Each student said that "]
    out = folder / "o.csv"
    err = _verbose_score("--stimuli", _pairs(folder, [" they would come."] * 4, prefixes),
                         "--measure", "continuation", "--model", ws.gpt2, "--out", out,
                         "--no-cache")
    return out, err, "4 prefix(es)"


def _nan_model(ws, folder: Path, value: float = float("nan"), bert: bool = False) -> Path:
    """A tiny model with a non-finite weight in its last layer norm, as a diverged or damaged
    checkpoint has: every log-probability is NaN."""
    import torch
    from tiny_models import build_tiny_bert
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

    if bert:
        build_tiny_bert(folder)
        model = AutoModelForMaskedLM.from_pretrained(folder)
        norm = model.bert.encoder.layer[-1].output.LayerNorm
    else:
        _model(ws, folder)
        model = AutoModelForCausalLM.from_pretrained(folder)
        norm = model.transformer.ln_f
    with torch.no_grad():
        norm.weight[3] = value
    model.save_pretrained(folder)
    return folder


def _no_rows(cache: Path) -> None:
    db = cache / "scores.sqlite"
    if db.exists():
        with sqlite3.connect(db) as conn:
            n = conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
        if n:
            raise Wrong(f"{n} score(s) were cached although the model gave NaN")


@case("issue 33 case 7: a model that emits NaN", "score CLI",
      names=("nan_model", "non-finite", "the text", "nothing was cached"))
def _(ws):
    folder = ws.fresh("stale_nan")
    model = _nan_model(ws, folder / "nan_model")
    try:
        return score(ws, "--stimuli", _stimuli(folder), "--model", model, "--out",
                     folder / "o.csv", "--cache-dir", folder / "cache")
    finally:
        _no_rows(folder / "cache")


def _poison(cache: Path, value: float) -> None:
    with sqlite3.connect(cache / "scores.sqlite") as conn:
        key, stored = conn.execute("SELECT key, value FROM scores LIMIT 1").fetchone()
    from models.cache import ScoreCache

    entry = json.loads(stored)
    entry["logprobs"][-1] = value
    ScoreCache(cache).put_many({key: entry})  # a valid checksum: written as an old gbstats did


def _poisoned_cache_case(label: str, value: float):
    def run(ws):
        folder = ws.fresh(f"stale_cached_{label}")
        stimuli, cache = _stimuli(folder), folder / "cache"
        score(ws, "--stimuli", stimuli, "--model", ws.gpt2, "--out", folder / "a.csv",
              "--cache-dir", cache)
        _poison(cache, value)
        as_a_new_process()
        err = _verbose_score("--stimuli", stimuli, "--model", ws.gpt2, "--out",
                             folder / "o.csv", "--cache-dir", cache)
        return folder / "o.csv", err

    def check(ws, value_):
        out, err = value_
        _same_scores(pd.read_csv(out), _clean_scores(ws.gpt2), f"cached {label}")
        if "1 cached score(s) held NaN or inf" not in err:
            raise Wrong(f"the rejected cached {label} was not reported: {err!r}")
    return run, check


_run, _check = _poisoned_cache_case("NaN", float("nan"))
case("issue 33 case 7: a cache already holding NaN is a miss, recomputed and counted",
     "score cache", "correct_result", check=_check)(_run)


@case("issue 33 case 10: a singular_they --stimuli sentence without its target form",
      "singular_they CLI", names=("stimuli.tsv", "row 4", "'sentence'", "'they'"))
def _(ws):
    folder = ws.fresh("stale_no_target")

    def edit(table):
        table.loc[2, "sentence"] = table.loc[2, "sentence"].replace(" they ", " we ")
        return table
    return study("singular_they", "--stimuli", _camilliere_like(folder, edit), "--no-bayes",
                 "--model", ws.gpt2, "--out", folder / "r")


# ===========================================================================================
# More cases on the same surfaces (this review's own)
# ===========================================================================================

@case("stale: a model retrained while a process holds it is reloaded, not reused",
      "score cache", "correct_result")
def _(ws):
    from models.causal import score_sentences
    from models.loading import load_scorer

    folder = ws.fresh("stale_held")
    model = _model(ws, folder / "model", seed=0)
    score_sentences(TEXTS, lm=load_scorer(str(model)), cache_dir=folder / "cache")
    _model(ws, model, seed=3)
    return model, score_sentences(TEXTS, lm=load_scorer(str(model)), cache_dir=folder / "cache")


def _check_held(ws, value):
    model, scores = value
    if scores.attrs["run"]["computed"] != len(TEXTS):
        raise Wrong(f"after retraining, {scores.attrs['run']['cache_hits']} came from the cache")
    _same_scores(scores, _clean_scores(model), "held model")


CASES[-1].check = _check_held


@case("stale: a lazily loaded handle whose folder is retrained before its weights load",
      "score cache", names=("model", "changed after it was fingerprinted"))
def _(ws):
    from models.causal import score_sentences
    from models.loading import load_scorer

    folder = ws.fresh("stale_lazy")
    model = _model(ws, folder / "model", seed=0)
    handle = load_scorer(str(model))  # fingerprinted now; weights load on the first miss
    _model(ws, model, seed=4)
    try:
        return score_sentences(TEXTS, lm=handle, cache_dir=folder / "cache")
    finally:
        _no_rows(folder / "cache")


def _edit_config(model: Path) -> Path:
    config = json.loads((model / "config.json").read_text())
    config["layer_norm_epsilon"] = 0.5
    (model / "config.json").write_text(json.dumps(config))
    return model


@case("stale: config.json edited in place (layer_norm_epsilon) is rescored", "score CLI",
      "correct_result", check=_check_rescored)
def _(ws):
    return _score_twice(ws, "stale_config", _edit_config)


@case("stale: a model folder copied elsewhere shares its cached scores (content, not path)",
      "score CLI", "correct_result")
def _(ws):
    return _score_twice(ws, "stale_copy",
                        lambda model: Path(shutil.copytree(model, model.parent / "copy")))


def _check_copy(ws, value):
    model, folder, err = value
    first, copied = pd.read_csv(folder / "old.csv"), pd.read_csv(folder / "new.csv")
    if _counts(err) != (len(TEXTS), 0):
        raise Wrong(f"the copy: {_counts(err)} (from the cache, scored); expected "
                    f"({len(TEXTS)}, 0)")
    _same_scores(copied, _clean_scores(model), "copied folder")
    if set(copied["revision"]) != set(first["revision"]):
        raise Wrong("a byte-identical copy records another revision")


CASES[-1].check = _check_copy


@case("stale: --revision naming a commit the local hub cache does not hold", "score CLI",
      names=("someone/tiny-gpt2",), slow=True)
def _(ws):
    folder = ws.fresh("stale_commit")
    hub = folder / "hub"
    _hub_snapshot(hub, "someone/tiny-gpt2", "1" * 40, ws.gpt2)
    return _hub_score(folder, hub, "--stimuli", _stimuli(folder), "--model",
                      "someone/tiny-gpt2", "--revision", "3" * 40, "--out", folder / "o.csv",
                      "--cache-dir", folder / "cache")


def _truncate_entry(entry: Path, cache: Path) -> None:
    data = entry.read_bytes()
    entry.write_bytes(data[:len(data) // 2])


@case("stale: a fit-cache entry truncated by a full disk is refitted, with a note",
      "fit cache", "correct_result", check=_check_refitted)
def _(ws):
    return _damaged_fit(ws, "stale_fit_truncated", _truncate_entry)


def _pickle_without_checksum(entry: Path, cache: Path) -> None:
    """A plain pickle in the entry's place (what gbstats wrote before checksums, or a file
    put there by hand): never unpickled."""
    import pickle

    from gbstats.mixed.lmm import fit_lmm

    entry.write_bytes(pickle.dumps(fit_lmm("y ~ 1 + (1|g)", _fit_data(),
                                           backend="statsmodels")))


@case("stale: a fit-cache entry replaced by a plain pickle of another fit is not loaded",
      "fit cache", "correct_result", check=_check_refitted)
def _(ws):
    return _damaged_fit(ws, "stale_fit_plain", _pickle_without_checksum)


def _column_sums(data: pd.DataFrame, *, weights) -> pd.DataFrame:
    return pd.DataFrame({"total": [float(data["y"].to_numpy() @ weights[:len(data)])]})


@case("stale: cached_call with a large option array that differs only where repr elides it",
      "fit cache", "correct_result")
def _(ws):
    from gbstats.mixed.fit_cache import cached_call

    cache, data = ws.fresh("stale_call_array"), _fit_data()
    weights = np.zeros(2000)
    cached_call(_column_sums, data, weights=weights, cache_dir=cache)
    changed = weights.copy()
    changed[30] = 1.0  # inside numpy's "..." of the repr
    value, reused = cached_call(_column_sums, data, weights=changed, cache_dir=cache)
    return data, changed, value, reused


def _check_call_array(ws, value):
    data, changed, result, reused = value
    want = _column_sums(data, weights=changed)
    if reused or not np.isclose(result["total"].iloc[0], want["total"].iloc[0]):
        raise Wrong(f"served {result['total'].iloc[0]} for weights whose answer is "
                    f"{want['total'].iloc[0]} (reused: {reused})")


CASES[-1].check = _check_call_array


@case("stale: score CLI prefixes ending in a tab before ' they'", "score CLI", "correct_result",
      check=_check_pairs)
def _(ws):
    folder = ws.fresh("stale_tab")
    prefixes = ["My sister said that\t", "The dentists said that\t",
                "Our neighbour said that\t", "Each student said that\t"]
    out = folder / "o.csv"
    err = _verbose_score("--stimuli", _pairs(folder, [" they would come."] * 4, prefixes),
                         "--measure", "continuation", "--model", ws.gpt2, "--out", out,
                         "--no-cache")
    return out, err, "4 prefix(es)"


@case("stale: score CLI choice variants with a spreadsheet's leading space (' they')",
      "score CLI", "correct_result")
def _(ws):
    folder = ws.fresh("stale_variants")
    frame = "My sister said [BLANK] would come."
    path = folder / "choice.csv"
    pd.DataFrame({"item": ["f1", "f1", "f1"], "frame": [frame] * 3,
                  "variant": [" he", "she ", " they"]}).to_csv(path, index=False)
    out = folder / "o.csv"
    err = _verbose_score("--stimuli", path, "--measure", "choice", "--model", ws.gpt2, "--out",
                         out, "--no-cache")
    return out, err


def _check_variants(ws, value):
    from models.forced_choice import forced_choice

    out, err = value
    want = forced_choice(["My sister said [BLANK] would come."], ["he", "she", "they"],
                         items=["f1"], lm=str(ws.gpt2), use_cache=False)
    got = pd.read_csv(out)
    if list(got["variant"]) != ["he", "she", "they"]:
        raise Wrong(f"variants {list(got['variant'])}")
    _same_scores(got, want, "stripped variants")
    if "3 variant(s)" not in err:
        raise Wrong(f"the stripped variants are not counted: {err!r}")


CASES[-1].check = _check_variants


@case("stale: score_continuations with a prefix ending in a space and ' they'",
      "score_continuations", names=("'b'", "doubled space", "row 2"))
def _(ws):
    from models.causal import score_continuations

    return score_continuations(["My sister said", "My sister said "], [" they", " they"],
                               items=["a", "b"], lm=str(ws.gpt2), use_cache=False)


@case("stale: slot_logprobs with a word that carries its own space", "slot_logprobs",
      names=("' they'", "whitespace around it"))
def _(ws):
    from models.logprob import slot_logprobs

    return slot_logprobs(["My sister said [BLANK] would come."], [" they"], lm=str(ws.gpt2),
                         use_cache=False)


@case("stale: singular_they --stimuli sentence with a doubled space before the target",
      "singular_they CLI", names=("stimuli.tsv", "row 5", "'prefix'", "does not follow"))
def _(ws):
    folder = ws.fresh("stale_they_double")

    def edit(table):
        table.loc[3, "sentence"] = table.loc[3, "sentence"].replace(" they ", "  they ", 1)
        return table
    return study("singular_they", "--stimuli", _camilliere_like(folder, edit), "--no-bayes",
                 "--model", ws.gpt2, "--out", folder / "r")


@case("stale: singular_they --stimuli prefix cut one word short of the target",
      "singular_they CLI", names=("stimuli.tsv", "row 2", "'prefix'", "does not follow"))
def _(ws):
    folder = ws.fresh("stale_they_short")

    def edit(table):
        table.loc[0, "prefix"] = table.loc[0, "prefix"].rsplit(" ", 1)[0]
        return table
    return study("singular_they", "--stimuli", _camilliere_like(folder, edit), "--no-bayes",
                 "--model", ws.gpt2, "--out", folder / "r")


@case("stale: a masked model that emits NaN (pll_word_l2r)", "score CLI",
      names=("nan_bert", "non-finite", "nothing was cached"))
def _(ws):
    folder = ws.fresh("stale_nan_bert")
    model = _nan_model(ws, folder / "nan_bert", bert=True)
    try:
        return score(ws, "--stimuli", _stimuli(folder), "--measure", "pll_word_l2r", "--model",
                     model, "--out", folder / "o.csv", "--cache-dir", folder / "cache")
    finally:
        _no_rows(folder / "cache")


@case("stale: a model whose weights overflow to inf", "score CLI",
      names=("inf_model", "non-finite", "nothing was cached"))
def _(ws):
    folder = ws.fresh("stale_inf")
    model = _nan_model(ws, folder / "inf_model", value=float("inf"))
    try:
        return score(ws, "--stimuli", _stimuli(folder), "--model", model, "--out",
                     folder / "o.csv", "--cache-dir", folder / "cache")
    finally:
        _no_rows(folder / "cache")


_run, _check = _poisoned_cache_case("inf", float("-inf"))
case("stale: a cache already holding -inf is a miss, recomputed and counted", "score cache",
     "correct_result", check=_check)(_run)


def _repoint_weights(ws, model: Path) -> Path:
    """A folder of links, as a hub snapshot is (snapshots/<commit>/ -> blobs/): the weights
    link is pointed at another blob, retrained; the folder's own files are not written."""
    links = model.parent / "linked"
    blobs = model.parent / "blobs"
    blobs.mkdir()
    for path in model.iterdir():
        shutil.copy(path, blobs / path.name)
    links.mkdir()
    for path in blobs.iterdir():
        (links / path.name).symlink_to(path)
    return links


@case("stale: a folder of links (a hub snapshot given as a path) whose weights link is "
      "repointed to retrained weights is rescored", "score CLI", "correct_result",
      check=_check_rescored)
def _(ws):
    folder = ws.fresh("stale_links")
    model = _model(ws, folder / "model", seed=0)
    links = _repoint_weights(ws, model)
    stimuli, cache = _stimuli(folder), folder / "cache"
    _verbose_score("--stimuli", stimuli, "--model", links, "--out", folder / "old.csv",
                   "--cache-dir", cache)
    retrained = _model(ws, folder / "retrained", seed=5)
    weights = links / "model.safetensors"
    weights.unlink()
    weights.symlink_to(retrained / "model.safetensors")
    err = _verbose_score("--stimuli", stimuli, "--model", links, "--out", folder / "new.csv",
                         "--cache-dir", cache)
    return links, folder, err


@case("stale: a clean-process fit cut short by Ctrl-C; the next fit gets its own answer",
      "fit_lmm", "correct_result", needs=("r",), slow=True)
def _(ws):
    import os
    import signal
    import threading
    import time

    from gbstats.mixed.clean_process import clean_fits, in_clean_process
    from gbstats.mixed.lmm import fit_lmm

    data = _fit_data()
    with clean_fits():
        fit_lmm("y ~ x + (1|g)", data, backend="lme4")  # the clean R server is up
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            in_clean_process(time.sleep, 20)  # a long fit, interrupted by a real SIGINT
        except KeyboardInterrupt:
            pass
        else:
            raise Wrong("the SIGINT did not stop the call")
        return fit_lmm("y ~ 1 + (1|g)", data, backend="lme4")


def _check_own_answer(ws, fit):
    from gbstats.mixed.lmm import fit_lmm

    here = fit_lmm("y ~ 1 + (1|g)", _fit_data(), backend="lme4")
    if fit is None or list(fit.coefs["term"]) != list(here.coefs["term"]) or not np.allclose(
            fit.coefs["estimate"], here.coefs["estimate"], rtol=1e-6):
        raise Wrong(f"the fit after the interrupt answered with something else: {fit!r:.200}")


CASES[-1].check = _check_own_answer
