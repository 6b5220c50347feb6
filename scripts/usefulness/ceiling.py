"""What more *real* images would give: each classifier trained on 50, 100, 250 and 1,000 real
images per class (the same seeds' cuts as run.py), against the 50 per class that augmentation
starts from. An augmentation adding 4 images per original is compared with 250 per class.

    python scripts/usefulness/ceiling.py --datasets quickdraw mnist --seeds 5
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

import data
from run import classifier, scores


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["quickdraw"], choices=data.DATASETS)
    p.add_argument("--per-class", nargs="+", type=int, default=[50, 100, 250, 1000])
    p.add_argument("--classifiers", nargs="+", default=["lr", "svm"])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--test-per-class", type=int, default=300)
    args = p.parse_args(argv)
    root = Path(os.environ.get("RMLD_DATASETS", Path(__file__).resolve().parents[2].parent / "shared" / "datasets"))
    for name in args.datasets:
        pools = data.load_pools(name, root, args.test_per_class)
        print(f"\n{name}: balanced accuracy on {len(pools.test_y)} test images, "
              f"mean ± sd over {args.seeds} seeds (gain over the first row, paired)")
        base = None
        for per_class in args.per_class:
            table = []
            for seed in range(args.seeds):
                x, y = data.training_cut(pools, data.class_counts(pools, per_class), seed)
                row = []
                for key in args.classifiers:
                    model = classifier(key, seed).fit(x.reshape(len(x), -1), y)
                    row.append(scores(model, pools.test_x, pools.test_y)["bacc"])
                table.append(row)
            table = np.array(table)
            base = table if base is None else base
            cells = "  ".join(f"{key} {table[:, i].mean():.2f} ± {table[:, i].std():.2f} "
                              f"({np.mean(table[:, i] - base[:, i]):+.2f})"
                              for i, key in enumerate(args.classifiers))
            print(f"  {per_class:5d}/class real: {cells}", flush=True)


if __name__ == "__main__":
    main()
