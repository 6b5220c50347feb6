#!/usr/bin/env python3
"""Table 2 of the RMLD paper (Section 5.2, "Spectral Data Augmentation") with scikit-learn.

Trains the paper's six linear classifiers on each training set and reports the test error in
percent, mean ± std over seeds:

  Original     the original training images (pixels) used by the augmentation runs
  Compression  their LASSO codes (codes.npy[:original_count] of --compression-from)
  RMLD         originals' codes + RMLD-generated codes (all of codes.npy of --rmld)
  RMLD w/o MH  the same for --rmld-no-mh
  Deform       the same for --deform: rmld augment's default method (`--method deform`), its
               generated images' LASSO codes under the same dictionary (docs/usefulness.md)
  Kernel HMC   originals + Kernel-HMC-generated images (all of the IDX set of --kernel-hmc)

Code rows are tested on test-codes.npy (the LASSO codes of the test images, same dictionary),
pixel rows on the dataset's test images. All rows use the same first T test images, T being the
smallest of --limit-test, the dataset's test split and every code row's test-codes.npy.

Run with --help for the options; README.md beside this file explains every choice.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rmld_io import (  # noqa: E402
    RmldInputError,
    find_split,
    read_idx_images,
    read_idx_labels,
    read_npy_codes,
    read_npy_labels,
    read_report,
    report_int,
)

CODE_ROWS = [("RMLD", "--rmld"), ("RMLD w/o MH", "--rmld-no-mh"), ("Deform", "--deform")]
ROW_ORDER = ["Original", "Compression", "RMLD", "RMLD w/o MH", "Deform", "Kernel HMC"]


# --------------------------------------------------------------------------------------------
# Classifiers
# --------------------------------------------------------------------------------------------


@dataclass
class Classifier:
    key: str
    title: str  # the paper's column heading
    solver: str  # what it is in scikit-learn, for the report
    fixed: dict  # hyper-parameters used with --cv 0
    grid: dict  # the --cv search grid
    build: object  # (params, seed, n_jobs) -> unfitted estimator


def _sgd(loss, penalty, average, **extra):
    def build(params, seed, n_jobs):
        from sklearn.linear_model import SGDClassifier

        return SGDClassifier(
            loss=loss,
            penalty=penalty,
            max_iter=200,
            tol=1e-3,
            n_iter_no_change=5,
            average=average,
            random_state=seed,
            n_jobs=n_jobs,
            **extra,
            **params,
        )

    return build


def _linear_svc(params, seed, n_jobs):
    from sklearn.svm import LinearSVC

    return LinearSVC(
        loss="squared_hinge", penalty="l2", dual=True, max_iter=2000, random_state=seed, **params
    )


def _l1_logistic(params, seed, n_jobs):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(
        penalty="l1", solver="liblinear", max_iter=200, random_state=seed, **params
    )


def _l2_logistic(params, seed, n_jobs):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(penalty="l2", solver="lbfgs", max_iter=1000, random_state=seed, **params)


def _perceptron(params, seed, n_jobs):
    from sklearn.linear_model import Perceptron

    return Perceptron(
        penalty="l2", max_iter=200, tol=1e-3, n_iter_no_change=5, random_state=seed, n_jobs=n_jobs,
        **params,
    )


CLASSIFIERS = {
    c.key: c
    for c in [
        Classifier(
            "svm",
            "SVM",
            "SGDClassifier(loss='hinge', penalty='l2', average=True), one-vs-rest",
            {"alpha": 1e-5},
            {"alpha": [1e-6, 1e-5, 1e-4]},
            _sgd("hinge", "l2", average=True),
        ),
        Classifier(
            "l2svm",
            "ℓ2-SVM",
            "LinearSVC(loss='squared_hinge', penalty='l2', dual=True) (liblinear), one-vs-rest",
            {"C": 0.01},
            {"C": [0.001, 0.01, 0.1]},
            _linear_svc,
        ),
        Classifier(
            "elasticnet",
            "ElasticNet",
            "SGDClassifier(loss='log_loss', penalty='elasticnet', l1_ratio=0.5), one-vs-rest",
            {"alpha": 1e-4},
            {"alpha": [1e-5, 1e-4, 1e-3]},
            # No averaging: averaged SGD with an l1 part gave 48% error on 20,000 MNIST images
            # (alpha 1e-4), 9.6% without.
            _sgd("log_loss", "elasticnet", average=False, l1_ratio=0.5),
        ),
        Classifier(
            "l1lr",
            "ℓ1-Log. Reg.",
            "LogisticRegression(penalty='l1', solver='liblinear'), one-vs-rest",
            {"C": 1.0},
            {"C": [0.1, 1.0, 10.0]},
            _l1_logistic,
        ),
        Classifier(
            "l2lr",
            "ℓ2-Log. Reg.",
            "LogisticRegression(penalty='l2', solver='lbfgs'), multinomial",
            {"C": 1.0},
            {"C": [0.1, 1.0, 10.0]},
            _l2_logistic,
        ),
        Classifier(
            "perceptron",
            "ℓ2-Percep.",
            "Perceptron(penalty='l2'), one-vs-rest",
            {"alpha": 1e-5},
            {"alpha": [1e-6, 1e-5, 1e-4]},
            _perceptron,
        ),
    ]
}


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


class InputError(Exception):
    pass


@dataclass
class Dataset:
    path: Path
    train_images_path: Path
    train_labels_path: Path
    test_images_path: Path
    test_labels_path: Path
    _cache: dict = field(default_factory=dict)

    @classmethod
    def open(cls, path):
        path = Path(path)
        return cls(
            path,
            find_split(path, "train", "images"),
            find_split(path, "train", "labels"),
            find_split(path, "test", "images"),
            find_split(path, "test", "labels"),
        )

    def _pair(self, images_path, labels_path):
        key = (images_path, labels_path)
        if key not in self._cache:
            images = read_idx_images(images_path)
            labels = read_idx_labels(labels_path)
            if len(images) != len(labels):
                raise InputError(
                    f"{labels_path} has {len(labels)} labels but {images_path} has "
                    f"{len(images)} images"
                )
            self._cache[key] = (images, labels)
        return self._cache[key]

    def train(self):
        return self._pair(self.train_images_path, self.train_labels_path)

    def test(self):
        return self._pair(self.test_images_path, self.test_labels_path)


def _odd_one_out(what, counts, expected=None, expected_text=None):
    """Raises naming the file whose count disagrees with the others (and with report.json)."""
    values = [n for _, n in counts]
    if expected is None and len(set(values)) <= 1:
        return
    if expected is not None and all(n == expected for n in values):
        return
    listing = ", ".join(f"{p} has {n}" for p, n in counts)
    if expected is not None:
        wrong = [str(p) for p, n in counts if n != expected]
        raise InputError(
            f"{what}: {listing}, but {expected_text} = {expected}: "
            f"{' and '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not match"
        )
    # No report to arbitrate: name the minority (or every file when they all differ).
    majority = max(set(values), key=values.count)
    wrong = [str(p) for p, n in counts if n != majority] if values.count(majority) > 1 else []
    blame = f": {' and '.join(wrong)} is the odd one out" if wrong else ""
    raise InputError(f"{what}: counts differ ({listing}){blame}")


@dataclass
class OutDir:
    """An `rmld augment` output folder."""

    flag: str
    path: Path
    report: dict
    original_count: int
    generated_count: int
    test_count: int | None

    @classmethod
    def open(cls, flag, path):
        path = Path(path)
        if not path.is_dir():
            raise InputError(f"{flag} {path}: no such folder")
        report_path = path / "report.json"
        report = read_report(report_path)
        if report.get("interrupted") is True:
            raise InputError(
                f"{report_path} says the run was interrupted: the augmented set is incomplete; "
                "rerun rmld augment"
            )
        return cls(
            flag,
            path,
            report,
            report_int(report, "original_count", report_path),
            report_int(report, "generated_count", report_path),
            report_int(report, "test_count", report_path, required=False),
        )

    @property
    def total(self):
        return self.original_count + self.generated_count

    @property
    def expected_text(self):
        return (
            f"{self.path / 'report.json'} says original_count + generated_count = "
            f"{self.original_count} + {self.generated_count}"
        )

    def pixel_max(self):
        value = self.report.get("pixel_max", 255.0)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
            raise InputError(f"{self.path / 'report.json'}: pixel_max is {value!r}")
        return float(value)

    def images(self):
        ip = self.path / "train-images-idx3-ubyte.gz"
        lp = self.path / "train-labels-idx1-ubyte.gz"
        if not ip.is_file() and (self.path / "train-images-idx3-ubyte").is_file():
            ip, lp = self.path / "train-images-idx3-ubyte", self.path / "train-labels-idx1-ubyte"
        images, labels = read_idx_images(ip), read_idx_labels(lp)
        _odd_one_out(
            f"{self.flag} {self.path}", [(ip, len(images)), (lp, len(labels))],
            self.total, self.expected_text,
        )
        return images, labels

    def codes(self):
        cp, lp = self.path / "codes.npy", self.path / "labels.npy"
        if not cp.is_file() and not lp.is_file() and (self.path / "generated-codes.npy").is_file():
            raise InputError(
                f"{cp}: no such file; this run has no codes for its originals (rmld augment "
                "--no-original-codes, or an images-only method): rerun without it"
            )
        codes, labels = read_npy_codes(cp), read_npy_labels(lp)
        _odd_one_out(
            f"{self.flag} {self.path}", [(cp, len(codes)), (lp, len(labels))],
            self.total, self.expected_text,
        )
        dictionary = self.report.get("dictionary")
        p = dictionary.get("p") if isinstance(dictionary, dict) else None
        if isinstance(p, int) and codes.shape[1] != p:
            raise InputError(
                f"{cp} has codes of {codes.shape[1]} values but {self.path / 'report.json'} "
                f"says the dictionary has p = {p} atoms"
            )
        # The IDX labels, when present, must be the same list.
        idx_labels = self.path / "train-labels-idx1-ubyte.gz"
        if idx_labels.is_file():
            other = read_idx_labels(idx_labels)
            if len(other) == len(labels) and not np.array_equal(other, labels):
                first = int(np.flatnonzero(other != labels)[0])
                raise InputError(
                    f"{lp} and {idx_labels} disagree (first at row {first}: "
                    f"{labels[first]} vs {other[first]})"
                )
        return codes, labels

    def test_codes(self):
        cp, lp = self.path / "test-codes.npy", self.path / "test-labels.npy"
        if not cp.is_file():
            raise InputError(
                f"{cp}: no such file; code rows are tested on the test split's codes: "
                "rerun rmld augment with --encode-test"
            )
        codes, labels = read_npy_codes(cp), read_npy_labels(lp)
        text = f"{self.path / 'report.json'} says test_count"
        _odd_one_out(
            f"{self.flag} {self.path}", [(cp, len(codes)), (lp, len(labels))],
            self.test_count, text,
        )
        return codes, labels


@dataclass
class Row:
    name: str
    kind: str  # "pixels" or "codes"
    source: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    scale: float  # divide features by this (pixels: 255, codes: the run's pixel_max)
    notes: list = field(default_factory=list)


def _check_test_labels(path_desc, labels, dataset_labels, t):
    if not np.array_equal(labels[:t], dataset_labels[:t]):
        first = int(np.flatnonzero(labels[:t] != dataset_labels[:t])[0])
        raise InputError(
            f"{path_desc} does not hold the labels of the dataset's first {t} test images "
            f"(first difference at row {first}: {labels[first]} vs {dataset_labels[first]}); "
            "was it made from another dataset?"
        )


def build_rows(args, log):
    """Every requested row, with its training and test matrices (unscaled)."""
    dataset = Dataset.open(args.dataset)
    dirs = {}
    for flag, value in [
        ("--rmld", args.rmld),
        ("--rmld-no-mh", args.rmld_no_mh),
        ("--deform", args.deform),
        ("--kernel-hmc", args.kernel_hmc),
        ("--compression-from", args.compression_from),
    ]:
        if value is not None:
            dirs[flag] = OutDir.open(flag, value)
    compression = next((dirs[f] for f in ["--compression-from"] + [f for _, f in CODE_ROWS]
                        if f in dirs), None)

    # Checks between runs: the same originals make the rows comparable.
    reference = next(iter(dirs.values()), None)
    for d in dirs.values():
        if d.original_count != reference.original_count:
            log(
                f"warning: {d.flag} {d.path} has original_count {d.original_count}, "
                f"{reference.flag} {reference.path} has {reference.original_count}: the rows "
                "do not share their originals"
            )
    for flag, want in [("--rmld", True), ("--rmld-no-mh", False)]:
        d = dirs.get(flag)
        if d is not None and isinstance(d.report.get("mh"), bool) and d.report["mh"] != want:
            log(f"warning: {flag} {d.path}: report.json says mh = {d.report['mh']}")

    # The runs whose test-codes.npy a code row is tested on.
    code_dirs = {}
    if "Compression" in args.rows and compression is not None:
        code_dirs[id(compression)] = compression
    for name, flag in CODE_ROWS:
        if name in args.rows and flag in dirs:
            code_dirs[id(dirs[flag])] = dirs[flag]

    test_images, test_labels = dataset.test()
    t = len(test_labels)
    limits = [f"the dataset's {t} test images"]
    if args.limit_test is not None and args.limit_test < t:
        t = args.limit_test
        limits.append(f"--limit-test {t}")
    test_codes = {}
    for key, d in code_dirs.items():
        codes, labels = d.test_codes()
        test_codes[key] = (codes, labels)
        if len(labels) < t:
            t = len(labels)
            limits.append(f"{d.path / 'test-codes.npy'} ({len(labels)} rows)")
    if t == 0:
        raise InputError("no test images to evaluate on (" + ", ".join(limits) + ")")
    for key, d in code_dirs.items():
        _check_test_labels(d.path / "test-labels.npy", test_codes[key][1], test_labels, t)

    rows = []
    if "Original" in args.rows:
        if reference is not None:
            images, labels = reference.images()
            n = reference.original_count
            source = (
                f"the first {n} images of {reference.path / 'train-images-idx3-ubyte.gz'} "
                f"(the originals of {reference.flag})"
            )
        else:
            images, labels = dataset.train()
            n = len(labels) if args.limit_train is None else min(args.limit_train, len(labels))
            source = f"the first {n} training images of {dataset.train_images_path}"
        x, y = images[:n], labels[:n]
        _check_dims(x, test_images, source, dataset.test_images_path)
        rows.append(Row("Original", "pixels", source, x, y, test_images[:t], test_labels[:t], 255.0))
    if "Compression" in args.rows and compression is not None:
        codes, labels = compression.codes()
        n = compression.original_count
        tc, tl = test_codes[id(compression)]
        source = f"codes.npy[:{n}] of {compression.path} (the originals' LASSO codes)"
        _check_dims(codes, tc, compression.path / "codes.npy", compression.path / "test-codes.npy")
        rows.append(
            Row("Compression", "codes", source, codes[:n], labels[:n], tc[:t], tl[:t],
                compression.pixel_max())
        )
    for name, flag in CODE_ROWS:
        d = dirs.get(flag)
        if name in args.rows and d is not None:
            codes, labels = d.codes()
            tc, tl = test_codes[id(d)]
            _check_dims(codes, tc, d.path / "codes.npy", d.path / "test-codes.npy")
            source = (
                f"all {len(labels)} rows of {d.path / 'codes.npy'} "
                f"({d.original_count} originals + {d.generated_count} generated)"
            )
            row = Row(name, "codes", source, codes, labels, tc[:t], tl[:t], d.pixel_max())
            rate = d.report.get("acceptance_rate")
            if isinstance(rate, (int, float)) and not isinstance(rate, bool):
                row.notes.append(f"acceptance rate {100 * rate:.1f}%")
            rows.append(row)
    by_name = {row.name: row for row in rows}
    if "RMLD" in by_name and "RMLD w/o MH" in by_name:
        a, b = by_name["RMLD"], by_name["RMLD w/o MH"]
        if a.x_train.shape == b.x_train.shape and np.array_equal(a.x_train, b.x_train):
            log(
                f"warning: {dirs['--rmld'].path / 'codes.npy'} and "
                f"{dirs['--rmld-no-mh'].path / 'codes.npy'} are identical (MH accepted every "
                "proposal: see acceptance_rate in report.json; the paper's best discount is "
                "1.15-1.35, rmld augment --discount): the two rows will agree"
            )
    d = dirs.get("--kernel-hmc")
    if "Kernel HMC" in args.rows and d is not None:
        images, labels = d.images()
        _check_dims(images, test_images, d.path / "train-images-idx3-ubyte.gz",
                    dataset.test_images_path)
        source = (
            f"all {len(labels)} images of {d.path / 'train-images-idx3-ubyte.gz'} "
            f"({d.original_count} originals + {d.generated_count} generated)"
        )
        rows.append(Row("Kernel HMC", "pixels", source, images, labels, test_images[:t],
                        test_labels[:t], 255.0))

    # A run restricted to some classes (rmld augment --classes) is tested on those classes.
    for row in rows:
        classes = np.unique(row.y_train)
        keep = np.isin(row.y_test, classes)
        if not keep.all():
            row.notes.append(
                f"tested on the {int(keep.sum())} of {len(keep)} test rows whose class is among "
                f"the {len(classes)} training classes"
            )
            row.x_test, row.y_test = row.x_test[keep], row.y_test[keep]
        if len(classes) < 2:
            raise InputError(f"{row.name}: the training set ({row.source}) has only one class")
    info = {"test_count": t, "test_limited_by": limits, "dataset": str(dataset.path)}
    return rows, info


def _check_dims(train, test, train_desc, test_desc):
    if train.shape[1] != test.shape[1]:
        raise InputError(
            f"{train_desc} has {train.shape[1]} features per row but {test_desc} has "
            f"{test.shape[1]}"
        )


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


def evaluate_cell(row, x_train, x_test, clf, args, log):
    """Fits `clf` once per seed; returns the cell's record."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    errors, seconds, cpu_seconds, chosen, iterations, convergence = [], [], [], [], [], 0
    n = len(row.y_train)
    for seed in range(args.seeds):
        order = np.random.default_rng(seed).permutation(n)
        x, y = x_train[order], row.y_train[order]
        started, cpu_started = time.perf_counter(), time.process_time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            if args.cv > 0:
                smallest = int(np.min(np.unique(y, return_counts=True)[1]))
                if smallest < args.cv:
                    raise InputError(
                        f"{row.name}: --cv {args.cv} needs at least {args.cv} training rows per "
                        f"class; the smallest class has {smallest}"
                    )
                search = GridSearchCV(
                    clf.build({}, seed, 1),
                    clf.grid,
                    cv=StratifiedKFold(args.cv, shuffle=True, random_state=seed),
                    n_jobs=args.jobs,
                    refit=True,
                    error_score="raise",
                )
                search.fit(x, y)
                model, params = search.best_estimator_, search.best_params_
            else:
                params = dict(clf.fixed)
                model = clf.build(params, seed, args.jobs)
                model.fit(x, y)
        elapsed = time.perf_counter() - started
        cpu_seconds.append(time.process_time() - cpu_started)
        convergence += sum(issubclass(w.category, ConvergenceWarning) for w in caught)
        for message in dict.fromkeys(
            f"{w.category.__name__}: {w.message}"
            for w in caught
            if not issubclass(w.category, ConvergenceWarning)
        ):
            log(f"  [{row.name}] {clf.key} seed {seed}: {message}")
        error = 100.0 * float(np.mean(model.predict(x_test) != row.y_test))
        errors.append(error)
        seconds.append(elapsed)
        chosen.append({k: float(v) for k, v in params.items()})
        iterations.append(_iterations(model))
        log(f"  [{row.name}] {clf.key} seed {seed}: {error:.2f}% error, fit {elapsed:.2f} s "
            f"({cpu_seconds[-1]:.2f} s CPU)"
            + (f" ({params})" if args.cv > 0 else ""))
    if convergence:
        log(f"  [{row.name}] {clf.key}: {convergence} convergence warning(s)")
    return {
        "title": clf.title,
        "errors": errors,
        "mean": float(np.mean(errors)),
        "std": float(np.std(errors)),
        "fit_seconds": seconds,
        "mean_fit_seconds": float(np.mean(seconds)),
        "fit_cpu_seconds": cpu_seconds,
        "params": chosen,
        "iterations": iterations,
        "convergence_warnings": convergence,
    }


