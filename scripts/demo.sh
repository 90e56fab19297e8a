#!/usr/bin/env bash
# The main demo: sets everything up (scripts/bootstrap.sh), then runs examples/demo.py.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/bootstrap.sh"
exec "$ROOT/.venv/bin/python" "$ROOT/examples/demo.py" "$@"
