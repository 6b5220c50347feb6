"""Recall per class in the imbalanced regime: which classes an augmentation's new images help,
and which they cost (the same cuts, counts and classifiers as run.py).

    python scripts/usefulness/recall.py --datasets fashion-mnist mnist --seeds 5 \\
        --augmenters ros smote shifts proposal
"""

from __future__ import annotations

import argparse

import numpy as np

import data
from run import augmenter, classifier


def recall_table(pools, majority: int, minority: int, names, clf: str, seeds: int) -> dict:
    """Mean recall (percent) per class, and balanced accuracy, of each augmenter over `seeds`."""
    from sklearn.metrics import recall_score

    counts = data.class_counts(pools, majority, data.minority_classes(pools), minority)
    top = max(counts.values())
    recalls = {name: [] for name in names}
    for seed in range(seeds):
        x, y = data.training_cut(pools, counts, seed)
        new = {c: top - n for c, n in counts.items()}
        for name in names:
            gx, gy = augmenter(name)(x, y, new, seed)
            train_x = np.concatenate([x, gx]).reshape(len(y) + len(gy), -1)
            model = classifier(clf, seed).fit(train_x, np.concatenate([y, gy]))
            predicted = model.predict(pools.test_x.reshape(len(pools.test_x), -1))
            recalls[name].append(100 * recall_score(pools.test_y, predicted, average=None))
    return {name: np.mean(rows, axis=0) for name, rows in recalls.items()}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["fashion-mnist"], choices=data.DATASETS)
    p.add_argument("--augmenters", nargs="+", default=["ros", "smote", "shifts", "proposal"])
    p.add_argument("--imbalanced", default="400:20", help="MAJORITY:MINORITY")
    p.add_argument("--classifier", default="lr", choices=["lr", "svm", "mlp"])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--test-per-class", type=int, default=300)
    args = p.parse_args(argv)
    majority, minority = (int(v) for v in args.imbalanced.split(":"))
    root = data.default_root()
    for name in args.datasets:
        pools = data.load_pools(name, root, args.test_per_class)
        table = recall_table(pools, majority, minority, args.augmenters, args.classifier,
                             args.seeds)
        classes = sorted(int(c) for c in np.unique(pools.test_y))
        print(f"\n{name}, {majority} vs {minority}, {args.classifier}, {args.seeds} seeds: "
              "recall per class (%)\n")
        print("| augmentation | " + " | ".join(str(c) for c in classes) + " | bal. acc. |")
        print("|---|" + "---|" * (len(classes) + 1))
        for aug, recall in table.items():
            print(f"| {aug} | " + " | ".join(f"{v:.1f}" for v in recall)
                  + f" | {recall.mean():.1f} |")


if __name__ == "__main__":
    main()
