#!/usr/bin/env bash
# One point of the quality sweep in docs/quality.md: an `rmld augment` run on the first 3,000
# training images of a dataset (500 generated at 6:1), then scripts/quality/metrics.py against
# the first 1,000 test images; appends a JSON line to OUT_ROOT/results.jsonl and prints a summary.
# Usage: scripts/quality/run_one.sh NAME DATASET_DIR OUT_ROOT [rmld augment options...]
set -euo pipefail
name=$1
data=$2
root=$3
shift 3
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
rmld="${RMLD_BIN:-$repo/target/release/rmld}"
[ -x "$rmld" ] || (cd "$repo" && cargo build --release --quiet)
py="$(bash "$repo/scripts/table2/setup_env.sh")"
out="$root/$(basename "$data")/$name"
mkdir -p "$(dirname "$out")"
# --preset paper: each row is the paper's settings plus the options it names.
"$rmld" augment --preset paper --data "$data" --limit 3000 --no-original-codes --backend cpu --seed 0 \
    --out "$out" "$@" >"$out.log" 2>&1
metrics=$("$py" "$here/metrics.py" "$out" "$data" --limit 3000 --test-limit 1000 --json)
"$py" - "$name" "$out/report.json" "$metrics" "$*" "$root/results.jsonl" <<'PY'
import json, sys
name, report_path, metrics, args, results = sys.argv[1:]
report = json.load(open(report_path))
m = json.loads(metrics)
row = {"name": name, "dataset": report["dataset"], "args": args,
       "acceptance_rate": report["acceptance_rate"],
       "mean_distance_moved": report["mean_distance_moved"],
       "generation_seconds": report["generation_seconds"], "metrics": m}
with open(results, "a") as f:
    f.write(json.dumps(row) + "\n")
# Deform draws have no accept step: their acceptance rate is null.
acceptance = "n/a" if report["acceptance_rate"] is None else f"{report['acceptance_rate']:.2f}"
print(f"{name:28s} acceptance {acceptance} moved {report['mean_distance_moved']:9.2f} "
      f"| label preservation {100 * m['label_preservation']:.1f}% (test {100 * m['classifier_test_accuracy']:.1f}%) "
      f"novelty {m['novelty_mean']:.2f} diversity {m['diversity']:.2f}")
PY
