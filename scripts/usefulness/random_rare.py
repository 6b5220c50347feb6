"""The issue's imbalanced check on cuts whose rare classes are drawn at random: per seed, five of
the ten classes hold `--rare` images and the others `--common`, and
`RMLDAugmenter(sampling_strategy="auto", random_state=seed)` is set against
`SMOTE(random_state=seed)` on pixels in [0, 1], logistic regression (C = 0.05) and the RBF SVM
(C = 5), balanced accuracy on a balanced test set (docs/usefulness.md, "Interpolants past four
new images per original").

    python scripts/usefulness/random_rare.py --datasets fashion-mnist mnist --seeds 6
"""

import argparse
import collections
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from data import balanced_pick, default_root, load_pools  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["fashion-mnist", "mnist"])
    ap.add_argument("--seeds", type=int, default=6, help="seeds 0..N-1")
    ap.add_argument("--common", type=int, default=400)
    ap.add_argument("--rare", type=int, default=20)
    ap.add_argument("--test-per-class", type=int, default=200)
    ap.add_argument("--data", type=Path, default=default_root())
    ap.add_argument("--out", type=Path, default=Path("target/usefulness-random-rare"))
    args = ap.parse_args()

    from imblearn.over_sampling import SMOTE
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.svm import SVC

    from rmld.sklearn import RMLDAugmenter

    rows = []
    for name in args.datasets:
        pools = load_pools(name, args.data, args.test_per_class)
        classes = sorted(int(c) for c in np.unique(pools.train_y))
        test_x = pools.test_x.reshape(len(pools.test_x), -1)
        for seed in range(args.seeds):
            rare = sorted(np.random.default_rng(1000 + seed).choice(
                classes, len(classes) // 2, replace=False).tolist())
            counts = {c: args.rare if c in rare else args.common for c in classes}
            picked = balanced_pick(pools.train_y, counts, np.random.default_rng(seed + 77))
            x = pools.train_x[picked].reshape(len(picked), -1)
            y = pools.train_y[picked]
            for augmenter in ("smote", "rmld"):
                started = time.time()
                if augmenter == "smote":
                    xr, yr = SMOTE(random_state=seed).fit_resample(x, y)
                else:
                    xr, yr = RMLDAugmenter(sampling_strategy="auto",
                                           random_state=seed).fit_resample(x, y)
                seconds = time.time() - started
                for classifier in ("lr", "svm"):
                    model = (LogisticRegression(C=0.05, max_iter=2000) if classifier == "lr"
                             else SVC(C=5.0, gamma="scale"))
                    model.fit(np.asarray(xr, np.float32), yr)
                    score = 100 * balanced_accuracy_score(pools.test_y, model.predict(test_x))
                    rows.append(dict(dataset=name, seed=seed, rare=rare, augmenter=augmenter,
                                     classifier=classifier, bacc=score, seconds=seconds))
                    print(f"{name} seed {seed} rare {rare} {augmenter:5s} {classifier:3s} "
                          f"{score:.2f} ({seconds:.1f} s)", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rows.json").write_text(json.dumps(rows, indent=1))
    scores = collections.defaultdict(dict)
    for r in rows:
        scores[(r["dataset"], r["classifier"], r["augmenter"])][r["seed"]] = r["bacc"]
    for (name, classifier, augmenter), by_seed in sorted(scores.items()):
        if augmenter != "rmld":
            continue
        smote = scores[(name, classifier, "smote")]
        gain = np.array([by_seed[s] - smote[s] for s in by_seed])
        print(f"{name} {classifier}: rmld − SMOTE {gain.mean():+.2f} (lowest seed "
              f"{gain.min():+.2f}, {len(gain)} seeds); rmld {np.mean(list(by_seed.values())):.2f}, "
              f"SMOTE {np.mean(list(smote.values())):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
