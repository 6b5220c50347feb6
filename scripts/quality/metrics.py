"""Sample-quality metrics of an `rmld augment` output, in Python (an independent cross-check of
the Rust metrics and the engine of the sweep in docs/quality.md).

Usage: python metrics.py AUGMENT_OUT DATASET_DIR [--limit N] [--test-limit M] [--json]

Images on the 0..1 scale (IDX bytes / 255). The real training set is the first --limit images
of DATASET_DIR's training split (as `rmld augment --limit`), the held-out set the first
--test-limit images of its test split.
- label preservation: multinomial logistic regression (lbfgs, C = 1, 300 iterations) trained on
  the real training images; the fraction of generated images it assigns to their class, beside
  its accuracy on the real test images, and (images of a known shape) on its training images
  each moved by one pixel (image i right, left, down, up as i % 4; edges repeated): what a
  plain 1-pixel move keeps under this position-sensitive judge, as the Rust report says;
- novelty: each generated image's Euclidean distance to its nearest real training image divided
  by the median of the same for the real test images;
- diversity: per class, mean pairwise distance among generated images over the same among real
  training images (at most 1000 of each, drawn with seed 0); the mean over classes.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "table2"))
import rmld_io  # noqa: E402


def nearest_distances(queries: np.ndarray, reference: np.ndarray, block: int = 2048) -> np.ndarray:
    ref_sq = (reference**2).sum(1)
    out = np.empty(len(queries))
    for start in range(0, len(queries), block):
        q = queries[start : start + block]
        d2 = (q**2).sum(1)[:, None] + ref_sq[None, :] - 2.0 * q @ reference.T
        out[start : start + block] = np.sqrt(np.maximum(d2.min(1), 0.0))
    return out


def mean_pairwise(x: np.ndarray, rng: np.random.Generator, cap: int = 1000) -> float:
    if len(x) > cap:
        x = x[rng.choice(len(x), cap, replace=False)]
    if len(x) < 2:
        return float("nan")
    sq = (x**2).sum(1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * x @ x.T, 0.0)
    iu = np.triu_indices(len(x), 1)
    return float(np.sqrt(d2[iu]).mean())


ONE_PIXEL_MOVES = ((0, 1), (0, -1), (1, 0), (-1, 0))


def moved_one_pixel(images: np.ndarray, shape) -> np.ndarray:
    """`images` (N, h·w) each moved by one pixel, image i by ONE_PIXEL_MOVES[i % 4], the edge
    row or column repeated into the emptied pixels (the Rust `moved_one_pixel`)."""
    out = np.empty_like(images)
    for k, move in enumerate(ONE_PIXEL_MOVES):
        out[k::4] = moved_by(images[k::4], shape, move)
    return out


def moved_by(images: np.ndarray, shape, move) -> np.ndarray:
    """`images` (N, h·w) all moved by `move` (rows, columns), the edge repeated."""
    h, w = shape
    dr, dc = move
    rows = np.clip(np.arange(h) - dr, 0, h - 1)
    cols = np.clip(np.arange(w) - dc, 0, w - 1)
    return images.reshape(-1, h, w)[:, rows][:, :, cols].reshape(len(images), -1)


def evaluate(generated, generated_labels, train, train_labels, test, test_labels, shape=None) -> dict:
    classifier = LogisticRegression(C=1.0, max_iter=300)
    classifier.fit(train, train_labels)
    test_accuracy = float((classifier.predict(test) == test_labels).mean())
    moved = None
    if shape is not None:
        moved = float((classifier.predict(moved_one_pixel(train, shape)) == train_labels).mean())
    preserved = float((classifier.predict(generated) == generated_labels).mean())
    test_nn = nearest_distances(test, train)
    scale = float(np.median(test_nn))
    novelty = nearest_distances(generated, train) / scale
    rng = np.random.default_rng(0)
    diversity, test_diversity = {}, {}
    for label in np.unique(generated_labels):
        real = mean_pairwise(train[train_labels == label], rng)
        diversity[int(label)] = mean_pairwise(generated[generated_labels == label], rng) / real
        test_diversity[int(label)] = mean_pairwise(test[test_labels == label], rng) / real
    return {
        "label_preservation": preserved,
        "classifier_test_accuracy": test_accuracy,
        "moved_one_pixel_label_preservation": moved,
        "novelty_mean": float(novelty.mean()),
        "novelty_median": float(np.median(novelty)),
        "near_copy_fraction": float((novelty < 0.1).mean()),
        "diversity": float(np.mean(list(diversity.values()))),
        "diversity_per_class": diversity,
        "reference_test_novelty_mean": float((test_nn / scale).mean()),
        "reference_test_diversity": float(np.mean(list(test_diversity.values()))),
        "test_nn_median_distance": scale,
        "generated": int(len(generated)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("data", type=Path)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--test-limit", type=int)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    generated = rmld_io.read_idx_images(args.run / "generated-images-idx3-ubyte.gz")
    generated_labels = rmld_io.read_idx_labels(args.run / "generated-labels-idx1-ubyte.gz")
    # Pictures (N, h, w): the moved-one-pixel calibration needs their shape.
    train = rmld_io.read_idx_pictures(rmld_io.find_split(args.data, "train", "images"))
    train_labels = rmld_io.read_idx_labels(rmld_io.find_split(args.data, "train", "labels"))
    test = rmld_io.read_idx_images(rmld_io.find_split(args.data, "test", "images"))
    test_labels = rmld_io.read_idx_labels(rmld_io.find_split(args.data, "test", "labels"))
    train, train_labels = train[: args.limit], train_labels[: args.limit]
    test, test_labels = test[: args.test_limit], test_labels[: args.test_limit]
    flat = lambda a: a.reshape(len(a), -1).astype(np.float64) / 255.0  # noqa: E731
    result = evaluate(flat(generated), generated_labels, flat(train), train_labels, flat(test), test_labels,
                      shape=train.shape[1:])
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"label preservation {100 * result['label_preservation']:.1f}% "
            f"(classifier on real test {100 * result['classifier_test_accuracy']:.1f}%, "
            f"on its training images moved one pixel {100 * result['moved_one_pixel_label_preservation']:.1f}%), "
            f"novelty {result['novelty_mean']:.2f} (median {result['novelty_median']:.2f}, "
            f"near copies {100 * result['near_copy_fraction']:.1f}%), diversity {result['diversity']:.2f} "
            f"(real test: novelty {result['reference_test_novelty_mean']:.2f}, diversity {result['reference_test_diversity']:.2f})"
        )


if __name__ == "__main__":
    main()
