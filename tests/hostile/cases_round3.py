"""Hostile cases of the third round (issues 42 and 44): the statistics API's inputs,
`--human` and input paths, and the many-models CLI.

Each case is one a hostile user tried on main: what it did then is in its comment.
"""
from __future__ import annotations

import pandas as pd

from hostile_cases import Wrong, case, study


# Issue 42: a second --model used to replace the first silently (only B was scored).
# These three studies now rank every model given, and one that cannot be loaded (gpt2: no
# network here) is refused before the study starts, not after minutes of fitting.
for _study in ("singular_they", "name_gender", "role_nouns"):
    @case(f"{_study} CLI: --model given twice", f"{_study} CLI",
          names=("gpt2", "not available here"))
    def _(ws, _study=_study):
        return study(_study, "--model", "smollm2-135m", "--model", "gpt2", "--out",
                     ws.fresh(f"study_{_study}_two_models") / "r")


# Issue 44, case 10: these raised FileNotFoundError / IsADirectoryError tracebacks.
for _label, _flag, _value, _names in [
        ("--human names a missing file", "--human", "missing.csv", ("missing.csv", "file not found")),
        ("--human - (standard input)", "--human", "-", ("standard input",)),
        ("--human names a folder", "--human", "FOLDER", ("a folder, not a file",)),
        ("--stimuli names a folder", "--stimuli", "FOLDER", ("--stimuli", "a folder, not a file")),
]:
    @case(f"singular_they CLI: {_label}", "singular_they CLI", names=_names)
    def _(ws, _flag=_flag, _value=_value, _label=_label):
        folder = ws.fresh("study_they_input_paths")
        value = str(folder) if _value == "FOLDER" else _value
        return study("singular_they", _flag, value, "--no-bayes", "--out", folder / "r")


# --- like-for-like shares (issue 44, cases 7 and 12, and "a missing 0/1 indicator") ---------

@case("model_shares: log-probabilities instead of probabilities", "model_shares",
      names=("p_raw_she", "log-probabilities"))
def _(ws):
    # returned plausible shares (0.66 where the truth is 0.25) before
    from gbstats.alignment.like_for_like import model_shares

    scored = pd.DataFrame({"p_raw_he": [-0.29, -1.2], "p_raw_she": [-1.39, -0.4]})
    return model_shares(scored, {"binary": ["she", "he"]}, target="she")


@case("model_shares: option probabilities summing above 1", "model_shares",
      names=("p_raw_he", "sum to more than 1"))
def _(ws):
    from gbstats.alignment.like_for_like import model_shares

    scored = pd.DataFrame({"p_raw_he": [0.7], "p_raw_she": [0.6]})
    return model_shares(scored, {"binary": ["he", "she"]}, target="she")


@case("people_shares: TRUE/FALSE text indicators", "people_shares", expect="correct_result")
def _(ws):
    # raised a TypeError before
    from gbstats.alignment.like_for_like import people_shares

    trials = pd.DataFrame({"cond": ["a", "a", "a", "b"], "he": ["TRUE", "FALSE", "FALSE", "FALSE"],
                           "she": ["FALSE", "TRUE", "TRUE", "TRUE"]})
    return people_shares(trials, {"binary": ["he", "she"]}, target="she", by=["cond"])


def _check_text_indicators(ws, table):
    a = table.set_index("cond").loc["a"]
    if (a["n_in_set"], a["n_target"]) != (3, 2) or abs(a["share"] - 2 / 3) > 1e-12:
        raise Wrong(f"TRUE/FALSE counted wrong: {a.to_dict()}")


from hostile_cases import CASES  # noqa: E402

CASES[-1].check = _check_text_indicators


@case("people_shares: a missing 0/1 indicator", "people_shares",
      names=("'he'", "row 2", "empty cell"))
def _(ws):
    # was counted as "outside the set" before
    from gbstats.alignment.like_for_like import people_shares

    trials = pd.DataFrame({"cond": ["a", "a"], "he": [1, None], "she": [0, 1]})
    return people_shares(trials, {"binary": ["he", "she"]}, target="she", by=["cond"])


