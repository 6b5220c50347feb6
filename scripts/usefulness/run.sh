#!/usr/bin/env bash
# The usefulness benchmark in one command: the package's venv (made once, as the tests make it),
# a release build of the package into it, then run.py with the arguments given, e.g.
#   bash scripts/usefulness/run.sh --mode quick
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
venv="$root/target/python-venv"
py="$(bash scripts/venv.sh python/requirements-test.txt "$venv" \
  "maturin numpy arviz sklearn imblearn pytest ray")"
VIRTUAL_ENV="$venv" "$venv/bin/maturin" develop --release --locked --quiet -m python/Cargo.toml
exec "$py" scripts/usefulness/run.py "$@"
