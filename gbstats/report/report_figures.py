"""A written report's figures read back and checked, as a reviewer would open them.

`figure_problems(out_dir)` opens every figure of a study's report folder and returns what
is wrong, in words (an empty list when nothing is):

- every PNG under figures/ opens as an image, is at least 200 x 150 pixels and is not
  blank (some pixels differ from the background);
- every PDF under figures/ is a PDF (and, where poppler's pdftoppm is installed, renders
  to a page that is not blank);
- every effects figure (a name with "effects") has its PDF beside it;
- report.md shows every PNG, and every figure report.md shows exists;
- results.json lists every figure under "figures", each listed file exists, and a figure
  marked simulated says SIMULATED in its caption.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

MIN_SIZE = (200, 150)
_SHOWN = re.compile(r"!\[[^\]]*\]\((figures/[^)]+)\)")


def image_problems(path: Path) -> list[str]:
    """What keeps the PNG at `path` from being a figure: it does not open, it is tiny, or
    every pixel is the background's colour."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            image.load()
            pixels = np.asarray(image.convert("L"), dtype=float)
    except (OSError, UnidentifiedImageError) as error:
        return [f"{path.name}: does not open as an image ({error})"]
    height, width = pixels.shape
    if width < MIN_SIZE[0] or height < MIN_SIZE[1]:
        return [f"{path.name}: {width} x {height} pixels, smaller than {MIN_SIZE[0]} x "
                f"{MIN_SIZE[1]}"]
    background = np.median(pixels)
    drawn = np.mean(np.abs(pixels - background) > 30)
    if drawn < 0.002:
        return [f"{path.name}: blank (only {drawn:.2%} of the pixels differ from the "
                "background)"]
    return []


def pdf_problems(path: Path) -> list[str]:
    """A PDF that is not one, or (with pdftoppm) renders blank."""
    if not path.read_bytes()[:5] == b"%PDF-":
        return [f"{path.name}: not a PDF"]
    pdftoppm = shutil.which("pdftoppm")
    if pdftoppm is None:
        return []
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run([pdftoppm, "-png", "-r", "50", "-singlefile", str(path),
                               str(Path(folder) / "page")], capture_output=True, text=True,
                              timeout=120)
        page = Path(folder) / "page.png"
        if done.returncode != 0 or not page.exists():
            return [f"{path.name}: pdftoppm could not render it ({done.stderr.strip()[:200]})"]
        return [p.replace("page.png", path.name) for p in image_problems(page)
                if "smaller than" not in p]


def figure_problems(out_dir) -> list[str]:
    """Every problem found with the figures of the report folder `out_dir`."""
    out = Path(out_dir)
    folder = out / "figures"
    pngs = sorted(folder.glob("*.png")) if folder.is_dir() else []
    problems = []
    for png in pngs:
        problems += image_problems(png)
        if "effects" in png.stem and not png.with_suffix(".pdf").exists():
            problems.append(f"{png.name}: an effects figure without its PDF beside it")
    for pdf in sorted(folder.glob("*.pdf")) if folder.is_dir() else []:
        problems += pdf_problems(pdf)
    report = out / "report.md"
    shown = set(_SHOWN.findall(report.read_text())) if report.exists() else set()
    for path in sorted(shown):
        if not (out / path).exists():
            problems.append(f"report.md shows {path}, which does not exist")
    for png in pngs:
        if f"figures/{png.name}" not in shown:
            problems.append(f"{png.name}: not shown in report.md")
    results = out / "results.json"
    if results.exists():
        records = json.loads(results.read_text()).get("figures")
        if records is None:
            problems.append("results.json has no \"figures\" list")
            records = []
        listed = {f for r in records for f in r.get("files", [])}
        for record in records:
            for file in record.get("files", []):
                if not (out / file).exists():
                    problems.append(f"results.json lists {file}, which does not exist")
            if record.get("simulated") and "SIMULATED" not in record.get("caption", ""):
                problems.append(f"{record.get('name')}: simulated, but its caption does not "
                                "say SIMULATED")
        for png in pngs:
            if f"figures/{png.name}" not in listed:
                problems.append(f"{png.name}: not listed in results.json's figures")
    return problems
