"""studies.example_they (the worked example of docs/adding-a-study.md) end to end.

The study runs with the embedded model and lme4 on the first 12 frames (f01-f10
take "they", f11-f12 "them", so two pronoun sets are used). Its outputs are
checked against numbers computed here without the study's code: the stimuli
read with pandas, each pronoun form scored by models.causal as
log P(" form" | prefix) and normalised by hand, the cell means taken directly,
and the lme4 fit compared with the closed form of a balanced paired design.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from studies.example_they.run import main

REPO = Path(__file__).resolve().parents[2]
STUDY_DIR = REPO / "studies" / "example_they"
STIMULI = REPO / "data" / "singular_they" / "stimuli.tsv"
N_FRAMES = 12
# written out here rather than imported from the study: the gendered rivals of each they-form
RIVALS = {"they": ("he", "she"), "them": ("him", "her")}


def test_study_code_stays_under_80_lines():
    """The example is meant to be read in two minutes: every .py line of the package counts."""
    lines = sum(len(p.read_text().splitlines()) for p in STUDY_DIR.glob("*.py"))
    assert lines < 80, f"studies/example_they has {lines} lines of code; the example must stay under 80"


@pytest.mark.parametrize("command", [["-m", "studies", "example_they", "--help"],
                                     ["-m", "studies.example_they", "--help"]])
def test_help_from_both_entry_points(command):
    done = subprocess.run([sys.executable, *command], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "--frames" in done.stdout and "--no-bayes" in done.stdout


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("example_they")
    cache = tmp_path_factory.mktemp("cache")   # an empty cache: the study scores everything itself
    assert main(["--frames", str(N_FRAMES), "--no-bayes", "--out", str(out),
                 "--cache-dir", str(cache)]) == 0
    results = json.loads((out / "results.json").read_text())
    return results, pd.read_csv(out / "item_choices.csv")


@pytest.fixture(scope="module")
def direct_p_they():
    """{item: P(they-form)} computed directly from the model's continuation scores."""
    from models.causal import score_continuations

    stimuli = pd.read_csv(STIMULI, sep="\t", keep_default_na=False)
    frames = sorted(stimuli["frame"].unique())[:N_FRAMES]
    names = stimuli[stimuli["antecedent_type"].isin(["gendered_name", "nongendered_name"])
                    & stimuli["frame"].isin(frames)]
    forms = [(*RIVALS[t], t) for t in names["target_form"]]   # the they-form last
    prefixes = [p for p, f in zip(names["prefix"], forms) for _ in f]
    continuations = [" " + w for f in forms for w in f]
    logprob = score_continuations(prefixes, continuations, lm="smollm2-135m",
                                  use_cache=False)["logprob"].to_numpy().reshape(-1, 3)
    p = np.exp(logprob[:, 2]) / np.exp(logprob).sum(axis=1)
    return dict(zip(names["item"], p))


