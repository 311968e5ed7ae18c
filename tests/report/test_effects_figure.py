"""The effects figure (gbstats.report.effects_figure): people and the model side by side."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from gbstats.errors import DataValidationError
from gbstats.report.effects_figure import (ONE_COLUMN, SIDE_STYLE, TWO_COLUMN, effects_figure,
                                           save_png_and_pdf)


def _effects(panels=("Exp 1", "Exp 3")) -> pd.DataFrame:
    rows = []
    for panel in panels:
        for label, people, model in (("full minus first name", 0.8, 0.3),
                                     ("rating slope (per point)", 0.5, -0.1)):
            rows += [{"panel": panel, "label": label, "side": "people", "estimate": people,
                      "ci_lo": people - 0.2, "ci_hi": people + 0.3},
                     {"panel": panel, "label": label, "side": "model", "estimate": model,
                      "ci_lo": model - 0.4, "ci_hi": model + 0.1}]
    return pd.DataFrame(rows)


def _draw(effects=None, **options):
    kw = {"simulated": False, "title": "Condition effects", "xlabel": "log-odds of she"}
    return effects_figure(_effects() if effects is None else effects, **{**kw, **options})


def test_writes_a_png_and_a_pdf_beside_it(tmp_path):
    png, pdf = save_png_and_pdf(_draw(), tmp_path / "figures" / "name_effects.png")
    assert png == tmp_path / "figures" / "name_effects.png"
    assert pdf == tmp_path / "figures" / "name_effects.pdf"
    with Image.open(png) as image:
        image.load()
        pixels = np.asarray(image.convert("L"))
    assert pixels.min() < 100 < pixels.max()           # something dark drawn on white
    assert pdf.read_bytes().startswith(b"%PDF")
    with pytest.raises(ValueError, match="the .png path"):
        save_png_and_pdf(_draw(), tmp_path / "effects.pdf")


@pytest.mark.parametrize("width", [ONE_COLUMN, TWO_COLUMN])
def test_fits_the_column_it_is_drawn_for(tmp_path, width):
    png, _ = save_png_and_pdf(_draw(width=width), tmp_path / "effects.png")
    with Image.open(png) as image:
        inches = image.size[0] / 200          # figures.STYLE's savefig.dpi
    # savefig's tight bounding box pads 0.1 in on either side, and no more
    assert width - 0.5 < inches <= width + 0.2


@pytest.mark.parametrize("column", ["label", "side", "estimate", "ci_lo", "ci_hi"])
def test_a_missing_column_is_named(column):
    with pytest.raises(DataValidationError) as caught:
        _draw(_effects().drop(columns=column))
    message = str(caught.value)
    assert f"column(s) {column}" in message and "found: columns" in message


def test_bad_rows_are_refused_with_where_and_what():
    effects = _effects()
    effects.loc[2, "side"] = "men"
    with pytest.raises(DataValidationError, match=r"row 4, column 'side'.*found: 'men'"):
        _draw(effects)
    effects = _effects()
    effects.loc[1, "estimate"] = np.nan
    with pytest.raises(DataValidationError, match="row 3, column 'estimate'"):
        _draw(effects)
    effects = _effects()
    effects.loc[0, "ci_lo"] = 5.0
    with pytest.raises(DataValidationError, match="does not contain its estimate"):
        _draw(effects)
    with pytest.raises(DataValidationError, match="no effects"):
        _draw(_effects().iloc[:0])
    with pytest.raises(DataValidationError, match="given twice"):
        _draw(pd.concat([_effects(), _effects().iloc[:1]]))


def test_simulated_must_be_said():
    with pytest.raises(TypeError, match="simulated"):
        effects_figure(_effects(), title="t", xlabel="x")         # no default
    with pytest.raises(TypeError, match="simulated must be True or False"):
        _draw(simulated=None)


def test_the_legend_holds_both_sides_in_their_colours():
    fig = _draw(side_labels={"model": "SmolLM2-135M"})
    legend, = fig.legends
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts == ["people (95% interval)", "SmolLM2-135M (95% interval)"]
    colours = [h.get_color() for h in legend.legend_handles]
    assert colours == [SIDE_STYLE["people"]["color"], SIDE_STYLE["model"]["color"]]
    # each drawn series is in one of the legend's colours: no colour without its legend entry
    drawn = {line.get_color() for ax in fig.axes for line in ax.lines
             if line.get_linestyle() == "None"}
    assert drawn == set(colours)


def test_simulated_in_the_title_when_simulated_and_not_otherwise():
    assert _draw(simulated=True).get_suptitle().startswith("SIMULATED: Condition effects")
    assert "SIMULATED" not in _draw(simulated=False).get_suptitle()


def test_every_effect_is_drawn_at_its_estimate_with_its_interval():
    fig = _draw()
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["Exp 1", "Exp 3"]
    ax = fig.axes[0]
    # (labels wrap to fit a one-column figure)
    assert [t.get_text().replace("\n", " ") for t in ax.get_yticklabels()] == [
        "full minus first name",
                                                             "rating slope (per point)"]
    people = [line for line in ax.lines if line.get_marker() == "o"][0]
    assert list(people.get_xdata()) == [0.8, 0.5]
    whiskers = [c for c in ax.collections if len(c.get_segments())]
    ends = sorted((round(seg[0][0], 6), round(seg[1][0], 6))
                  for c in whiskers for seg in c.get_segments())
    assert (0.6, 1.1) in ends and (-0.1, 0.4) in ends and (-0.5, 0.0) in ends
    zero = [line for line in ax.lines if list(line.get_xdata()) == [0, 0]]
    assert zero, "no line at zero"


def test_one_side_only_draws_and_says_so():
    people = _effects(panels=("",))
    fig = _draw(people[people["side"] == "people"])
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["people (95% interval)"]
    assert fig.axes[0].get_title(loc="left") == ""


def test_a_study_report_gets_the_png_the_pdf_and_a_record(tmp_path):
    import json

    from gbstats.report.effects_figure import report_effects_figure
    from gbstats.report.study_report import StudyReport

    report = StudyReport("demo", tmp_path, "Demo")
    png = report_effects_figure(report, "demo_effects", _effects(), "Headline effects",
                                simulated=True, title="Headline effects", xlabel="log-odds")
    assert png.exists() and png.with_suffix(".pdf").exists()
    report.write({"study": "demo"})
    text = (tmp_path / "report.md").read_text()
    assert "![SIMULATED: Headline effects](figures/demo_effects.png)" in text
    assert "[PDF](figures/demo_effects.pdf)" in text
    record, = json.loads((tmp_path / "results.json").read_text())["figures"]
    assert record == {"name": "demo_effects", "caption": "SIMULATED: Headline effects",
                      "files": ["figures/demo_effects.png", "figures/demo_effects.pdf"],
                      "simulated": True}
    with pytest.raises(ValueError, match="must contain 'effects'"):
        report_effects_figure(report, "headline", _effects(), "x", simulated=False,
                              title="t", xlabel="x")


# --- a figure drawn once and written from the cache after (StudyReport.drawn_figure) --------

DRAWN: list[int] = []


def _counted_draw(effects, **options):
    """effects_figure, counting its calls: whether a report drew the figure or wrote it from
    the cache is what these tests are about."""
    DRAWN.append(1)
    return effects_figure(effects, **options)


def _drawn(out, effects, *, cache, simulated=False, caption="Headline effects",
           title="Headline effects", use_cache=True):
    from gbstats.report.study_report import StudyReport

    report = StudyReport("demo", out, "Demo", simulated=simulated)
    before = len(DRAWN)
    png = report.drawn_figure("demo_effects", _counted_draw, [effects], caption, pdf=True,
                              simulated=simulated, cache_dir=cache, use_cache=use_cache,
                              draw_options=dict(simulated=simulated, title=title,
                                                xlabel="log-odds"))
    report.write({"study": "demo"})
    return png, len(DRAWN) > before


def test_a_figure_asked_for_again_is_written_from_the_cache_byte_for_byte(tmp_path):
    # issue 41: drawing and saving the main job's two figures, and importing matplotlib for
    # them, was about 2.5 s of its warm run
    import json

    cache = tmp_path / "cache"
    first, drew = _drawn(tmp_path / "a", _effects(), cache=cache)
    assert drew
    again, drew = _drawn(tmp_path / "b", _effects(), cache=cache)
    assert not drew
    for suffix in (".png", ".pdf"):
        assert again.with_suffix(suffix).read_bytes() == first.with_suffix(suffix).read_bytes()
    # the report shows and lists it as a drawn one
    assert ((tmp_path / "b" / "report.md").read_text().count("figures/demo_effects.png")
            == (tmp_path / "a" / "report.md").read_text().count("figures/demo_effects.png"))
    assert (json.loads((tmp_path / "b" / "results.json").read_text())["figures"]
            == json.loads((tmp_path / "a" / "results.json").read_text())["figures"])
    # a new caption is not a new image: the kept files, under the new caption
    _, drew = _drawn(tmp_path / "c", _effects(), cache=cache, caption="Other words")
    assert not drew and "Other words" in (tmp_path / "c" / "report.md").read_text()


@pytest.mark.parametrize("change", ["value", "title", "simulated", "no cache"])
def test_anything_the_image_shows_draws_it_again(tmp_path, change):
    cache = tmp_path / "cache"
    first, _ = _drawn(tmp_path / "a", _effects(), cache=cache)
    effects, options = _effects(), {}
    if change == "value":
        effects.loc[0, "estimate"] += 0.01
    elif change == "title":
        options["title"] = "Other effects"
    elif change == "simulated":
        options["simulated"] = True
    else:
        options["use_cache"] = False
    again, drew = _drawn(tmp_path / "b", effects, cache=cache, **options)
    assert drew
    if change != "no cache":
        assert again.read_bytes() != first.read_bytes()


# --- a report folder's figures read back (gbstats.report.report_figures) --------------------

def _report_with_figures(tmp_path, simulated=False):
    from gbstats.report.effects_figure import report_effects_figure
    from gbstats.report.study_report import StudyReport

    report = StudyReport("demo", tmp_path, "Demo", simulated=simulated)
    report_effects_figure(report, "demo_effects", _effects(), "Headline effects",
                          simulated=simulated, title="Headline effects", xlabel="log-odds")
    report.write({"study": "demo"})
    return tmp_path


def test_a_good_report_folder_has_no_figure_problems(tmp_path):
    from gbstats.report.report_figures import figure_problems

    assert figure_problems(_report_with_figures(tmp_path)) == []


def test_blank_broken_unlisted_and_pdfless_figures_are_found(tmp_path):
    from gbstats.report.report_figures import figure_problems

    out = _report_with_figures(tmp_path)
    figures = out / "figures"
    Image.new("RGB", (700, 500), "white").save(figures / "blank.png")
    (figures / "broken.png").write_bytes(b"not an image")
    (figures / "demo_effects.pdf").unlink()
    problems = figure_problems(out)
    assert any(p.startswith("blank.png: blank") for p in problems)
    assert any(p.startswith("broken.png: does not open") for p in problems)
    assert "demo_effects.png: an effects figure without its PDF beside it" in problems
    assert "blank.png: not shown in report.md" in problems
    assert "blank.png: not listed in results.json's figures" in problems
    assert "results.json lists figures/demo_effects.pdf, which does not exist" in problems


def test_a_simulated_figure_whose_caption_hides_it_is_found(tmp_path):
    import json

    from gbstats.report.report_figures import figure_problems

    out = _report_with_figures(tmp_path, simulated=True)
    assert figure_problems(out) == []
    results = json.loads((out / "results.json").read_text())
    results["figures"][0]["caption"] = "Headline effects"
    (out / "results.json").write_text(json.dumps(results))
    assert figure_problems(out) == ["demo_effects: simulated, but its caption does not say "
                                    "SIMULATED"]