@case("people_shares: an indicator of 2", "people_shares", names=("'she'", "not 0/1", "2"))
def _(ws):
    from gbstats.alignment.like_for_like import people_shares

    trials = pd.DataFrame({"cond": ["a", "a"], "he": [1, 0], "she": [0, 2]})
    return people_shares(trials, {"binary": ["he", "she"]}, target="she", by=["cond"])


# --- population-averaged effects (issue 44, case 11) -------------------------------------

def _small_glmm():
    import numpy as np

    from gbstats.mixed.lmm import fit_glmm

    rng = np.random.default_rng(3)
    n = 400
    data = pd.DataFrame({"participant": rng.integers(0, 20, n), "x": rng.normal(size=n),
                         "freq": rng.choice(["high", "low"], n)})
    data["y"] = (rng.random(n) < 1 / (1 + np.exp(-(0.5 * data["x"])))).astype(int)
    return fit_glmm("y ~ x + freq + (1|participant)", data, backend="lme4")


@case("population_averaged_contrast: rows lacking one predictor", "population_averaged",
      names=("freq", "no column for predictor"), needs=("r",))
def _(ws):
    # raised KeyError: 'freq' before
    from gbstats.mixed.population import population_averaged_contrast, slope_rows

    return population_averaged_contrast(_small_glmm(), *slope_rows(pd.DataFrame({"x": [0.0]}), "x"))


# --- a tiny coefficient (issue 44, case 4) ------------------------------------------------

@case("model_table: a significant slope per raw count (1.8e-9)", "model_table",
      expect="correct_result")
def _(ws):
    # printed 0.000 (0.000) [0.000, 0.000] before
    import numpy as np

    from gbstats.mixed.lmm import fit_lmm
    from gbstats.report.model_table import model_table

    rng = np.random.default_rng(8)
    data = pd.DataFrame({"subject": np.repeat(np.arange(30), 10),
                         "count": rng.uniform(0, 2e9, 300)})
    data["y"] = 2.0 + 1.8e-9 * data["count"] + rng.normal(0, 0.3, 300)
    return model_table({"M": fit_lmm("y ~ count + (1 | subject)", data,
                                     backend="statsmodels")})


def _check_tiny(ws, table):
    row = next(i for i, r in enumerate(table.rows) if r.key == "coef:count" and r.role == "estimate")
    cell = table.cells["M"][row]
    if float(cell) == 0 or not any("scientific notation" in n for n in table.notes):
        raise Wrong(f"the slope shows as {cell!r}, notes {table.notes}")


CASES[-1].check = _check_tiny


# --- report folders (issue 44, cases 13, 16 and 17) -----------------------------------------

@case("role_nouns CLI: --out names singular_they's report folder", "role_nouns CLI",
      names=("report of study 'singular_they'", "role_nouns"))
def _(ws):
    # deleted singular_they's report without a word before: the marker named the study
    # but was not checked
    from hostile_cases_files import _marked_report, _untouched_study

    out = _marked_report(ws.fresh("files_other_study") / "they")
    return _untouched_study(out, "singular_they's report", "role_nouns", "--model", "none",
                            "--no-bayes", "--out", out)


@case("role_nouns CLI: --out . in an empty folder (the shell's own)", "role_nouns CLI",
      names=("--out", "current folder"))
def _(ws):
    # swapped the folder out from under the shell before; the same command again then
    # gave a FileNotFoundError traceback
    from hostile_cases_files import _cwd

    folder = ws.fresh("files_out_is_cwd")
    with _cwd(folder):
        return study("role_nouns", "--model", "none", "--no-bayes", "--out", ".")


@case("role_nouns CLI: run from a folder that was deleted", "role_nouns CLI",
      names=("current folder no longer exists",))
def _(ws):
    import os

    folder = ws.fresh("files_deleted_cwd")
    old = os.getcwd()
    os.chdir(folder)
    try:
        folder.rmdir()
        return study("role_nouns", "--model", "none", "--no-bayes", "--out", "r")
    finally:
        os.chdir(old)


