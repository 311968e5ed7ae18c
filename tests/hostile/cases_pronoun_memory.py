"""Hostile cases for studies.pronoun_memory and its dataset loader (gardner2023): every one
must end in one gbstats error that names the flag, or the file, row and column."""
from __future__ import annotations

import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from hostile_cases import case, study


def _gardner_copy(ws, name: str) -> Path:
    from gbstats.data.registry import get_dataset

    data = ws.fresh(name) / "data"
    shutil.copytree(get_dataset("gardner2023").folder(), data / "gardner2023")
    for p in (data / "gardner2023").rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    return data


def _gardner_case(label: str, edit: Callable[[Path], None], names):
    def run(ws):
        from gbstats.data.registry import load_dataset

        data = _gardner_copy(ws, "gardner2023")
        edit(data / "gardner2023")
        return load_dataset("gardner2023", data_dir=data, verify=False)
    case(f"dataset loader: gardner2023 {label}", "data loaders", names=names)(run)


def _edit_csv(relative: str, edit: Callable[[pd.DataFrame], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / relative
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
        edit(table)
        table.to_csv(path, index=False)
    return apply


def _set_cell(column: str, value: str, where: Callable[[pd.DataFrame], pd.Series]):
    def edit(table: pd.DataFrame) -> None:
        row = table.index[where(table)][0]
        table.loc[row, column] = value
    return edit


_gardner_case("unknown produced pronoun (hee/him)",
              _edit_csv("exp1a_data.csv", _set_cell("P_Pronoun", "hee/him",
                                                    lambda t: t["Task"] == "production")),
              ("exp1a_data.csv", "'P_Pronoun'", "hee/him"))
_gardner_case("memory accuracy that disagrees with the response",
              _edit_csv("exp1b_data.csv", _set_cell("M_Acc", "2",
                                                    lambda t: t["M_Type"] == "pronoun")),
              ("exp1b_data.csv", "'M_Acc'"))
_gardner_case("Exp 2 condition that contradicts PSA / Story",
              _edit_csv("exp2_data.csv", _set_cell("Condition", "neither",
                                                   lambda t: t["Condition"] == "both")),
              ("exp2_data.csv", "'Condition'"))
_gardner_case("a list with an unknown pronoun",
              _edit_csv("exp2_data.csv", _set_cell("Pronoun", "xe/xem", lambda t: t.index == 3)),
              ("exp2_data.csv", "'Pronoun'", "xe/xem"))
_gardner_case("a Word file that is not a zip",
              lambda f: (f / "materials" / "exp1_qualtrics.docx").write_bytes(b"not a docx"),
              ("exp1_qualtrics.docx", "Word document"))


def _drop_block(folder: Path) -> None:
    path = folder / "materials" / "exp1b_qualtrics.docx"
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    parts["word/document.xml"] = parts["word/document.xml"].replace(b"Start of Block: List 2",
                                                                    b"Start of Block: Lst 2")
    with zipfile.ZipFile(path, "w") as z:
        for n, data in parts.items():
            z.writestr(n, data)


_gardner_case("a survey export without list 2", _drop_block,
              ("exp1b_qualtrics.docx", "'List 2'"))
_gardner_case("main.js without its Sequence(...)",
              lambda f: (f / "materials" / "exp2" / "main.js").write_text("DebugOff()\n"),
              ("main.js", "Sequence"))


# --- the study's CLI: flags checked before any work ------------------------------------------
@case("pronoun_memory CLI: --ruff-per-seed 35 (not a multiple of 36)", "pronoun_memory CLI",
      names=("--ruff-per-seed", "36"))
def _(ws):
    return study("pronoun_memory", "--ruff-per-seed", "35", "--out", ws.fresh("pm") / "r")


@case("pronoun_memory CLI: --ruff-results that does not exist", "pronoun_memory CLI",
      names=("--ruff-results", "no-such.json"))
def _(ws):
    return study("pronoun_memory", "--ruff-results", "no-such.json", "--out", ws.fresh("pm") / "r")


@case("pronoun_memory CLI: --ruff-results that is not a pronoun_fidelity report",
      "pronoun_memory CLI", names=("stimuli.json", "accuracy"))
def _(ws):
    folder = ws.fresh("pm_ruff")
    bogus = folder / "stimuli.json"
    bogus.write_text('{"tables": {}}')
    return study("pronoun_memory", "--ruff-results", bogus, "--out", folder / "r")


@case("pronoun_memory CLI: --experiments 3", "pronoun_memory CLI", names=("--experiments", "3"))
def _(ws):
    return study("pronoun_memory", "--experiments", "3", "--out", ws.fresh("pm") / "r")


@case("pronoun_memory CLI: --n-boot 0", "pronoun_memory CLI", names=("--n-boot",))
def _(ws):
    return study("pronoun_memory", "--model", "none", "--n-boot", "0",
                 "--out", ws.fresh("pm") / "r")


@case("pronoun_memory CLI: --out under an existing file", "pronoun_memory CLI",
      names=("--out", "is a file"))
def _(ws):
    folder = ws.fresh("pm_out")
    blocker = folder / "a-file"
    blocker.write_text("not a folder")
    return study("pronoun_memory", "--out", blocker / "report", "--model", "none")


@case("pronoun_memory CLI: --seed -1", "pronoun_memory CLI", names=("--seed",))
def _(ws):
    return study("pronoun_memory", "--seed", "-1", "--out", ws.fresh("pm") / "r")


@case("pronoun_memory CLI: --human-twins with --no-bayes", "pronoun_memory CLI",
      names=("--human-twins", "--no-bayes"))
def _(ws):
    return study("pronoun_memory", "--model", "none", "--no-bayes", "--human-twins",
                 "--out", ws.fresh("pm") / "r")
