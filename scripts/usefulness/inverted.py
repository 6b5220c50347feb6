"""Few labels on MNIST inverted (dark ink on white): does `rmld augment`'s default help there as
on MNIST? Builds side by side: each binary's default augmentation, four new images per original.

    python scripts/usefulness/inverted.py BINARY [BINARY ...] [--seeds 5]

Cuts as run.py's (50 images per class, seeds 0..N-1, 300 test images per class), every image
1 − x; logistic regression (C = 0.05) and the RBF SVM (C = 5) as run.py's; balanced accuracy,
mean over the seeds and the gain over no augmentation.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import data  # noqa: E402
from run import classifier, scores  # noqa: E402


def generated(binary: str, x: np.ndarray, y: np.ndarray, seed: int):
    """The binary's default augmentation of (x, y), four new images per original."""
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/x.npy", np.round(x * 255).astype(np.uint8))
        np.save(f"{d}/y.npy", y)
        subprocess.run([binary, "augment", "--data", f"{d}/x.npy", "--labels", f"{d}/y.npy",
                        "--ratio", "1:4", "--no-quality", "--reencode", "false", "--seed",
                        str(seed), "--backend", "cpu", "--out", f"{d}/out"],
                       check=True, capture_output=True)
        images = data.read_idx(Path(f"{d}/out/generated-images-idx3-ubyte.gz"))
        labels = data.read_idx(Path(f"{d}/out/generated-labels-idx1-ubyte.gz"))
        return images.astype(np.float32) / 255, labels.astype(np.int64)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binaries", nargs="+", help="rmld binaries to compare")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--data", type=Path, default=data.default_root())
    args = ap.parse_args()
    pools = data.load_pools("mnist", args.data, 300)
    pools.test_x = 1 - pools.test_x
    names = ["none"] + args.binaries
    results = {(n, c): [] for n in names for c in ("lr", "svm")}
    for seed in range(args.seeds):
        x, y = data.training_cut(pools, data.class_counts(pools, 50), seed)
        x = 1 - x
        for name in names:
            gx, gy = (x[:0], y[:0]) if name == "none" else generated(name, x, y, seed)
            train_x = np.concatenate([x, gx]).reshape(-1, x[0].size)
            train_y = np.concatenate([y, gy])
            for c in ("lr", "svm"):
                model = classifier(c, seed).fit(train_x, train_y)
                results[(name, c)].append(scores(model, pools.test_x, pools.test_y)["bacc"])
        print(f"seed {seed} done", flush=True)
    for name in names:
        cells = []
        for c in ("lr", "svm"):
            v = np.array(results[(name, c)])
            cells.append(f"{c} {v.mean():.2f} ({(v - np.array(results[('none', c)])).mean():+.2f})")
        print(f"{name}: " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