@case("remove_stale_partials: an --out whose name holds [ ]", "report folders",
      expect="correct_result")
def _(ws):
    # the stale staging folder of such an --out was never removed: its name was read as a
    # glob pattern
    from gbstats.report.files import PARTIAL_TAG, remove_stale_partials

    folder = ws.fresh("files_brackets")
    out = folder / "report [v2]"
    stale = folder / f".{out.name}{PARTIAL_TAG}999999999-x"
    stale.mkdir()
    removed = remove_stale_partials(out)
    return stale, removed


def _check_brackets(ws, value):
    stale, removed = value
    if stale.exists() or removed != [stale]:
        raise Wrong(f"the stale staging folder {stale.name} was left (removed: {removed})")


CASES[-1].check = _check_brackets


# --- signals (issue 44, case 14) ------------------------------------------------------------

@case("score CLI: SIGTERM mid-scoring: one 'terminated' line, exit 143, a resume equals a "
      "clean run", "score CLI", "correct_result", slow=True)
def _(ws):
    # exited 143 with no message before
    import signal
    import subprocess
    import sys
    import time

    from hostile_cases import _env, score
    from killed_writer import committed_entries
    from hostile_cases_files import _score_args

    folder = ws.fresh("files_sigterm_score")
    stimuli, cache = ws.stimuli(folder, n=400), folder / "cache"
    child = subprocess.Popen([sys.executable, "-m", "models", "score", "--quiet", *_score_args(
        ws, stimuli, folder / "o.csv", cache, "--batch-size", 4)], env=_env(),
        stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while committed_entries(cache / "scores.sqlite") < 8 and child.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=300)
    lines = [line for line in err.splitlines() if line.startswith("terminated (SIGTERM):")]
    if child.returncode != 143 or len(lines) != 1 or "Traceback" in err:
        raise Wrong(f"expected exit 143 and one 'terminated (SIGTERM):' line, found exit "
                    f"{child.returncode}: {err[-800:]}")
    score(ws, *_score_args(ws, stimuli, folder / "o.csv", cache))
    return folder / "o.csv"


CASES[-1].check = lambda ws, out: ws.check_scores(out, n=400)


# --- the design check (issue 44: a false "add (1 | age)") -----------------------------------

@case("design check: an integer age column beside (1 | participant)", "design check",
      expect="correct_result")
def _(ws):
    import numpy as np

    from gbstats.mixed.design import between_factor_terms

    ages = np.r_[[18, 18, 19, 19, 20, 20], np.arange(24, 33), [21, 21, 22, 22, 23, 23],
                 np.arange(33, 42)]
    people = pd.DataFrame({"participant": [f"p{i}" for i in range(30)],
                           "group": np.repeat(["a", "b"], 15), "age": ages})
    trials = people.loc[people.index.repeat(10)].reset_index(drop=True)
    trials["y"] = np.random.default_rng(0).normal(size=len(trials))
    return between_factor_terms("y ~ group + (1 | participant)", trials)


def _check_no_age(ws, found):
    if not found.empty:
        raise Wrong(f"a false design warning: {found.to_dict(orient='records')}")


CASES[-1].check = _check_no_age


@case("score CLI: --model none", "score CLI", names=("--model", "'none' names no model"))
def _(ws):
    # was treated as a hub id before
    from hostile_cases import score

    folder = ws.fresh("score_model_none")
    return score(ws, "--stimuli", ws.stimuli(folder), "--model", "none", "--out",
                 folder / "o.csv")


@case("load_human: an unknown item id among hundreds of stimuli", "load_human",
      names=("'item'", "closest:", "values ("))
def _(ws):
    # printed all 335 ids before
    from hostile_cases import load_human_file

    rows = ws.human_rows()
    first = rows.loc[0, "item"]
    rows.loc[0, "item"] = first + "x"
    path = ws.fresh("human_unknown_item") / "human.csv"
    rows.to_csv(path, index=False)
    try:
        return load_human_file(ws, path)
    except Exception as exc:  # noqa: BLE001 - the message's length is part of the case
        if len(str(exc)) > 600:
            raise Wrong(f"the message is {len(str(exc))} characters long") from None
        raise


