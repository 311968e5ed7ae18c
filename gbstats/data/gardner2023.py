"""Loader for gardner2023: memory for and production of singular *they* (Gardner's Exp 1A, 1B, 2).

Participants met 12 characters ("This is Melissa, who uses they/them
pronouns. Melissa works in IT and has a fish."), did a math distractor,
answered memory questions (job, pet, "What pronouns does Melissa use?") and
completed sentences ("After Melissa got home from working in IT..."), coded
for the pronoun used. Exp 1A and 1B ran in Qualtrics (1B asks for the
sentences before the memory questions); Exp 2 (PCIbex) crossed a PSA about
gendered language (vs an unrelated PSA) with biographies that use singular
*they* (vs he/she) before the characters.

Trial tables keep the authors' columns (`SubjID`, or `Participant` in Exp 2,
`Name`, `Pronoun`, `M_Acc`, `P_Acc`, ...) and gain `participant` (a string id
in every experiment). The `exp1a` / `exp1b` / `exp2` tables hold one row per
participant x character, the pronoun memory question joined with that
character's production trial on (participant, name, pronoun), as the
authors' analysis scripts build them (1,224 / 1,212 / 3,840 rows; in Exp 2
the production is recorded on the pronoun question's row). Their columns are
uniform: `P_Pronoun` is the coded pronoun of the completion (Exp 1's
`P_Pronoun`, Exp 2's `P_Response`) and `P_Text` the completion itself.

The published files are the analysed data: the authors exclude nothing from
them, and neither does this loader (the log says so with zero counts). The
job and pet questions and Exp 1's introduction-pilot rows are left out of the
character tables by design (`select`), not as lost data.

The prompts are read from the files participants saw, never retyped:

* Exp 1A / 1B: the Qualtrics exports `exp1_qualtrics.docx` /
  `exp1b_qualtrics.docx` (a .docx is a zip holding `word/document.xml`):
  instructions, the 12 introductions per list, the math distractor, the
  memory questions with their answer options, the sentence beginnings.
  Each introduction is checked against `characters.xlsx` (the lists). Exp
  1A's export shows, in list 3, the list-2 introductions of Daniel and James
  (they/them, retail / janitor) where the list has Andrew and Brian
  (they/them, food service / mechanic). The data side with the workbook:
  list-3 participants answered "food service" for Andrew and never "retail"
  for Daniel. So those two introductions come from `characters.xlsx` (same
  wording as the export's), and the table says so (`introduction_source`).
* Exp 2: `stimuli_characters.csv` (introductions, questions, sentence
  beginnings per list), `stimuli_training.csv` (which PSA and biographies
  each list read), the PSA and biography `.html` files, and `main.js` (the
  order of the parts and every instruction text).
"""
from __future__ import annotations

import re
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pandas as pd

from gbstats.data.registry import LoadedDataset
from gbstats.data.validate import check_output_schema, read_table, validate_frame
from gbstats.errors import DataValidationError, JoinError
from gbstats.exclusions import ExclusionLog

EXPERIMENTS = ("1a", "1b", "2")
PRONOUNS = ("he/him", "she/her", "they/them")
PRODUCED = PRONOUNS + ("none",)
PETS = ("cat", "dog", "fish")
EXP2_CONDITIONS = {"both": (1, 1), "psa": (1, 0), "story": (0, 1), "neither": (0, 0)}
EXP1_FILES = {"1a": "exp1_qualtrics.docx", "1b": "exp1b_qualtrics.docx"}
EXP2_FOLDER = Path("materials") / "exp2"
# The expected size of each character table (the authors' str() output in
# analysis/exp{1,1b,2}_stats.md: 1224, 1212 and 3840 obs.).
N_CHARACTER_ROWS = {"1a": 1224, "1b": 1212, "2": 3840}


# --------------------------------------------------------------------------
# trial tables

def character_schema(experiment: str):
    import pandera.pandas as pa

    binary = pa.Check.isin([0, 1])
    cols = {
        "experiment": pa.Column(str, pa.Check.eq(experiment)),
        "participant": pa.Column(str, nullable=False),
        "List": pa.Column(str, nullable=False),
        "Name": pa.Column(str, nullable=False),
        "Pronoun": pa.Column(str, pa.Check.isin(PRONOUNS)),
        "Pet": pa.Column(str, pa.Check.isin(PETS)),
        "Job": pa.Column(str, nullable=False),
        "M_Response": pa.Column(str, pa.Check.isin(PRONOUNS)),
        "M_Acc": pa.Column(int, binary),
        "P_Pronoun": pa.Column(str, pa.Check.isin(PRODUCED)),
        "P_Acc": pa.Column(int, binary),
    }
    if experiment == "2":
        cols.update({"PSA": pa.Column(int, binary), "Biographies": pa.Column(int, binary),
                     "Condition": pa.Column(str, pa.Check.isin(list(EXP2_CONDITIONS)))})
    return pa.DataFrameSchema(cols, name=f"gardner2023.exp{experiment}", strict=False)


