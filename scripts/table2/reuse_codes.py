"""Gives an `rmld augment --no-original-codes` run the originals' codes of another run.

Usage: python reuse_codes.py SOURCE TARGET

SOURCE ran with the same data, --seed (dictionary), --lambda, --limit and --classes and holds
codes.npy (and test-codes.npy); TARGET ran with --no-original-codes. Writes into TARGET the
codes.npy/labels.npy rmld augment would have written (SOURCE's first original_count rows, then
TARGET's generated-codes.npy) and copies test-codes.npy/test-labels.npy, so that encoding the
originals once serves every row of Table 2.
"""

import json
import shutil
import sys
from pathlib import Path

import numpy as np


def main(source: Path, target: Path) -> None:
    src_report = json.loads((source / "report.json").read_text())
    dst_report = json.loads((target / "report.json").read_text())
    for key in ("original_count", "pixel_max", "lambda", "dataset"):
        if src_report.get(key) != dst_report.get(key):
            sys.exit(f"{source} and {target} differ in {key}: {src_report.get(key)} vs {dst_report.get(key)}")
    if src_report.get("dictionary") != dst_report.get("dictionary"):
        sys.exit(f"{source} and {target} used different dictionaries")
    n = src_report["original_count"]
    codes = np.load(source / "codes.npy", mmap_mode="r", allow_pickle=False)
    labels = np.load(source / "labels.npy", allow_pickle=False)
    generated = np.load(target / "generated-codes.npy", allow_pickle=False)
    generated_labels = np.load(target / "generated-labels.npy", allow_pickle=False)
    np.save(target / "codes.npy", np.concatenate([codes[:n], generated]))
    np.save(target / "labels.npy", np.concatenate([labels[:n], generated_labels]))
    for name in ("test-codes.npy", "test-labels.npy"):
        if (source / name).is_file():
            shutil.copyfile(source / name, target / name)
    if "test_count" in src_report:
        dst_report["test_count"] = src_report["test_count"]
        dst_report["original_codes_from"] = str(source)
        (target / "report.json").write_text(json.dumps(dst_report, indent=2))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
