#!/usr/bin/env bash
# Per-shard overhead of `--shard i/N` + `rmld merge` (docs/scale-out.md, "How it scales"): runs
# the same encode as 1, 2, 4 and 8 shards one after another on this machine and prints, per N,
# the shards' wall times, their sum, the merge's time, and the overhead per shard
# (sum of shards − single run) / (N − 1) (for N > 1). Also a near-empty shard (one row):
# start-up + data load + dictionary, the fixed part of every shard.
# Usage: COUNT=rows measure.sh RMLD_BINARY WORK_DIR [rmld encode options but --count...]
set -euo pipefail
bin="$1"; work="$2"; shift 2
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--data "${RMLD_DATASETS:-../shared/datasets}/mnist" --lasso-iterations 50 --backend cpu)
count="${COUNT:-1000}"
rm -rf "$work"; mkdir -p "$work"
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.3f}')"; }
t0=$(now); "$bin" encode "${args[@]}" --count "$count" --out "$work/single" >/dev/null; t1=$(now)
single=$(secs "$t0" "$t1")
echo "single run: ${single} s"
t0=$(now); "$bin" encode "${args[@]}" --count 1 --out "$work/one-row" >/dev/null; t1=$(now)
echo "one-row run (start-up + data load + dictionary + 1 encoding): $(secs "$t0" "$t1") s"
for n in 1 2 4 8; do
  dirs=(); times=()
  for ((i = 0; i < n; i++)); do
    t0=$(now)
    "$bin" encode "${args[@]}" --count "$count" --shard "$i/$n" --out "$work/n$n/shard-$i" >/dev/null
    t1=$(now)
    times+=("$(secs "$t0" "$t1")"); dirs+=("$work/n$n/shard-$i")
  done
  t0=$(now); "$bin" merge "$work/n$n/merged" "${dirs[@]}" >/dev/null; t1=$(now)
  merge=$(secs "$t0" "$t1")
  cmp -s "$work/single/codes.npy" "$work/n$n/merged/codes.npy" || { echo "N=$n: codes differ"; exit 1; }
  python3 - "$n" "$single" "$merge" "${times[@]}" <<'PY'
import sys
n, single, merge = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
t = [float(x) for x in sys.argv[4:]]
over = (sum(t) - single) / (n - 1) if n > 1 else float("nan")
print(f"N={n}: shards {' '.join(f'{x:.2f}' for x in t)} s; sum {sum(t):.2f} s; max {max(t):.2f} s; "
      f"merge {merge:.2f} s; overhead per extra shard {over:.3f} s")
PY
done