def _first_row(mask) -> int:
    return int(np.flatnonzero(np.asarray(mask))[0]) + 2


def _check_codes(df: pd.DataFrame, rows, outcome: str, response: str, source: str) -> None:
    """`outcome` must be 1 exactly where `response` equals the character's pronoun (the
    authors' coding), on `rows`."""
    sub = df[rows]
    wrong = (sub[outcome] == 1) != (sub[response] == sub["Pronoun"])
    if wrong.any():
        pos = sub.index[np.flatnonzero(wrong.to_numpy())[0]]
        raise DataValidationError(
            f"{outcome} disagrees with {response}", source=source, row=int(pos) + 2,
            column=outcome, expected=f"1 exactly when {response} equals Pronoun",
            found=f"{outcome}={sub.loc[pos, outcome]!r}, {response}={sub.loc[pos, response]!r}, "
                  f"Pronoun={sub.loc[pos, 'Pronoun']!r}")


def read_exp1_trials(folder: Path, experiment: str) -> pd.DataFrame:
    """Exp 1A or 1B, every row of `exp1{a,b}_data.csv`, validated (one row per question)."""
    path = Path(folder) / f"exp{experiment}_data.csv"
    source = str(path)
    # blank cells are the other tasks' columns (the codebook: "columns belonging to
    # different tasks left blank")
    raw = read_table(path, source=source, dtype=str, keep_default_na=False, na_values=["NA", ""])
    df = validate_frame(raw, source=source,
                        required=["SubjGender", "Task", "Job", "M_Type", "M_Response",
                                  "P_Response", "P_Pronoun"],
                        ids=["SubjID", "Name", "List"],
                        numeric_optional=["M_Acc", "P_Acc"],
                        allowed={"Task": ["memory", "production", "introduction"],
                                 "Pronoun": list(PRONOUNS), "Pet": list(PETS),
                                 "List": ["1", "2", "3"]})
    df = df.fillna({"M_Type": "", "M_Response": "", "P_Pronoun": "", "P_Response": ""})
    memory = df["Task"] == "memory"
    if not df.loc[memory, "M_Type"].isin(["job", "pet", "pronoun"]).all() \
            or (df.loc[~memory, "M_Type"] != "").any():
        bad = memory & ~df["M_Type"].isin(["job", "pet", "pronoun"]) | ~memory & (df["M_Type"] != "")
        raise DataValidationError("question type does not fit the task", source=source,
                                  row=_first_row(bad), column="M_Type",
                                  expected="job, pet or pronoun on memory rows, blank elsewhere",
                                  found=repr(df.loc[bad, "M_Type"].iloc[0]))
    for rows, column in ((memory, "M_Acc"), (df["Task"] == "production", "P_Acc")):
        values = df.loc[rows, column]
        if not values.isin([0, 1]).all():
            bad = rows & ~df[column].isin([0, 1])
            raise DataValidationError("accuracy code", source=source, row=_first_row(bad),
                                      column=column, expected="0 or 1 on every "
                                      f"{'memory' if column == 'M_Acc' else 'production'} row",
                                      found=repr(raw.loc[bad, column].iloc[0]))
    production = df["Task"] == "production"
    if not df.loc[production, "P_Pronoun"].isin(PRODUCED).all():
        bad = production & ~df["P_Pronoun"].isin(PRODUCED)
        raise DataValidationError("unknown produced pronoun", source=source, row=_first_row(bad),
                                  column="P_Pronoun", expected=str(list(PRODUCED)),
                                  found=repr(df.loc[bad, "P_Pronoun"].iloc[0]))
    _check_codes(df, df["M_Type"] == "pronoun", "M_Acc", "M_Response", source)
    _check_codes(df, production, "P_Acc", "P_Pronoun", source)
    df.insert(0, "experiment", experiment)
    df["participant"] = df["SubjID"]
    return df


