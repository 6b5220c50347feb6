"""Self-test of the usefulness benchmark on synthetic images (no dataset, no rmld build needed):
`python -m unittest discover -s scripts/usefulness -p 'test_*.py'`."""

import json
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import augmenters  # noqa: E402
import ceiling  # noqa: E402
import criteria  # noqa: E402
import data  # noqa: E402
import learned_variation  # noqa: E402
import prototypes  # noqa: E402
import report  # noqa: E402
import run  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "quality"))
import metrics  # noqa: E402


def blobs(side=12, per_class=(8, 8, 3), seed=0):
    """Per class a bright square at its own place, jittered: (x (n, side, side), y)."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c, n in enumerate(per_class):
        for _ in range(n):
            image = np.zeros((side, side), np.float32)
            r, col = 2 + 3 * c + rng.integers(0, 2), 3 + rng.integers(0, 3)
            image[r:r + 3, col:col + 4] = rng.uniform(0.6, 1.0)
            xs.append(image)
            ys.append(c)
    return np.stack(xs), np.array(ys, np.int64)


class Augmenters(unittest.TestCase):
    def test_every_augmenter_gives_the_counts_asked_in_range(self):
        x, y = blobs()
        counts = {0: 5, 1: 0, 2: 9}
        names = list(augmenters.BASELINES) + ["proposal", "p-deform", "p-tangent", "p-warp",
                                               "p-mirror-proposal", "p-half-smote", "proposal-x2",
                                               "p-stretch1.5", "p-box", "p-morph",
                                               "p-deform-stretch1.5", "p-nudge0.3", "p-gamma", "p-moves8", "p-elastic17",
                                               "p-half-elastic", "p-hard2", "p-mirror-sym",
                                               "p-moves-still", "p-learned", "p-within0.5", "p-extrap0.25",
                                               "p-shade0.1", "p-erase", "p-beyond4-shade0.1"]
        for name in names:
            if name in ("adasyn", "borderline-smote"):
                continue  # they choose their own counts near class borders
            gx, gy = run.augmenter(name)(x, y, counts, 0)
            with self.subTest(name=name):
                self.assertEqual(gx.shape[1:], x.shape[1:])
                self.assertEqual({c: int((gy == c).sum()) for c in counts}, counts)
                self.assertGreaterEqual(gx.min(), 0.0)
                self.assertLessEqual(gx.max(), 1.0)

    def test_shifts_are_each_images_four_one_pixel_moves_once(self):
        x, y = blobs(per_class=(3, 2))
        gx, gy = augmenters.shifts(x, y, {0: 12, 1: 8}, 0)
        for c in (0, 1):
            expected = {(i, move) for i in np.flatnonzero(y == c) for move in augmenters.SHIFTS}
            found = set()
            for image in gx[gy == c]:
                for i, move in expected:
                    if np.array_equal(image, augmenters.shift(x[i], *move)):
                        found.add((i, move))
            self.assertEqual(found, expected)

    def test_shift_moves_content_and_fills_zeros(self):
        image = np.arange(9, dtype=np.float32).reshape(3, 3) + 1
        moved = augmenters.shift(image, 0, 1)
        np.testing.assert_array_equal(moved[:, 1:], image[:, :2])
        np.testing.assert_array_equal(moved[:, 0], 0)

    def test_same_seed_same_images(self):
        x, y = blobs()
        first = run.augmenter("proposal")(x, y, {2: 6}, 3)[0]
        again = run.augmenter("proposal")(x, y, {2: 6}, 3)[0]
        np.testing.assert_array_equal(first, again)


class Prototypes(unittest.TestCase):
    def test_shift_tangent_is_the_derivative_of_a_shift(self):
        # A smooth image: the linear tangent predicts a sub-pixel move to first order.
        rows, cols = np.mgrid[0:28, 0:28]
        image = np.exp(-((rows - 14.0) ** 2 + (cols - 12.0) ** 2) / 18.0)
        tangent = prototypes.transformation_tangents(image, 0.5)["shift_x"]
        from scipy import ndimage

        moved = ndimage.shift(ndimage.gaussian_filter(image, 0.5), (0, 0.1), order=3)
        predicted = ndimage.gaussian_filter(image, 0.5) + 0.1 * tangent
        self.assertLess(np.abs(moved - predicted).max(), 0.01 * np.abs(0.1 * tangent).max() + 1e-3)

    def test_every_image_anchors_in_turn(self):
        x, y = blobs(per_class=(4, 4))
        gx, _ = prototypes.tangent_augmenter(scale=0.0, deform=None, noise=0.0, smooth=0.0)(
            x, y, {0: 4, 1: 0}, 0)
        # No span, no noise, no smoothing: the draws are the anchors, each image once.
        self.assertEqual(sorted(map(bytes, gx)), sorted(map(bytes, x[y == 0])))


    def test_mirror_ratio_tells_symmetric_classes_from_handed_ones(self):
        rng = np.random.default_rng(1)
        base = rng.uniform(0, 1, (20, 10, 5)).astype(np.float32)
        symmetric = np.concatenate([base, base[..., ::-1]], axis=2)  # each image its own mirror
        noisy = symmetric + 0.01 * rng.standard_normal(symmetric.shape)
        self.assertAlmostEqual(prototypes.mirror_ratio(noisy), 1.0, delta=0.1)
        handed = np.zeros((20, 10, 10), np.float32)
        handed[:, :, :3] = 1.0  # ink on the left only
        handed += 0.05 * rng.standard_normal(handed.shape)
        self.assertGreater(prototypes.mirror_ratio(handed), 2.0)

    def test_learned_spread_recovers_a_known_thickening(self):
        # Image b is image a thickened along a's own tangent by 0.05 px: the fit of b - a by a's
        # tangents gives thickness 0.05 exactly and nothing else; the fit of a - b by b's (at
        # so small a step nearly a's) about -0.05. The spread is 1.4826 x 0.05 along thickness.
        a = np.zeros((28, 28))
        a[8:20, 10:18] = 1.0
        smooth = 0.9
        thick = prototypes.transformation_tangents(a, smooth)["thickness"]
        images = np.stack([a, a + 0.05 * thick])
        spread = prototypes.learned_tangent_stds(images, np.array([1, 0]), smooth)
        self.assertAlmostEqual(spread["thickness"], 1.4826 * 0.05, delta=0.01)
        for name in ("rotation", "scale", "shear_parallel", "shear_diagonal", "shift_x", "shift_y"):
            self.assertLess(abs(spread[name]), 0.005, name)

    def test_new_images_take_the_sets_box_convention(self):
        # Every training image: a 6 x 10 ink box centred in the frame. A new image with a
        # 12 x 4 box away from the centre comes back with its longer side 10, centred.
        x = np.zeros((5, 28, 28), np.float32)
        x[:, 11:17, 9:19] = 1.0
        self.assertEqual(learned_variation.box_convention(x), (10.0, 13.5, 13.5))
        new = np.zeros((1, 28, 28), np.float32)
        new[0, 2:14, 3:7] = 1.0
        top, bottom, left, right, _ = learned_variation.ink_boxes(
            learned_variation.normalise(new, learned_variation.box_convention(x)))
        self.assertLessEqual(abs(int(bottom[0] - top[0] + 1) - 10), 1)
        self.assertLessEqual(abs((top[0] + bottom[0]) / 2 - 13.5), 0.5)
        self.assertLessEqual(abs((left[0] + right[0]) / 2 - 13.5), 0.5)

    def test_stretch_agreement_tells_aspect_classes_from_shape_classes(self):
        """Squares against rectangles 1.5 times as tall: a stretch makes one the other, so
        stretches keep few labels; lying bars against standing ones keep theirs."""
        rng = np.random.default_rng(0)

        def picture(kind):
            image = np.zeros((20, 20), np.float32)
            r, c = 4 + rng.integers(0, 3), 4 + rng.integers(0, 3)
            if kind == "square":
                image[r:r + 8, c:c + 8] = 1.0
            elif kind == "tall":
                image[r - 2:r + 10, c:c + 8] = 1.0
            elif kind == "lying":
                image[r + 3:r + 5, c - 2:c + 10] = 1.0
            else:
                image[r - 2:r + 10, c + 3:c + 5] = 1.0
            return image

        def dataset(kinds):
            x = np.stack([picture(k) for k in kinds for _ in range(20)])
            return x, np.repeat(np.arange(len(kinds)), 20)

        aspect = learned_variation.stretch_agreement(*dataset(["square", "tall"]), seed=0)
        shape = learned_variation.stretch_agreement(*dataset(["lying", "standing"]), seed=0)
        self.assertLess(aspect, 0.8)
        self.assertGreater(shape, 0.95)

    def test_a_set_without_a_shared_box_is_left_alone(self):
        x, _ = blobs()
        self.assertEqual(learned_variation.box_convention(x)[1], None)
        new = blobs(seed=1)[0]
        np.testing.assert_array_equal(
            learned_variation.normalise(new, (None, None, None)), new)


class Harness(unittest.TestCase):
    def test_share_splits_the_new_images(self):
        new = {0: 7, 1: 0, 2: 4}
        parts = [run.share(new, 2, i) for i in range(2)]
        self.assertEqual({c: parts[0][c] + parts[1][c] for c in new}, new)

    def test_resized_pools_keep_labels_range_and_name_the_side(self):
        x, y = blobs(side=12)
        pools = data.Pools("blobs", x, y, x[:4], y[:4])
        big = data.resized(pools, 30)
        self.assertEqual(big.name, "blobs@30")
        self.assertEqual(big.train_x.shape, (len(x), 30, 30))
        self.assertEqual(big.test_x.shape, (4, 30, 30))
        np.testing.assert_array_equal(big.train_y, y)
        self.assertTrue(0.0 <= big.train_x.min() and big.train_x.max() <= 1.0)
        # the ink's centre of mass scales with the image
        mass = lambda im: (np.arange(im.shape[0]) * im.sum(1)).sum() / im.sum()  # noqa: E731
        self.assertAlmostEqual(mass(big.train_x[0]) / 30, (mass(x[0]) + 0.5) / 12 - 0.5 / 30, delta=0.02)
        with self.assertRaises(ValueError):
            data.resized(pools, 2)

    def test_counts_and_minority(self):
        pools = data.Pools("t", *blobs(per_class=(10, 10, 10, 10)), *blobs(per_class=(2, 2, 2, 2)))
        self.assertEqual(data.minority_classes(pools), [2, 3])
        self.assertEqual(data.class_counts(pools, 6, [2, 3], 2), {0: 6, 1: 6, 2: 2, 3: 2})
        x, y = data.training_cut(pools, {0: 3, 1: 1, 2: 1, 3: 1}, seed=0)
        self.assertEqual(np.bincount(y).tolist(), [3, 1, 1, 1])

    def test_table_has_a_row_per_augmentation_with_its_seeds(self):
        rows = [dict(dataset="d", regime="few", setting="5/class", seed=s, test=10, augmenter=a,
                     classifier="lr", n_generated=n, gen_s=0.1, fit_s=0.1, acc=v, bacc=v, f1=v)
                for s in range(2) for a, n, v in (("none", 0, 50.0 + s), ("shifts", 20, 60.0))]
        rows.append(dict(rows[-1], seed=2, acc=61.0, bacc=61.0, f1=61.0))
        text = report.tables(rows, dict(datasets=["d"], augmenters=["none", "shifts"],
                                        classifiers=["lr"], seeds=3))
        self.assertIn("| none (2 seeds) | 0 | 50.5 / 50.5 ± 0.5 / 50.5 |", text)
        self.assertIn("| shifts | 20 | 60.3 / **60.3** ± 0.5 / 60.3 |", text)
        # --first-seed: only seeds first..first+seeds-1 make the table
        text = report.tables(rows, dict(datasets=["d"], augmenters=["none", "shifts"],
                                        classifiers=["lr"], seeds=2, first_seed=1))
        self.assertIn("| none (1 seed) | 0 | 51.0 / 51.0 ± 0.0 / 51.0 |", text)
        self.assertIn("| shifts | 20 | 60.5 / **60.5** ± 0.5 / 60.5 |", text)

    def test_proxies_give_the_judges_accuracy_on_the_originals_moved_one_pixel(self):
        x, y = blobs(side=12, per_class=(10, 10, 10))
        moved = run.proxies(x, y, x[:6], y[:6], data.Pools("b", x, y, x, y))["moved"]
        self.assertTrue(0.0 <= moved <= 100.0)
        rows = [dict(dataset="d", regime="few", setting="5/class", seed=0, test=10, augmenter="a",
                     classifier=c, n_generated=3, gen_s=0.1, fit_s=0.1, acc=50.0, bacc=50.0,
                     f1=50.0, preservation=90.0, real=80.0, moved=70.0, novelty=1.0, diversity=1.0)
                for c in ("lr", "proxies")]
        text = report.tables(rows, dict(datasets=["d"], augmenters=["a"], classifiers=["lr"], seeds=1))
        self.assertIn("| 90.0 (80.0; 70.0) / 1.00 / 1.00 |", text)


class Quality(unittest.TestCase):
    def test_moved_one_pixel_is_the_rust_twins(self):
        """The fixture of tests/quality.rs's moved_one_pixel test: image i moves right, left,
        down, up as i % 4, the edge repeated."""
        images = np.array([[10 * i + j for j in range(6)] for i in range(5)], np.float64)
        want = [[0, 0, 1, 3, 3, 4], [11, 12, 12, 14, 15, 15], [20, 21, 22, 20, 21, 22],
                [33, 34, 35, 33, 34, 35], [40, 40, 41, 43, 43, 44]]
        np.testing.assert_array_equal(metrics.moved_one_pixel(images, (2, 3)), np.array(want))

    def test_metrics_command_line_reads_an_augment_folder_and_a_dataset(self):
        """metrics.py as run_one.sh runs it: IDX files in, one line of proxies out (its moved
        calibration needs the pictures' shape, which the flat IDX reader dropped)."""
        import contextlib
        import gzip
        import io

        def write_idx(path, array):
            magic = bytes([0, 0, 8, array.ndim])
            dims = b"".join(int(n).to_bytes(4, "big") for n in array.shape)
            with gzip.open(path, "wb") as f:
                f.write(magic + dims + array.astype(np.uint8).tobytes())

        x, y = blobs(side=12, per_class=(10, 10, 10))
        pictures = (x * 255).astype(np.uint8)
        with tempfile.TemporaryDirectory() as tmp:
            run_dir, data_dir = Path(tmp, "run"), Path(tmp, "data")
            run_dir.mkdir()
            data_dir.mkdir()
            write_idx(data_dir / "train-images-idx3-ubyte.gz", pictures)
            write_idx(data_dir / "train-labels-idx1-ubyte.gz", y)
            write_idx(data_dir / "t10k-images-idx3-ubyte.gz", pictures[::2])
            write_idx(data_dir / "t10k-labels-idx1-ubyte.gz", y[::2])
            write_idx(run_dir / "generated-images-idx3-ubyte.gz", pictures[1::3])
            write_idx(run_dir / "generated-labels-idx1-ubyte.gz", y[1::3])
            argv, out = sys.argv, io.StringIO()
            sys.argv = ["metrics.py", str(run_dir), str(data_dir), "--json"]
            try:
                with contextlib.redirect_stdout(out):
                    metrics.main()
            finally:
                sys.argv = argv
        result = json.loads(out.getvalue())
        self.assertEqual(result["generated"], 10)
        self.assertTrue(0.0 <= result["moved_one_pixel_label_preservation"] <= 1.0)


class Ceiling(unittest.TestCase):
    def test_rows_of_more_real_images_give_their_paired_gain_and_group_share(self):
        """ceiling.py on a small Quick Draw-like folder: a row per count, each later row with
        the share of seed groups reaching the line; bad group sizes are refused."""
        import contextlib
        import io
        import os

        x, y = blobs(side=28, per_class=(30, 30, 30))
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp, "quickdraw")
            folder.mkdir()
            for c in range(3):
                np.save(folder / f"class{c}.npy", (x[y == c] * 255).astype(np.uint8).reshape(-1, 784))
            old, out = os.environ.get("RMLD_DATASETS"), io.StringIO()
            os.environ["RMLD_DATASETS"] = tmp
            try:
                with contextlib.redirect_stdout(out):
                    ceiling.main(["--datasets", "quickdraw", "--per-class", "2", "8",
                                  "--seeds", "3", "--first-seed", "5", "--groups", "2",
                                  "--test-per-class", "5"])
                with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                    ceiling.main(["--datasets", "quickdraw", "--seeds", "2", "--groups", "3"])
            finally:
                if old is None:
                    del os.environ["RMLD_DATASETS"]
                else:
                    os.environ["RMLD_DATASETS"] = old
        lines = [line for line in out.getvalue().splitlines() if "/class real" in line]
        self.assertEqual(len(lines), 2)
        self.assertNotIn("groups", lines[0])
        self.assertRegex(lines[1], r"\(2-seed groups reaching \+1: lr \d+%, svm \d+%\)$")


