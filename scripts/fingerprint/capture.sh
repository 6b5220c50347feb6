#!/usr/bin/env bash
# Runs a fixed set of small `rmld` commands (every method and target of `sample`, both `augment`
# presets and its other methods, `encode`) into OUT/<case>/, for a before/after comparison of a
# change that must not change behaviour: `compare.py BEFORE AFTER`.
# Usage: capture.sh RMLD_BINARY OUT BACKEND(cpu|gpu) [GROUP: all (default) | sampling | learning]
set -euo pipefail
bin="$1"; out="$2"; backend="$3"; group="${4:-all}"
mkdir -p "$out"
# A fresh code cache: a run that reads codes cached by an earlier one reports it differently.
RMLD_CACHE_DIR="$(mktemp -d)"
export RMLD_CACHE_DIR
run() {
  local name="$1"; shift
  "$bin" "$@" --backend "$backend" --out "$out/$name" >"$out/$name.log" 2>&1 \
    || { echo "capture: $name failed (see $out/$name.log)"; return 1; }
}
# Commands without --backend (they run on the CPU), into OUT/<case>/ or, for `quality`, OUT/<case>.json.
run_cpu() {
  local name="$1"; shift
  "$bin" "$@" >"$out/$name.log" 2>&1 \
    || { echo "capture: $name failed (see $out/$name.log)"; return 1; }
}
if [ "$group" = all ] || [ "$group" = sampling ]; then
for method in rmld mala hmc; do
  for target in paper mixture local tangent; do
    # --burn-in 0: the no-warm-up runs of every capture so far (MALA and HMC warm up by default
    # since session 8; with it given, captures before and after that change compare).
    run "sample-$method-$target" sample --method "$method" --target "$target" \
      --chains 6 --samples 3 --seed 7 --pixel-max 4 --eta 0.005 --tangent-k 4 --burn-in 0
  done
