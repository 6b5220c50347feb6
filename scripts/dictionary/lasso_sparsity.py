#!/usr/bin/env python3
"""LASSO reconstruction error against sparsity for `rmld encode` runs (issue 20, item 5).

Usage: lasso_sparsity.py [--first N] DATASET_DIR LABEL=RUN_DIR [LABEL=RUN_DIR ...]
Each RUN_DIR is an `rmld encode --out` folder (codes.npy, reconstructions.npy, report.json).
Prints one row per run: dictionary label, lambda, FISTA iterations, mean non-zeros per image
(and as a fraction of p), relative RMS error ||x - A c|| / ||x|| over all encoded images, and
the mean squared error per pixel at pixel-max 255. --first N uses only the first N encoded
images of every run (to compare runs that encoded different counts on the same images).
"""
import gzip
import json
import sys
from pathlib import Path

import numpy as np


def mnist_images(folder: Path, n: int) -> np.ndarray:
    path = folder / "train-images-idx3-ubyte.gz"
    opener = gzip.open if path.exists() else open
    if not path.exists():
        path = folder / "train-images-idx3-ubyte"
    with opener(path, "rb") as f:
        data = f.read()
    count, rows, cols = np.frombuffer(data[4:16], dtype=">u4")
    images = np.frombuffer(data[16:], dtype=np.uint8).reshape(count, rows * cols)
    return images[:n].astype(np.float64)


def main() -> None:
    args = sys.argv[1:]
    first = None
    if args and args[0] == "--first":
        first = int(args[1])
        args = args[2:]
    folder = Path(args[0])
    print("| dictionary | λ | FISTA its | non-zeros / image | fraction of p | relative RMS error | MSE / pixel (0..255) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for arg in args[1:]:
        label, run = arg.split("=", 1)
        run = Path(run)
        report = json.loads((run / "report.json").read_text())
        codes = np.load(run / "codes.npy")
        recon = np.load(run / "reconstructions.npy").reshape(codes.shape[0], -1).astype(np.float64)
        if first is not None:
            codes, recon = codes[:first], recon[:first]
        x = mnist_images(folder, codes.shape[0])
        scale = report.get("pixel_max", 255.0) / 255.0
        x = x * scale
        nnz = (codes != 0).sum(axis=1).mean()
        rel = np.sqrt(((x - recon) ** 2).sum() / (x ** 2).sum())
        mse = ((x - recon) ** 2).mean() / scale ** 2
        print(f"| {label} | {report['lambda']:g} | {report['iterations']} | {nnz:.1f} | "
              f"{nnz / codes.shape[1]:.4f} | {rel:.4f} | {mse:.2f} |")


if __name__ == "__main__":
    main()