def _iterations(model):
    """The solver's iteration count (the largest over one-vs-rest problems), if it has one."""
    n_iter = getattr(model, "n_iter_", None)
    return None if n_iter is None else int(np.max(n_iter))


def scale_features(row, code_scaling):
    """The feature rule: pixels / 255; codes / the run's pixel_max (so A·code is on the pixels'
    0..1 scale), or standardized (--code-scaling standard, fit on the training rows)."""
    x_train = np.asarray(row.x_train, dtype=np.float64)
    x_test = np.asarray(row.x_test, dtype=np.float64)
    if row.kind == "codes" and code_scaling == "standard":
        from sklearn.preprocessing import StandardScaler

        scaler = StandardScaler().fit(x_train)
        return scaler.transform(x_train), scaler.transform(x_test), "StandardScaler fit on training rows"
    if row.kind == "codes" and code_scaling == "none":
        return x_train, x_test, "none"
    x_train /= row.scale
    x_test /= row.scale
    return x_train, x_test, f"divided by {row.scale:g}"


def run(args, log):
    rows, info = build_rows(args, log)
    if not rows:
        raise InputError("no rows to evaluate: give --rmld, --rmld-no-mh, --deform, --kernel-hmc, "
                         "--compression-from, or keep Original in --rows")
    classifiers = [CLASSIFIERS[k] for k in args.classifiers]
    results = {
        "dataset": info["dataset"],
        "test_count": info["test_count"],
        "test_limited_by": info["test_limited_by"],
        "seeds": args.seeds,
        "cv": args.cv,
        "code_scaling": args.code_scaling,
        "jobs": args.jobs,
        "classifiers": {
            c.key: {"title": c.title, "solver": c.solver, "fixed": c.fixed, "grid": c.grid}
            for c in classifiers
        },
        "rows": {},
    }
    from threadpoolctl import threadpool_limits

    for row in rows:
        row_started = time.perf_counter()
        x_train, x_test, scaling = scale_features(row, args.code_scaling)
        log(f"[{row.name}] {len(row.y_train)} training rows x {x_train.shape[1]} features, "
            f"{len(row.y_test)} test rows; {row.source}")
        cells = {}
        with threadpool_limits(limits=args.jobs):
            for clf in classifiers:
                cells[clf.key] = evaluate_cell(row, x_train, x_test, clf, args, log)
        elapsed = time.perf_counter() - row_started
        log(f"[{row.name}] done in {elapsed:.1f} s: " + ", ".join(
            f"{k} {v['mean_fit_seconds']:.2f} s/fit" for k, v in cells.items()))
        results["rows"][row.name] = {
            "kind": row.kind,
            "source": row.source,
            "train_rows": int(len(row.y_train)),
            "test_rows": int(len(row.y_test)),
            "features": int(x_train.shape[1]),
            "classes": int(len(np.unique(row.y_train))),
            "scaling": scaling,
            "notes": row.notes,
            "seconds": elapsed,
            "classifiers": cells,
        }
    return results


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def _cell(mean, std, bold):
    text = f"{mean:.2f} ± {std:.2f}"
    return f"**{text}**" if bold else text


