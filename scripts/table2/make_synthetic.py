#!/usr/bin/env python3
"""Synthetic inputs for evaluate.py at a realistic size, for timing it without running rmld.

Writes ROOT/dataset (MNIST-style IDX, h×w images) and ROOT/rmld, ROOT/rmld-no-mh (codes,
labels, test codes, IDX set, report.json in `rmld augment`'s layout) and ROOT/kernel-hmc
(IDX set only). Classes overlap, so the classifiers have work to do: the codes are sparse
(about --density non-zero, on the scale of LASSO codes at pixel_max 255) around per-class
centres, the images noisy per-class templates.

    python scripts/table2/make_synthetic.py /tmp/t2 --rows 3000 --atoms 3136
    python scripts/table2/evaluate.py --dataset /tmp/t2/dataset --rmld /tmp/t2/rmld ...
"""

from __future__ import annotations

import argparse
import gzip
import json
import struct
from pathlib import Path

import numpy as np


def write_idx(path, array):
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(header + array.tobytes())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root", type=Path)
    p.add_argument("--rows", type=int, default=3000, help="training rows of the augmented sets")
    p.add_argument("--ratio", type=int, default=6, help="originals per generated row")
    p.add_argument("--test", type=int, default=1000, help="test rows")
    p.add_argument("--atoms", type=int, default=3136, help="code length p")
    p.add_argument("--side", type=int, default=28, help="images are side×side")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--density", type=float, default=0.25)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    k, d, pp = a.classes, a.side * a.side, a.atoms
    generated = a.rows // (a.ratio + 1)
    originals = a.rows - generated

    templates = rng.uniform(0, 255, size=(k, d)) * (rng.random((k, d)) < 0.3)
    centres = rng.normal(0, 12, size=(k, pp)) * (rng.random((k, pp)) < 0.4)

    def images(labels):
        x = 0.55 * templates[labels] + 0.45 * templates[rng.integers(0, k, len(labels))]
        x += rng.normal(0, 80, size=x.shape)
        return np.clip(np.rint(x), 0, 255).astype(np.uint8).reshape(-1, a.side, a.side)

    def codes(labels, density):
        x = centres[labels] + rng.normal(0, 45, size=(len(labels), pp))
        return (x * (rng.random(x.shape) < density)).astype(np.float32)

    root = a.root
    ds = root / "dataset"
    ds.mkdir(parents=True, exist_ok=True)
    y_train = rng.integers(0, k, originals)
    y_test = rng.integers(0, k, a.test)
    train_images = images(y_train)
    write_idx(ds / "train-images-idx3-ubyte.gz", train_images)
    write_idx(ds / "train-labels-idx1-ubyte.gz", y_train)
    write_idx(ds / "t10k-images-idx3-ubyte.gz", images(y_test))
    write_idx(ds / "t10k-labels-idx1-ubyte.gz", y_test)
    orig_codes = codes(y_train, a.density)
    test_codes = codes(y_test, a.density)
    for name, with_codes, mh in [("rmld", True, True), ("rmld-no-mh", True, False),
                                 ("kernel-hmc", False, True)]:
        out = root / name
        out.mkdir(exist_ok=True)
        y_gen = rng.integers(0, k, generated)
        labels = np.concatenate([y_train, y_gen])
        write_idx(out / "train-images-idx3-ubyte.gz",
                  np.concatenate([train_images, images(y_gen)]))
        write_idx(out / "train-labels-idx1-ubyte.gz", labels)
        report = {"command": "augment", "synthetic": True, "mh": mh, "pixel_max": 255.0,
                  "dictionary": {"d": d, "p": pp}, "original_count": originals,
                  "generated_count": generated, "interrupted": False}
        if with_codes:
            # generated codes are dense, like RMLD's
            np.save(out / "codes.npy", np.concatenate([orig_codes, codes(y_gen, 1.0)]))
            np.save(out / "labels.npy", labels.astype(np.int64))
            np.save(out / "test-codes.npy", test_codes)
            np.save(out / "test-labels.npy", y_test.astype(np.int64))
            report["test_count"] = a.test
        (out / "report.json").write_text(json.dumps(report, indent=1))
    print(f"{root}: dataset, rmld, rmld-no-mh, kernel-hmc ({originals} originals + {generated} "
          f"generated, {a.test} test rows, codes of {pp}, images {a.side}x{a.side})")


if __name__ == "__main__":
    main()
