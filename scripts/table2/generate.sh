#!/usr/bin/env bash
# Generates the augmented sets Table 2 compares, for one dataset folder, into
# OUT/{rmld,rmld-no-mh,kernel-hmc}.
# Usage: scripts/table2/generate.sh DATASET_DIR OUT [rmld augment options, e.g. --limit 3000 --test-limit 1000]
# The RMLD run LASSO-encodes the originals and the test split once; the RMLD w/o MH run reuses
# those codes (same seed, so the same dictionary) through reuse_codes.py.
set -euo pipefail
data=$1
out=$2
shift 2
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rmld="${RMLD_BIN:-$root/target/release/rmld}"
[ -x "$rmld" ] || (cd "$root" && cargo build --release --quiet)
py="$(bash "$here/setup_env.sh")"
# The paper's settings (rmld augment's default preset is `quality`, not the paper's).
common=(--preset paper --data "$data" --seed 0 "$@")
"$rmld" augment "${common[@]}" --encode-test --out "$out/rmld"
"$rmld" augment "${common[@]}" --no-mh --no-original-codes --out "$out/rmld-no-mh"
"$py" "$here/reuse_codes.py" "$out/rmld" "$out/rmld-no-mh"
"$rmld" augment "${common[@]}" --method kernel-hmc --out "$out/kernel-hmc"
