"""The quality table across datasets (docs/quality.md, "Across datasets"): `rmld augment` at its
one default, with no per-dataset flag, on MNIST, Fashion-MNIST, the Quick Draw subset and the
8x8 digits.

Usage: python table.py RMLD_BINARY DATASETS_DIR OUT_DIR [--train N] [--test M] [--seed S]

For each dataset, a seeded shuffle (numpy, seed S) of its images is cut into N training and M
test images, written as an MNIST-style IDX folder (OUT_DIR/data/NAME), so every run is the same
command: `rmld augment --data OUT_DIR/data/NAME --backend cpu --seed S --no-original-codes
--out OUT_DIR/NAME`. From each run: its report's acceptance, worst per-class R-hat (nested where
defined) and verdict, wall time, and the Rust metrics' novelty and diversity (the existing
definitions, against the M test images); label preservation is measured here with two
scikit-learn classifiers trained on the N real training images (0..1 pixels): multinomial
logistic regression (lbfgs, C = 1) and an RBF-kernel SVM (SVC, C = 1, gamma "scale"), each as
the share of generated images it assigns to their class beside its accuracy on the M real test
images. Needs numpy and scikit-learn. Prints a Markdown table and writes OUT_DIR/table.jsonl.
"""

import argparse
import gzip
import json
import shlex
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.svm import SVC


def read_idx(path: Path) -> np.ndarray:
    data = gzip.open(path).read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4 : 4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def write_idx(path: Path, array: np.ndarray) -> None:
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = bytes([0, 0, 8, array.ndim]) + struct.pack(">" + "I" * array.ndim, *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


def load(name: str, root: Path):
    """(images (n, h, w) uint8 0..255, labels (n,)) of a dataset."""
    if name in ("mnist", "fashion-mnist"):
        d = root / name
        images = np.concatenate([read_idx(d / "train-images-idx3-ubyte.gz"),
                                 read_idx(d / "t10k-images-idx3-ubyte.gz")])
        labels = np.concatenate([read_idx(d / "train-labels-idx1-ubyte.gz"),
                                 read_idx(d / "t10k-labels-idx1-ubyte.gz")])
        return images, labels
    if name == "quickdraw":
        files = sorted((root / "quickdraw").glob("*.npy"))
        images = [np.load(f).reshape(-1, 28, 28) for f in files]
        labels = [np.full(len(x), k, dtype=np.uint8) for k, x in enumerate(images)]
        return np.concatenate(images), np.concatenate(labels)
    if name == "digits-8x8":
        rows = np.loadtxt(gzip.open(root / "optdigits/digits.csv.gz"), delimiter=",")
        # optdigits pixels are 0..16: to bytes as rmld reads them (its full scale is the maximum).
        images = np.round(rows[:, :-1] * (255.0 / 16.0)).astype(np.uint8).reshape(-1, 8, 8)
        return images, rows[:, -1].astype(np.uint8)
    raise ValueError(name)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("rmld")
    ap.add_argument("datasets", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--train", type=int, default=600)
    ap.add_argument("--test", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--rmld-args", default="",
                    help="extra options for every `rmld augment`, one string (shell words)")
    args = ap.parse_args()
    names = args.only or ["mnist", "fashion-mnist", "quickdraw", "digits-8x8"]
    print("| dataset | image | logistic: gen. % (real %) | RBF SVM: gen. % (real %) | novelty | "
          "diversity | acceptance | worst per-class R-hat | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        images, labels = load(name, args.datasets)
        order = np.random.default_rng(args.seed).permutation(len(images))
        n_train, n_test = args.train, args.test
        if n_train + n_test > len(images):
            # A small dataset (the 8x8 digits: 1,797 images) keeps the asked split's proportions.
            n_train = len(images) * args.train // (args.train + args.test)
            n_test = len(images) - n_train
            print(f"note: {name} has {len(images)} images, fewer than {args.train} + {args.test}: "
                  f"cut into {n_train} + {n_test}", file=sys.stderr)
        train, test = order[:n_train], order[n_train : n_train + n_test]
        folder = args.out / "data" / name
        folder.mkdir(parents=True, exist_ok=True)
        write_idx(folder / "train-images-idx3-ubyte.gz", images[train])
        write_idx(folder / "train-labels-idx1-ubyte.gz", labels[train])
        write_idx(folder / "t10k-images-idx3-ubyte.gz", images[test])
        write_idx(folder / "t10k-labels-idx1-ubyte.gz", labels[test])
        out = args.out / name
        cmd = [args.rmld, "augment", "--data", str(folder), "--backend", "cpu", "--seed",
               str(args.seed), "--no-original-codes", "--force", "--out", str(out)] + shlex.split(args.rmld_args)
        started = time.time()
        run = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.time() - started
        if run.returncode != 0:
            print(f"| {name} | failed: {run.stderr.strip()[:200]} |")
            continue
        report = json.loads((out / "report.json").read_text())
        generated = read_idx(out / "generated-images-idx3-ubyte.gz").reshape(-1, images[0].size) / 255.0
        generated_labels = read_idx(out / "generated-labels-idx1-ubyte.gz")
        x_train = images[train].reshape(len(train), -1) / 255.0
        x_test = images[test].reshape(len(test), -1) / 255.0
        scores = {}
        for key, model in (("logistic", LogisticRegression(C=1.0, max_iter=300)),
                           ("rbf_svm", SVC(C=1.0, kernel="rbf", gamma="scale"))):
            model.fit(x_train, labels[train])
            scores[key] = {
                "generated": float((model.predict(generated) == generated_labels).mean()),
                "real_test": float((model.predict(x_test) == labels[test]).mean()),
            }
        quality = report.get("quality", {})
        per_class = report.get("diagnostics_per_class", {})
        rhats = [c["diagnostics"].get("max_nested_rhat") or c["diagnostics"].get("max_rhat")
                 for c in per_class.get("classes", [])]
        rhats = [r for r in rhats if r is not None]
        row = {
            "dataset": name,
            "image": f"{images.shape[1]}x{images.shape[2]}",
            "train": len(train),
            "test": len(test),
            "generated": len(generated),
            "command": " ".join(cmd),
            "classifiers": scores,
            "novelty": quality.get("novelty", {}).get("mean"),
            "diversity": quality.get("diversity", {}).get("mean"),
            "acceptance": report.get("acceptance_rate"),
            "worst_class_rhat": max(rhats) if rhats else None,
            "verdict": per_class.get("verdict"),
            "wall_seconds": wall,
        }
        with open(args.out / "table.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        fmt = lambda v, d=2: "n/a" if v is None else f"{v:.{d}f}"  # noqa: E731
        lg, sv = scores["logistic"], scores["rbf_svm"]
        print(f"| {name} | {row['image']} | {100 * lg['generated']:.1f} ({100 * lg['real_test']:.1f}) "
              f"| {100 * sv['generated']:.1f} ({100 * sv['real_test']:.1f}) | {fmt(row['novelty'])} "
              f"| {fmt(row['diversity'])} | {fmt(row['acceptance'])} | {fmt(row['worst_class_rhat'], 3)} "
              f"| {wall:.1f} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
