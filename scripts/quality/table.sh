#!/usr/bin/env bash
# The quality table across datasets (docs/quality.md, "Across datasets"): `rmld augment` at its
# one default on MNIST, Fashion-MNIST, the Quick Draw subset and the 8x8 digits, no per-dataset
# flag. Usage: scripts/quality/table.sh [OUT_DIR] [table.py options, e.g. --train 1000 --test 500]
# Env: RMLD_BIN (default: builds and uses target/debug/rmld), RMLD_DATASETS (default
# ../shared/datasets), RMLD_TABLE2_PYTHON (a Python with numpy and scikit-learn; default python3).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-/tmp/rmld-quality-table}"
shift || true
if [[ -z "${RMLD_BIN:-}" ]]; then
  cargo build --locked --bin rmld
  RMLD_BIN="$(pwd)/target/debug/rmld"
fi
mkdir -p "$out"
"${RMLD_TABLE2_PYTHON:-python3}" scripts/quality/table.py "$RMLD_BIN" \
  "${RMLD_DATASETS:-../shared/datasets}" "$out" "$@" | tee "$out/table.md"
