#!/usr/bin/env bash
# Everything a lent GPU machine should measure, in one call that fits a short lease.
#
# In order of importance, each step under its own time cap and the whole under --budget seconds
# (a step that no longer fits is skipped and says so): a smoke test that wgpu finds the GPU;
# scripts/gpu-bench.sh (rmld at 784 × 3136 for every chain count with both tiles, the NumPy,
# PyTorch and JAX peers, one table); the f16 dictionary beside f32; rmld's CPU rows on the same
# machine (the GPU/CPU ratio); `rmld augment` of MNIST 3,000 on the GPU and on the CPU (empty code
# cache), by default and with --preset paper (RMLD chains), then of all of MNIST on the GPU and on the CPU while time is left. Logs and outputs go to
# one folder, packed into OUT/lease.tgz at the end (the device tool brings back 8 files at most);
# the tables are printed last. docs/benchmarks.md ("A real GPU") has the call that runs it.
#
# Usage: scripts/gpu-lease.sh --rmld BIN --mnist DIR [--budget S] [--chains 1,16,…] [--dim D]
#          [--atoms P] [--images N] [--limit N] [--test-limit N] [--out DIR]
# (--dim/--atoms/--images/--limit shrink everything for a rehearsal on a software adapter.)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rmld=""
mnist=""
budget=480
chains="1,16,256,1024,4096,16384"
dim=784
atoms=3136
images=2000
limit=3000
test_limit=1000
out="${OUT:-gpu-lease-out}"
die() { echo "gpu-lease: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rmld) rmld="${2:?--rmld needs a path}"; shift 2 ;;
    --mnist) mnist="${2:?--mnist needs a folder}"; shift 2 ;;
    --budget) budget="${2:?--budget needs seconds}"; shift 2 ;;
    --chains) chains="${2:?--chains needs a list}"; shift 2 ;;
    --dim) dim="${2:?--dim needs a number}"; shift 2 ;;
    --atoms) atoms="${2:?--atoms needs a number}"; shift 2 ;;
    --images) images="${2:?--images needs a number}"; shift 2 ;;
    --limit) limit="${2:?--limit needs a number}"; shift 2 ;;
    --test-limit) test_limit="${2:?--test-limit needs a number}"; shift 2 ;;
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ -x "$rmld" ] || die "no rmld binary at '$rmld' (give --rmld)"
[ -d "$mnist" ] || die "no MNIST folder at '$mnist' (give --mnist)"
[[ "$chains" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--chains: expected a comma-separated list of chain counts, got '$chains'"
for n in "$budget" "$dim" "$atoms" "$images" "$limit" "$test_limit"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "--budget, --dim, --atoms, --images, --limit and --test-limit take positive integers, got '$n'"
done
rmld="$(cd "$(dirname "$rmld")" && pwd)/$(basename "$rmld")"
work="$(mktemp -d)"
mkdir -p "$out"
start=$(date +%s)
# The logs, reports and tables only: the augment outputs' codes and images would pass the 16 MB
# a file the device tool brings back.
pack() { (cd "$work" && find . -type f \( -name '*.log' -o -name '*.json' -o -name '*.md' -o -name '*.csv' \
  -o -name '*.txt' -o -name '*.jsonl' \) -print0 | tar czf "$out/lease.tgz" --null -T -) 2>/dev/null; }
trap pack EXIT
left() { echo $(( budget - ($(date +%s) - start) )); }
# step NAME CAP command…: runs under min(CAP, time left − 10 s), logs to NAME.log, prints its wall time.
step() {
  local name="$1" cap="$2"; shift 2
  local room=$(( $(left) - 10 ))
  [ "$room" -lt "$cap" ] && cap="$room"
  if [ "$cap" -lt 15 ]; then echo "== $name: skipped, $(left) s of the budget left" | tee -a "$work/steps.txt"; return 1; fi
  local t0; t0=$(date +%s.%N)
  timeout --kill-after=5 "$cap" "$@" > "$work/$name.log" 2>&1
  local rc=$?
  local t1; t1=$(date +%s.%N)
  awk -v n="$name" -v rc="$rc" -v a="$t0" -v b="$t1" -v c="$cap" \
    'BEGIN { printf "== %s: rc %s, %.1f s (cap %s s)\n", n, rc, b - a, c }' | tee -a "$work/steps.txt"
  return $rc
}

export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm,power.limit --format=csv 2>&1
  nproc; grep -m1 'model name' /proc/cpuinfo
  python3 -c 'import numpy, torch, jax; print("numpy", numpy.__version__, "torch", torch.__version__, "jax", jax.__version__)' 2>&1
} | tee "$work/machine.txt"

step smoke 90 "$rmld" bench --backend gpu --chains 4 --steps 2 --outer 1 --dim 64 --images 100 --out "$work/smoke" --force
grep -i -m3 'adapter\|gpu' "$work/smoke.log"
if ! grep -qi "${LEASE_ADAPTER:-nvidia}" "$work/smoke.log"; then
  echo "gpu-lease: the smoke test found no NVIDIA adapter; its log:"; tail -20 "$work/smoke.log"
  ls /usr/local/nvidia/share/vulkan/icd.d /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1
  exit 1
fi

step gpu-bench 270 "$here/scripts/gpu-bench.sh" --rmld "$rmld" --chains "$chains" --numpy-max-chains 1024 \
  --dim "$dim" --atoms "$atoms" --images "$images" --out "$work/gpu-bench"
[ -f "$work/gpu-bench/table.md" ] || python3 "$here/benches/peers/bench_table.py" "$work/gpu-bench" \
  --gpu-name "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" >> "$work/gpu-bench.log" 2>&1

big="$(echo "$chains" | tr ',' '\n' | sort -n | tail -3 | paste -sd,)"
# f16 where A's reads could bound the step (few chains) and where they cannot (many).
few="$(echo "$chains" | tr ',' '\n' | sort -n | head -2 | paste -sd,)"
step gpu-f16 60 "$rmld" bench --backend gpu --f16 --gemm-tile narrow,wide --chains "$few,$big" \
  --dim "$dim" --atoms "$atoms" --images "$images" --out "$work/gpu-f16" --force
step cpu 60 "$rmld" bench --backend cpu --chains "$(echo "$big" | sed 's/,[0-9]*$//')" \
  --dim "$dim" --atoms "$atoms" --images "$images" --out "$work/cpu" --force

augment() {  # NAME BACKEND LIMIT CAP TEST-LIMIT [MORE OPTIONS] (an empty LIMIT: all images)
  local name="$1" backend="$2" n="$3" cap="$4" tests="$5"
  shift 5
  step "augment-$name" "$cap" "$rmld" augment --data "$mnist" ${n:+--limit "$n"} ${tests:+--test-limit "$tests"} \
    --backend "$backend" --seed 0 --no-code-cache --out "$work/augment-$name" "$@"
  python3 - "$work/augment-$name/report.json" <<'EOF' 2>&1 | tee -a "$work/steps.txt"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except OSError as e:
    sys.exit(f"   no report: {e}")
phases = r.get("phase_seconds") or {}
print("   phases (s):", {k: round(v, 1) for k, v in phases.items()}, "sum", round(sum(phases.values()), 1))
q = r.get("quality") or r
lp = (q.get("label_preservation") or {}).get("overall")
dv = (q.get("diversity") or {}).get("mean")
nv = (q.get("novelty") or {}).get("median")
print(f"   label preservation {lp}, novelty median {nv}, diversity mean {dv}, seconds {r.get('seconds')}")
print("   backend:", (r.get("backend") or {}).get("device"))
EOF
}
augment gpu-3000 gpu "$limit" 100 "$test_limit"
augment cpu-3000 cpu "$limit" 150 "$test_limit"
# The paper's pipeline runs RMLD chains (the default samples by deformation): the sampler itself
# inside augment, on each backend.
augment gpu-3000-paper gpu "$limit" 100 "$test_limit" --preset paper
augment cpu-3000-paper cpu "$limit" 150 "$test_limit" --preset paper
augment gpu-all gpu "" 200 ""
augment cpu-all cpu "" 300 ""

echo; echo "== tables"; cat "$work/steps.txt"
cat "$work/gpu-bench/table.md" 2>/dev/null
for b in gpu-f16 cpu; do echo "-- $b"; sed -n '/^backend /,/^wrote/p' "$work/$b.log"; grep -m2 'ceiling' "$work/$b.log"; done
