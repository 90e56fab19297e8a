#!/usr/bin/env bash
# Prepares a working checkout: a virtual environment in .venv with torch 2.13.0
# (the build pip's configured index offers: README.md, "Which torch build") and
# the other dependencies, each pinned in scripts/constraints.txt, the package installed in
# editable mode (for the torch.backends entry point), and the C++ extension
# built in place. Every step is skipped when already done, and the build is
# incremental (ninja), so running it again is cheap.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
CONSTRAINTS="$ROOT/scripts/constraints.txt"
PIP_QUIET=(--quiet --disable-pip-version-check)
PIP=("${PIP_QUIET[@]}" -c "$CONSTRAINTS")

# Prerequisites, checked before anything is installed or built, each with what to install when missing.
# Python 3.11: the pinned numpy, networkx and triton need it (networkx excludes 3.14.1).
PYTHON_OK='import sys; sys.exit(sys.version_info < (3, 11) or sys.version_info[:3] == (3, 14, 1))'
missing=()
command -v python3 >/dev/null 2>&1 || missing+=("python3, 3.11 or newer (Debian/Ubuntu: apt-get install python3)")
if command -v python3 >/dev/null 2>&1; then
  python3 -c "$PYTHON_OK" || missing+=("python3 3.11 or newer, not 3.14.1 (found $(python3 --version 2>&1 || true))")
  python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=("the venv module (Debian/Ubuntu: apt-get install python3-venv)")
  python3 -c 'import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null \
    || missing+=("Python's headers, Python.h (Debian/Ubuntu: apt-get install python3-dev)")
fi
# The C++ compilers in use: $CXX where set (PyTorch's extension build, torch.compile and the runtime's own tests all
# take it); else c++ (which compiles the extension), g++ (torch.compile, the runtime's tests) and the compiler Python
# was built with (which links the extension).
compilers=()
if [ -n "${CXX:-}" ]; then
  compilers+=("$CXX")
else
  compilers+=(c++ g++)
  python_cxx="$(python3 -c 'import sysconfig; print((sysconfig.get_config_var("CXX") or "").split()[0])' 2>/dev/null || true)"
  if [ -n "$python_cxx" ] && [ "$python_cxx" != c++ ] && [ "$python_cxx" != g++ ]; then compilers+=("$python_cxx"); fi
fi
CXX_CHECK="$(mktemp -d)"
printf '#include <concepts>\nint main() { return 0; }\n' > "$CXX_CHECK/check.cpp"
for compiler in "${compilers[@]}"; do
  if ! command -v "$compiler" >/dev/null 2>&1; then
    missing+=("a C++ compiler, $compiler (Debian/Ubuntu: apt-get install g++)")
  elif ! "$compiler" -std=c++20 -o "$CXX_CHECK/check" "$CXX_CHECK/check.cpp" >/dev/null 2>&1; then
    missing+=("a C++ compiler with C++20 support, as PyTorch's extension build and torch.compile use (g++ 10 or newer; found $compiler: $("$compiler" --version 2>&1 | head -n 1 || true))")
  fi
