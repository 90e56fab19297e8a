#!/usr/bin/env bash
# The test suite: sets everything up (scripts/bootstrap.sh), then runs pytest on tests/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/bootstrap.sh"
cd "$ROOT"
exec "$ROOT/.venv/bin/python" -m pytest tests "$@"
