"""The issue's speed case, side by side: MNIST, 5 classes × 400 and 5 × 20, each minority class
raised to 400 (1,900 new images) by imbalanced-learn's SMOTE and by
`RMLDAugmenter(sampling_strategy="auto", random_state=0)`, in one process, first run, an empty
code cache (RMLD_CACHE_DIR set to a fresh folder). Prints the seconds of each and the counts.

    python scripts/usefulness/speed.py [--datasets DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "python"))

import numpy as np  # noqa: E402

import data  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=os.environ.get("RMLD_DATASETS", "../shared/datasets"))
    args = parser.parse_args()
    os.environ["RMLD_CACHE_DIR"] = tempfile.mkdtemp(prefix="rmld-speed-cache-")
    pools = data.load_pools("mnist", Path(args.datasets), 200)
    counts = data.class_counts(pools, 400, data.minority_classes(pools), 20)
    x, y = data.training_cut(pools, counts, 0)
    flat = x.reshape(len(x), -1)
    from imblearn.over_sampling import SMOTE

    started = time.perf_counter()
    sx, sy = SMOTE(random_state=0).fit_resample(flat, y)
    smote = time.perf_counter() - started
    from rmld.sklearn import RMLDAugmenter

    pixels = np.round(x * 255).astype(np.uint8)
    started = time.perf_counter()
    rx, ry = RMLDAugmenter(sampling_strategy="auto", random_state=0).fit_resample(pixels, y)
    rmld = time.perf_counter() - started
    print(f"originals {len(y)} ({dict(sorted(counts.items()))})")
    print(f"SMOTE: {len(sy) - len(y)} new images in {smote:.2f} s")
    print(f"RMLDAugmenter(sampling_strategy='auto', random_state=0): {len(ry) - len(y)} new "
          f"images in {rmld:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