def read_exp2_trials(folder: Path) -> pd.DataFrame:
    """Exp 2, every row of `exp2_data.csv` (job, pet and pronoun question per character;
    the production is on the pronoun question's row), validated."""
    path = Path(folder) / "exp2_data.csv"
    source = str(path)
    raw = read_table(path, source=source, index_col=0, dtype=str, keep_default_na=False,
                     na_values=["NA"])
    df = validate_frame(raw, source=source,
                        required=["SubjGender", "Job", "M_Response", "P_Text", "P_Response"],
                        ids=["Participant", "Name", "List"],
                        numeric=["M_Acc", "PSA", "Story"], numeric_optional=["P_Acc"],
                        allowed={"M_Type": ["job", "pet", "pronoun"],
                                 "Pronoun": list(PRONOUNS), "Pet": list(PETS),
                                 "Condition": list(EXP2_CONDITIONS)})
    df = df.reset_index(drop=True)
    for column in ("M_Acc", "PSA", "Story"):
        if not df[column].isin([0, 1]).all():
            bad = ~df[column].isin([0, 1])
            raise DataValidationError("code is not 0/1", source=source, row=_first_row(bad),
                                      column=column, expected="0 or 1",
                                      found=repr(raw[column].iloc[int(np.flatnonzero(bad)[0])]))
    # Condition names the PSA x Biographies cell; the two must agree on every row
    expected = df["Condition"].map(EXP2_CONDITIONS)
    found = list(zip(df["PSA"].astype(int), df["Story"].astype(int)))
    wrong = pd.Series([e != f for e, f in zip(expected, found)])
    if wrong.any():
        pos = int(np.flatnonzero(wrong)[0])
        raise DataValidationError("Condition disagrees with PSA / Story", source=source,
                                  row=pos + 2, column="Condition",
                                  expected=f"{df['Condition'][pos]!r} = (PSA, Story) "
                                           f"{expected[pos]}", found=str(found[pos]))
    pronoun = df["M_Type"] == "pronoun"
    if df.loc[pronoun, "P_Acc"].isna().any() or df.loc[~pronoun, "P_Acc"].notna().any():
        bad = pronoun & df["P_Acc"].isna() | ~pronoun & df["P_Acc"].notna()
        raise DataValidationError("production recorded on the wrong row", source=source,
                                  row=_first_row(bad), column="P_Acc",
                                  expected="a production code on each pronoun question's row "
                                           "and on no other", found=repr(df.loc[bad, "P_Acc"].iloc[0]))
    if not df.loc[pronoun, "P_Response"].isin(PRODUCED).all():
        bad = pronoun & ~df["P_Response"].isin(PRODUCED)
        raise DataValidationError("unknown produced pronoun", source=source, row=_first_row(bad),
                                  column="P_Response", expected=str(list(PRODUCED)),
                                  found=repr(df.loc[bad, "P_Response"].iloc[0]))
    _check_codes(df, pronoun, "M_Acc", "M_Response", source)
    _check_codes(df, pronoun, "P_Acc", "P_Response", source)
    df.insert(0, "experiment", "2")
    df["participant"] = df["Participant"]
    return df


CHARACTER_COLUMNS = ["experiment", "participant", "List", "Name", "Pronoun", "Job", "Pet",
                     "M_Response", "M_Acc", "P_Pronoun", "P_Text", "P_Acc", "SubjGender"]


def _as_int(df: pd.DataFrame, columns) -> pd.DataFrame:
    out = df.copy()
    for c in columns:
        out[c] = out[c].astype(int)
    return out


def exp1_characters(trials: pd.DataFrame, log: ExclusionLog) -> pd.DataFrame:
    """One row per participant x character: the pronoun memory question left-joined with
    the production trial on (SubjID, Name, Pronoun), in the memory rows' order (the
    authors' `left_join(m_temp, p_temp, by = c("SubjID", "Name", "Pronoun"))`)."""
    experiment = trials["experiment"].iloc[0]
    stage = f"gardner2023 exp{experiment}"
    log.select(trials, trials["M_Type"].isin(["job", "pet"]),
               "job and pet memory questions (not analysed with the pronoun)", "rows", stage)
    log.select(trials, trials["Task"] == "introduction",
               "introduction-pilot rows (free text, not coded)", "rows", stage)
    keys = ["SubjID", "Name", "Pronoun"]
    memory = trials[trials["M_Type"] == "pronoun"]
    production = trials[trials["Task"] == "production"][keys + ["P_Pronoun", "P_Response",
                                                                "P_Acc"]]
    doubled = production.duplicated(keys, keep=False)
    if doubled.any():
        first = production[doubled].iloc[0]
        raise JoinError(f"gardner2023 exp{experiment}: two production trials for one "
                        f"participant x character ({', '.join(f'{k}={first[k]!r}' for k in keys)});"
                        " the join on (SubjID, Name, Pronoun) would duplicate memory rows")
    joined = memory.merge(production, on=keys, how="left", validate="one_to_one",
                          suffixes=("", "_production"))
    joined = log.drop(joined, joined["P_Acc_production"].isna(),
                      "pronoun memory question without its production trial", "characters", stage)
    out = joined.drop(columns=["P_Pronoun", "P_Response", "P_Acc"]).rename(columns={
        "P_Pronoun_production": "P_Pronoun", "P_Response_production": "P_Text",
        "P_Acc_production": "P_Acc"})
    out = _as_int(out.reset_index(drop=True), ["M_Acc", "P_Acc"])
    return out[CHARACTER_COLUMNS + ["SubjID"]]