def markdown(results, paper=None):
    keys = list(results["classifiers"])
    titles = [results["classifiers"][k]["title"] for k in keys]
    rows = [name for name in ROW_ORDER if name in results["rows"]]
    best = {}
    for k in keys:
        means = [results["rows"][r]["classifiers"][k]["mean"] for r in rows]
        best[k] = min(means) if means else None
    how = (f"{results['cv']}-fold cross-validated hyper-parameters" if results["cv"]
           else "fixed hyper-parameters")
    lines = [
        f"Test error (%) on the first {results['test_count']} test images of "
        f"{results['dataset']}, mean ± std over {results['seeds']} seed(s), {how}; "
        "lowest mean per column in bold.",
        "",
        "| | " + " | ".join(titles) + " |",
        "|---|" + "---|" * len(keys),
    ]
    for r in rows:
        cells = results["rows"][r]["classifiers"]
        lines.append(
            f"| {r} | "
            + " | ".join(_cell(cells[k]["mean"], cells[k]["std"], cells[k]["mean"] == best[k])
                         for k in keys)
            + " |"
        )
    lines.append("")
    for r in rows:
        row = results["rows"][r]
        extra = "; ".join(row["notes"])
        lines.append(
            f"- {r}: {row['train_rows']} training rows x {row['features']} {row['kind']} "
            f"({row['scaling']}), {row['test_rows']} test rows; {row['source']}"
            + (f"; {extra}" if extra else "")
        )
    if paper is not None:
        name, block = paper
        lines += [
            "",
            f"The paper's Table 2, {block['title']} (test error %, as printed):",
            "",
            "| | " + " | ".join(titles) + " |",
            "|---|" + "---|" * len(keys),
        ]
        for r in ROW_ORDER + ["Vanilla GAN"]:
            if r in block["rows"]:
                lines.append(f"| {r} | " + " | ".join(block["rows"][r][k]["text"] for k in keys) + " |")
    return "\n".join(lines) + "\n"


