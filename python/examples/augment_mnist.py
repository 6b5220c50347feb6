"""Augments MNIST with rmld and measures what the generated samples do for a classifier.

Trains scikit-learn's logistic regression on N real training images, then on the same images
plus rmld's class-conditional samples, and prints both test accuracies, the augmentation's own
quality report, and an ArviZ summary of a short sampling run.

    python python/examples/augment_mnist.py --data ../shared/datasets/mnist --train 3000 --test 1000

(Runs on the GPU when there is one, else the CPU: --backend cpu|gpu to choose.)
"""

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

import rmld


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/datasets/mnist", help="MNIST folder (IDX files)")
    parser.add_argument("--train", type=int, default=3000, help="real training images used")
    parser.add_argument("--test", type=int, default=1000, help="test images scored")
    parser.add_argument("--ratio", type=float, default=1.0, help="originals per generated sample")
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "gpu"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    data = Path(args.data)
    images = rmld.read_idx(data / "train-images-idx3-ubyte.gz")[: args.train]
    labels = rmld.read_idx(data / "train-labels-idx1-ubyte.gz")[: args.train].astype(np.int64)
    test_images = rmld.read_idx(data / "t10k-images-idx3-ubyte.gz")[: args.test]
    test_labels = rmld.read_idx(data / "t10k-labels-idx1-ubyte.gz")[: args.test]

    started = time.time()
    result = rmld.augment(images, labels, ratio=args.ratio, backend=args.backend, seed=args.seed,
                          progress=Progress())
    print(f"\naugment: {len(result.images)} new images in {time.time() - started:.1f} s")
    print("\n".join(result.summary))

    def accuracy(X, y):
        model = LogisticRegression(max_iter=500)
        model.fit(X.reshape(len(X), -1) / 255.0, y)
        return model.score(test_images.reshape(len(test_images), -1) / 255.0, test_labels)

    real = accuracy(images, labels)
    both = accuracy(np.concatenate([images, result.images]), np.concatenate([labels, result.labels]))
    print(f"logistic regression, {args.train} real images:           {real:.4f}")
    print(f"logistic regression, real + {len(result.images)} generated:   {both:.4f}")

    draws = rmld.sample(images[:500], chains=8, samples=200, method="hmc", backend=args.backend,
                        seed=args.seed)
    import arviz as az

    idata = draws.to_inference_data()
    print(az.summary(idata, var_names=["codes"], coords={"coefficient": list(range(5))}))


class Progress:
    """Prints one line per phase (a tqdm bar works the same way: update(done - last))."""

    def __init__(self):
        self.phase = None

    def __call__(self, phase, done, total):
        if phase != self.phase:
            self.phase = phase
            print(f"\n{phase}", end="", flush=True)
        elif total:
            print(f"\r{phase}: {done}/{total}", end="", flush=True)


if __name__ == "__main__":
    main()