@case("score CLI: texts with stray, doubled and no-break spaces", "score CLI",
      expect="correct_result")
def _(ws):
    # changed scores by up to 12.5 nats without a word before
    from hostile_cases import score

    folder = ws.fresh("score_whitespace")
    path = folder / "s.csv"
    pd.DataFrame({"item": [1, 2, 3], "text": [" the cat sat", "the cat sat\u00a0down ",
                                              "the  dog ran"]}).to_csv(path, index=False)
    err = score(ws, "--stimuli", path, "--model", ws.gpt2, "--out", folder / "o.csv")
    return folder, err


def _check_whitespace(ws, value):
    from models.causal import score_sentences

    folder, err = value
    got = pd.read_csv(folder / "o.csv").sort_values("item")
    want = score_sentences(["the cat sat", "the cat sat down", "the dog ran"], lm=str(ws.gpt2),
                           use_cache=False, batch_size=1)
    if abs(got["logprob"].to_numpy() - want["logprob"].to_numpy()).max() > 1e-4:
        raise Wrong(f"scores differ from the plain texts': {got['logprob'].tolist()}")
    if "whitespace" not in err or "no-break" not in err:
        raise Wrong(f"the changes were not counted in a note: {err[-500:]}")


CASES[-1].check = _check_whitespace


@case("clean R server: Ctrl-C during a fit leaves no temporary folder", "clean R server",
      expect="correct_result", needs=("r",))
def _(ws):
    # each Ctrl-C left an empty RtmpXXXX folder behind before
    import os
    import signal
    import threading
    import time

    from gbstats.mixed import clean_process
    from gbstats.mixed.clean_process import clean_fits, in_clean_process

    with clean_fits():
        in_clean_process(time.sleep, 0)                  # the clean R server is up
        server_tmp = clean_process._SERVER.tmp
        r_session = [p for p in os.listdir(server_tmp) if p.startswith("Rtmp")]
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            in_clean_process(time.sleep, 20)             # a long fit, interrupted
        except KeyboardInterrupt:
            pass
    return server_tmp, r_session


def _check_no_tmp(ws, value):
    import os

    server_tmp, r_session = value
    if not r_session:
        raise Wrong(f"R's session folder was not in the server's own folder {server_tmp}")
    if os.path.exists(server_tmp):
        raise Wrong(f"{server_tmp} (R's {r_session}) was left behind after the Ctrl-C")


CASES[-1].check = _check_no_tmp


@case("model fingerprint: a retrained shard that the index names in a sub-folder",
      "score cache", expect="correct_result")
def _(ws):
    # the shard was loaded but never fingerprinted: retraining it served the old scores
    import json
    import shutil

    from models.fingerprint import fingerprint

    folder = ws.fresh("fingerprint_shard") / "model"
    shutil.copytree(ws.gpt2, folder)
    (folder / "shards").mkdir()
    (folder / "model.safetensors").rename(folder / "shards" / "part-1.safetensors")
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {"wte.weight": "shards/part-1.safetensors"}}))
    before = fingerprint(folder)
    shard = folder / "shards" / "part-1.safetensors"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    return before, fingerprint(folder)


def _check_shard(ws, value):
    if value[0] == value[1]:
        raise Wrong("the fingerprint did not change with the shard")


CASES[-1].check = _check_shard


@case("singular_they CLI: --human an Excel workbook", "singular_they CLI",
      names=("human.xlsx", "not a text table", "CSV"))
def _(ws):
    # was "not valid text" (or "a header but no rows") before
    import zipfile

    folder = ws.fresh("human_xlsx")
    path = folder / "human.xlsx"
    with zipfile.ZipFile(path, "w") as book:   # what a workbook is: a zip of XML parts
        book.writestr("[Content_Types].xml", "<Types/>")
        book.writestr("xl/workbook.xml", "<workbook/>")
    return study("singular_they", "--human", path, "--no-bayes", "--out", folder / "r")
