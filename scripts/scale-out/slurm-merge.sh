#!/usr/bin/env bash
# Merges the shards of scripts/scale-out/slurm.sh once every task succeeded (submit it with
# --dependency=afterok:JOBID). Exit status 2 and nothing written when a shard is missing,
# duplicated, from another run, or damaged.
#SBATCH --job-name=rmld-merge
#SBATCH --cpus-per-task=2
#SBATCH --output=rmld-merge-%j.log
set -euo pipefail
: "${RMLD:=rmld}"
: "${RUN_DIR:=$PWD/rmld-run}"
exec "$RMLD" merge "$RUN_DIR/merged" "$RUN_DIR"/shard-*
