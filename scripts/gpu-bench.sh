#!/usr/bin/env bash
# rmld's GPU throughput and its peers, measured in one call, written as one table.
#
# Runs `rmld bench --backend gpu` at 784 × 3136 for C = 1, 4, 16, …, 16384, then, at every C, the
# peers of benches/peers/ with the same sizes: NumPy on the CPU, PyTorch on CUDA, JAX `vmap` HMC on
# the GPU; then benches/peers/bench_table.py writes OUT/table.{md,csv,json}: chain-steps/s,
# GFLOP/s, the fraction of the GPU's FP32 peak (datasheet value from nvidia-smi's name, or
# --peak-gflops) and rmld's ratio to each peer. Made for the device machine (PyTorch, JAX and the
# NVIDIA driver, no Rust, no network: build rmld elsewhere and carry the binary; docs/benchmarks.md
# has the exact call). With --cpu, or where nvidia-smi finds no GPU, everything runs on the CPU
# (rmld bench --backend cpu, PyTorch and JAX on the CPU), the peak being rmld's measured CPU ceiling.
# On the GPU rmld is measured with each products' tile (--gemm-tiles, default narrow,wide: rows
# gpu-narrow and gpu-wide), so one call shows which tile wins at which chain count.
#
# Usage: scripts/gpu-bench.sh [--cpu] [--rmld BIN] [--python PY] [--chains 1,4,16]
#          [--peers numpy,torch,jax] [--numpy-max-chains N] [--steps T] [--outer N]
#          [--dim D] [--atoms P] [--images N] [--ceiling-size N] [--peak-gflops G]
#          [--gemm-tiles auto,narrow,wide] [--out DIR]
# (--dim/--atoms/--images/--ceiling-size shrink the problem for a quick check; the defaults are
# the benchmark's 784 × 3136 with 2000 images.)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rmld="${RMLD:-$here/target/release/rmld}"
python="${PYTHON:-python3}"
chains="1,4,16,64,256,1024,4096,16384"
peers="numpy,torch,jax"
numpy_max=4096
steps=20
outer=3
dim=784
atoms=3136
images=2000
ceiling=""
peak=0
out="gpu-bench-out"
mode=""
tiles="narrow,wide"
die() { echo "gpu-bench: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) mode=cpu; shift ;;
    --rmld) rmld="${2:?--rmld needs a path}"; shift 2 ;;
    --python) python="${2:?--python needs a path}"; shift 2 ;;
    --chains) chains="${2:?--chains needs a list such as 1,4,16}"; shift 2 ;;
    --peers) peers="${2?--peers needs a list of numpy,torch,jax (may be empty)}"; shift 2 ;;
    --numpy-max-chains) numpy_max="${2:?--numpy-max-chains needs a number}"; shift 2 ;;
    --steps) steps="${2:?--steps needs a number}"; shift 2 ;;
    --outer) outer="${2:?--outer needs a number}"; shift 2 ;;
    --dim) dim="${2:?--dim needs a number}"; shift 2 ;;
    --atoms) atoms="${2:?--atoms needs a number}"; shift 2 ;;
    --images) images="${2:?--images needs a number}"; shift 2 ;;
    --ceiling-size) ceiling="${2:?--ceiling-size needs a number}"; shift 2 ;;
    --peak-gflops) peak="${2:?--peak-gflops needs a number}"; shift 2 ;;
    --gemm-tiles) tiles="${2:?--gemm-tiles needs a list of auto,narrow,wide}"; shift 2 ;;
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[[ "$tiles" =~ ^(auto|narrow|wide)(,(auto|narrow|wide))*$ ]] || die "--gemm-tiles: expected a comma-separated list of auto, narrow, wide, got '$tiles'"
[[ "$chains" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--chains: expected a comma-separated list of chain counts, got '$chains'"
for n in "$numpy_max" "$steps" "$outer" "$dim" "$atoms" "$images" ${ceiling:+"$ceiling"}; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "--numpy-max-chains, --steps, --outer, --dim, --atoms, --images and --ceiling-size take positive integers, got '$n'"
done
[[ "$peak" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--peak-gflops: expected a number of GFLOP/s, got '$peak'"
for p in ${peers//,/ }; do
  case "$p" in numpy|torch|jax) ;; *) die "--peers: unknown peer '$p' (numpy, torch, jax)" ;; esac
done
[ -x "$rmld" ] || die "no rmld binary at $rmld (build with cargo build --release, or give --rmld)"
command -v "$python" >/dev/null || die "no Python at '$python' (give --python)"

gpu_name=""
if [ -z "$mode" ]; then
  if gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" && [ -n "$gpu_name" ]; then
    mode=gpu
  else
    gpu_name=""
    mode=cpu
    echo "gpu-bench: nvidia-smi finds no GPU: running everything on the CPU" >&2
  fi
fi
threads="$(nproc)"
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
mkdir -p "$out"
: > "$out/peers.jsonl"
echo "gpu-bench: mode $mode${gpu_name:+ ($gpu_name)}, $dim × $atoms, C = $chains, T = $steps, outer = $outer, peers: ${peers:-none}; out: $out" >&2

tile_args=()
if [ "$mode" = gpu ]; then tile_args=(--gemm-tile "$tiles"); fi
"$rmld" bench --backend "$mode" --chains "$chains" --steps "$steps" --outer "$outer" "${tile_args[@]}" \
  --dim "$dim" --atoms "$atoms" --images "$images" ${ceiling:+--ceiling-size "$ceiling"} --out "$out/rmld" --force 2>&1 | tee "$out/rmld.log"

if [ "$mode" = gpu ]; then torch_dev=cuda; jax_platform=gpu; else torch_dev=cpu; jax_platform=cpu; fi
peer_run() {  # peer chains command…: one JSON line into peers.jsonl, or an error record
  local peer="$1" c="$2"; shift 2
  local log="$out/peer-$peer-$c.log"
  if "$@" >"$log" 2>&1 && line="$(grep -m1 '^{' "$log")"; then
    echo "$line" >> "$out/peers.jsonl"
    echo "  $peer C = $c: $line" >&2
  else
    local why; why="$(tail -1 "$log" | tr -d '"\\' | cut -c1-160)"
    printf '{"peer": "%s", "chains": %s, "error": "failed: %s"}\n' "$peer" "$c" "$why" >> "$out/peers.jsonl"
    echo "  $peer C = $c failed (see $log)" >&2
  fi
}
for c in ${chains//,/ }; do
  for p in ${peers//,/ }; do
    case "$p" in
      numpy)
        if [ "$c" -le "$numpy_max" ]; then
          peer_run numpy "$c" "$python" "$here/benches/peers/numpy_step.py" --chains "$c" --steps "$steps" --outer "$outer" --d "$dim" --p "$atoms" --images "$images"
        else
          printf '{"peer": "numpy", "chains": %s, "error": "skipped: C > --numpy-max-chains %s"}\n' "$c" "$numpy_max" >> "$out/peers.jsonl"
        fi ;;
      torch) peer_run torch "$c" "$python" "$here/benches/peers/torch_step.py" --device "$torch_dev" --chains "$c" --steps "$steps" --outer "$outer" --d "$dim" --p "$atoms" --images "$images" ;;
      jax) peer_run jax "$c" "$python" "$here/benches/peers/jax_hmc.py" --platform "$jax_platform" --chains "$c" --leapfrog "$steps" --iterations "$outer" --d "$dim" --p "$atoms" --images "$images" ;;
    esac
  done
done
"$python" "$here/benches/peers/bench_table.py" "$out" --peak-gflops "$peak" --gpu-name "$gpu_name"
