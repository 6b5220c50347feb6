#!/usr/bin/env bash
# Creates (once) the Python venv for the Table 2 harness (target/table2-venv, or $RMLD_PYENV) with
# requirements.txt, and prints its python:   py="$(scripts/table2/setup_env.sh)"
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
exec bash "$root/scripts/venv.sh" "$here/requirements.txt" "${RMLD_PYENV:-$root/target/table2-venv}" \
  "numpy scipy sklearn joblib threadpoolctl"
