#!/usr/bin/env bash
# Prepares a working checkout: a virtual environment in .venv with the pinned
# CPU build of torch 2.13.0 and the other dependencies, the package installed in
# editable mode (for the torch.backends entry point), and the C++ extension
# built in place. Every step is skipped when already done, and the build is
# incremental (ninja), so running it again is cheap.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

if [ ! -x "$PY" ]; then
  echo "[bootstrap] creating $VENV"
  python3 -m venv "$VENV"
fi

# torch is pinned: an unpinned torch would let pip pick a multi-GB CUDA build.
if ! TORCH_DEVICE_BACKEND_AUTOLOAD=0 "$PY" -c "import torch, numpy, pybind11, pytest, expecttest, setuptools; assert torch.__version__.startswith('2.13.0')" 2>/dev/null; then
  echo "[bootstrap] installing torch==2.13.0 (CPU) and the other dependencies"
  "$PY" -m pip install --quiet --disable-pip-version-check "torch==2.13.0" numpy pybind11 setuptools pytest expecttest
fi

if ! command -v ninja >/dev/null 2>&1 && [ ! -x "$VENV/bin/ninja" ]; then
  echo "[bootstrap] installing ninja"
  "$PY" -m pip install --quiet --disable-pip-version-check ninja
fi
export PATH="$VENV/bin:$PATH"

if ! "$PY" -m pip show torch_mydev >/dev/null 2>&1; then
  echo "[bootstrap] registering torch_mydev (editable install)"
  MYDEV_SKIP_EXTENSION=1 "$PY" -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps -e "$ROOT"
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
