#!/usr/bin/env bash
# Regenerates docs/figures/: per dataset and method, one row per class of 3 real images then 9
# generated ones (each run's generated.png), like the paper's Figures 1-4.
# Usage: bash scripts/figures.sh [datasets dir]   (default ../shared/datasets; release build)
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-${RMLD_DATASETS:-../shared/datasets}}
cargo build --release --quiet
rmld=target/release/rmld
backend=${RMLD_BACKEND:-auto}   # auto: a real GPU if present, else the CPU
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for dataset in mnist fashion-mnist quickdraw; do
    # Quick Draw holds 3 categories of 5000: the same 120 per class as the others.
    limit=1200
    [ "$dataset" = quickdraw ] && limit=15000
    for method in compression rmld rmld-no-mh kernel-hmc; do
        case $method in
            rmld-no-mh) flags=(--method rmld --no-mh) ;;
            kernel-hmc) flags=(--method kernel-hmc) ;;
            *) flags=(--method "$method") ;;
        esac
        extra=()
        [ "$dataset" = quickdraw ] && extra=(--ratio 100:1)
        $rmld augment --preset paper --data "$data/$dataset" --limit $limit --no-original-codes --seed 1 --backend "$backend" \
            "${flags[@]}" "${extra[@]}" --out "$work/$dataset-$method" > /dev/null
        cp "$work/$dataset-$method/generated.png" "docs/figures/$dataset-$method.png"
        echo "docs/figures/$dataset-$method.png"
    done
done