@pytest.mark.slow
@pytest.mark.needs_model
@pytest.mark.needs_r
class TestEndToEnd:
    def test_item_probabilities_equal_direct_scoring(self, study_run, direct_p_they):
        _, items = study_run
        assert sorted(items["item"]) == sorted(direct_p_they)
        expected = items["item"].map(direct_p_they)
        # float32 forward passes over differently composed batches agree to ~1e-6 relative
        np.testing.assert_allclose(items["p_they"], expected, rtol=1e-5)
        np.testing.assert_allclose(items["they_logodds"], np.log(expected / (1 - expected)),
                                   rtol=1e-4)

    def test_cell_means_table(self, study_run, direct_p_they):
        results, _ = study_run
        table = pd.DataFrame(results["tables"]["they_by_name"]).set_index("antecedent_type")
        assert table["n"].to_dict() == {"gendered_name": N_FRAMES, "nongendered_name": N_FRAMES}
        for kind in ("gendered_name", "nongendered_name"):
            p = np.array([v for k, v in direct_p_they.items() if k.endswith("-" + kind)])
            assert table.loc[kind, "mean_p_they"] == pytest.approx(p.mean(), rel=1e-5)
            assert table.loc[kind, "mean_logodds"] == pytest.approx(np.log(p / (1 - p)).mean(),
                                                                    rel=1e-4)

    def test_lme4_fit_equals_the_balanced_paired_design(self, study_run):
        """`they_logodds ~ gendered + (1|frame)` with one gendered and one non-gendered item per
        frame. Derivation: with V = s2*I + t2*(block of ones per frame), V maps the columns
        (1, gendered) into their own span, so GLS = OLS for every (s2, t2) and the estimate is
        the mean paired difference d = y_gendered - y_nongendered. Var(d_f) = 2*s2 (the frame
        effect cancels). For a balanced design REML gives the ANOVA estimates, truncated at 0:
        MS_error = var(d)/2, MS_frame = 2*var(frame means); t2 = (MS_frame - MS_error)/2.
        If t2 > 0: s2 = MS_error, so SE = sd(d)/sqrt(n), the paired t-test, df = n - 1.
        If t2 = 0 (a singular fit): s2 = RSS/(2n - 2) of the OLS fit, SE = sqrt(2*s2/n),
        df = 2n - 2."""
        results, items = study_run
        wide = items.pivot(index="frame", columns="antecedent_type", values="they_logodds")
        g, ng = wide["gendered_name"].to_numpy(), wide["nongendered_name"].to_numpy()
        d, n = g - ng, len(g)
        ms_error = d.var(ddof=1) / 2
        ms_frame = 2 * ((g + ng) / 2).var(ddof=1)
        row = next(r for r in results["tables"]["lmm"]
                   if r["backend"] == "lme4" and r["term"] == "gendered")
        assert row["estimate"] == pytest.approx(d.mean(), rel=1e-6)
        if ms_frame > ms_error:
            paired = stats.ttest_rel(g, ng)
            assert row["se"] == pytest.approx(d.std(ddof=1) / np.sqrt(n), rel=1e-4)
            assert row["stat"] == pytest.approx(paired.statistic, rel=1e-4)
            assert row["p_value"] == pytest.approx(paired.pvalue, rel=1e-3)
            assert row["df"] == pytest.approx(n - 1, rel=1e-3)
        else:
            rss = ((g - g.mean()) ** 2).sum() + ((ng - ng.mean()) ** 2).sum()
            assert row["se"] == pytest.approx(np.sqrt(2 * rss / (2 * n - 2) / n), rel=1e-4)
            assert row["df"] == pytest.approx(2 * n - 2, rel=1e-3)

    def test_every_exclusion_is_counted(self, study_run):
        results, items = study_run
        counts = {e["reason"]: (e["n"], e["kind"]) for e in results["exclusions"]}
        stimuli = pd.read_csv(STIMULI, sep="\t")
        names = stimuli["antecedent_type"].str.endswith("_name")
        # the design's choices (the name conditions, --frames) are selections, not exclusions
        assert counts["not a name"] == (int((~names).sum()), "selected by design")  # 335 - 80
        assert counts["frame beyond --frames"] == (int(names.sum()) - 2 * N_FRAMES,
                                                   "selected by design")
        assert counts["a form could not be scored"] == (0, "excluded")
        assert len(items) == 2 * N_FRAMES

    def test_report_words_selections_apart_and_explains_the_formula(self, study_run):
        results, _ = study_run
        out = Path(results["provenance"]["command"].split("--out ")[1].split()[0])
        report = (out / "report.md").read_text()
        assert "Excluded in total: 0 stimuli." in report
        assert f"left out: {335 - 2 * N_FRAMES} stimuli." in report
        tex = (out / "tables" / "lmm.tex").read_text()
        # the model in words in the table, its formula in the methods section (issue 43)
        assert r"\caption{The they-form" in tex and "log-odds regressed on a gendered name, " \
            "with random intercepts for frames}" in tex
        assert "- lmm: `they_logodds ~ gendered + (1|frame)`" in report

    def test_provenance_command_reruns_the_study(self, study_run):
        results, _ = study_run
        command = results["provenance"]["command"]
        assert command.startswith(f"python -m studies.example_they --frames {N_FRAMES} --no-bayes")
        assert len(results["provenance"]["git"]["commit"]) == 40

    def test_a_second_run_reuses_the_lme4_fit_from_the_fit_cache(self, study_run, tmp_path):
        """The fit cache is on for a study written from the guide (run.fit passes run.cache)."""
        results, _ = study_run
        cache = results["provenance"]["command"].split("--cache-dir ")[1].split()[0]
        assert main(["--frames", str(N_FRAMES), "--no-bayes", "--out", str(tmp_path / "again"),
                     "--cache-dir", cache]) == 0
        again = json.loads((tmp_path / "again" / "results.json").read_text())
        assert again["tables"]["lmm"] == results["tables"]["lmm"]
        report = (tmp_path / "again" / "report.md").read_text()
        assert "reused from the fit cache" in report and "they log-odds LMM [lme4]" in report
