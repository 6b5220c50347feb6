"""Label preservation of an `rmld augment` output under three judges (docs/quality.md, "Other
judges at larger sizes").

Usage: python judges.py AUGMENT_OUT DATASET_DIR --limit N [--svm-every K]

Each judge is trained on the first N images of DATASET_DIR's training split (as `rmld augment
--limit N`) on the 0..1 scale, and reports the generated images' label preservation beside its
accuracy on every real test image:
- `lr`: multinomial logistic regression, lbfgs, C = 1 (metrics.py's judge);
- `lr+moves`: the same, trained on the originals and their four 1-pixel moves (edges repeated),
  a judge that has seen the moves every draw makes;
- `svm`: the usefulness benchmark's RBF SVM (C = 5, gamma "scale"), on every K-th generated
  image (default 2: its predictions are the slow part).
"""

import argparse
import os
import sys
import time
from pathlib import Path

# One BLAS thread, as run.py: lbfgs stops at its iteration cap here, and where it stops depends
# on the threads' summation order (a tenth of a point on MNIST 3,000).
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "table2"))
import rmld_io  # noqa: E402
from metrics import ONE_PIXEL_MOVES, moved_by  # noqa: E402


def with_moves(images: np.ndarray, labels: np.ndarray, shape):
    """The images followed by all four of their 1-pixel moves (edges repeated)."""
    moved = [images] + [moved_by(images, shape, move) for move in ONE_PIXEL_MOVES]
    return np.concatenate(moved), np.tile(labels, len(moved))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("data", type=Path)
    parser.add_argument("--limit", type=int, required=True)
    parser.add_argument("--svm-every", type=int, default=2)
    args = parser.parse_args()
    if args.svm_every < 1 or args.limit < 1:
        parser.error("--limit and --svm-every take a count of 1 or more")
    flat = lambda a: a.reshape(len(a), -1).astype(np.float64) / 255.0  # noqa: E731
    generated = flat(rmld_io.read_idx_images(args.run / "generated-images-idx3-ubyte.gz"))
    generated_labels = rmld_io.read_idx_labels(args.run / "generated-labels-idx1-ubyte.gz")
    train_images = rmld_io.read_idx_pictures(rmld_io.find_split(args.data, "train", "images"))
    shape = train_images.shape[1:]
    train = flat(train_images[: args.limit])
    train_labels = rmld_io.read_idx_labels(rmld_io.find_split(args.data, "train", "labels"))[: args.limit]
    test = flat(rmld_io.read_idx_images(rmld_io.find_split(args.data, "test", "images")))
    test_labels = rmld_io.read_idx_labels(rmld_io.find_split(args.data, "test", "labels"))

    moved_x, moved_y = with_moves(train, train_labels, shape)
    judges = {
        "lr": (LogisticRegression(C=1.0, max_iter=300), train, train_labels, 1),
        "lr+moves": (LogisticRegression(C=1.0, max_iter=300), moved_x, moved_y, 1),
        "svm": (SVC(C=5.0), train, train_labels, args.svm_every),
    }
    for name, (judge, x, y, every) in judges.items():
        started = time.perf_counter()
        judge.fit(x, y)
        kept = float((judge.predict(generated[::every]) == generated_labels[::every]).mean())
        real = float((judge.predict(test) == test_labels).mean())
        print(f"{name:9s} label preservation {100 * kept:.1f}% (real test {100 * real:.1f}%, "
              f"gap {100 * (kept - real):+.1f}; {time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
