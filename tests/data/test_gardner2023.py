"""gardner2023 loader: counts against the authors' codebooks and knitted output, the
prompts against the files people saw, and broken copies of the files.

Where each expected count comes from:
- trial rows and participants: the codebooks' str() lines (exp1a_data_readme.txt:
  5202 obs., 102 SubjID levels; exp1b: 5151 obs., 101; exp2: 11520 obs., 320);
- the one-row-per-character tables: str(exp1a_d) 1224 obs., str(exp1b_d) 1212 obs. and
  exp2_d 3840 obs. in analysis/exp{1,1b,2}_stats.md (tests/reference/gardner2023_published.json
  holds the tables quoted below, as printed);
- the produced pronoun per character pronoun (Exp 1A: they/them characters got he 139,
  she 140, they 120, none 9) and the both-right / memory-only tables: the same files.
"""
from __future__ import annotations

import html
import json
import re
import shutil
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from gbstats.data import gardner2023 as g
from gbstats.data.registry import get_dataset, load_dataset
from gbstats.errors import DataValidationError

PUBLISHED = json.loads((Path(__file__).resolve().parents[1] / "reference"
                        / "gardner2023_published.json").read_text())


@pytest.fixture(scope="module")
def loaded(data_dir):
    return load_dataset("gardner2023", data_dir)


def test_registry_records_source_commit_and_the_missing_license():
    entry = get_dataset("gardner2023")
    assert entry.repo == "bethanygardner/Singular-They-Public"
    assert entry.commit == "20f628f289f8bc2f3561352acbef51379f0d157a"
    assert "no LICENSE file" in entry.license
    assert {f.local for f in entry.files} >= {"exp1a_data.csv", "exp1b_data.csv", "exp2_data.csv",
                                              "materials/exp1_qualtrics.docx",
                                              "materials/exp2/main.js"}


@pytest.mark.parametrize("exp, trials, participants, characters", [
    ("1a", 5202, 102, 1224), ("1b", 5151, 101, 1212), ("2", 11520, 320, 3840)])
