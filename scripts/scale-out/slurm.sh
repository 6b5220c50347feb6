#!/usr/bin/env bash
# One shard of an rmld run as a Slurm job-array task (docs/scale-out.md). Submit N tasks, then
# the merge once they all succeed:
#   jid=$(sbatch --parsable --array=0-7 scripts/scale-out/slurm.sh)
#   sbatch --dependency=afterok:"$jid" scripts/scale-out/slurm-merge.sh
# Task i runs `rmld $RMLD_ARGS --shard i/N --out $RUN_DIR/shard-i` with i and N from Slurm
# (--array must start at 0: shards are numbered from 0). RUN_DIR must be on a filesystem every
# node and the merge job can read (NFS, Lustre, GPFS...).
#SBATCH --job-name=rmld-shard
#SBATCH --gpus=1
#SBATCH --cpus-per-task=4
#SBATCH --output=rmld-shard-%A_%a.log
set -euo pipefail
: "${RMLD:=rmld}"                                   # the rmld binary
: "${RMLD_ARGS:=encode --lasso-iterations 200}"     # the command and its options, without --out
: "${RUN_DIR:=$PWD/rmld-run}"                       # shared: shard-0 … shard-(N-1), merged
: "${SLURM_ARRAY_TASK_ID:?run as a Slurm job array (sbatch --array=0-N)}"
: "${SLURM_ARRAY_TASK_COUNT:?run as a Slurm job array (sbatch --array=0-N)}"
mkdir -p "$RUN_DIR"
# shellcheck disable=SC2086  # RMLD_ARGS is a list of words
exec "$RMLD" $RMLD_ARGS \
  --shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT" \
  --out "$RUN_DIR/shard-$SLURM_ARRAY_TASK_ID"
