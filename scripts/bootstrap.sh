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
missing=()
command -v python3 >/dev/null 2>&1 || missing+=("python3, 3.10 or newer (Debian/Ubuntu: apt-get install python3)")
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || missing+=("python3 3.10 or newer (found $(python3 --version 2>&1 || true))")
  python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=("the venv module (Debian/Ubuntu: apt-get install python3-venv)")
  python3 -c 'import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null \
    || missing+=("Python's headers, Python.h (Debian/Ubuntu: apt-get install python3-dev)")
fi
# The compiler PyTorch's extension builder will use: $CXX where set, else c++.
CXX_COMMAND="${CXX:-c++}"
CXX_CHECK="$(mktemp -d)"
printf '#include <concepts>\nint main() { return 0; }\n' > "$CXX_CHECK/check.cpp"
if ! command -v "$CXX_COMMAND" >/dev/null 2>&1; then
  missing+=("a C++ compiler, $CXX_COMMAND (Debian/Ubuntu: apt-get install g++)")
elif ! "$CXX_COMMAND" -std=c++20 -o "$CXX_CHECK/check" "$CXX_CHECK/check.cpp" >/dev/null 2>&1; then
  missing+=("a C++ compiler with C++20 support, as PyTorch's extension build and torch.compile use (g++ 10 or newer; found $CXX_COMMAND: $("$CXX_COMMAND" --version 2>&1 | head -n 1 || true))")
fi
rm -rf "$CXX_CHECK"
if [ ${#missing[@]} -gt 0 ]; then
  echo "[bootstrap] missing prerequisites:" >&2
  for item in "${missing[@]}"; do echo "  - $item" >&2; done
  exit 1
fi

if [ ! -x "$PY" ]; then
  echo "[bootstrap] creating $VENV"
  python3 -m venv "$VENV"
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
  without_triton="$(mktemp)"
  grep -v '^triton==' "$CONSTRAINTS" > "$without_triton"
  "$PY" -m pip install "${PIP_QUIET[@]}" -c "$without_triton" torch numpy pybind11 setuptools pytest expecttest
  rm -f "$without_triton"
  if "$PY" -m pip show triton >/dev/null 2>&1 && [ -z "$("$PY" -m pip show torch 2>/dev/null | grep '^Requires:.*triton')" ]; then
    "$PY" -m pip install "${PIP[@]}" triton || echo "[bootstrap] triton could not be installed; its tests will be skipped" >&2
  fi
  echo "$constraints_digest" > "$DEPENDENCIES_STAMP"
fi

# Triton is optional: it runs torch.compile's Triton code generation for mydev
# (its tests skip with the reason where it is missing).
if ! "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('triton') is None)" 2>/dev/null; then
  echo "[bootstrap] installing triton (optional)"
  "$PY" -m pip install "${PIP[@]}" triton || echo "[bootstrap] triton could not be installed; its tests will be skipped" >&2
fi

if ! command -v ninja >/dev/null 2>&1 && [ ! -x "$VENV/bin/ninja" ]; then
  echo "[bootstrap] installing ninja"
  "$PY" -m pip install "${PIP[@]}" ninja
fi
export PATH="$VENV/bin:$PATH"

# The editable install records setup.py's package mapping and entry points; it is
# redone whenever setup.py changed since it was made.
SETUP_STAMP="$VENV/.torch_mydev-setup.sha256"
setup_digest="$(sha256sum "$ROOT/setup.py" | cut -d' ' -f1)"
if ! "$PY" -m pip show torch_mydev >/dev/null 2>&1 || [ "$(cat "$SETUP_STAMP" 2>/dev/null)" != "$setup_digest" ]; then
  echo "[bootstrap] registering torch_mydev (editable install)"
  MYDEV_SKIP_EXTENSION=1 "$PY" -m pip install "${PIP[@]}" --no-build-isolation --no-deps -e "$ROOT"
  echo "$setup_digest" > "$SETUP_STAMP"
fi

echo "[bootstrap] building the C++ extension (incremental)"
start=$(date +%s)
mkdir -p "$ROOT/build"
# Running Python processes map the extension: copying the new build over the
# same file would change their code under them, so the old file is unlinked
# first and the copy gets a new inode.
rm -f "$ROOT"/torch_mydev/_C.*.so
(cd "$ROOT" && MAX_JOBS="${MAX_JOBS:-$(nproc)}" "$PY" setup.py --quiet build_ext --inplace > "$ROOT/build/build_ext.log" 2>&1) || {
  cat "$ROOT/build/build_ext.log"
  echo "[bootstrap] build failed" >&2
  exit 1
}
echo "[bootstrap] build done in $(( $(date +%s) - start ))s"
