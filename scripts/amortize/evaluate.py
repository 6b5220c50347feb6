"""Compare augment runs (the MCMC path and `--sampler amortized`) on one labelled IDX dataset
(docs/amortized.md, "Augmentation").

Usage: python evaluate.py DATA_DIR TRAIN_LIMIT TEST_LIMIT RUN_DIR [RUN_DIR ...]

DATA_DIR holds MNIST-style IDX files; the classifiers are trained on its first TRAIN_LIMIT
training images (the images `rmld augment --limit TRAIN_LIMIT` used) and scored on its first
TEST_LIMIT t10k images. For each RUN_DIR (an `rmld augment` output folder): label preservation
with two scikit-learn classifiers (multinomial logistic regression, lbfgs, C = 1; RBF SVM, C = 1,
gamma "scale"; as scripts/quality/table.py) beside their real test accuracy; the Rust metrics'
novelty and diversity from report.json; the generation rate (MCMC: LASSO starts + burn-in +
sampling phases; amortized: `amortized.generation_seconds`); paper 004's check: the share of
each class among the SVM's predictions on the generated set (min, max, and the total variation
distance to uniform and to the requested classes). Prints a Markdown table; needs numpy and
scikit-learn.
"""

import gzip
import json
import struct
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.svm import SVC


def read_idx(path: Path) -> np.ndarray:
    data = gzip.open(path).read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4 : 4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def main() -> int:
    data, n_train, n_test, runs = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    x_train = read_idx(data / "train-images-idx3-ubyte.gz")[:n_train].reshape(n_train, -1) / 255.0
    y_train = read_idx(data / "train-labels-idx1-ubyte.gz")[:n_train]
    x_test = read_idx(data / "t10k-images-idx3-ubyte.gz")[:n_test].reshape(n_test, -1) / 255.0
    y_test = read_idx(data / "t10k-labels-idx1-ubyte.gz")[:n_test]
    classes = np.unique(y_train)
    clfs = {"logistic": LogisticRegression(C=1.0, max_iter=300),
            "rbf_svm": SVC(C=1.0, kernel="rbf", gamma="scale")}
    real = {}
    for key, clf in clfs.items():
        clf.fit(x_train, y_train)
        real[key] = float((clf.predict(x_test) == y_test).mean())
    print("| run | generated | generation s | samples/s | logistic gen. % (real %) | RBF SVM gen. % (real %) "
          "| novelty | diversity | SVM-predicted class share % min-max (TV to uniform, to requested) |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for run in map(Path, runs):
        report = json.loads((run / "report.json").read_text())
        gen = read_idx(run / "generated-images-idx3-ubyte.gz")
        gen = gen.reshape(len(gen), -1) / 255.0
        gen_labels = read_idx(run / "generated-labels-idx1-ubyte.gz")
        if "amortized" in report:
            seconds = report["amortized"]["generation_seconds"]
        else:
            ph = report["phase_seconds"]
            seconds = ph["LASSO starts"] + ph["burn-in"] + ph["sampling"]
        row = {"run": str(run), "generated": len(gen), "generation_seconds": seconds,
               "samples_per_second": len(gen) / seconds,
               "novelty": report["quality"]["novelty"]["mean"],
               "diversity": report["quality"]["diversity"]["mean"]}
        for key, clf in clfs.items():
            pred = clf.predict(gen)
            row[key] = float((pred == gen_labels).mean())
            if key == "rbf_svm":
                share = np.array([(pred == c).mean() for c in classes])
                asked = np.array([(gen_labels == c).mean() for c in classes])
                row["share"] = (float(share.min()), float(share.max()),
                                float(0.5 * np.abs(share - 1 / len(classes)).sum()),
                                float(0.5 * np.abs(share - asked).sum()))
        rows.append(row)
        s = row["share"]
        print(f"| {run.name} | {row['generated']} | {seconds:.2f} | {row['samples_per_second']:.1f} "
              f"| {100 * row['logistic']:.1f} ({100 * real['logistic']:.1f}) "
              f"| {100 * row['rbf_svm']:.1f} ({100 * real['rbf_svm']:.1f}) | {row['novelty']:.2f} "
              f"| {row['diversity']:.2f} | {100 * s[0]:.1f}-{100 * s[1]:.1f} ({s[2]:.3f}, {s[3]:.3f}) |")
    print(json.dumps({"real": real, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
