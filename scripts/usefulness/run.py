"""The usefulness benchmark (issue 41): does an augmentation help the classifier trained on it?

    bash scripts/usefulness/run.sh --mode quick   # a few minutes: MNIST, LR + SVM, 3 seeds
    bash scripts/usefulness/run.sh --mode full    # every regime, dataset and classifier

(run.sh makes the package's venv and builds the package, then runs this file with the same
arguments; `python scripts/usefulness/run.py ...` in that venv is the same.)

Regimes: `few` (20, 50, 200 labelled images per class, each augmentation adding FACTOR new
images per original), `imbalanced` (minority classes of 10-50 images against majority classes
of 400-1,000, each augmentation raising every class to the majority's count) and `table2` (the
paper's protocol: scripts/table2, printed as the command to run). Every augmentation of a cut is
drawn once and every classifier trains on originals + its new images; the table gives accuracy,
balanced accuracy and macro F1 on a balanced test set (mean ± std over the seeds) and the
augmentation's wall time. Rows go to OUT/rows.jsonl as they finish (a re-run skips rows already
there), the tables to OUT/tables.md and stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

# One BLAS thread per process: on a shared 2-core machine, threaded BLAS in the classifiers'
# fits was measured 5x slower (lbfgs on 2,500 Fashion-MNIST rows: 65 s against 13 s).
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

try:
    import numpy as np  # noqa: E402
except ImportError:  # run outside the package's venv: say how to get one
    sys.exit("run.py needs numpy, scikit-learn, imbalanced-learn and the rmld package: run it as "
             "`bash scripts/usefulness/run.sh ARGS` (it makes the venv and builds the package)")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import augmenters as aug  # noqa: E402
import data  # noqa: E402
import report  # noqa: E402

MODES = {
    # A few minutes on 2 CPU cores once rmld's generation is fast; today the rmld rows take
    # most of it (about 15 images/s on this VM's 2 cores: docs/usefulness.md).
    "quick": dict(datasets=["mnist"], few=[20], imbalanced=[(200, 10)], seeds=3,
                  classifiers=["lr", "svm"], test_per_class=200,
                  augmenters=["none", "smote", "shifts", "rmld", "rmld+shifts", "proposal"]),
    "full": dict(datasets=list(data.DATASETS), few=[20, 50, 200],
                 imbalanced=[(400, 20), (1000, 10), (1000, 50)], seeds=3,
                 classifiers=["lr", "svm", "mlp"], test_per_class=300,
                 augmenters=["none", "ros", "smote", "borderline-smote", "adasyn", "shifts",
                             "rotations", "elastic", "rmld", "rmld+shifts", "proposal",
                             "shifts+proposal"]),
}
FACTOR = 4.0  # new images per original in the few-labels regime (the originals' set times 5)


def classifier(name: str, seed: int):
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC

    if name == "lr":
        return LogisticRegression(C=0.05, max_iter=2000)
    if name == "svm":
        return SVC(C=5.0, gamma="scale")
    if name == "mlp":
        return MLPClassifier(hidden_layer_sizes=(256,), alpha=1e-3, max_iter=200,
                             early_stopping=False, random_state=seed)
    raise ValueError(f"unknown classifier {name!r}: lr, svm or mlp")


def scores(model, x, y) -> dict:
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

    predicted = model.predict(x.reshape(len(x), -1))
    return dict(acc=100 * accuracy_score(y, predicted),
                bacc=100 * balanced_accuracy_score(y, predicted),
                f1=100 * f1_score(y, predicted, average="macro"))


def augmenter(name: str):
    """An augmenter by name: a baseline, an `rmld` variant, or a prototype (prototypes.py)."""
    if name in aug.BASELINES:
        return aug.BASELINES[name]
    if name == "rmld":
        return aug.rmld_rust()
    if name == "rmld-deform":
        return aug.rmld_deform()
    if name == "rmld-shift-deform":
        return aug.rmld_deform(anchor_shift=True, drop=("shift",))
    if name.startswith("rmld-shift-deform:"):  # ... with rmld.augment settings
        return aug.rmld_deform(anchor_shift=True, drop=("shift",), **_settings(name.split(":", 1)[1]))
    if name.startswith("rmld:"):  # rmld:key=value,key=value: rmld.augment settings
        return aug.rmld_rust(**_settings(name[5:]))
    if name.startswith("rmld-stretch"):  # the default's draws stretched, box-normalised (session 34)
        import learned_variation

        return learned_variation.stretched(aug.rmld_rust(), float(name[len("rmld-stretch"):]))
    import prototypes

    if name in prototypes.PROTOTYPES:
        return prototypes.PROTOTYPES[name]
    raise ValueError(f"unknown augmenter {name!r}")


def proxies(x, y, gx, gy, pools) -> dict:
    """The quality proxies of docs/quality.md (scripts/quality/metrics.py) of the new images
    against this cut's originals and the test set: label preservation (and the classifier's
    accuracy on real test images and on the originals moved one pixel), novelty (mean) and
    diversity (mean over the classes with at least two new images)."""
    sys.path.insert(0, str(HERE.parent / "quality"))
    import metrics

    flat = lambda a: a.reshape(len(a), -1).astype(np.float64)  # noqa: E731
    shape = x.shape[1:] if x.ndim == 3 else None
    result = metrics.evaluate(flat(gx), gy, flat(x), y, flat(pools.test_x), pools.test_y, shape=shape)
    per_class = [v for v in result["diversity_per_class"].values() if np.isfinite(v)]
    return dict(preservation=100 * result["label_preservation"],
                real=100 * result["classifier_test_accuracy"],
                moved=None if result["moved_one_pixel_label_preservation"] is None
                else 100 * result["moved_one_pixel_label_preservation"],
                novelty=result["novelty_mean"], diversity=float(np.mean(per_class)))


def _settings(text: str) -> dict:
    """`key=value,key=value` as rmld.augment keyword settings (numbers and JSON parsed)."""
    settings = {}
    for pair in text.split(","):
        key, value = pair.split("=")
        settings[key] = json.loads(value) if value[:1] in "0123456789-[{tf" else value
    return settings


def cuts(mode: dict, regimes, pools):
    """(regime, setting label, per-class counts, per-class new images) of a dataset."""
    for regime in regimes:
        if regime == "few":
            for per_class in mode["few"]:
                counts = data.class_counts(pools, per_class)
                more = "" if mode["factor"] == FACTOR else f", {mode['factor']:g} new per original"
                yield regime, f"{min(counts.values())}/class{more}", counts, \
                    {c: int(round(mode["factor"] * n)) for c, n in counts.items()}
        elif regime == "imbalanced":
            minority = data.minority_classes(pools)
            for majority, rare in mode["imbalanced"]:
                counts = data.class_counts(pools, majority, minority, rare)
                top = max(counts.values())
                yield regime, f"{top} vs {min(counts.values())}", counts, \
                    {c: top - n for c, n in counts.items()}


def share(new, parts, i):
    """Part i's share of the new images when `parts` augmenters balance the classes together."""
    return {c: n // parts + (1 if i < n % parts else 0) for c, n in new.items()}


def run_cut(pools, counts, new, seed, names, classifiers, done, write, meta, with_proxies=False,
            keep=None):
    """Every augmentation of one training cut, each classifier on originals + its images. A
    composite "a+b" is the union of its parts; where the classes are to be balanced
    (imbalanced regime) the parts share the new images instead. With `keep` (a folder) every
    drawn set is stored there as 8-bit images and read back by a later run."""
    x, y = data.training_cut(pools, counts, seed)
    generated = {}

    def draw(part, i, parts):
        quota = new if meta["regime"] == "few" else share(new, parts, i)
        key = (part, tuple(sorted(quota.items())))
        if key not in generated:
            stored = None
            if keep is not None:
                label = "-".join(str(v) for v in (meta["dataset"], meta["regime"], meta["setting"],
                                                   seed, part, sum(quota.values())))
                stored = keep / (label.replace("/", "per").replace(" ", "_").replace(":", "_") + ".npz")
            if stored is not None and stored.exists():
                saved = np.load(stored)
                generated[key] = (saved["x"].astype(np.float32) / 255, saved["y"],
                                  float(saved["seconds"]))
                return generated[key]
            started = time.perf_counter()
            if part == "none":
                gx, gy = aug._empty(x)
            else:
                gx, gy = augmenter(part)(x, y, quota, seed)
            generated[key] = (gx, gy, time.perf_counter() - started)
            if stored is not None:
                np.savez_compressed(stored, x=(gx * 255).round().astype(np.uint8), y=gy,
                                    seconds=generated[key][2])
                generated[key] = (np.load(stored)["x"].astype(np.float32) / 255, gy, generated[key][2])
        return generated[key]

    for name in names:
        todo = [c for c in classifiers if (name, c) not in done]
        if not todo:
            continue
        try:
            names_of = name.split("+")
            parts = [draw(p, i, len(names_of)) for i, p in enumerate(names_of)]
        except Exception as error:  # a peer that cannot run on this cut: say so, go on
            print(f"  {name}: failed: {type(error).__name__}: {error}", file=sys.stderr)
            write(dict(meta, augmenter=name, classifier=None, error=f"{type(error).__name__}: {error}"))
            continue
        train_x = np.concatenate([x] + [p[0] for p in parts])
        train_y = np.concatenate([y] + [p[1] for p in parts])
        seconds = sum(p[2] for p in parts)
        if with_proxies and name != "none" and (name, "proxies") not in done:
            gx, gy = train_x[len(x):], train_y[len(x):]
            write(dict(meta, augmenter=name, classifier="proxies", **proxies(x, y, gx, gy, pools)))
        for name_c in todo:
            started = time.perf_counter()
            model = classifier(name_c, seed).fit(train_x.reshape(len(train_x), -1), train_y)
            fit = time.perf_counter() - started
            row = dict(meta, augmenter=name, classifier=name_c, n_train=len(train_x),
                       n_generated=len(train_x) - len(x), gen_s=seconds, fit_s=fit,
                       **scores(model, pools.test_x, pools.test_y))
            write(row)
            print(f"  {name:>24} {name_c:>4}: acc {row['acc']:.1f} bacc {row['bacc']:.1f} "
                  f"f1 {row['f1']:.1f} (gen {seconds:.1f} s, fit {fit:.1f} s)", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=MODES, default="quick")
    ap.add_argument("--out", type=Path, default=Path("target/usefulness"))
    ap.add_argument("--data", type=Path, default=data.default_root())
    ap.add_argument("--regimes", nargs="+", default=["few", "imbalanced", "table2"])
    ap.add_argument("--datasets", nargs="+", help="instead of the mode's")
    ap.add_argument("--augmenters", nargs="+", help="instead of the mode's ('a+b': union)")
    ap.add_argument("--classifiers", nargs="+", help="instead of the mode's: lr svm mlp")
    ap.add_argument("--seeds", type=int, help="instead of the mode's (seeds FIRST..FIRST+N-1)")
    ap.add_argument("--first-seed", type=int, default=0,
                    help="the first seed (default %(default)s): other cuts than the docs' tables")
    ap.add_argument("--few", type=int, nargs="+", help="per-class counts instead of the mode's")
    ap.add_argument("--imbalanced", nargs="+", help="MAJORITY:MINORITY pairs instead of the mode's")
    ap.add_argument("--test-per-class", type=int)
    ap.add_argument("--factor", type=float, default=FACTOR,
                    help="few labels: new images per original (default %(default)s)")
    ap.add_argument("--keep", action="store_true",
                    help="store every generated set in OUT/generated (8-bit) and reuse it")
    ap.add_argument("--proxies", action="store_true",
                    help="also the quality proxies (label preservation, novelty, diversity)")
    ap.add_argument("--backend", default="cpu", help="rmld's backend: cpu, gpu or auto")
    ap.add_argument("--side", type=int,
                    help="resample every image to SIDE x SIDE first (bilinear; rows name the "
                         "dataset NAME@SIDE): the benchmark at other image sizes")
    args = ap.parse_args()
    os.environ["RMLD_BACKEND"] = args.backend
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
    mode = dict(MODES[args.mode], factor=args.factor, first_seed=args.first_seed)
    for key in ("datasets", "augmenters", "classifiers", "seeds", "few", "test_per_class"):
        if getattr(args, key) is not None:
            mode[key] = getattr(args, key)
    if args.side:  # the rows (and tables) name the resampled sets
        loaded, mode["datasets"] = mode["datasets"], [f"{n}@{args.side}" for n in mode["datasets"]]
    else:
        loaded = mode["datasets"]
    if args.imbalanced:
        mode["imbalanced"] = [tuple(int(v) for v in pair.split(":")) for pair in args.imbalanced]
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / "rows.jsonl"
    rows = [json.loads(line) for line in rows_path.open()] if rows_path.exists() else []
    keep = None
    if args.keep:
        keep = args.out / "generated"
        keep.mkdir(exist_ok=True)
    started = time.perf_counter()
    with rows_path.open("a") as sink:
        def write(row):
            rows.append(row)
            sink.write(json.dumps(row) + "\n")
            sink.flush()

        for source, name in zip(loaded, mode["datasets"]):
            pools = data.load_pools(source, args.data, mode["test_per_class"])
            if args.side:
                pools = data.resized(pools, args.side)
            regimes = [r for r in args.regimes if r != "table2"]
            for regime, setting, counts, new in cuts(mode, regimes, pools):
                for seed in range(mode["first_seed"], mode["first_seed"] + mode["seeds"]):
                    meta = dict(dataset=name, regime=regime, setting=setting, seed=seed,
                                test=len(pools.test_y))
                    done = {(r["augmenter"], r["classifier"]) for r in rows
                            if all(r.get(k) == v for k, v in meta.items()) and "error" not in r}
                    print(f"{name} {regime} {setting} seed {seed}", flush=True)
                    run_cut(pools, counts, new, seed, mode["augmenters"], mode["classifiers"],
                            done, write, meta, args.proxies, keep)
    tables = report.tables(rows, mode)
    if "table2" in args.regimes:
        tables += report.TABLE2
    (args.out / "tables.md").write_text(tables)
    print(tables)
    print(f"({time.perf_counter() - started:.0f} s; rows in {rows_path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
