"""What more *real* images would give: each classifier trained on 50, 100, 250 and 1,000 real
images per class (the same seeds' cuts as run.py), against the 50 per class that augmentation
starts from. An augmentation adding 4 images per original is compared with 250 per class.
With `--groups K` each row also gives the share of K-seed groups whose mean gain reaches
`--line` points (the issue's check: 3 seeds, a point), as `criteria.py --groups` does.

    python scripts/usefulness/ceiling.py --datasets quickdraw mnist --seeds 5
    python scripts/usefulness/ceiling.py --datasets quickdraw --seeds 15 --groups 3
"""

from __future__ import annotations

import argparse

import numpy as np

import data
from criteria import group_share
from run import classifier, scores


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["quickdraw"], choices=data.DATASETS)
    p.add_argument("--per-class", nargs="+", type=int, default=[50, 100, 250, 1000])
    p.add_argument("--classifiers", nargs="+", default=["lr", "svm"])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--groups", type=int, default=0, metavar="K",
                   help="also give the share of K-seed groups whose mean gain reaches --line")
    p.add_argument("--line", type=float, default=1.0, help="points over the first row (1)")
    p.add_argument("--test-per-class", type=int, default=300)
    args = p.parse_args(argv)
    if args.seeds < 1 or args.groups < 0 or args.groups > args.seeds:
        p.error(f"--seeds {args.seeds} --groups {args.groups}: expected 1 or more seeds and "
                "groups of at most that many (0 for none)")
    root = data.default_root()
    for name in args.datasets:
        pools = data.load_pools(name, root, args.test_per_class)
        print(f"\n{name}: balanced accuracy on {len(pools.test_y)} test images, "
              f"mean ± sd over {args.seeds} seeds (gain over the first row, paired)")
        base = None
        for per_class in args.per_class:
            table = []
            for seed in range(args.first_seed, args.first_seed + args.seeds):
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
            if args.groups and table is not base:
                shares = (group_share(list(table[:, i] - base[:, i]), args.groups, args.line, False)
                          for i in range(len(args.classifiers)))
                cells += f"  ({args.groups}-seed groups reaching +{args.line:g}: " + ", ".join(
                    f"{key} {share:.0%}" for key, share in zip(args.classifiers, shares)) + ")"
            print(f"  {per_class:5d}/class real: {cells}", flush=True)


if __name__ == "__main__":
    main()
