"""Self-test of the Table 2 harness on small synthetic data in `rmld augment`'s layout.

Run from the repository root with the harness's venv:
    "$(scripts/table2/setup_env.sh)" -m unittest discover -s scripts/table2 -p 'test_*.py'
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import evaluate  # noqa: E402
import rmld_io  # noqa: E402

CLASSES = 3
SIDE = 4  # 4×4 images
P = 16  # code length
TRAIN, TEST, ORIGINALS, GENERATED = 240, 150, 150, 30


def write_idx(path, array, gz=True):
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    data = header + array.tobytes()
    if gz:
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        Path(path).write_bytes(data)


def images_of(labels, rng):
    """Class c lights a different 4-pixel block, with noise: well separated 4×4 images."""
    x = rng.normal(30.0, 12.0, size=(len(labels), SIDE * SIDE))
    for c in range(CLASSES):
        rows = labels == c
        x[np.ix_(rows, range(4 * c, 4 * c + 4))] += 180.0
    return np.clip(np.rint(x), 0, 255).astype(np.uint8).reshape(-1, SIDE, SIDE)


def codes_of(labels, rng):
    """Codes on the real runs' scale (entries of tens, pixel_max 255), one cluster per class."""
    centres = np.zeros((CLASSES, P))
    for c in range(CLASSES):
        centres[c, 5 * c : 5 * c + 5] = 120.0
    return (centres[labels] + rng.normal(0.0, 20.0, size=(len(labels), P))).astype(np.float32)


def balanced_labels(n, rng):
    return rng.permutation(np.arange(n) % CLASSES).astype(np.int64)


def make_dataset(root, name="dataset", shuffle_labels=False):
    """A dataset folder. With `shuffle_labels` the stored labels are a permutation of the
    classes the images (and codes) were drawn from, in both splits: the features say nothing
    about the labels, so every classifier is at chance."""
    rng = np.random.default_rng(1)
    d = Path(root) / name
    d.mkdir()
    hidden_train, hidden_test = balanced_labels(TRAIN, rng), balanced_labels(TEST, rng)
    y_train, y_test = hidden_train, hidden_test
    if shuffle_labels:
        y_train, y_test = rng.permutation(hidden_train), rng.permutation(hidden_test)
    write_idx(d / "train-images-idx3-ubyte.gz", images_of(hidden_train, rng))
    write_idx(d / "train-labels-idx1-ubyte.gz", y_train)
    write_idx(d / "t10k-images-idx3-ubyte", images_of(hidden_test, rng), gz=False)  # raw works
    write_idx(d / "t10k-labels-idx1-ubyte.gz", y_test)
    return {"path": d, "y_train": y_train, "y_test": y_test, "hidden_train": hidden_train,
            "hidden_test": hidden_test, "shuffled": shuffle_labels}


def make_out(root, name, dataset, seed, codes=True, mh=True):
    """An `rmld augment` folder: the first ORIGINALS training images, then GENERATED new ones
    (drawn from the dataset's hidden classes, labelled like the dataset)."""
    rng = np.random.default_rng(seed)
    out = Path(root) / name
    out.mkdir()
    with gzip.open(dataset["path"] / "train-images-idx3-ubyte.gz") as f:
        originals = np.frombuffer(f.read()[16:], np.uint8).reshape(-1, SIDE, SIDE)[:ORIGINALS]
    hidden_gen = balanced_labels(GENERATED, rng)
    y_gen = rng.permutation(hidden_gen) if dataset["shuffled"] else hidden_gen
    hidden = np.concatenate([dataset["hidden_train"][:ORIGINALS], hidden_gen])
    labels = np.concatenate([dataset["y_train"][:ORIGINALS], y_gen])
    images = np.concatenate([originals, images_of(hidden_gen, rng)])
    write_idx(out / "train-images-idx3-ubyte.gz", images)
    write_idx(out / "train-labels-idx1-ubyte.gz", labels)
    write_idx(out / "generated-images-idx3-ubyte.gz", images[ORIGINALS:])
    write_idx(out / "generated-labels-idx1-ubyte.gz", labels[ORIGINALS:])
    report = {
        "command": "augment",
        "mh": mh,
        "pixel_max": 255.0,
        "dictionary": {"d": SIDE * SIDE, "p": P},
        "original_count": ORIGINALS,
        "generated_count": GENERATED,
        "interrupted": False,
    }
    if codes:
        all_codes = codes_of(hidden, rng)
        np.save(out / "codes.npy", all_codes)
        np.save(out / "labels.npy", labels)
        np.save(out / "generated-codes.npy", all_codes[ORIGINALS:])
        np.save(out / "generated-labels.npy", labels[ORIGINALS:])
        np.save(out / "test-codes.npy", codes_of(dataset["hidden_test"], rng))
        np.save(out / "test-labels.npy", dataset["y_test"])
        report["test_count"] = TEST
    (out / "report.json").write_text(json.dumps(report))
    return out


