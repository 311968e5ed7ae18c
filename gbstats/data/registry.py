"""The dataset registry: source, pinned commit, files, checksums, license, loader.

Each public dataset the studies use has one entry. Files live under
`<data dir>/<name>/<local path>`; `gbstats data fetch NAME` downloads them from
the source repository at the pinned commit and verifies every sha256.
"""
from __future__ import annotations

import hashlib
import importlib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from gbstats.config import resolve_data_dir
from gbstats.errors import ChecksumError, DataValidationError, UnknownNameError
from gbstats.exclusions import ExclusionLog


@dataclass(frozen=True)
class DataFile:
    local: str      # path under <data dir>/<dataset>/
    source: str     # path in the source repository
    sha256: str


@dataclass(frozen=True)
class DatasetEntry:
    name: str
    repo: str
    commit: str
    license: str
    files: tuple[DataFile, ...]
    loader: str                 # "module:function"
    description: str = ""

    def folder(self, data_dir=None) -> Path:
        return resolve_data_dir(data_dir) / self.name

    def source_url(self, file: DataFile, base: str = "https://raw.githubusercontent.com") -> str:
        return f"{base.rstrip('/')}/{self.repo}/{self.commit}/{file.source}"

    def status(self, data_dir=None) -> dict:
        """Which files are missing, present and verified, or corrupt."""
        folder = self.folder(data_dir)
        missing, corrupt = [], []
        for f in self.files:
            p = folder / f.local
            if not p.exists():
                missing.append(f.local)
            elif sha256_of(p) != f.sha256:
                corrupt.append(f.local)
        state = "missing" if missing else ("corrupt" if corrupt else "verified")
        return {"name": self.name, "status": state, "folder": str(folder),
                "n_files": len(self.files), "missing": missing, "corrupt": corrupt}

    def verify(self, data_dir=None) -> Path:
        """Raise unless every file is present with its pinned checksum."""
        folder = self.folder(data_dir)
        for f in self.files:
            p = folder / f.local
            if not p.exists():
                raise DataValidationError(
                    f"dataset {self.name!r} is not in the data directory", source=str(p),
                    expected=f"{len(self.files)} files under {folder}",
                    found="the file is missing. Run `gbstats data fetch "
                          f"{self.name}` or point --data-dir / GBSTATS_DATA at a copy")
            digest = sha256_of(p)
            if digest != f.sha256:
                raise ChecksumError(
                    f"{p}: checksum mismatch for dataset {self.name!r}: expected sha256 "
                    f"{f.sha256}, found {digest}. The file is corrupted or a different "
                    f"version; re-fetch it with `gbstats data fetch {self.name} --force`.")
        return folder


@dataclass
class LoadedDataset:
    """What every loader returns: named long tables plus the exclusion log."""

    name: str
    tables: dict[str, pd.DataFrame]
    main: str
    exclusions: ExclusionLog = field(default_factory=ExclusionLog)
    participant_column: str | None = None

    @property
    def table(self) -> pd.DataFrame:
        return self.tables[self.main]

    def summary(self) -> dict:
        t = self.table
        n_part = (int(t[self.participant_column].nunique())
                  if self.participant_column and self.participant_column in t else None)
        return {"name": self.name, "main_table": self.main,
                "n_rows": int(t.shape[0]), "n_columns": int(t.shape[1]),
                "n_participants": n_part,
                "tables": {k: {"n_rows": int(v.shape[0]), "columns": list(map(str, v.columns))}
                           for k, v in self.tables.items()},
                "exclusions": [{"reason": e.reason, "n": e.n, "unit": e.unit,
                                "stage": e.stage} for e in self.exclusions.entries]}


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def _entry(name, repo, commit, license, files, loader=None, description=""):
    return DatasetEntry(name, repo, commit, license,
                        tuple(DataFile(*f) for f in files),
                        loader or f"gbstats.data.{name}:load", description)