def test_counts_and_the_join(loaded, exp, trials, participants, characters):
    assert len(loaded.tables[f"exp{exp}_trials"]) == trials
    t = loaded.tables[f"exp{exp}"]
    assert len(t) == characters
    assert t["participant"].nunique() == participants
    assert (t.groupby("participant").size() == 12).all()
    assert t["Pronoun"].value_counts().to_dict() == {p: characters // 3 for p in g.PRONOUNS}


@pytest.mark.parametrize("exp", ["1a", "1b"])
def test_produced_pronouns_match_the_authors_table(loaded, exp):
    t = loaded.tables[f"exp{exp}"]
    found = pd.crosstab(t["Pronoun"], t["P_Pronoun"])
    for pronoun, produced in PUBLISHED["counts"][f"exp{exp}_production_by_pronoun"]["rows"].items():
        for what, n in produced.items():
            assert found.loc[pronoun, what] == n, (pronoun, what)
    if exp == "1a":  # the numbers: they/them characters, 408 completions
        they = t[t["Pronoun"] == "they/them"]["P_Pronoun"].value_counts()
        assert (they["they/them"], they["he/him"], they["she/her"], len(t) // 3) == (120, 139, 140, 408)


@pytest.mark.parametrize("exp", ["1a", "1b"])
def test_memory_and_production_combine_as_the_authors_table(loaded, exp):
    t = loaded.tables[f"exp{exp}"]
    label = {(1, 1): "Both right", (0, 0): "Both wrong", (1, 0): "Memory only",
             (0, 1): "Production only"}
    combined = [label[(m, p)] for m, p in zip(t["M_Acc"], t["P_Acc"])]
    found = pd.crosstab(t["Pronoun"], pd.Series(combined, index=t.index))
    for pronoun, cells in PUBLISHED["counts"][f"exp{exp}_combined_accuracy"]["rows"].items():
        for what, n in cells.items():
            assert found.loc[pronoun, what] == n


def test_exp2_participants_choosing_or_producing_they(loaded):
    t = loaded.tables["exp2"]
    chose = t[t["M_Response"] == "they/them"].groupby("Condition")["participant"].nunique()
    made = t[t["P_Pronoun"] == "they/them"].groupby("Condition")["participant"].nunique()
    assert chose.to_dict() == PUBLISHED["counts"]["exp2_participants_selecting_they_by_condition"]["rows"]
    assert made.to_dict() == PUBLISHED["counts"]["exp2_participants_producing_they_by_condition"]["rows"]
    # Condition is the PSA x Biographies cell, 80 participants each
    cells = t.drop_duplicates("participant").groupby(["PSA", "Biographies"]).size()
    assert cells.to_dict() == {(0, 0): 80, (0, 1): 80, (1, 0): 80, (1, 1): 80}


def test_every_exclusion_is_counted(loaded):
    reasons = {(e.stage, e.reason): (e.n, e.kind) for e in loaded.exclusions.entries}
    assert reasons[("gardner2023 exp1a", "job and pet memory questions (not analysed with the "
                    "pronoun)")] == (2448, "selected by design")
    assert reasons[("gardner2023 exp1a", "introduction-pilot rows (free text, not coded)")] == \
        (306, "selected by design")
    assert reasons[("gardner2023 exp2", "job and pet memory questions (not analysed with the "
                    "pronoun)")] == (7680, "selected by design")
    dropped = [e for e in loaded.exclusions.entries if e.kind == "excluded"]
    assert dropped and all(e.n == 0 for e in dropped)   # the published data are the analysed data


# --------------------------------------------------------------------------
# prompts read from the files people saw

def _raw_docx_runs(path: Path) -> str:
    """document.xml's text runs, found with a regex (not the loader's XML parse)."""
    xml = zipfile.ZipFile(path).read("word/document.xml").decode()
    return "".join(html.unescape(t) for t in re.findall(r"<w:t(?: [^>]*)?>([^<]*)</w:t>", xml))


@pytest.mark.parametrize("exp, docx", [("1a", "exp1_qualtrics.docx"), ("1b", "exp1b_qualtrics.docx")])
def test_introductions_and_prompts_are_the_documents_text(loaded, data_dir, exp, docx):
    runs = _raw_docx_runs(data_dir / "gardner2023" / "materials" / docx)
    lists = loaded.tables["lists"]
    s = loaded.tables[f"exp{exp}_stimuli"]
    assert len(s) == 36 and sorted(s["List"].unique()) == ["1", "2", "3"]
    for r in s.itertuples():
        assert r.introduction_shown in runs
        if r.introduction_source == "docx":
            assert r.introduction == r.introduction_shown
        else:  # read from the workbook, word for word
            row = lists[(lists["List"] == r.List) & (lists["position"] == r.position)].iloc[0]
            assert r.introduction == row["Text"]
        assert r.sentence_beginning in runs and r.memory_question in runs
    # the two introductions the workbook replaces (Exp 1A list 3 shows Daniel and James
    # again where the list and the data have Andrew and Brian), and nothing else
    replaced = s[s["introduction_source"] != "docx"]
    expected = {("3", "Andrew"), ("3", "Brian")} if exp == "1a" else set()
    assert set(zip(replaced["List"], replaced["Name"])) == expected


def test_the_data_side_with_the_workbook_on_exp1a_list_3(loaded):
    # list-3 participants were asked about Andrew (food service) and never answered
    # "retail" (the export's Daniel) for Daniel: they read the workbook's introductions
    t = loaded.tables["exp1a_trials"]
    jobs = t[(t["List"] == "3") & (t["M_Type"] == "job")]
    assert (jobs[jobs["Name"] == "Andrew"]["M_Response"] == "food service").sum() >= 9
    assert (jobs[jobs["Name"] == "Daniel"]["M_Response"] == "retail").sum() == 0


def test_exp2_texts_and_order(loaded, data_dir):
    folder = data_dir / "gardner2023" / "materials" / "exp2"
    texts = loaded.tables["exp2_texts"]
    assert set(texts["file"]) == {"psa_neutral.html", "psa_pronoun.html", "story1_she.html",
                                  "story1_they_fem.html", "story2_he.html", "story2_they_masc.html"}
    pronoun = texts[texts["file"] == "psa_pronoun.html"]["text"].tolist()
    assert pronoun[0] == "Pronoun Guide"
    # the file's text with its tags removed (a regex, not the loader's parser), compared
    # without whitespace (the HTML breaks lines and puts &nbsp; where it likes)
    raw = "".join(html.unescape(re.sub(r"<[^>]+>", "", (folder / "psa_pronoun.html").read_text()))
                  .split())
    for block in pronoun:
        assert "".join(block.split()) in raw
    sequence = loaded.tables["exp2_sequence"]["label"].tolist()
    assert sequence.index("PSA") < sequence.index("Story1") < sequence.index("Story2") \
        < sequence.index("character") < sequence.index("math") < sequence.index("memory") \
        < sequence.index("production")
    instructions = dict(zip(loaded.tables["exp2_instructions"]["part"],
                            loaded.tables["exp2_instructions"]["text"]))
    # main.js has "<br><brFirst, you'll see ..." with the tag never closed: a browser
    # shows nothing of it, and neither does the loader
    assert instructions["instructions_psa"] == ("In this study, you will read three different "
                                                "kinds of texts. Please read each one carefully.")
    stimuli = loaded.tables["exp2_stimuli"]
    assert stimuli.groupby("group").size().tolist() == [12] * 12


def test_html_blocks_drops_an_unterminated_tag():
    assert g.html_blocks("One.<br><brTwo") == ["One."]
    assert g.html_blocks("<p>A &amp; B</p><p>C<br>D</p>") == ["A & B", "C\nD"]


# --------------------------------------------------------------------------
# broken copies

def _copy(data_dir, tmp_path) -> Path:
    target = tmp_path / "gardner2023"
    shutil.copytree(data_dir / "gardner2023", target)
    for p in target.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    return target


def test_a_wrong_accuracy_code_names_file_row_and_column(data_dir, tmp_path):
    folder = _copy(data_dir, tmp_path)
    path = folder / "exp1a_data.csv"
    t = pd.read_csv(path, dtype=str, keep_default_na=False)
    row = t.index[t["M_Type"] == "pronoun"][0]
    t.loc[row, "M_Acc"] = "1" if t.loc[row, "M_Acc"] == "0" else "0"
    t.to_csv(path, index=False)
    with pytest.raises(DataValidationError, match=r"exp1a_data.csv.*row.*'M_Acc'.*disagrees"):
        g.read_exp1_trials(folder, "1a")


def test_a_missing_production_trial_is_counted_not_silent(data_dir, tmp_path):
    from gbstats.exclusions import ExclusionLog

    folder = _copy(data_dir, tmp_path)
    trials = g.read_exp1_trials(folder, "1a")
    first = trials[trials["Task"] == "production"].index[0]
    log = ExclusionLog()
    table = g.exp1_characters(trials.drop(index=first), log)
    assert len(table) == 1223
    lost = [e for e in log.entries if e.reason.startswith("pronoun memory question without")]
    assert lost[0].n == 1


def test_a_doubled_production_trial_is_a_join_error(data_dir, tmp_path):
    from gbstats.errors import JoinError
    from gbstats.exclusions import ExclusionLog

    trials = g.read_exp1_trials(_copy(data_dir, tmp_path), "1a")
    doubled = pd.concat([trials, trials[trials["Task"] == "production"].head(1)])
    with pytest.raises(JoinError, match="two production trials"):
        g.exp1_characters(doubled, ExclusionLog())


def test_a_docx_without_its_memory_block(data_dir, tmp_path):
    folder = _copy(data_dir, tmp_path)
    path = folder / "materials" / "exp1b_qualtrics.docx"
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    parts["word/document.xml"] = parts["word/document.xml"].replace(b"Start of Block: Memory",
                                                                    b"Start of Block: Other")
    with zipfile.ZipFile(path, "w") as z:
        for n, data in parts.items():
            z.writestr(n, data)
    with pytest.raises(DataValidationError, match="survey block missing.*'Memory'"):
        g.exp1_survey(folder, "1b")


def test_a_character_that_differs_from_the_stimuli(loaded):
    table = loaded.tables["exp2"].copy()
    table.loc[0, "Pet"] = "fish" if table.loc[0, "Pet"] != "fish" else "cat"
    table = table[table["Name"] == table.loc[0, "Name"]]
    bad = table[table["List"] == table.loc[0, "List"]]
    with pytest.raises(DataValidationError, match="differs from the stimuli"):
        g.check_characters_match_stimuli(bad.head(1), loaded.tables["exp2_stimuli"], "2")