def run_main(argv):
    """evaluate.main in-process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = evaluate.main([str(a) for a in argv])
        except SystemExit as e:  # argparse errors
            status = e.code
    return status, out.getvalue(), err.getvalue()


class EvaluateTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        root = Path(cls.tmp.name)
        dataset = make_dataset(root)
        cls.data = dataset["path"]
        cls.rmld = make_out(root, "rmld", dataset, 10)
        cls.nomh = make_out(root, "nomh", dataset, 11, mh=False)
        cls.khmc = make_out(root, "khmc", dataset, 12, codes=False)
        shuffled = make_dataset(root, "shuffled-dataset", shuffle_labels=True)
        cls.shuffled_data = shuffled["path"]
        cls.shuffled = make_out(root, "shuffled", shuffled, 13)
        cls.shuffled_nomh = make_out(root, "shuffled-nomh", shuffled, 14, mh=False)
        cls.shuffled_khmc = make_out(root, "shuffled-khmc", shuffled, 15, codes=False)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def tmpdir(self):
        d = tempfile.mkdtemp(dir=self.tmp.name)
        return Path(d)

    def copy_out(self, source):
        target = self.tmpdir() / source.name
        target.mkdir()
        for f in source.iterdir():
            (target / f.name).write_bytes(f.read_bytes())
        return target

    def full_run(self, data, rmld, nomh, khmc, *extra):
        tmp = self.tmpdir()
        # The no-MH run stands in for a deform run too: both are code rows of generated codes.
        argv = ["--dataset", data, "--rmld", rmld, "--rmld-no-mh", nomh, "--deform", nomh,
                "--kernel-hmc", khmc,
                "--seeds", 2, "--json", tmp / "t.json", "--markdown", tmp / "t.md", *extra]
        status, stdout, stderr = run_main(argv)
        self.assertEqual(status, 0, stderr)
        results = json.loads((tmp / "t.json").read_text())
        self.assertEqual((tmp / "t.md").read_text(), stdout)
        return results, stdout, stderr

    def test_every_row_and_column_near_zero_error_on_separable_data(self):
        results, table, stderr = self.full_run(self.data, self.rmld, self.nomh, self.khmc)
        self.assertEqual(list(results["rows"]), evaluate.ROW_ORDER)
        self.assertEqual(results["test_count"], TEST)
        expected_rows = {"Original": ORIGINALS, "Compression": ORIGINALS,
                         "RMLD": ORIGINALS + GENERATED, "RMLD w/o MH": ORIGINALS + GENERATED,
                         "Deform": ORIGINALS + GENERATED, "Kernel HMC": ORIGINALS + GENERATED}
        for name, row in results["rows"].items():
            self.assertEqual(row["train_rows"], expected_rows[name], name)
            self.assertEqual(row["test_rows"], TEST)
            self.assertEqual(row["features"], P if row["kind"] == "codes" else SIDE * SIDE)
            self.assertEqual(list(row["classifiers"]), list(evaluate.CLASSIFIERS))
            for key, cell in row["classifiers"].items():
                self.assertEqual(len(cell["errors"]), 2)
                self.assertEqual(len(cell["fit_seconds"]), 2)
                self.assertLess(cell["mean"], 3.0, f"{name} / {key}: {cell['errors']}")
            # the markdown table has the row, one cell per classifier
            line = next(l for l in table.splitlines() if l.startswith(f"| {name} |"))
            self.assertEqual(line.count("±"), len(evaluate.CLASSIFIERS))
        header = next(l for l in table.splitlines() if l.startswith("| |"))
        for clf in evaluate.CLASSIFIERS.values():
            self.assertIn(clf.title, header)
        self.assertIn("[RMLD] done in", stderr)  # per-row timings

    def test_shuffled_training_labels_give_chance_error(self):
        results, _, _ = self.full_run(self.shuffled_data, self.shuffled, self.shuffled_nomh,
                                      self.shuffled_khmc)
        chance = 100.0 * (1 - 1 / CLASSES)
        self.assertEqual(len(results["rows"]), len(evaluate.ROW_ORDER))
        for name, row in results["rows"].items():
            for key, cell in row["classifiers"].items():
                # 150 test rows: the error's standard deviation is about 4 points
                self.assertGreater(cell["mean"], chance - 15, f"{name} / {key}")
                self.assertLess(cell["mean"], chance + 15, f"{name} / {key}")

    def test_cross_validation_picks_from_the_grid(self):
        tmp = self.tmpdir()
        status, _, stderr = run_main(["--dataset", self.data, "--rmld", self.rmld, "--rows",
                                      "rmld", "--seeds", 1, "--cv", 3, "--classifiers",
                                      "l2svm,perceptron", "--json", tmp / "cv.json"])
        self.assertEqual(status, 0, stderr)
        results = json.loads((tmp / "cv.json").read_text())
        self.assertEqual(list(results["rows"]), ["RMLD"])
        for key, cell in results["rows"]["RMLD"]["classifiers"].items():
            (param, values), = evaluate.CLASSIFIERS[key].grid.items()
            self.assertIn(cell["params"][0][param], values)
            self.assertLess(cell["mean"], 3.0)

    def test_dataset_only_gives_the_original_row(self):
        status, table, stderr = run_main(["--dataset", self.data, "--seeds", 1, "--limit-train",
                                          100, "--limit-test", 60, "--classifiers", "l2lr"])
        self.assertEqual(status, 0, stderr)
        self.assertIn("| Original |", table)
        self.assertNotIn("| RMLD |", table)
        self.assertIn("first 60 test images", table)
        self.assertIn("100 training rows", table)

    def test_warns_when_the_mh_rows_cannot_differ(self):
        status, _, stderr = run_main(["--dataset", self.data, "--rmld", self.rmld, "--rmld-no-mh",
                                      self.rmld, "--rows", "rmld,rmld-no-mh", "--seeds", 1,
                                      "--classifiers", "l2lr"])
        self.assertEqual(status, 0, stderr)
        self.assertIn("are identical", stderr)
        self.assertIn("--rmld-no-mh", stderr)
        self.assertIn("mh = True", stderr)

    def test_limit_test_and_paper_reference(self):
        status, table, stderr = run_main(["--dataset", self.data, "--rmld", self.rmld, "--seeds",
                                          1, "--limit-test", 50, "--classifiers", "svm",
                                          "--paper", "mnist"])
        self.assertEqual(status, 0, stderr)
        self.assertIn("first 50 test images", table)
        self.assertIn("| Vanilla GAN | 5.99 ± 0.09 |", table)

    def expect_error(self, argv, *fragments):
        status, _, stderr = run_main(argv)
        self.assertEqual(status, 2, stderr)
        for fragment in fragments:
            self.assertIn(str(fragment), stderr)
        return stderr

    def test_mismatched_label_count_names_the_file(self):
        out = self.copy_out(self.rmld)
        np.save(out / "labels.npy", np.load(out / "labels.npy")[:-1])
        err = self.expect_error(["--dataset", self.data, "--rmld", out, "--rows", "rmld"],
                                out / "labels.npy", "do", "not match")
        self.assertNotIn(f"{out / 'codes.npy'} do", err)

    def test_mismatched_idx_label_count_names_the_file(self):
        out = self.copy_out(self.khmc)
        labels = rmld_io.read_idx_labels(out / "train-labels-idx1-ubyte.gz")
        write_idx(out / "train-labels-idx1-ubyte.gz", labels[:-3])
        self.expect_error(["--dataset", self.data, "--kernel-hmc", out],
                          f"{out / 'train-labels-idx1-ubyte.gz'} does not match")

    def test_mismatched_test_labels_name_the_file(self):
        out = self.copy_out(self.rmld)
        np.save(out / "test-labels.npy", np.load(out / "test-labels.npy")[:-1])
        self.expect_error(["--dataset", self.data, "--rmld", out], out / "test-labels.npy",
                          "test_count")
        out = self.copy_out(self.rmld)
        labels = np.load(out / "test-labels.npy")
        np.save(out / "test-labels.npy", (labels + 1) % CLASSES)
        self.expect_error(["--dataset", self.data, "--rmld", out], out / "test-labels.npy",
                          "another dataset")

    def test_missing_test_codes_and_codes_are_explained(self):
        out = self.copy_out(self.rmld)
        (out / "test-codes.npy").unlink()
        self.expect_error(["--dataset", self.data, "--rmld", out], out / "test-codes.npy",
                          "--encode-test")
        out = self.copy_out(self.rmld)
        (out / "codes.npy").unlink()
        (out / "labels.npy").unlink()
        self.expect_error(["--dataset", self.data, "--rmld", out], out / "codes.npy",
                          "--no-original-codes")

    def test_interrupted_run_is_refused(self):
        out = self.copy_out(self.rmld)
        report = json.loads((out / "report.json").read_text())
        report["interrupted"] = True
        (out / "report.json").write_text(json.dumps(report))
        self.expect_error(["--dataset", self.data, "--rmld", out], out / "report.json",
                          "interrupted")

    def test_bad_arguments(self):
        status, _, _ = run_main(["--dataset", self.data, "--classifiers", "svm,forest"])
        self.assertEqual(status, 2)
        status, _, _ = run_main(["--dataset", self.data, "--cv", 1])
        self.assertEqual(status, 2)

    def test_command_line(self):
        proc = subprocess.run(
            [sys.executable, str(HERE / "evaluate.py"), "--dataset", str(self.data), "--rmld",
             str(self.rmld), "--rows", "compression", "--seeds", "1", "--classifiers", "l1lr",
             "--quiet"],
            capture_output=True, text=True, check=False,
        )
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, "")
        self.assertIn("| Compression |", proc.stdout)


class IdxTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def expect(self, path, fragment, reader=rmld_io.read_idx_images):
        with self.assertRaises(rmld_io.RmldInputError) as caught:
            reader(path)
        message = str(caught.exception)
        self.assertTrue(message.startswith(str(path)), message)
        self.assertIn(fragment, message)

    def test_round_trip_gz_and_raw(self):
        images = np.arange(2 * 3 * 5, dtype=np.uint8).reshape(2, 3, 5)
        for gz in (True, False):
            path = self.dir / f"i{gz}"
            write_idx(path, images, gz=gz)
            np.testing.assert_array_equal(rmld_io.read_idx_images(path), images.reshape(2, 15))
        path = self.dir / "labels"
        write_idx(path, np.array([3, 1, 4], np.uint8))
        np.testing.assert_array_equal(rmld_io.read_idx_labels(path), [3, 1, 4])

    def test_bad_files_name_themselves(self):
        good = struct.pack(">HBB", 0, 8, 3) + struct.pack(">3I", 2, 2, 2)
        cases = {
            "magic": (b"\x12\x34\x08\x03" + good[4:] + bytes(8), "not an IDX file"),
            "type": (struct.pack(">HBB", 0, 0x0D, 3) + good[4:] + bytes(32), "IDX type 0x0d"),
            "short": (good + bytes(7), "truncated"),
            "long": (good + bytes(9), "trailing bytes"),
            "tiny": (b"\x00\x00", "too short"),
        }
        for name, (data, fragment) in cases.items():
            path = self.dir / name
            path.write_bytes(data)
            self.expect(path, fragment)
        path = self.dir / "labels-as-images"
        write_idx(path, np.zeros(4, np.uint8))
        self.expect(path, "expected images")
        self.expect(self.dir / "missing", "no such file")
        path = self.dir / "broken.gz"
        path.write_bytes(gzip.compress(good + bytes(8))[:-6])
        self.expect(path, "cannot be read")

    def test_npy_checks(self):
        path = self.dir / "c.npy"
        np.save(path, np.zeros((2, 3, 4), np.float32))
        self.expect(path, "expected 2 dimension", rmld_io.read_npy_codes)
        np.save(path, np.array([[1.0, np.nan]], np.float32))
        self.expect(path, "NaN", rmld_io.read_npy_codes)
        np.save(path, np.array([1.5, 2.0]))
        self.expect(path, "expected integer labels", rmld_io.read_npy_labels)
        np.save(path, np.array([{"a": 1}], dtype=object))
        self.expect(path, "not a readable NPY", rmld_io.read_npy_labels)


if __name__ == "__main__":
    unittest.main()