done
rm -rf "$CXX_CHECK"
if [ ${#missing[@]} -gt 0 ]; then
  echo "[bootstrap] missing prerequisites:" >&2
  for item in "${missing[@]}"; do echo "  - $item" >&2; done
  exit 1
fi

# One set-up at a time per checkout: two would install into one .venv and build into one build/ together.
mkdir -p "$ROOT/build"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$ROOT/build/.bootstrap.lock"
  flock -n 9 || { echo "[bootstrap] waiting for another set-up of this checkout to finish"; flock 9; }
fi

# A .venv left half made (an interrupted run: no pip) or made by an older Python is made again.
if ! { [ -x "$PY" ] && "$PY" -c "$PYTHON_OK" 2>/dev/null && "$PY" -m pip --version >/dev/null 2>&1; }; then
  if [ -e "$VENV" ]; then
    echo "[bootstrap] making $VENV again: its Python is missing or older than 3.11, or it has no pip"
  else
    echo "[bootstrap] creating $VENV"
  fi
  python3 -m venv --clear "$VENV"
fi

# Every version comes from scripts/constraints.txt. torch is pinned above all: an
# unpinned torch would let pip pick another release. Which build of torch 2.13.0
# (CPU or CUDA) pip takes is pip's own index setting (README.md). The CUDA build
# requires a triton of its own (3.7.1), so triton's pin is left out of this
# step: with the CUDA build, torch's triton is kept; with the CPU build, which
# needs none, the optional step below installs the pinned one. The step runs
# again when the constraints changed, bringing an older .venv to the new pins.
DEPENDENCIES_STAMP="$VENV/.torch_mydev-constraints.sha256"
constraints_digest="$(sha256sum "$CONSTRAINTS" | cut -d' ' -f1)"
if [ "$(cat "$DEPENDENCIES_STAMP" 2>/dev/null)" != "$constraints_digest" ] \
   || ! TORCH_DEVICE_BACKEND_AUTOLOAD=0 "$PY" -c "import torch, numpy, pybind11, pytest, expecttest, setuptools; assert torch.__version__.startswith('2.13.0')" 2>/dev/null; then
  echo "[bootstrap] installing torch==2.13.0 and the other dependencies"
  # The venv's pip is whatever the system's ensurepip had (Debian 12: 23.0.1, whose editable install would build
  # in an isolated environment without torch): the pinned one first.
  "$PY" -m pip install "${PIP[@]}" pip
  without_triton="$(mktemp)"
  grep -v '^triton==' "$CONSTRAINTS" > "$without_triton"
  "$PY" -m pip install "${PIP_QUIET[@]}" -c "$without_triton" torch numpy pybind11 setuptools pytest expecttest
  rm -f "$without_triton"
  if "$PY" -m pip show triton >/dev/null 2>&1 && [ -z "$("$PY" -m pip show torch 2>/dev/null | grep '^Requires:.*triton')" ]; then
    "$PY" -m pip install "${PIP[@]}" triton || echo "[bootstrap] triton could not be installed; its tests will be skipped" >&2
  fi
  echo "$constraints_digest" > "$DEPENDENCIES_STAMP"
  echo "[bootstrap] $(TORCH_DEVICE_BACKEND_AUTOLOAD=0 "$PY" -c "import torch; print(f'torch {torch.__version__}, ' + (f'CUDA build (CUDA {torch.version.cuda})' if torch.version.cuda else 'CPU build'))")"
fi

# Triton is optional: it runs torch.compile's Triton code generation for mydev
# (its tests skip with the reason where it is missing). An install that failed
# is not tried again until the constraints change.
TRITON_STAMP="$VENV/.torch_mydev-triton-unavailable.sha256"
if ! "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('triton') is None)" 2>/dev/null \
   && [ "$(cat "$TRITON_STAMP" 2>/dev/null)" != "$constraints_digest" ]; then
  echo "[bootstrap] installing triton (optional)"
  "$PY" -m pip install "${PIP[@]}" triton || {
    echo "[bootstrap] triton could not be installed; its tests will be skipped (tried again when scripts/constraints.txt changes)" >&2
    echo "$constraints_digest" > "$TRITON_STAMP"
  }
fi

if ! command -v ninja >/dev/null 2>&1 && [ ! -x "$VENV/bin/ninja" ]; then
  echo "[bootstrap] installing ninja"
  "$PY" -m pip install "${PIP[@]}" ninja
fi
export PATH="$VENV/bin:$PATH"

# The editable install records setup.py's package mapping and entry points, with
# the checkout's absolute path; it is redone whenever setup.py changed or the
# checkout moved since it was made.
SETUP_STAMP="$VENV/.torch_mydev-setup.sha256"
setup_digest="$({ cat "$ROOT/setup.py"; echo "$ROOT"; } | sha256sum | cut -d' ' -f1)"
if ! "$PY" -m pip show torch_mydev >/dev/null 2>&1 || [ "$(cat "$SETUP_STAMP" 2>/dev/null)" != "$setup_digest" ]; then
  echo "[bootstrap] registering torch_mydev (editable install)"
  MYDEV_SKIP_EXTENSION=1 "$PY" -m pip install "${PIP[@]}" --no-build-isolation --no-deps -e "$ROOT"
  echo "$setup_digest" > "$SETUP_STAMP"
fi

echo "[bootstrap] building the C++ extension (incremental)"
start=$(date +%s)
(cd "$ROOT" && MAX_JOBS="${MAX_JOBS:-$(nproc)}" "$PY" setup.py --quiet build_ext --build-lib "$ROOT/build/lib" \
   > "$ROOT/build/build_ext.log" 2>&1) || {
  cat "$ROOT/build/build_ext.log"
  echo "[bootstrap] build failed" >&2
  exit 1
}
# PyTorch's build links the extension again on every run; the package's copy is
# replaced only when the library changed, so that a run with nothing to build
# leaves it (and torch.compile's caches, keyed on it) alone. Running Python
# processes map it: the new file takes the old one's name by a rename (a new
# inode, never a moment without the file), and copies for other Pythons go.
library="_C$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
built="$ROOT/build/lib/torch_mydev/$library"
installed="$ROOT/torch_mydev/$library"
if ! cmp -s "$built" "$installed"; then
  cp "$built" "$installed.new.$$"
  mv -f "$installed.new.$$" "$installed"
fi
find "$ROOT/torch_mydev" -maxdepth 1 -name '_C.*.so' ! -name "$library" -delete
echo "[bootstrap] build done in $(( $(date +%s) - start ))s"
