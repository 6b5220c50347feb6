"""Which `rmld sample` default shows new images rather than blurred copies of its starts.

Usage: python sample_default.py RMLD_BINARY OUT_DIR [--chains C] [--samples K]

For each candidate (method, target and its settings) it runs `rmld sample` on the embedded 8x8
digits (the default data) with the default chains and samples, takes every chain's last image,
labels it with the class of the image the chain started from, and judges it with `rmld quality`
(the Rust metrics of src/diagnostics/quality: label preservation, novelty, diversity) against
the same digits; it also gives the mean distance from each chain's last image to its own start,
over the median nearest-neighbour distance of real held-out images ("moved", 0 = a copy).
Prints a Markdown table; needs numpy.
"""

import argparse
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent.parent

CANDIDATES = [
    ("rmld, paper (today's default)", []),
    ("rmld, paper, 20 iterations", ["--samples", "20"]),
    ("rmld, mixture", ["--target", "mixture"]),
    ("rmld, tangent", ["--target", "tangent"]),
    ("mala, paper", ["--method", "mala"]),
    ("hmc, paper", ["--method", "hmc"]),
    ("hmc, tangent", ["--method", "hmc", "--target", "tangent"]),
    # The exact methods with room to warm up: the automatic burn-in (at most half the samples)
    # adapts the step size (and HMC's trajectory length), the last draw is after it froze.
    ("mala, paper, 200 iterations", ["--method", "mala", "--samples", "200"]),
    ("hmc, paper, 200 iterations", ["--method", "hmc", "--samples", "200"]),
    ("mala, tangent, 200 iterations", ["--method", "mala", "--target", "tangent", "--samples", "200"]),
    ("hmc, tangent, 200 iterations", ["--method", "hmc", "--target", "tangent", "--samples", "200"]),
    # augment's quality preset (docs/quality.md), on sample.
    ("hmc, tangent, augment's quality settings",
     ["--method", "hmc", "--target", "tangent", "--pixel-max", "1", "--lambda", "0.05",
      "--sigma2", "0.01", "--eta", "0.007", "--leapfrog-steps", "60", "--tangent-k", "16",
      "--tangent-scale", "3"]),
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("rmld")
    ap.add_argument("out", type=Path)
    ap.add_argument("--chains", type=int, default=64)
    ap.add_argument("--samples", type=int, default=4)
    args = ap.parse_args()
    rows = np.loadtxt(gzip.open(ROOT / "assets/digits.csv.gz"), delimiter=",")
    pixels, labels = rows[:, :-1] / 16.0, rows[:, -1].astype(np.int64)
    print("| candidate | options | acceptance | label pres. % (real %) | novelty | diversity | moved from start | s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, options in CANDIDATES:
        out = args.out / name.split(" (")[0].replace(", ", "-").replace(" ", "-").replace("'", "")
        length = [] if "--samples" in options else ["--samples", str(args.samples)]
        cmd = [args.rmld, "sample", "--backend", "cpu", "--chains", str(args.chains), *length,
               "--seed", "0", "--out", str(out), "--force", *options]
        started = time.time()
        subprocess.run(cmd, check=True, capture_output=True)
        seconds = time.time() - started
        report = json.loads((out / "report.json").read_text())
        pixel_max = float(report["pixel_max"])
        last = np.load(out / "images.npy")[-1] / pixel_max  # (chains, d), 0..1
        starts = np.array(report["start_indices"])
        np.save(out / "last.npy", last.astype(np.float32))
        np.save(out / "last-labels.npy", labels[starts])
        judged = subprocess.run(
            [args.rmld, "quality", "--generated", str(out / "last.npy"), "--generated-labels",
             str(out / "last-labels.npy"), "--generated-scale", "1", "--json"],
            check=True, capture_output=True, text=True)
        q = json.loads(judged.stdout)["quality"]
        start = pixels[starts]
        moved = np.linalg.norm(last - start, axis=1).mean()
        # Median distance from a real image to its nearest other real image (the novelty scale).
        d2 = ((pixels[:, None, :] - pixels[None, :, :]) ** 2).sum(-1)
        np.fill_diagonal(d2, np.inf)
        scale = np.median(np.sqrt(d2.min(1)))
        lp, real = q["label_preservation"]["overall"], q["classifier_test_accuracy"]
        print(f"| {name} | `{' '.join(options) or '(none)'}` | {report['acceptance']['overall']:.2f} "
              f"| {100 * lp:.1f} ({100 * real:.1f}) | {q['novelty']['mean']:.2f} "
              f"| {q['diversity']['mean']:.2f} | {moved / scale:.2f} | {seconds:.1f} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
