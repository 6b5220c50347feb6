#!/usr/bin/env bash
# Issue 20 item 5: a learned 3136-atom Gabor dictionary against the default random Gaussian A on
# MNIST (first 3000 training / 1000 test images). The commands behind docs/dictionaries.md,
# "Gabor vs the random Gaussian A on MNIST".
# Usage: scripts/dictionary/gabor_vs_gaussian.sh MNIST_DIR OUT
set -euo pipefail
data=$1
out=$2
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rmld="${RMLD_BIN:-$root/target/release/rmld}"
py="$(bash "$root/scripts/table2/setup_env.sh")"
mkdir -p "$out"

# 1. Learn: 800 images, L = 4 atoms each, 50 MH-within-Gibbs iterations (25 burn-in), K-means
#    into 3136 centres (3200 atom parameters pooled). 401 s wall on the loaded 2-core VM.
"$rmld" dictionary learn --family gabor --data "$data" --signals 800 --atoms-per-signal 4 \
    --iterations 50 --burn-in 25 --centers 3136 --seed 0 --out "$out/gabor-3136"
gabor="$out/gabor-3136/dictionary.npy"

# 2. LASSO reconstruction error against sparsity. Gaussian: 300 images, 200 FISTA iterations
#    (converged: 1000 give the same error at λ = 20). Gabor: ‖A‖² is ~77× larger, so 200 FISTA
#    iterations are far from converged; 100 images with 2000 iterations. Table on the first 100.
for lam in 2.5 5 10 20 40 80 160 320; do
  "$rmld" encode --data "$data" --limit 300 --backend cpu --lambda $lam --out "$out/enc-gauss-$lam"
done
"$rmld" encode --data "$data" --limit 300 --backend cpu --lambda 20 --lasso-iterations 1000 --out "$out/enc-gauss-20-it1000"
for lam in 1.25 5 20 80; do
  "$rmld" encode --data "$data" --limit 100 --backend cpu --lambda $lam --lasso-iterations 2000 \
      --dictionary "$gabor" --out "$out/enc-gabor-it2000-$lam"
done
"$rmld" encode --data "$data" --limit 300 --backend cpu --lambda 1.25 --dictionary "$gabor" --out "$out/enc-gabor-1.25"
runs=()
for f in "$out"/enc-gauss-* "$out"/enc-gabor-*; do runs+=("$(basename "$f" | cut -d- -f2)=$f"); done
"$py" "$here/lasso_sparsity.py" --first 100 "$data" "${runs[@]}"

# 3. Table 2 subset rows (Compression, RMLD at discount 1.25) and the paper preset's quality metrics.
for name in gauss gabor; do
  dict=(); [ $name = gabor ] && dict=(--dictionary "$gabor")
  "$rmld" augment --preset paper --data "$data" --seed 0 --limit 3000 --test-limit 1000 --backend cpu \
      --encode-test --discount 1.25 "${dict[@]}" --out "$out/$name"
  "$py" "$root/scripts/table2/evaluate.py" --dataset "$data" --rmld "$out/$name" --compression-from "$out/$name" \
      --rows compression,rmld --classifiers svm,l2svm --limit-test 1000 --seeds 3 --jobs 1 \
      --markdown "$out/eval-$name.md"
  # The same codes standardised per column (the comparison flips with the scaling).
  "$py" "$root/scripts/table2/evaluate.py" --dataset "$data" --rmld "$out/$name" --compression-from "$out/$name" \
      --rows compression,rmld --classifiers svm --limit-test 1000 --seeds 3 --jobs 1 \
      --code-scaling standard --markdown "$out/eval-$name-standard-svm.md"
  "$py" "$root/scripts/table2/evaluate.py" --dataset "$data" --rmld "$out/$name" --compression-from "$out/$name" \
      --rows compression,rmld --classifiers l2svm --limit-test 1000 --seeds 1 --jobs 1 \
      --code-scaling standard --markdown "$out/eval-$name-standard-l2svm.md"
  # 4. The default (quality) preset's metrics.
  "$rmld" augment --data "$data" --seed 0 --limit 3000 --backend cpu "${dict[@]}" --out "$out/$name-quality"
done
