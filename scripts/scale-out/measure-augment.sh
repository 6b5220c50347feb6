#!/usr/bin/env bash
# Per-shard overhead of `augment --shard i/N` + `rmld merge` (docs/scale-out.md, "How it
# scales"): runs the same augmentation as 1, 2, 4 and 8 shards one after another on this machine
# and prints, per N, each shard's wall time and its phases from its report.json (dataset load,
# LASSO starts, burn-in + sampling, re-encoding, original codes), the merge's wall time and
# phases (dataset load, quality check, writing), and checks the merged files against the single run.
# Usage: measure-augment.sh RMLD_BINARY WORK_DIR [rmld augment options]
set -euo pipefail
bin="$1"; work="$2"; shift 2
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--preset paper --data "${RMLD_DATASETS:-../shared/datasets}/mnist"
  --limit 2000 --ratio 10:1 --samples 4 --burn-in 20 --lasso-iterations 50 --seed 1 --backend cpu)
rm -rf "$work"; mkdir -p "$work"
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.2f}')"; }
phases() {
  python3 - "$1" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["phase_seconds"]
short = {"dataset load": "load", "LASSO starts": "starts", "re-encoding": "reenc",
         "original codes": "codes", "quality check": "quality", "writing": "write"}
parts = [f"{short[k]} {p[k]:.2f}" for k in short if p.get(k)]
run = p.get("burn-in", 0) + p.get("sampling", 0)
if run:
    parts.insert(2, f"chains {run:.2f}")
print(", ".join(parts))
PY
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) on $(nproc) cores"
t0=$(now); "$bin" augment "${args[@]}" --out "$work/single" >/dev/null; t1=$(now)
echo "single run: $(secs "$t0" "$t1") s ($(phases "$work/single/report.json"))"
for n in 1 2 4 8; do
  dirs=()
  for ((i = 0; i < n; i++)); do
    t0=$(now)
    "$bin" augment "${args[@]}" --shard "$i/$n" --out "$work/n$n/shard-$i" >/dev/null
    t1=$(now)
    echo "N=$n shard $i: $(secs "$t0" "$t1") s ($(phases "$work/n$n/shard-$i/report.json"))"
    dirs+=("$work/n$n/shard-$i")
  done
  t0=$(now); "$bin" merge "$work/n$n/merged" "${dirs[@]}" >/dev/null; t1=$(now)
  echo "N=$n merge: $(secs "$t0" "$t1") s ($(phases "$work/n$n/merged/report.json"))"
  for f in "$work/single"/*; do
    name=$(basename "$f")
    [ "$name" = report.json ] || cmp -s "$f" "$work/n$n/merged/$name" || { echo "N=$n: $name differs"; exit 1; }
  done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