done
run sample-hmc-tangent-sigma sample --method hmc --target tangent --sigma2 0.3 --chains 6 --samples 3 --seed 9 --pixel-max 2 --eta 0.004 --tangent-k 3 --burn-in 0
run sample-rmld-mixture-sigma sample --target mixture --sigma2 0.5 --chains 6 --samples 3 --seed 9 --pixel-max 2
run sample-rmld-noise-sghmc sample --init noise --sghmc-noise --chains 5 --samples 3 --seed 3
run sample-rmld-nomh sample --no-mh --chains 5 --samples 2 --seed 3 --keep last --burn-in 1
run sample-rmld-discount sample --discount 1.3 --chains 5 --samples 3 --seed 5 --atoms 100
run augment-quality augment --preset quality --method hmc --limit 400 --batch 8 --no-quality --samples 2 --burn-in 2 --seed 1
run augment-paper augment --preset paper --limit 400 --batch 8 --no-quality --seed 1
run augment-mala augment --method mala --limit 400 --batch 8 --no-quality --seed 2 --eta 0.001
run augment-kernel-hmc augment --method kernel-hmc --limit 400 --batch 8 --no-quality --seed 2
run augment-compression augment --method compression --limit 400 --batch 8 --no-quality --seed 2
run encode encode --count 40 --iterations 50
# Priors, noise models, adaptation and the defaults (issue 42: every prior and noise model of
# `sample`, the default augmentation).
run sample-default sample --chains 4 --samples 2 --seed 4
run sample-ssgl-adapt sample --prior ssgl --chains 4 --samples 5 --seed 6 --burn-in 2
run sample-ssgl-continuous sample --prior ssgl --ssgl-mode continuous --method mala --chains 4 --samples 3 --seed 6 --burn-in 0
run sample-noise-gibbs sample --noise gibbs --chains 4 --samples 4 --seed 8 --burn-in 1
run sample-hmc-adapt sample --method hmc --chains 4 --samples 8 --seed 9 --burn-in 4
run sample-mala-auto sample --method mala --chains 4 --samples 12 --seed 10 --burn-in auto
run augment-default augment --limit 300 --seed 3
run augment-adapt augment --adapt --limit 300 --seed 3 --no-quality
run encode-fista encode --count 20 --iterations 30 --lasso-tolerance 0
# Shards and their merge (issue 42: the pipeline serves shards): N shards of a run, each into a
# folder outside OUT (their manifests hash their reports, which hold timings), merged into
# OUT/<case>; the merge must give the same files as before.
shards=$(mktemp -d)
sharded() {
  local name="$1" n="$2"; shift 2
  local dirs=()
  for ((i = n - 1; i >= 0; i--)); do
    "$bin" "$@" --shard "$i/$n" --backend "$backend" --out "$shards/$name-$i" \
      >"$out/$name-$i.log" 2>&1 || { echo "capture: $name shard $i/$n failed"; return 1; }
    dirs+=("$shards/$name-$i")
  done
  "$bin" merge "$out/$name" "${dirs[@]}" >"$out/$name.log" 2>&1 \
    || { echo "capture: $name merge failed (see $out/$name.log)"; return 1; }
}
sharded augment-shards 3 augment --preset paper --limit 150 --ratio 5:1 --samples 3 --burn-in 2 --lasso-iterations 30 --reencode --seed 4
sharded augment-shards-kernel-hmc 3 augment --method kernel-hmc --limit 150 --ratio 5:1 --samples 3 --burn-in 2 --seed 4
sharded augment-shards-compression 2 augment --method compression --limit 150 --ratio 5:1 --lasso-iterations 30 --seed 4
sharded sample-shards 3 sample --chains 7 --samples 10 --burn-in 3 --steps 4 --seed 3
sharded sample-shards-mala 2 sample --method mala --init noise --target local --no-adapt --chains 5 --samples 6 --burn-in 2 --seed 3
sharded encode-shards 3 encode --count 41 --iterations 30 --seed 5
# A test split beside the data (MNIST, where the datasets are): the test codes and the quality
# reference, whole and sharded.
mnist="${RMLD_DATASETS:-$(cd "$(dirname "$0")/../.." && pwd)/../shared/datasets}/mnist"
if [ -d "$mnist" ]; then
  test_split=(augment --preset paper --data "$mnist" --limit 200 --test-limit 30 --encode-test --batch 8 --samples 2 --burn-in 1 --lasso-iterations 20 --reencode --seed 6)
  run augment-test-split "${test_split[@]}"
  sharded augment-shards-test-split 3 "${test_split[@]}"
else
  echo "capture: no $mnist, the test-split cases are left out"
fi
fi
# Dictionary learning, the synthetic EDA experiment, judging generated images and the amortised
# sampler (issue 42: the learn/ layer and what left session/ with it).
if [ "$group" = all ] || [ "$group" = learning ]; then
learn="--iterations 40 --burn-in 10 --centers 4 --chunk 3 --seed 5"
run_cpu dictionary-eda dictionary learn --family eda --signals 7 $learn --out "$out/dictionary-eda"
run_cpu dictionary-gabor dictionary learn --family gabor --signals 5 $learn --out "$out/dictionary-gabor"
run_cpu dictionary-wo dictionary learn --family eda --signals 5 --without-replacement $learn --out "$out/dictionary-wo"
run_cpu eda-experiment dictionary eda-experiment --signals 8 --folds 2 --omp-iterations 4 $learn --out "$out/eda-experiment"
run augment-judged augment --method compression --limit 300 --seed 4 --no-code-cache
run_cpu quality quality --generated "$out/augment-judged/generated-images-idx3-ubyte.gz" --seed 2 --out "$out/quality.json"
run amortize-model amortize train --limit 200 --samples 2 --batch 8 --fit-steps 30 --seed 6 --no-quality
run augment-amortized augment --sampler amortized --model "$out/amortize-model" --limit 200 --seed 6 --no-quality
fi
echo "capture: $out done"