class Criteria(unittest.TestCase):
    def test_gains_are_paired_by_seed_and_held_against_the_issues_lines(self):
        def row(regime, augmenter, seed, bacc):
            return dict(dataset="mnist", regime=regime, setting="s", seed=seed, classifier="lr",
                        augmenter=augmenter, bacc=bacc)

        rows = [row("few", "none", s, 80.0 + s) for s in range(3)]
        rows += [row("few", "rmld", s, 81.5 + s - (s == 2)) for s in range(3)]  # +1.5, +1.5, +0.5
        rows += [row("few", "shifts", s, 82.0) for s in range(3)]
        rows += [row("few", "rmld+shifts", s, 82.0) for s in range(2)]  # a tie, seeds 0-1 only
        rows += [row("imbalanced", "smote", s, 70.0) for s in range(3)]
        rows += [row("imbalanced", "rmld", s, 69.0) for s in range(3)]
        rows.append(dict(dataset="mnist", regime="few", setting="s", seed=0, augmenter="adasyn",
                         classifier=None, error="RuntimeError: refused"))
        rows.append(dict(dataset="mnist", regime="few", setting="s", seed=0, augmenter="rmld",
                         classifier="proxies", preservation=90.0, real=80.0, moved=70.0,
                         novelty=1.0, diversity=1.0))  # --proxies' row: skipped
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "rows.jsonl"
            path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
            found = {r["comparison"]: r for r in criteria.lines(criteria.load([path]))}
            grouped = {r["comparison"]: r for r in criteria.lines(criteria.load([path]), 2)}
        self.assertEqual(set(found), {"rmld − none", "shifts+rmld − shifts", "rmld − smote"})
        self.assertAlmostEqual(found["rmld − none"]["mean"], 7 / 6)
        self.assertAlmostEqual(found["rmld − none"]["lowest"], 0.5)
        self.assertTrue(found["rmld − none"]["met"])
        self.assertEqual(found["shifts+rmld − shifts"]["seeds"], [0, 1])
        self.assertFalse(found["shifts+rmld − shifts"]["met"])  # "above": a tie is not
        self.assertFalse(found["rmld − smote"]["met"])
        self.assertIn("| mnist | few s | lr | rmld − none | +1.17 ± 0.33 | +0.50 | 0–2 (3) | ≥ 1 | yes |",
                      criteria.markdown(list(found.values())))
        # groups of two seeds: rmld − none gains +1.5, +1.5, +0.5 give means 1.5, 1.0, 1.0, all
        # meeting "at least 1"; the tie (0, 0) is one group, not "above" 0
        self.assertEqual(grouped["rmld − none"]["groups_met"], 1.0)
        self.assertEqual(grouped["shifts+rmld − shifts"]["groups_met"], 0.0)
        self.assertAlmostEqual(criteria.group_share([1.0, -1.0, 2.0, 0.5], 3, 0.5, False), 0.75)
        self.assertIsNone(criteria.group_share([1.0], 3, 0.0, False))
        self.assertIn("| ≥ 1 | yes | 100% |", criteria.markdown(list(grouped.values()), 2))
        # a dataset or classifier the issue draws no line for is shown, not held
        other = [dict(r, dataset="digits-8x8") for r in rows if r["augmenter"] in ("none", "rmld")]
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "rows.jsonl"
            path.write_text("\n".join(json.dumps(r) for r in other) + "\n")
            (result,) = criteria.lines(criteria.load([path]))
        self.assertIsNone(result["met"])


if __name__ == "__main__":
    unittest.main()