DATASETS: dict[str, DatasetEntry] = {
    "papineau2022": _entry(
        "papineau2022", "BranPap/gender_ideology", "21384dcf96f7385fa3a85c5d2a052733e47ef2b8", "MIT",
        [
            ("dems_prod_men-merged.csv", "results/exploratory/3_Production/dems_prod_men-merged.csv", "ac82128dfd591b660e50b190c4458bcb25b622e4d265c180c2524955f48dfcb9"),
            ("prod_dems-merged.csv", "results/exploratory/3_Production/prod_dems-merged.csv", "2290fd0f930b355faae4b56f12b19a0eeb261e95e0c1a579ea33e148a0bfd490"),
            ("prod_repubs-merged.csv", "results/exploratory/3_Production/prod_repubs-merged.csv", "a48f02c9a7049d97a8c9a34155d3e11842ab0f50cbd1528d0158ce6101f7946a"),
            ("reps_prod_men-merged.csv", "results/exploratory/3_Production/reps_prod_men-merged.csv", "46ffe2460556ff2d3875cb63d1e3cad829f083a2ec1073e42233d58871a85628"),
        ],
    ),
    "watson2023": _entry(
        "watson2023", "juliawatson/bert-social-attitudes", "9974486a0987612d108abb7837b87153edc2269b", "MIT",
        [
            ("bookcorpus_counts.csv", "papineau/mlm_scoring/bookcorpus_counts.csv", "70e896ee3b7da42413edb9a9fb1fbf575525fd20b774934d49f1cae34c8223a0"),
            ("wiki_counts.csv", "papineau/mlm_scoring/wiki_counts.csv", "8975cefd263b07ea1cc20c7b43dc022224703ba4bb8342dee78b3e5777db2572"),
        ],
    ),
    "cog_gb_eval2023": _entry(
        "cog_gb_eval2023", "SLAB-NLP/Cog-GB-Eval", "e1c06f7c87bf426cb277f704beacb8e9a8392597", "none stated",
        [
            ("humans/maze/BUG.csv", "experiment_results/processed/humans/MAZE/BUG/correct_answers.csv", "9031e12453edd4b9b8a74ec155a5c6a67c69c8d1f196fc4023d544db903b7f30"),
            ("humans/maze/wino.csv", "experiment_results/processed/humans/MAZE/wino/correct_answers.csv", "f301c9f6c7788a8125638e20e4642b4f9d3d5dd3d36fc1bc46b14d85d036c895"),
            ("humans/qa/BUG.csv", "experiment_results/raw/humans/QA/BUG.csv", "90539c20afcd91a9d4990d52d8f8ce81d45058b2465d26f20ebeacdcc742847a"),
            ("humans/qa/wino.csv", "experiment_results/raw/humans/QA/wino.csv", "313ba9daa2dd80d4ddb5cadf8ac54371f71f6d916cb4c363317b70ecaf5c78d3"),
            ("humans/qa_calibration/BUG.csv", "experiment_results/raw/humans/enrollment_QA/BUG.csv", "1f1aa80502fd8c93f5f9d2fff7af7c579355891878d82ed83d6c593eb6e99b4e"),
            ("humans/qa_calibration/wino.csv", "experiment_results/raw/humans/enrollment_QA/wino.csv", "986a5ae88fc4e686f9bd1dcae704684b80f5046295b7d873af811e73e62ffcd9"),
            ("models/SpanBERT/BUG.jsonl", "experiment_results/raw/models/SpanBERT/BUG.jsonl", "64d3419ff606eeb32f20c6ae2d71165c6913ac6ab8fa863d8054138bc8bead68"),
            ("models/SpanBERT/wino.jsonl", "experiment_results/raw/models/SpanBERT/wino.jsonl", "c88a330a97b998770ae4bd3ab8a212b738bddfabee8510e66ecb0d22a8235295"),
            ("models/s2e/BUG.jsonl", "experiment_results/raw/models/s2e/BUG.jsonl", "c2516e300908a7f64f96948cf1dba2d4bc3f41d78816a147ba209ece1007a75e"),
            ("models/s2e/wino.jsonl", "experiment_results/raw/models/s2e/wino.jsonl", "d76d0458768053e68ec78aa0894ba0720fa6e638dce489e8a1bd518e998d46aa"),
            ("original_data/BUG_ids_mapping.json", "original_data/BUG_ids_mapping.json", "a338ee028ff9a7f5c16bea73b42e4c0d14d0942a93ee9b74374806b94b748960"),
            ("original_data/cpsaat11.csv", "original_data/cpsaat11.csv", "9dfee477e382a4f77ded6f51ad289b4ebf561b12e0bb171e1f197e4f3ebc91c1"),
            ("original_data/gold_BUG.csv", "original_data/gold_BUG.csv", "eb862d4cedf389351f7661f0ed37478532444b928058bbaf3f91cb1f13867125"),
            ("original_data/occupations-stats.tsv", "original_data/occupations-stats.tsv", "3f7f37c16381a70571356982ea7fe613ac700ad04a6d3b19b9f2be18248df567"),
            ("original_data/wino_combined.csv", "original_data/wino_combined.csv", "c6a1561d97e3a0f318c1ec1270318ffed46d56c3a8f8788c6be8a4ca10b8ad93"),
            ("original_data/winogender_original.tsv", "original_data/winogender_original.tsv", "bd69da16bf228cb8df63fd0843aec2d8b5c36a7f21bf8c7b168bcc83932556c8"),
        ],
    ),
    "ruff2024": _entry(
        "ruff2024", "uds-lsv/pronoun-use-fidelity", "7de55d2696c08e0f505ff145628658241539b4f9", "see LICENSE",
        [
            ("data.zip", "data.zip", "2538e3f899612e97c5657f1b19941659f28f22816f73a7e0bd974f18aa9383f0"),
        ],
    ),
    "winopron2024": _entry(
        "winopron2024", "uds-lsv/winopron", "ed71655b445a0bb71dc1d36e41eb3156b68303af", "see LICENSE",
        [
            ("data.zip", "data.zip", "d1acbf1f411dc9ec5f149c95c751667cf1c8338562a323b839d7113f2ca8b673"),
        ],
    ),
    "winogender2018": _entry(
        "winogender2018", "rudinger/winogender-schemas", "1c7f8b481ad8a234b41e9f76a424d6e856e13f7f", "MIT",
        [
            ("all_sentences.tsv", "data/all_sentences.tsv", "bd69da16bf228cb8df63fd0843aec2d8b5c36a7f21bf8c7b168bcc83932556c8"),
            ("occupations-stats.tsv", "data/occupations-stats.tsv", "3f7f37c16381a70571356982ea7fe613ac700ad04a6d3b19b9f2be18248df567"),
            ("templates.tsv", "data/templates.tsv", "496f2e2dc77296bcebcdd8865a8dc5715ce22b772de9abb5f531d5b3114c48a0"),
        ],
    ),
    "winobias2018": _entry(
        "winobias2018", "uclanlp/corefBias", "0bce984dd081bbc10b0622f326727a024c607895", "see LICENSE",
        [
            ("anti_stereotyped_type1.txt.dev", "WinoBias/wino/data/anti_stereotyped_type1.txt.dev", "a4e0ebae344e78b56f657a42e8ae684b9db7747d177c5e7149c0907ebb7f3bf6"),
            ("anti_stereotyped_type1.txt.test", "WinoBias/wino/data/anti_stereotyped_type1.txt.test", "331db5bd74bfefebf146a60b67645152a4a1991570d2a56f57154103ac361dd2"),
            ("anti_stereotyped_type2.txt.dev", "WinoBias/wino/data/anti_stereotyped_type2.txt.dev", "763ad829ad724f9a85ead689ba8ca69072020cb1238def6210f0fc6a47b97e59"),
            ("anti_stereotyped_type2.txt.test", "WinoBias/wino/data/anti_stereotyped_type2.txt.test", "336571ac1ea8c06cd2aba8e5dd2bd98e00acc0c48da3e4ec5ec7e54eb2633a8f"),
            ("female_occupations.txt", "WinoBias/wino/data/female_occupations.txt", "693bff12286c2c1d46c7d4d45a44a631574710c30b39c1a3001bb7bdebb44ed8"),
            ("male_occupations.txt", "WinoBias/wino/data/male_occupations.txt", "6b82d88847b69d56d207a0c396e9830b031890de585e916e6b4e9bc50672657e"),
            ("pro_stereotyped_type1.txt.dev", "WinoBias/wino/data/pro_stereotyped_type1.txt.dev", "dd55a0d220fe4c0ceb63dd4648223fb4fe1a58d5ad95c116a002ad24b0e292a5"),
            ("pro_stereotyped_type1.txt.test", "WinoBias/wino/data/pro_stereotyped_type1.txt.test", "db7838907238a758eeb5779e48f38c013b892910d6fe864456c59f04245c6689"),
            ("pro_stereotyped_type2.txt.dev", "WinoBias/wino/data/pro_stereotyped_type2.txt.dev", "8f0250de723cea9328e3eaf7169e07936f01aa5909ce7aa580db66eb803f4e86"),
            ("pro_stereotyped_type2.txt.test", "WinoBias/wino/data/pro_stereotyped_type2.txt.test", "ea1c1fd94fa612e3cc44d7fa3cc4cb76021bb63fdf94f9826f430051e9052438"),
        ],
    ),
    "genda_lens2023": _entry(
        "genda_lens2023", "DaDebias/genda-lens", "26dc297cff0566f6743f932511a4a2702eae6d17", "MIT",
        [
            ("DaWinoBias_anti_stereotyped_evalda.txt", "genda_lens/data/DaWinoBias_anti_stereotyped_evalda.txt", "bc4e1f45b67609cc58b63f172c0d266a752135d6022cffac9122d29209d35458"),
            ("DaWinoBias_pro_stereotyped_evalda.txt", "genda_lens/data/DaWinoBias_pro_stereotyped_evalda.txt", "f9a42fa1d798adb48a9c54af20e94c502bc8bb536cf75277f3e78d7e9a4f0d97"),
            ("abc_fem_sents.txt", "genda_lens/data/abc_fem_sents.txt", "c7b4b98ebca5b8cf522f2606267bbe49dac1d4a48b1e5f42f1fedb7e564ebae1"),
            ("abc_male_sents.txt", "genda_lens/data/abc_male_sents.txt", "129b6eb847c0109f85ef0cc8c04c83fcb3bf5d28e66dbf86bed2ca8145bc15b8"),
            ("occupations/abc_all.txt", "abc-adaption/data/abc_all.txt", "684412e8a5b99544ae1e65f8d714084f6bddae1ba40865088b6dbacf168b89cd"),
            ("occupations/abc_female.txt", "abc-adaption/data/abc_female.txt", "44088987108081b45b9485e57daa0eae9701aa9c79ddc084dee336630f431a8e"),
            ("occupations/abc_male.txt", "abc-adaption/data/abc_male.txt", "b8823b169e1a844fe5a97e1eadf9eb9fb69c23347340c87aed8ea9307b2cd5ad"),
            ("occupations/wino_fem.txt", "abc-adaption/data/wino_fem.txt", "a2608c20c2ad298c1a993430f4f9c7a6eba61afe89fd634371f6985844e36dfa"),
            ("occupations/wino_male.txt", "abc-adaption/data/wino_male.txt", "daec34e04f0e11f6cfea674fb6dabd24f10e73b6ac239852ebdb8d90d36b6320"),
        ],
    ),
    # The LICENSE (MIT) sits in the source repository from commit b6896f60e256 on;
    # the stimuli file is pinned at the commit Watson et al.'s analysis used.
    "camilliere2021": _entry(
        "camilliere2021", "jules-watson/language-ideologies-revisions",
        "4dad0bb2b9bc033d68daecbfd035c9d4d947c33b", "MIT",
        [
            ("camilliere_stimuli.csv", "data/camilliere_stimuli.csv", "f7d2e9731de2df2ea92afc4e2c9c79b6765cc39d3a01aacd8be8b9566ccf767b"),
        ],
    ),
    "gardner2024": _entry(
        "gardner2024", "bethanyhgardner/gender-bias-names", "27800502289faa51d2dfd91f72b61ef5086739f6",
        "none stated (no LICENSE file in the repository); de-identified replication data archived "
        "with the article, Zenodo DOI 10.5281/zenodo.10293754",
        [
            ("exp0_data_census.csv", "data/exp0_data_census.csv", "6b8cc226d29341853afe28c4fd3eb4e3e30146719ea57a1619156f08b7ed105c"),
            ("exp0_data_norming.csv", "data/exp0_data_norming.csv", "e3bcd9ce7377c0c06f2f9c61be6081c84a5711e99f34e6342a303112ee7e2b12"),
            ("exp1_data.csv", "data/exp1_data.csv", "4d9145909b8464a7192b5952b831ab9811f56baa042682cdf8617cf3dedc88ec"),
            ("exp1_data_about.txt", "data/exp1_data_about.txt", "3d2a429b570c4b26421bf804bbd0b5247f94e93adf22bffce5ab4ad58a195889"),
            ("exp1_stimuli.xlsx", "materials/exp1_stimuli.xlsx", "fb019899efb9382b6cf2c7eb3b138d7b8ecd141d9c293c3d8dc3676af0dac6b6"),
            ("exp2_data.csv", "data/exp2_data.csv", "5fc0cb3727b92b8a528e88113781a8c3054a906a7ceb3c76ba5f1d56a34c0baf"),
            ("exp2_data_about.txt", "data/exp2_data_about.txt", "5c01ee2e6ffb0c60a3e58334ddbff94afc8426d2312b0fabf730fcb68f13be4e"),
            ("exp2_stimuli.xlsx", "materials/exp2_stimuli.xlsx", "76fa87ed000a433eed4274434d1bb260bc9fbffd9823ee606a979d91e5d412ad"),
            ("exp3-4_stimuli.xlsx", "materials/exp3-4_stimuli.xlsx", "301410c5878c6c75ff530fad05f7433493ca0fac6d256d06b1f132b75993fabb"),
            ("exp3_data.csv", "data/exp3_data.csv", "2cbca89ac8b853cba5eda64c1a704e140fdb3151006bc8cb48c781a3cada5a67"),
            ("exp3_data_about.txt", "data/exp3_data_about.txt", "372af7813a6da66a450e10e8bdb628a6d842a2507a83ad2327f19655c5db26a6"),
            ("exp4_data.csv", "data/exp4_data.csv", "2478866cc00fa3d2780866d63fc374294b0252a161996053eca81d25f17f3412"),
            ("exp4_data_about.txt", "data/exp4_data_about.txt", "277e428869d2dbe97eda5efafc19b480b7f5a30fa1c435b32359de6249f1f2b7"),
        ],
    ),
    # No LICENSE file in the source repository (checked at the pinned commit): the
    # de-identified data are shared by the author with the analysis code; the same
    # experiments are chapters 1-2 of Gardner's 2023 Vanderbilt dissertation (Zenodo).
    "gardner2023": _entry(
        "gardner2023", "bethanygardner/Singular-They-Public", "20f628f289f8bc2f3561352acbef51379f0d157a",
        "none stated (no LICENSE file in the repository); de-identified data shared by the author "
        "with the analysis code",
        [
            ("exp1a_data.csv", "data/exp1a_data.csv", "ba98a39ddf3fcb12b1f279bcc64bd46795fd622a76174c18f4a3f344463dc9cf"),
            ("exp1a_data_readme.txt", "data/exp1a_data_readme.txt", "83002ca022f0b2a792cd8c61b1e6a44354751dac26e80983cab077e5ec932410"),
            ("exp1b_data.csv", "data/exp1b_data.csv", "f74f998dd1662e428460253f62768f9f1b3a13856a60125ab0da8ddbdd964cf2"),
            ("exp1b_data_readme.txt", "data/exp1b_data_readme.txt", "3cbe9004da5687675fd782eebe81f0dad4179e128f9dd6ffa850b6ca6b566e5d"),
            ("exp2_data.csv", "data/exp2_data.csv", "8664dba6a570f6478b7b72313771ca130ba3cc3974c8f0c5e3c8645eb4366e91"),
            ("exp2_data_readme.txt", "data/exp2_data_readme.txt", "1589a2d1b87f116d533075bdacea054a824236aa0745b00f1f3e323a10c64424"),
            ("materials/characters.xlsx", "materials/characters.xlsx", "1b0e6699756fb8d2e7692bcc54a693f6f8355412bdf6b1049d06503ba3d18640"),
            ("materials/exp1_qualtrics.docx", "materials/exp1_qualtrics.docx", "973f418266be7e8ddd66724b8907ec67e0ea6239573df2bdf9064e19453dfb1e"),
            ("materials/exp1b_qualtrics.docx", "materials/exp1b_qualtrics.docx", "bfec8eed8df7cf0491745b498e1bb8f9135554ceea75e6636880c97808c44c6a"),
            ("materials/exp2_PSAs-biographies.pdf", "materials/exp2_PSAs-biographies.pdf", "1396d9accc787100a648a80bfa6bc56804970b6c87cf62f502b1f00e51eca18c"),
            ("materials/materials_readme.txt", "materials/materials_readme.txt", "c0975d4857509d4ed03139e51bcea0da0b15ffd779675836db7864a9a9eb1c35"),
            ("materials/exp2/main.js", "materials/exp2_PCIbex/data_includes/main.js", "83cd8486edd5760ce2cac0cef840310b3e8137d32a9ae21cc7f63a54031a5eb1"),
            ("materials/exp2/psa_neutral.html", "materials/exp2_PCIbex/chunk_includes/psa_neutral.html", "a3f92e95be69297ff4921003b994071555f5f14fcc5aacc4a33690e3ffee63a5"),
            ("materials/exp2/psa_pronoun.html", "materials/exp2_PCIbex/chunk_includes/psa_pronoun.html", "73417e4df207f0865a250b92affaedc822d168c408435d26800b66760c58862b"),
            ("materials/exp2/stimuli_characters.csv", "materials/exp2_PCIbex/chunk_includes/stimuli_characters.csv", "f51ada5d33977e0abd66b4882dfb9a0be2bdcb408b788584c71129c3d1eb121a"),
            ("materials/exp2/stimuli_training.csv", "materials/exp2_PCIbex/chunk_includes/stimuli_training.csv", "5e48a3d2549e49003d6690628ba1c87a7940525e08441e0e7604456dc42f2a6d"),
            ("materials/exp2/story1_she.html", "materials/exp2_PCIbex/chunk_includes/story1_she.html", "1a1070be3e7507515d136bff23f4c502646e1657393a42b11197f3cd172777b9"),
            ("materials/exp2/story1_they_fem.html", "materials/exp2_PCIbex/chunk_includes/story1_they_fem.html", "46829eb2c53daad467570f42e1e143a53963a43e6fe622d33f072c698dca12bf"),
            ("materials/exp2/story2_he.html", "materials/exp2_PCIbex/chunk_includes/story2_he.html", "56d32dd8a75b5e5448936e07db229b2d52b4ba18a22b1343499e9c2a99480206"),
            ("materials/exp2/story2_they_masc.html", "materials/exp2_PCIbex/chunk_includes/story2_they_masc.html", "ec2b40ad805f1ce080a7d1e72e1cfddbac2104f6349abf1a0577a696e00d9f40"),
        ],
    ),
}