def load_paper(name):
    path = Path(__file__).resolve().parent / "paper_table2.json"
    with open(path, encoding="utf-8") as f:
        table = json.load(f)
    if name not in table["datasets"]:
        raise InputError(f"--paper {name}: {path} has {', '.join(table['datasets'])}")
    return name, table["datasets"][name]


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="The RMLD paper's Table 2: linear classifiers' test error on the original, "
        "compressed and augmented training sets written by `rmld augment`.",
        epilog="Rows: Original (always, from the first OUT folder's originals or the dataset), "
        "Compression (with --rmld, --rmld-no-mh, --deform or --compression-from), RMLD (--rmld), "
        "RMLD w/o MH (--rmld-no-mh), Deform (--deform), Kernel HMC (--kernel-hmc).",
    )
    p.add_argument("--dataset", required=True, type=Path,
                   help="folder with train-/t10k- images and labels (IDX, gzip'd or raw)")
    p.add_argument("--rmld", type=Path, metavar="OUT", help="rmld augment output (with --encode-test)")
    p.add_argument("--rmld-no-mh", type=Path, metavar="OUT", help="rmld augment --no-mh output")
    p.add_argument("--deform", type=Path, metavar="OUT",
                   help="rmld augment --method deform --reencode output (its originals' codes "
                   "from reuse_codes.py)")
    p.add_argument("--kernel-hmc", type=Path, metavar="OUT",
                   help="rmld augment --method kernel-hmc output (images only)")
    p.add_argument("--compression-from", type=Path, metavar="OUT",
                   help="the run whose originals' codes give the Compression row "
                   "(default: --rmld, else --rmld-no-mh)")
    p.add_argument("--limit-test", type=int, metavar="N", help="evaluate on the first N test images")
    p.add_argument("--limit-train", type=int, metavar="N",
                   help="with no OUT folder: the Original row's first N training images")
    p.add_argument("--seeds", type=int, default=5, help="repetitions (shuffle and random_state s)")
    p.add_argument("--classifiers", default="all",
                   help="all, or a comma list of: " + ",".join(CLASSIFIERS))
    p.add_argument("--rows", default="all",
                   help="all, or a comma list of: original,compression,rmld,rmld-no-mh,deform,kernel-hmc")
    p.add_argument("--cv", type=int, default=0, metavar="K",
                   help="choose C/alpha by K-fold CV on the training set (0: fixed values)")
    p.add_argument("--code-scaling", choices=["pixel-max", "standard", "none"], default="pixel-max",
                   help="codes divided by the run's pixel_max (default), standardized, or raw")
    p.add_argument("--jobs", type=int, default=1, help="threads/processes (BLAS, one-vs-rest, CV)")
    p.add_argument("--markdown", type=Path, metavar="FILE", help="also write the table here")
    p.add_argument("--json", type=Path, metavar="FILE", help="write every error and timing here")
    p.add_argument("--paper", metavar="DATASET",
                   help="append the paper's numbers for DATASET (mnist, fashion-mnist, quickdraw, "
                   "emnist) from paper_table2.json")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = p.parse_args(argv)
    if args.classifiers == "all":
        args.classifiers = list(CLASSIFIERS)
    else:
        keys = [k.strip() for k in args.classifiers.split(",") if k.strip()]
        unknown = [k for k in keys if k not in CLASSIFIERS]
        if unknown or not keys:
            p.error(f"--classifiers: unknown {', '.join(unknown) or '(empty)'}; "
                    f"choose from {', '.join(CLASSIFIERS)}")
        args.classifiers = list(dict.fromkeys(keys))
    names = {"original": "Original", "compression": "Compression", "rmld": "RMLD",
             "rmld-no-mh": "RMLD w/o MH", "deform": "Deform", "kernel-hmc": "Kernel HMC"}
    if args.rows == "all":
        args.rows = list(ROW_ORDER)
    else:
        keys = [k.strip() for k in args.rows.split(",") if k.strip()]
        unknown = [k for k in keys if k not in names]
        if unknown or not keys:
            p.error(f"--rows: unknown {', '.join(unknown) or '(empty)'}; "
                    f"choose from {', '.join(names)}")
        args.rows = [names[k] for k in keys]
    for name in ("seeds", "jobs"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    if args.cv < 0 or args.cv == 1:
        p.error("--cv must be 0 (fixed hyper-parameters) or at least 2")
    for name in ("limit_test", "limit_train"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)

    def log(message):
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    try:
        paper = load_paper(args.paper) if args.paper else None
        results = run(args, log)
    except (InputError, RmldInputError) as e:
        print(f"evaluate.py: error: {e}", file=sys.stderr)
        return 2
    table = markdown(results, paper)
    sys.stdout.write(table)
    if args.markdown:
        args.markdown.write_text(table, encoding="utf-8")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2, allow_nan=False)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
