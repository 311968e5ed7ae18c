"""A paper's appendix in one command: tables/tables.tex, and tables/tables.pdf where
pdflatex is installed.

Every study's report folder gets `tables/tables.tex`, one document that loads the
packages the tables need (`gbstats.report.latex.TABLE_PACKAGES`) and `\\input`s every
table in the order the report shows them. `compile_appendix` runs pdflatex on it (in a
temporary folder, so no .aux or .log is left beside the tables) and reads its log:
an error, a character the font cannot print (`\\tracinglostchars=3` makes that an
error), an overfull box wider than `OVERFULL_LIMIT_PT` or a float too large for the page is
reported, never hidden. The document's text block is 6.5 inches wide (`TEXT_BLOCK`), a
journal's; tables a paper's body would not print come last, under `APPENDIX_HEADING`.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gbstats.report.files import write_bytes_atomically, write_text_atomically
from gbstats.report.latex import (LANDSCAPE_PACKAGE, LONGTABLE_PACKAGE, TABLE_PACKAGES,
                                  escape_latex)

APPENDIX_NAME = "tables"
# An overfull box narrower than this is a nuisance a typesetter fixes by hand; a wider one
# means a table runs into the margin.
OVERFULL_LIMIT_PT = 20.0
COMPILE_TIMEOUT_S = 180
MAX_RUNS = 3
# Clean compiles are stored in <cache dir>/latex/<digest>.pdf (compiled_pdf_key);
# GBSTATS_NO_PDF_CACHE=1 compiles every time.
LATEX_FOLDER = "latex"
ENV_NO_PDF_CACHE = "GBSTATS_NO_PDF_CACHE"
_RERUN = re.compile(r"Rerun LaTeX|Table widths have changed|Rerun to get")
_OVERFULL = re.compile(r"^Overfull \\[hv]box \((?P<pt>[\d.]+)pt too (?:wide|high)\)(?P<rest>.*)$")
# A float taller than the page: LaTeX sets it anyway, over the footer and page number.
_FLOAT_TOO_LARGE = re.compile(r"Float too large for page by (?P<pt>[\d.]+)pt")
# The text block every table must fit (issue 43): a US-letter page's 6.5 by 9 inches.
TEXT_BLOCK = "letterpaper, textwidth=6.5in, textheight=9in"
# The heading of the part of tables.tex a paper would not print in its body.
APPENDIX_HEADING = "Appendix: engine comparisons, priors and diagnostics"


def appendix_source(title: str, names: Sequence[str], landscape: bool = False,
                    appendix: Sequence[str] = ()) -> str:
    """The LaTeX document that inputs tables/<name>.tex for each of `names`: the tables a
    paper prints first, then, under `APPENDIX_HEADING`, those of `appendix` (engine
    comparisons, priors, diagnostics), in their order among `names`."""
    packages = [*TABLE_PACKAGES, LONGTABLE_PACKAGE, *([LANDSCAPE_PACKAGE] if landscape else [])]
    lines = [
        "% Every table of this report in one document: pdflatex tables.tex",
        "% (written by gbstats; each table also stands alone: \\input{tables/<name>.tex}",
        "% in a document that loads " + ", ".join(packages) + ")",
        # the same tables give the same PDF, byte for byte (no date, no random trailer ID):
        # a rerun can be diffed, and two runs' folders compared by checksum
        r"\ifdefined\pdftrailerid \pdftrailerid{}\pdfinfoomitdate=1\pdfsuppressptexinfo=-1 \fi",
        r"\documentclass[11pt]{article}",
        f"\\usepackage[{TEXT_BLOCK}]{{geometry}}",
        *[f"\\usepackage{{{p}}}" for p in packages],
        # a character the font cannot print stops the run instead of leaving a gap
        r"\tracinglostchars=3",
        # many tables float at once: room for them, and pages that may be mostly table
        r"\extrafloats{200}",
        r"\renewcommand{\topfraction}{0.95}", r"\renewcommand{\bottomfraction}{0.95}",
        r"\renewcommand{\textfraction}{0.05}", r"\renewcommand{\floatpagefraction}{0.8}",
        r"\setcounter{topnumber}{4}", r"\setcounter{bottomnumber}{4}",
        r"\setcounter{totalnumber}{8}",
        r"\begin{document}",
        f"\\section*{{Tables: {escape_latex(title)}}}",
    ]
    body = [n for n in names if n not in set(appendix)]
    lines += [f"\\input{{{name}}}" for name in body]
    rest = [n for n in names if n in set(appendix)]
    if rest:
        lines += [r"\clearpage", f"\\section*{{{escape_latex(APPENDIX_HEADING)}}}",
                  "These tables check the analysis (the same model in other engines, the "
                  "Bayesian models' priors, convergence diagnostics); a paper's body does "
                  "not print them.", ""]
        lines += [f"\\input{{{name}}}" for name in rest]
    lines += [r"\clearpage", r"\end{document}"]
    return "\n".join(lines) + "\n"


@dataclass
class CompileResult:
    ok: bool
    pdf: Path | None
    errors: list[str] = field(default_factory=list)
    overfull: list[str] = field(default_factory=list)   # boxes over OVERFULL_LIMIT_PT
    skipped: str = ""                                     # why it was not compiled
    engine: str = "pdflatex"                              # the program that compiled it
    notes: list[str] = field(default_factory=list)        # what the PDF shows differently

    def summary(self) -> str:
        if self.skipped:
            return f"not compiled: {self.skipped}"
        said = "".join(f"; {n}" for n in self.notes)
        if self.ok:
            return f"compiled to tables/tables.pdf{said}"
        what = self.errors[:3] + self.overfull[:3]
        return f"{self.engine} reported problems: " + "; ".join(what) + said


def pdflatex_path() -> str | None:
    return shutil.which("pdflatex")


def write_appendix(folder: Path, title: str, names: Sequence[str],
                   landscape: bool = False, appendix: Sequence[str] = ()) -> Path:
    """Write `folder`/tables.tex for the tables `names` (already in `folder`), those of
    `appendix` in its appendix section."""
    path = Path(folder) / f"{APPENDIX_NAME}.tex"
    write_text_atomically(path, appendix_source(title, names, landscape, appendix))
    return path


# pdflatex (utf8 input, the default OT1/T1 fonts) prints ASCII, Latin-1 and Latin
# Extended-A; escape_latex turns the few symbols tables use (Greek, <=, infinity) into
# commands. Anything else (Cyrillic, CJK, emoji in a participant's name or a label) needs
# a Unicode engine and a font that has it (issue 44, "Unicode anywhere").
PDFLATEX_LAST = 0x17F
UNICODE_ENGINES = ("lualatex", "xelatex")
# fonts tried first, in this order, where fontconfig finds several that have the characters
PREFERRED_FONTS = ("DejaVu Serif", "Noto Serif", "FreeSerif", "Liberation Serif",
                   "Noto Sans CJK SC", "Noto Color Emoji")


def beyond_pdflatex(text: str) -> set[str]:
    """The characters of `text` pdflatex cannot print (PDFLATEX_LAST)."""
    return {c for c in text if ord(c) > PDFLATEX_LAST and not c.isspace()}


_ENGINE_PROBE = r"""\documentclass{article}\usepackage{fontspec}\begin{document}x\end{document}
"""


@functools.lru_cache(maxsize=1)
def unicode_engine() -> str | None:
    """A Unicode-capable LaTeX (lualatex or xelatex) that works here, or None. Tried once per
    process on a one-line document with fontspec: Debian's texlive-binaries ship a lualatex
    without luaotfload (texlive-luatex), which fails on any system font."""
    for engine in UNICODE_ENGINES:
        program = shutil.which(engine)
        if program is None:
            continue
        with tempfile.TemporaryDirectory(prefix="gbstats-latex-probe-") as work:
            (Path(work) / "probe.tex").write_text(_ENGINE_PROBE)
            try:
                done = subprocess.run([program, "-no-shell-escape", "-interaction=nonstopmode",
                                       "-halt-on-error", "probe.tex"], cwd=work,
                                      capture_output=True, text=True, errors="replace",
                                      timeout=COMPILE_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0 and (Path(work) / "probe.pdf").exists():
                return engine
    return None


def font_covering(chars: set[str]) -> tuple[str | None, set[str]]:
    """(the installed font family that has most of `chars`, PREFERRED_FONTS first on a tie,
    the characters it lacks), from fontconfig's fc-list; (None, chars) without fc-list."""
    fc_list = shutil.which("fc-list")
    if fc_list is None or not chars:
        return None, set(chars)
    having: dict[str, set[str]] = {}
    for char in sorted(chars)[:400]:
        try:
            done = subprocess.run([fc_list, f":charset={ord(char):x}", "family"],
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None, set(chars)
        for line in done.stdout.splitlines():
            for family in line.split(","):
                having.setdefault(family.strip(), set()).add(char)
    if not having:
        return None, set(chars)
    rank = {f: k for k, f in enumerate(PREFERRED_FONTS)}
    best = max(having, key=lambda f: (len(having[f]), -rank.get(f, len(rank)), f))
    return best, set(chars) - having[best]


# Cyrillic and Greek in Latin letters (a simplified BGN/PCGN romanisation), for a PDF made
# where no engine and font here prints them; anything else shows as its code point
_CYRILLIC = dict(zip(
    "абвгдеёжзийклмнопрстуфхцчшщъыьэюяєіїґў",
    ["a", "b", "v", "g", "d", "e", "e", "zh", "z", "i", "y", "k", "l", "m", "n", "o", "p",
     "r", "s", "t", "u", "f", "kh", "ts", "ch", "sh", "shch", "", "y", "", "e", "yu", "ya",
     "ye", "i", "yi", "g", "w"]))
_GREEK = dict(zip(
    "αβγδεζηθικλμνξοπρσςτυφχψωάέήίόύώϊϋΐΰ",
    ["a", "v", "g", "d", "e", "z", "i", "th", "i", "k", "l", "m", "n", "x", "o", "p", "r",
     "s", "s", "t", "y", "f", "ch", "ps", "o", "a", "e", "i", "i", "o", "y", "o", "i", "y",
     "i", "y"]))
TRANSLITERATION = {**_CYRILLIC, **_GREEK}


def code_point(char: str) -> str:
    """What the PDF shows for a character nothing here can print: Cyrillic and Greek in
    Latin letters (TRANSLITERATION, capitals kept), else the code point, <U+4E2D>."""
    lower = char.lower()
    if lower in TRANSLITERATION:
        latin = TRANSLITERATION[lower]
        return latin.capitalize() if char != lower else latin
    # \textless: a bare < prints as an inverted exclamation mark in OT1 fonts
    return f"\\textless{{}}U+{ord(char):04X}\\textgreater{{}}\\allowbreak{{}}"


def _code_point_words(char: str) -> str:
    """`code_point` as a note's sentence says it (no LaTeX)."""
    return (code_point(char).replace("\\allowbreak{}", "").replace("\\textless{}", "<")
            .replace("\\textgreater{}", ">"))


def compiled_pdf_key(sources: dict[str, str], program: str) -> str:
    """Digest of what a compile depends on: every source as LaTeX reads it (after the engine
    preamble and code-point replacements), and the engine: its path, size and modification
    time, which change when TeX Live is upgraded (packages come with the engine's
    Debian packages here)."""
    import hashlib
    import json
    import os

    stat = os.stat(program)
    payload = json.dumps({"format": 1, "sources": sources,
                          "engine": [os.path.realpath(program), stat.st_size, stat.st_mtime_ns]},
                         sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def _cached_pdf_path(key: str, cache_dir) -> Path | None:
    from gbstats.config import resolve_cache_dir

    try:
        return resolve_cache_dir(cache_dir) / LATEX_FOLDER / f"{key}.pdf"
    except Exception:  # noqa: BLE001 - no cache folder: compile every time, as before
        return None


def _reuse_pdf(cached: Path | None, target: Path) -> bool:
    """Copy a stored PDF of the very same sources to `target`; False when there is none
    (or it cannot be read: then compiled again)."""
    if cached is None:
        return False
    try:
        data = cached.read_bytes()
    except OSError:
        return False
    if not data.startswith(b"%PDF"):
        return False
    write_bytes_atomically(target, data)
    return True


def _keep_pdf(pdf: Path, cached: Path | None) -> None:
    """Store a clean compile's PDF for the next run; a cache that cannot be written costs
    only that reuse."""
    if cached is None:
        return
    try:
        write_bytes_atomically(cached, pdf.read_bytes())
    except OSError:
        pass


def compile_appendix(tex: Path, *, cache_dir=None, use_cache: bool = False) -> CompileResult:
    """Compile `tex` (its folder holds the tables) into <folder>/tables.pdf: with pdflatex,
    or, where a table holds characters pdflatex cannot print (a name in Cyrillic, CJK, an
    emoji: `beyond_pdflatex`), with lualatex or xelatex and an installed font that has them
    (`font_covering`). Characters no engine and font here can print are shown in the PDF as
    their code points ([U+4E2D]), and the result's notes say so; the .tex files, report.md
    and results.json keep the text as written (issue 44: such a name cost the appendix).

    With use_cache (a study run passes its cache settings) a clean compile's PDF is stored
    under `cache_dir` and reused for the very same sources (`compiled_pdf_key`)."""
    tex = Path(tex)
    sources = {p.name: p.read_text(encoding="utf-8", errors="replace")
               for p in sorted(tex.parent.glob("*.tex"))}
    wanted = set().union(*map(beyond_pdflatex, sources.values())) if sources else set()
    engine, font, lacking = "pdflatex", None, set(wanted)
    if wanted and unicode_engine():
        engine = unicode_engine()
        font, lacking = font_covering(wanted)
    program = shutil.which(engine)
    if program is None:
        return CompileResult(False, None, skipped="pdflatex is not installed (Debian: apt-get "
                                                  "install texlive-latex-recommended "
                                                  "texlive-science)")
    notes = []
    if lacking:
        shown = ", ".join(f"{c} as {_code_point_words(c)}" for c in sorted(lacking)[:6])
        notes.append(f"{len(lacking)} character(s) that no installed LaTeX font here can print "
                     f"are shown in the PDF in Latin letters or as code points ({shown}"
                     f"{', ...' if len(lacking) > 6 else ''}); tables/*.tex, report.md and "
                     f"results.json keep them as written"
                     + ("" if engine != "pdflatex" else
                        " (a working lualatex or xelatex prints other scripts: Debian "
                        "texlive-luatex or texlive-xetex)"))
    as_read = {}
    for name, text in sources.items():
        if name == tex.name:
            text = _with_engine_preamble(text, engine, font, notes)
        for char in lacking:  # the note names them too: replaced there as well
            text = text.replace(char, code_point(char))
        as_read[name] = text
    # A warm re-run writes the same tables: the PDF of a clean compile of the very same
    # sources is reused (2-3 s of pdflatex runs, most of a warm run's report time; issue 41).
    # Only clean compiles are stored, so a failing one is always compiled and its log kept.
    cached = _cached_pdf_path(compiled_pdf_key(as_read, program), cache_dir) \
        if use_cache and not os.environ.get(ENV_NO_PDF_CACHE) else None
    if _reuse_pdf(cached, tex.with_suffix(".pdf")):
        return CompileResult(True, tex.with_suffix(".pdf"), engine=engine, notes=notes)
    with tempfile.TemporaryDirectory(prefix="gbstats-latex-") as work:
        for name, text in as_read.items():
            (Path(work) / name).write_text(text, encoding="utf-8")
        log_path = Path(work) / f"{tex.stem}.log"
        # a longtable's columns settle over runs (their widths go through the .aux file):
        # run again while LaTeX asks for it, at most MAX_RUNS times in all
        for _ in range(MAX_RUNS):
            try:
                done = subprocess.run([program, "-no-shell-escape", "-interaction=nonstopmode",
                                       "-halt-on-error", f"-output-directory={work}", tex.name],
                                      cwd=work, capture_output=True, text=True,
                                      errors="replace", timeout=COMPILE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                return CompileResult(False, None,
                                     [f"{engine} ran longer than {COMPILE_TIMEOUT_S} s"],
                                     engine=engine, notes=notes)
            log = log_path.read_text(errors="replace") if log_path.exists() else done.stdout
            if done.returncode != 0 or not _RERUN.search(log):
                break
        errors, overfull = read_log(log)
        pdf = Path(work) / f"{tex.stem}.pdf"
        ok = done.returncode == 0 and pdf.exists() and not errors and not overfull
        target = None
        if pdf.exists():
            target = tex.with_suffix(".pdf")
            shutil.copyfile(pdf, target)
        if not ok:
            if log_path.exists():  # kept beside the tables, for the reader to see why
                shutil.copyfile(log_path, tex.with_suffix(".log"))
            if done.returncode != 0 and not errors:
                errors = [f"{engine} exited with code {done.returncode}"]
        if ok:
            _keep_pdf(target, cached)
        return CompileResult(ok, target, errors, overfull, engine=engine, notes=notes)


def _with_engine_preamble(text: str, engine: str, font: str | None, notes: list[str]) -> str:
    """The appendix document for `engine`: fontspec and `font` for a Unicode engine, and the
    notes as a sentence under the first heading."""
    if engine != "pdflatex" and font:
        text = text.replace("\\begin{document}",
                            f"\\usepackage{{fontspec}}\n\\setmainfont{{{font}}}\n"
                            "\\begin{document}", 1)
    if notes:
        heading_end = text.find("\n", text.find("\\section*{"))
        if heading_end > 0:
            text = (text[:heading_end + 1] + escape_latex(" ".join(notes), prose=True) + ".\n\n"
                    + text[heading_end + 1:])
    return text


_INPUT = re.compile(r"\((?:\./)?([\w\-.]+\.tex)")


def read_log(log: str, limit_pt: float = OVERFULL_LIMIT_PT) -> tuple[list[str], list[str]]:
    """(errors, layout problems) from a pdflatex log: overfull boxes wider than `limit_pt`
    and floats too large for the page, each named by the table file it is in (the last one
    pdflatex opened before it)."""
    lines = log.splitlines()
    errors = [line for line in lines if line.startswith("!")]
    errors += [line for line in lines if "Missing character" in line]
    overfull, current = [], ""
    for line in lines:
        opened = _INPUT.findall(line)
        if opened:
            current = opened[-1]
        match = _OVERFULL.match(line)
        where = f"{current}: " if current else ""
        if match and float(match["pt"]) > limit_pt:
            overfull.append(f"{where}overfull box {float(match['pt']):.0f} pt too wide")
        too_large = _FLOAT_TOO_LARGE.search(line)
        if too_large:   # any excess: the float runs over the page's foot
            overfull.append(f"{where}float too large for the page by "
                            f"{float(too_large['pt']):.0f} pt")
    return errors, overfull


def overfull_boxes(log: str) -> list[float]:
    """Every overfull box's excess in pt, from a pdflatex log."""
    return [float(m["pt"]) for m in map(_OVERFULL.match, log.splitlines()) if m]