_DESCRIPTIONS = {
    "papineau2022": "Role-noun production experiment (Papineau, Podesva & Degen 2022)",
    "watson2023": "Role-noun unigram counts, Wikipedia + BookCorpus (Watson et al. 2023)",
    "cog_gb_eval2023": "Humans under time pressure vs coreference models (Lior & Stanovsky 2023)",
    "ruff2024": "Pronoun use fidelity templates (Gautam et al. 2024)",
    "winopron2024": "WinoPron templates (Gautam et al. 2024)",
    "winogender2018": "Winogender schemas (Rudinger et al. 2018)",
    "winobias2018": "WinoBias (Zhao et al. 2018)",
    "genda_lens2023": "Danish DaWinoBias and ABC (GenDa Lens 2023)",
    "camilliere2021": "Singular-they stimuli, 40 items x 8 conditions + 15 inanimate "
                      "(Camilliere et al. 2021, as published by Watson et al. 2023)",
    "gardner2024": "Pronoun choice and memory after first, last and full names (Gardner & Brown-Schmidt 2024)",
    "gardner2023": "Memory for and production of singular they: Exp 1A, 1B, 2 (Gardner 2023)",
}
DATASETS = {k: DatasetEntry(v.name, v.repo, v.commit, v.license, v.files, v.loader,
                            _DESCRIPTIONS[k]) for k, v in DATASETS.items()}


def get_dataset(name: str) -> DatasetEntry:
    try:
        return DATASETS[name]
    except KeyError:
        raise UnknownNameError("dataset", name, list(DATASETS)) from None


def load_dataset(name: str, data_dir=None, *, verify: bool = True) -> LoadedDataset:
    """Verify the files of dataset `name` and run its loader."""
    entry = get_dataset(name)
    folder = entry.verify(data_dir) if verify else entry.folder(data_dir)
    module_name, func_name = entry.loader.split(":")
    loader = getattr(importlib.import_module(module_name), func_name)
    return loader(folder)