def exp2_characters(trials: pd.DataFrame, log: ExclusionLog) -> pd.DataFrame:
    """One row per participant x character: the pronoun question's rows (they carry the
    production, as in the authors' `filter(M_Type == "pronoun")`); `Story` is the
    paper's Biographies."""
    stage = "gardner2023 exp2"
    log.select(trials, trials["M_Type"] != "pronoun",
               "job and pet memory questions (not analysed with the pronoun)", "rows", stage)
    rows = trials[trials["M_Type"] == "pronoun"]
    out = rows.rename(columns={"P_Response": "P_Pronoun", "Story": "Biographies"})
    out = _as_int(out.reset_index(drop=True), ["M_Acc", "P_Acc", "PSA", "Biographies"])
    return out[CHARACTER_COLUMNS + ["Participant", "Condition", "PSA", "Biographies"]]


def check_one_row_per_character(table: pd.DataFrame, experiment: str) -> None:
    """Each participant answered about each of their list's 12 characters exactly once."""
    source = f"gardner2023 table 'exp{experiment}'"
    dup = table.duplicated(["participant", "Name"])
    if dup.any():
        first = table[dup].iloc[0]
        raise DataValidationError("a character twice for one participant", source=source,
                                  expected="one row per participant x character",
                                  found=f"participant {first['participant']!r}, {first['Name']!r}")
    per = table.groupby("participant").agg(n=("Name", "size"), lists=("List", "nunique"))
    bad = per[(per["n"] != 12) | (per["lists"] != 1)]
    if len(bad):
        raise DataValidationError("a participant without exactly 12 characters from one list",
                                  source=source, expected="12 characters, one list",
                                  found=f"participant {bad.index[0]!r}: {int(bad['n'].iloc[0])} "
                                        f"characters from {int(bad['lists'].iloc[0])} list(s)")


