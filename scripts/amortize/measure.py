"""The amortised sampler against the MCMC path (docs/amortized.md, "Augmentation"): one dataset,
one seeded cut, three commands run back to back on the same backend.

Usage: python measure.py RMLD_BINARY DATASETS_DIR OUT_DIR [--dataset mnist] [--train N]
       [--test M] [--teacher-ratio R] [--seed S] [--fit-steps K] [--hidden H]

1. A seeded shuffle (numpy, seed S) of the dataset cut into N training and M test images, written
   as an IDX folder (as scripts/quality/table.py does).
2. `rmld amortize train --data FOLDER --ratio R:1 --out OUT/model.amz` (augment's default, the
   quality preset, as the teacher; its MCMC run is timed in its own report).
3. `rmld augment --data FOLDER` (the MCMC path, default settings) and `rmld augment --data FOLDER
   --sampler amortized --model OUT/model.amz`, each with the quality metrics.
For both generated sets: label preservation with two scikit-learn classifiers trained on the N
real images (logistic regression, RBF SVM) beside their accuracy on the M real test images,
novelty and diversity from report.json, the generation rate (MCMC: LASSO starts + burn-in +
sampling; amortized: its `generation_seconds`), and paper 004's check: the distribution of the
SVM's predicted classes over the generated set, whose classes are drawn uniformly (the share of
the most and least frequent class, and the total variation distance to uniform). Prints a
Markdown table and writes OUT_DIR/measure.json. Needs numpy and scikit-learn.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.svm import SVC

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "quality"))
from table import load, read_idx, write_idx  # noqa: E402


def run(cmd):
    started = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - started
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-2000:]}")
    return wall, done.stdout


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("rmld")
    ap.add_argument("datasets", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--dataset", default="mnist")
    ap.add_argument("--train", type=int, default=2000)
    ap.add_argument("--test", type=int, default=500)
    ap.add_argument("--teacher-ratio", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fit-steps", type=int, default=None)
    ap.add_argument("--hidden", type=int, default=None)
    ap.add_argument("--apply-steps", type=int, default=None)
    args = ap.parse_args()
    images, labels = load(args.dataset, args.datasets)
    order = np.random.default_rng(args.seed).permutation(len(images))
    train, test = order[: args.train], order[args.train : args.train + args.test]
    folder = args.out / "data" / args.dataset
    folder.mkdir(parents=True, exist_ok=True)
    write_idx(folder / "train-images-idx3-ubyte.gz", images[train])
    write_idx(folder / "train-labels-idx1-ubyte.gz", labels[train])
    write_idx(folder / "t10k-images-idx3-ubyte.gz", images[test])
    write_idx(folder / "t10k-labels-idx1-ubyte.gz", labels[test])
    common = ["--data", str(folder), "--backend", "cpu", "--seed", str(args.seed)]
    model = args.out / "model.amz"
    train_cmd = [args.rmld, "amortize", "train", *common, "--ratio", f"{args.teacher_ratio}:1",
                 "--force", "--out", str(model)]
    for flag, value in (("--fit-steps", args.fit_steps), ("--hidden", args.hidden),
                        ("--apply-steps", args.apply_steps)):
        if value is not None:
            train_cmd += [flag, str(value)]
    train_wall, _ = run(train_cmd)
    train_report = json.loads(Path(str(model) + ".json").read_text())
    rows = {}
    for name, extra in (("mcmc", []), ("amortized", ["--sampler", "amortized", "--model", str(model)])):
        out = args.out / name
        cmd = [args.rmld, "augment", *common, "--no-original-codes", "--force", "--out", str(out), *extra]
        wall, _ = run(cmd)
        report = json.loads((out / "report.json").read_text())
        gen = read_idx(out / "generated-images-idx3-ubyte.gz").reshape(-1, images[0].size) / 255.0
        gen_labels = read_idx(out / "generated-labels-idx1-ubyte.gz")
        phases = report["phase_seconds"]
        if name == "mcmc":
            seconds = phases["LASSO starts"] + phases["burn-in"] + phases["sampling"]
        else:
            seconds = report["amortized"]["generation_seconds"]
        rows[name] = {"command": " ".join(cmd), "wall": wall, "generated": len(gen),
                      "generation_seconds": seconds, "samples_per_second": len(gen) / seconds,
                      "novelty": report["quality"]["novelty"]["mean"],
                      "diversity": report["quality"]["diversity"]["mean"],
                      "rust_label_preservation": report["quality"]["label_preservation"]["overall"],
                      "gen": gen, "gen_labels": gen_labels}
    x_train = images[train].reshape(len(train), -1) / 255.0
    x_test = images[test].reshape(len(test), -1) / 255.0
    classes = np.unique(labels[train])
    for key, clf in (("logistic", LogisticRegression(C=1.0, max_iter=300)),
                     ("rbf_svm", SVC(C=1.0, kernel="rbf", gamma="scale"))):
        clf.fit(x_train, labels[train])
        real = float((clf.predict(x_test) == labels[test]).mean())
        for name, row in rows.items():
            pred = clf.predict(row["gen"])
            row[key] = {"generated": float((pred == row["gen_labels"]).mean()), "real_test": real}
            if key == "rbf_svm":
                share = np.array([(pred == c).mean() for c in classes])
                asked = np.array([(row["gen_labels"] == c).mean() for c in classes])
                row["predicted_class_share"] = {"min": float(share.min()), "max": float(share.max()),
                                                "tv_to_uniform": float(0.5 * np.abs(share - 1 / len(classes)).sum()),
                                                "tv_to_requested": float(0.5 * np.abs(share - asked).sum())}
    for row in rows.values():
        del row["gen"], row["gen_labels"]
    speedup = rows["amortized"]["samples_per_second"] / rows["mcmc"]["samples_per_second"]
    result = {"dataset": args.dataset, "train": args.train, "test": args.test,
              "train_command": " ".join(train_cmd), "train_wall": train_wall,
              "train_report": train_report, "rows": rows, "speedup": speedup}
    (args.out / "measure.json").write_text(json.dumps(result, indent=1))
    print(f"{args.dataset}: train {args.train}, test {args.test}; teacher {train_report['teacher_samples']} "
          f"samples in {train_report['teacher_seconds']:.0f} s; fit {train_report['fit_seconds']:.0f} s "
          f"on {train_report['fit_threads']} threads")
    print("| sampler | generated | samples/s | logistic gen. % (real %) | RBF SVM gen. % (real %) | novelty | diversity | predicted-class share min-max (TV) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        lg, sv, pc = r["logistic"], r["rbf_svm"], r["predicted_class_share"]
        print(f"| {name} | {r['generated']} | {r['samples_per_second']:.1f} | {100 * lg['generated']:.1f} "
              f"({100 * lg['real_test']:.1f}) | {100 * sv['generated']:.1f} ({100 * sv['real_test']:.1f}) "
              f"| {r['novelty']:.2f} | {r['diversity']:.2f} | {100 * pc['min']:.1f}-{100 * pc['max']:.1f} "
              f"({pc['tv_to_uniform']:.3f}) |")
    print(f"generation speed-up (amortized / MCMC): {speedup:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