# --------------------------------------------------------------------------
# Qualtrics exports (.docx)

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def docx_paragraphs(path: Path) -> list[str]:
    """The paragraphs of a .docx in document order: each paragraph's text runs joined,
    a line break (w:br) as "\\n", a tab as "\\t"."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as z:
            xml = z.read("word/document.xml")
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise DataValidationError("cannot read the Word document", source=str(path),
                                  expected="a .docx (a zip holding word/document.xml)",
                                  found=str(exc)) from None
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError as exc:
        raise DataValidationError("word/document.xml is not valid XML", source=str(path),
                                  found=str(exc)) from None
    paragraphs = []
    for p in root.iter(f"{W}p"):
        pieces = []
        for node in p.iter():
            if node.tag == f"{W}t":
                pieces.append(node.text or "")
            elif node.tag in (f"{W}br", f"{W}cr"):
                pieces.append("\n")
            elif node.tag == f"{W}tab":
                pieces.append("\t")
        paragraphs.append("".join(pieces))
    return paragraphs


def qualtrics_blocks(path: Path) -> dict[str, list[str]]:
    """{block name: its non-empty paragraphs} between "Start of Block: X" and
    "End of Block: X"; a block that appears twice (the export repeats none) is an error."""
    blocks: dict[str, list[str]] = {}
    current = None
    for text in docx_paragraphs(path):
        start = re.fullmatch(r"Start of Block: (.+)", text.strip())
        end = re.fullmatch(r"End of Block: (.+)", text.strip())
        if start:
            current = start.group(1)
            if current in blocks:
                raise DataValidationError("a survey block appears twice", source=str(path),
                                          expected="each block once", found=repr(current))
            blocks[current] = []
        elif end:
            current = None
        elif current is not None and text.strip() and text.strip() != "Page Break" \
                and not set(text.strip()) <= {"_"}:          # "____" is a text-entry box
            blocks[current].append(text)
    return blocks


def _block(blocks: dict, name: str, path: Path) -> list[str]:
    if name not in blocks:
        raise DataValidationError("survey block missing", source=str(path),
                                  expected=f"a block {name!r}", found=f"blocks {list(blocks)}")
    return blocks[name]


QID = re.compile(r"^(\S*) (.*)$", re.DOTALL)
CHOICE = re.compile(r"^(.*?)\s+\((\d+)\)\s*$", re.DOTALL)
INTRO = re.compile(r"^(?:This is )?(?P<name>[A-Z][a-z]+)(?:, who)? uses (?P<pronoun>he/him|she/her|"
                   r"they/them) pronouns\. (?P<name2>[A-Z][a-z]+) works (?P<job>(?:as an? |in ).+?)"
                   r" and has a (?P<pet>cat|dog|fish)\.$")


def question_text(paragraph: str) -> tuple[str, str]:
    """(QID, text) of a question paragraph: the export starts each with its id ("s1",
    "Q90", "brian_pronouns"); the first production question of Exp 1A has none."""
    m = QID.match(paragraph)
    if paragraph.startswith(" ") or m is None:
        return "", paragraph.strip()
    return m.group(1), m.group(2).strip()


def parse_introduction(text: str, where: str) -> dict:
    m = INTRO.match(text)
    if m is None:
        raise DataValidationError("introduction not in the expected form", source=where,
                                  expected="'[This is ]NAME[, who] uses PRONOUN pronouns. NAME "
                                           "works as a JOB / in JOB and has a PET.'",
                                  found=repr(text))
    return m.groupdict()


def exp1_survey(folder: Path, experiment: str) -> tuple[pd.DataFrame, pd.DataFrame,
                                                        pd.DataFrame]:
    """(introductions, sentence beginnings, texts) read from the Qualtrics export.

    introductions: one row per list x position (1-12, the export's order): qid, Name,
    Pronoun, job phrase, Pet, the introduction as shown, the memory question and its
    answer options. sentence beginnings: one row per list x character, the production
    question as shown and its "After NAME got home ..." line. texts: the instruction
    texts and the math distractor (part, text).
    """
    path = Path(folder) / "materials" / EXP1_FILES[experiment]
    blocks = qualtrics_blocks(path)
    memory = _block(blocks, "Memory", path)
    questions, options, current = {}, {}, None
    for paragraph in memory[1:]:
        choice = CHOICE.match(paragraph)
        if choice:
            if current is not None:
                options.setdefault(current, []).append(choice.group(1).strip())
            continue
        qid, text = question_text(paragraph)
        current = None
        if re.fullmatch(r"[a-z]+_pronouns?", qid):
            current = qid.split("_")[0].capitalize()
            questions[current] = text
    intro_rows, prompt_rows = [], []
    for k in (1, 2, 3):
        intro = _block(blocks, f"List {k}", path)
        if len(intro) != 12:
            raise DataValidationError("a list without 12 introductions", source=str(path),
                                      column=f"List {k}", expected="12", found=str(len(intro)))
        for position, paragraph in enumerate(intro, start=1):
            qid, text = question_text(paragraph)
            parts = parse_introduction(text, f"{path} [List {k}]")
            intro_rows.append({"experiment": experiment, "List": str(k), "position": position,
                               "qid": qid, "Name": parts["name"], "Pronoun": parts["pronoun"],
                               "job_phrase": parts["job"], "Pet": parts["pet"],
                               "name_in_second_sentence": parts["name2"],
                               "introduction_shown": text})
        for paragraph in _block(blocks, f"Production (List {k})", path):
            _, text = question_text(paragraph)
            beginning = [ln.strip() for ln in text.split("\n") if ln.strip().startswith("After ")]
            if len(beginning) != 1:
                raise DataValidationError("sentence beginning not found", source=str(path),
                                          column=f"Production (List {k})",
                                          expected="one line 'After NAME got home ...'",
                                          found=repr(text))
            prompt_rows.append({"List": str(k), "Name": beginning[0].split()[1],
                                "production_shown": text, "sentence_beginning": beginning[0]})
    texts = {"instructions_characters": question_text(
                 _block(blocks, "Instructions - Stimuli", path)[0])[1],
             "instructions_memory": question_text(memory[0])[1],
             "instructions_production": question_text(
                 _block(blocks, "Instructions - Production", path)[0])[1],
             "math": math_text(_block(blocks, "Math Distractor", path))}
    for part, text in texts.items():
        if not text:
            raise DataValidationError("instruction text missing", source=str(path), column=part,
                                      expected="a non-empty text", found="''")
    intros = attach_questions(pd.DataFrame(intro_rows), questions, options, path)
    return (intros, pd.DataFrame(prompt_rows),
            pd.DataFrame({"part": list(texts), "text": list(texts.values())}))


def attach_questions(table: pd.DataFrame, questions: dict, options: dict, path: Path) -> pd.DataFrame:
    """The memory question and its answer options, per character name."""
    names = sorted(set(table["Name"]))
    missing = [n for n in names if n not in questions]
    if missing:
        raise DataValidationError("memory question missing", source=f"{path} [Memory]",
                                  expected=f"a pronoun question for each of {names}",
                                  found=f"none for {missing}")
    for name in names:
        if tuple(options.get(name, ())) != PRONOUNS:
            raise DataValidationError("pronoun question's options", source=f"{path} [Memory]",
                                      column=name, expected=str(list(PRONOUNS)),
                                      found=str(options.get(name)))
    out = table.copy()
    out["memory_question"] = out["Name"].map(questions)
    out["memory_options"] = " | ".join(PRONOUNS)
    return out


def math_text(paragraphs: list[str]) -> str:
    """The math distractor as read: its instructions and questions, each question followed
    by its answer options where it has some (the export's "(n)" markers and answer
    lines removed)."""
    lines = []
    for paragraph in paragraphs:
        choice = CHOICE.match(paragraph)
        if choice:
            lines.append(choice.group(1).strip())
        else:
            lines.append(question_text(paragraph)[1].replace("\xa0", " "))
    return "\n".join(lines)


def read_characters_xlsx(folder: Path) -> pd.DataFrame:
    """`characters.xlsx`, sheet Lists: one row per list x character (the stimulus lists)."""
    try:
        import openpyxl
    except ImportError as exc:  # pragma: no cover - declared dependency
        from gbstats.errors import MissingDependencyError
        raise MissingDependencyError("reading characters.xlsx needs openpyxl: "
                                     "pip install openpyxl") from exc
    path = Path(folder) / "materials" / "characters.xlsx"
    try:
        wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise DataValidationError("cannot read the workbook", source=str(path),
                                  expected="an .xlsx file", found=str(exc)) from None
    if "Lists" not in wb.sheetnames:
        raise DataValidationError("sheet missing", source=str(path), expected="sheet 'Lists'",
                                  found=f"sheets {wb.sheetnames}")
    rows = list(wb["Lists"].iter_rows(values_only=True))
    wb.close()
    records, current, position = [], None, 0
    for i, r in enumerate(rows, start=1):
        head = r[0]
        if isinstance(head, str) and re.fullmatch(r"LIST \d", head):
            current, position = head.split()[1], 0
            continue
        if current is None or head not in PRONOUNS:
            continue
        position += 1
        records.append({"List": current, "position": position, "Pronoun": head,
                        "Name": str(r[1]).strip(), "Pet": str(r[2]).strip(),
                        "Job": str(r[3]).strip(), "Text": str(r[4]).strip(), "xlsx_row": i})
    out = pd.DataFrame(records)
    if sorted(out["List"].unique()) != ["1", "2", "3"] or not (out.groupby("List").size() == 12).all():
        raise DataValidationError("lists of 12 characters expected", source=f"{path} [Lists]",
                                  expected="LIST 1-3, 12 characters each",
                                  found=str(out.groupby("List").size().to_dict()))
    return out


def job_words(phrase: str) -> str:
    """The job of a "works as a(n) X" / "works in X" phrase, lower case ("as a a doctor",
    the workbook's typo for Kevin in list 3, is "doctor" too)."""
    words = phrase.lower().split()
    while words and words[0] in ("as", "in", "a", "an"):
        words = words[1:]
    return " ".join(words)


def reconcile_with_lists(intros: pd.DataFrame, lists: pd.DataFrame) -> pd.DataFrame:
    """The introduction each list's participants read: the export's, unless its character
    (name, pronoun, job, pet) differs from the workbook's at that position; then the
    workbook's sentence (`introduction_source` says which)."""
    merged = intros.merge(lists[["List", "position", "Name", "Pronoun", "Pet", "Text"]],
                          on=["List", "position"], how="left", suffixes=("", "_xlsx"),
                          validate="one_to_one")
    parsed = merged["Text"].map(lambda t: parse_introduction(t, "characters.xlsx [Lists]"))
    same = ((merged["Name"] == merged["Name_xlsx"]) & (merged["Pronoun"] == merged["Pronoun_xlsx"])
            & (merged["Pet"] == merged["Pet_xlsx"])
            & (merged["job_phrase"].map(job_words) == parsed.map(lambda p: job_words(p["job"]))))
    out = merged.copy()
    for column in ("Name", "Pronoun", "Pet"):
        out[column] = np.where(same, merged[column], merged[f"{column}_xlsx"])
    out["job_phrase"] = np.where(same, merged["job_phrase"], parsed.map(lambda p: p["job"]))
    out["name_in_second_sentence"] = np.where(same, merged["name_in_second_sentence"],
                                              parsed.map(lambda p: p["name2"]))
    out["introduction"] = np.where(same, merged["introduction_shown"], merged["Text"])
    out["introduction_source"] = np.where(same, "docx", "characters.xlsx")
    return out.drop(columns=["Name_xlsx", "Pronoun_xlsx", "Pet_xlsx", "Text"])


def exp1_stimuli(folder: Path, experiment: str, lists: pd.DataFrame) -> tuple[pd.DataFrame,
                                                                              pd.DataFrame]:
    """(stimuli, texts): one row per list x character with the introduction read, the
    memory question, its options and the sentence beginning; and the instruction texts."""
    intros, prompts, texts = exp1_survey(folder, experiment)
    intros = reconcile_with_lists(intros, lists)
    stimuli = intros.merge(prompts, on=["List", "Name"], how="left", validate="one_to_one")
    missing = stimuli["sentence_beginning"].isna()
    if missing.any():
        first = stimuli[missing].iloc[0]
        raise DataValidationError("no sentence beginning for a character",
                                  source=f"{EXP1_FILES[experiment]} [Production (List "
                                         f"{first['List']})]",
                                  expected=f"a prompt for {first['Name']!r}", found="none")
    return stimuli, texts


# --------------------------------------------------------------------------
# Exp 2 (PCIbex): csv, html, main.js

class _TextParser(HTMLParser):
    """Visible text of an HTML snippet: one entry per block element (h1-h6, p, address,
    li, div), <br> as a line break, entities decoded."""

    BLOCKS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6", "p", "address", "li", "div"})

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.current: list[str] = []

    def flush(self):
        text = "\n".join(re.sub(r"[ \t\r\n]+", " ", line).strip()
                         for line in "".join(self.current).split("\n"))
        text = text.strip()
        if text:
            self.blocks.append(text)
        self.current = []

    def handle_starttag(self, tag, attrs):
        if tag in self.BLOCKS:
            self.flush()
        elif tag == "br":
            self.current.append("\n")

    def handle_endtag(self, tag):
        if tag in self.BLOCKS:
            self.flush()

    def handle_data(self, data):
        self.current.append(data)


def html_blocks(html: str) -> list[str]:
    """The text a browser shows for `html`, block by block. An unterminated tag at the
    end ("<br><brFirst, ..." in main.js) shows nothing in a browser (HTML's eof-in-tag
    rule drops it), so it is dropped here too."""
    html = re.sub(r"<[A-Za-z][^<>]*$", "", html)
    parser = _TextParser()
    parser.feed(html)
    parser.close()
    parser.flush()
    return parser.blocks


def read_exp2_stimuli(folder: Path) -> pd.DataFrame:
    path = Path(folder) / EXP2_FOLDER / "stimuli_characters.csv"
    columns = ["group", "condition", "pronoun", "name", "pet", "job", "introduction",
               "memory_pronoun", "memory_pet", "memory_job", "production"]
    raw = read_table(path, dtype=str, keep_default_na=False)
    df = validate_frame(raw, source=str(path), required=columns, ids=["group", "name"],
                        allowed={"pronoun": list(PRONOUNS), "pet": list(PETS),
                                 "condition": list(EXP2_CONDITIONS)},
                        unique=["group", "name"], what="character")
    per = df.groupby("group").size()
    if len(per) != 12 or not (per == 12).all():
        raise DataValidationError("12 lists of 12 characters expected", source=str(path),
                                  found=str(per.to_dict()))
    return df


def read_exp2_training(folder: Path) -> pd.DataFrame:
    path = Path(folder) / EXP2_FOLDER / "stimuli_training.csv"
    raw = read_table(path, dtype=str, keep_default_na=False)
    return validate_frame(raw, source=str(path), required=["psa", "story1", "story2"],
                          ids=["condition", "group"], allowed={"condition": list(EXP2_CONDITIONS)},
                          unique=["group"], what="list")


def read_exp2_texts(folder: Path, training: pd.DataFrame) -> pd.DataFrame:
    """The PSA and biography texts, one row per file x block (title, paragraph...)."""
    rows = []
    for name in sorted(set(training[["psa", "story1", "story2"]].to_numpy().ravel())):
        path = Path(folder) / EXP2_FOLDER / name
        if not path.exists():
            raise DataValidationError("text file missing", source=str(path),
                                      expected="the file stimuli_training.csv names")
        blocks = html_blocks(path.read_text(encoding="utf-8"))
        if not blocks:
            raise DataValidationError("no text in the file", source=str(path))
        rows += [{"file": name, "block": i, "text": b} for i, b in enumerate(blocks)]
    return pd.DataFrame(rows)


def js_string(literal: str) -> str:
    """A JavaScript string literal's value: backslash-newline continues the line."""
    return re.sub(r"\\\n", "", literal)


def read_main_js(folder: Path) -> tuple[list[str], pd.DataFrame]:
    """(the Sequence(...) of trial labels in order, the instruction texts as shown).

    Texts are those of newTrial("intro" / "instructions_*", newText("...", "TEXT")),
    and the production trial's fixed instruction line."""
    path = Path(folder) / EXP2_FOLDER / "main.js"
    source = path.read_text(encoding="utf-8")
    seq = re.search(r"Sequence\((.*?)\)\s*\n\s*\n", source, re.DOTALL)
    if seq is None:
        raise DataValidationError("no Sequence(...) found", source=str(path),
                                  expected="PennController's Sequence(...) call")
    body = re.sub(r"//[^\n]*", "", seq.group(1))
    labels = re.findall(r'"([A-Za-z0-9_]+)"', body)
    texts = []
    for label, literal in re.findall(
            r'newTrial\("((?:intro|instructions_[a-z]+))",\s*newText\("[^"]*",\s*"((?:[^"\\]|\\.)*)"',
            source, re.DOTALL):
        shown = " ".join(html_blocks(js_string(literal)))
        texts.append({"part": label, "text": shown})
    production = re.search(r'newText\("instruction",\s*"((?:[^"\\]|\\.)*)"\)', source)
    if production is None:
        raise DataValidationError("production instruction not found", source=str(path),
                                  expected='newText("instruction", "...") in the production trial')
    texts.append({"part": "production_instruction", "text": js_string(production.group(1))})
    table = pd.DataFrame(texts)
    needed = {"instructions_psa", "instructions_story", "instructions_character",
              "instructions_math", "instructions_memory", "instructions_production"}
    missing = needed - set(table["part"])
    if missing:
        raise DataValidationError("instruction texts missing", source=str(path),
                                  expected=str(sorted(needed)), found=f"missing {sorted(missing)}")
    return labels, table


def check_characters_match_stimuli(table: pd.DataFrame, stimuli: pd.DataFrame,
                                   experiment: str) -> None:
    """Every character of the data has, in its participant's list, the stimuli's pronoun,
    pet and job (the data's job codes are short: "uber" for "Uber driver")."""
    if experiment == "2":
        stimuli = stimuli.rename(columns={"group": "List", "name": "Name", "pronoun": "Pronoun",
                                          "pet": "Pet", "job": "job_phrase"})
    data = table.drop_duplicates(["List", "Name"])[["List", "Name", "Pronoun", "Pet", "Job"]]
    merged = data.merge(stimuli[["List", "Name", "Pronoun", "Pet", "job_phrase"]],
                        on=["List", "Name"], how="left", suffixes=("", "_stimuli"))
    job_ok = [job_words(p).startswith(j.lower()) or j.lower().startswith(job_words(p))
              for j, p in zip(merged["Job"], merged["job_phrase"].fillna(""))]
    bad = (merged["Pronoun"] != merged["Pronoun_stimuli"]) | (merged["Pet"] != merged["Pet_stimuli"]) \
        | ~pd.Series(job_ok, index=merged.index)
    if bad.any():
        first = merged[bad].iloc[0]
        raise DataValidationError(
            "a character of the data differs from the stimuli its list showed",
            source=f"gardner2023 exp{experiment}", column="Name",
            expected=f"list {first['List']!r}: {first['Name']} with the stimuli's pronoun, pet, job "
                     f"({first['Pronoun_stimuli']}, {first['Pet_stimuli']}, {first['job_phrase']})",
            found=f"{first['Pronoun']}, {first['Pet']}, {first['Job']}")


# --------------------------------------------------------------------------

def load(folder: Path) -> LoadedDataset:
    folder = Path(folder)
    log = ExclusionLog()
    tables: dict[str, pd.DataFrame] = {}
    lists = read_characters_xlsx(folder)
    tables["lists"] = lists
    for experiment in ("1a", "1b"):
        trials = read_exp1_trials(folder, experiment)
        tables[f"exp{experiment}_trials"] = trials
        tables[f"exp{experiment}"] = exp1_characters(trials, log)
        stimuli, texts = exp1_stimuli(folder, experiment, lists)
        tables[f"exp{experiment}_stimuli"] = stimuli
        tables[f"exp{experiment}_texts"] = texts
    trials = read_exp2_trials(folder)
    tables["exp2_trials"] = trials
    tables["exp2"] = exp2_characters(trials, log)
    tables["exp2_stimuli"] = read_exp2_stimuli(folder)
    training = read_exp2_training(folder)
    tables["exp2_training"] = training
    tables["exp2_texts"] = read_exp2_texts(folder, training)
    sequence, instructions = read_main_js(folder)
    tables["exp2_sequence"] = pd.DataFrame({"step": range(1, len(sequence) + 1),
                                            "label": sequence})
    tables["exp2_instructions"] = instructions
    for experiment in EXPERIMENTS:
        table = tables[f"exp{experiment}"]
        check_one_row_per_character(table, experiment)
        check_characters_match_stimuli(table, tables[f"exp{experiment}_stimuli"], experiment)
        tables[f"exp{experiment}"] = check_output_schema(
            table, character_schema(experiment), source=f"gardner2023 table 'exp{experiment}'")
        # The published trials are the authors' analysed set: nothing is dropped, and the
        # log says so rather than staying silent.
        log.record(f"Exp {experiment.upper()} participants dropped by the loader (the published "
                   "data are the analysed data)", 0, unit="participants",
                   stage=f"gardner2023 exp{experiment}")
    return LoadedDataset(name="gardner2023", tables=tables, main="exp1a", exclusions=log,
                         participant_column="participant")
