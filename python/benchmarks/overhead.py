"""The Python package's overhead against the command line on the same work.

Runs `rmld augment` (the binary) and `rmld.augment(...)` (the package) alternately on the same
settings (the embedded digits, CPU, fixed seed), and prints each wall time and the ratio of the
medians. Build both in release first:

    cargo build --release && maturin develop --release -m python/Cargo.toml
    python python/benchmarks/overhead.py --binary target/release/rmld --repeats 3
"""

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import rmld

# The default (quality) preset on the embedded digits, on the CPU.
SETTINGS = dict(backend="cpu", seed=1, no_quality=True)
FLAGS = ["--backend", "cpu", "--seed", "1", "--no-quality"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="target/release/rmld")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cli, python = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            subprocess.run([args.binary, "augment", *FLAGS, "--out", str(Path(folder) / "cli")],
                           check=True, capture_output=True)
            cli.append(time.perf_counter() - started)
            started = time.perf_counter()
            result = rmld.augment(**SETTINGS)
            python.append(time.perf_counter() - started)
            cli_images = rmld.read_idx(Path(folder) / "cli" / "generated-images-idx3-ubyte.gz")
            assert (cli_images == result.images).all(), "the package and the binary differ"
    print("command line (s):", " ".join(f"{t:.2f}" for t in cli))
    print("python (s):      ", " ".join(f"{t:.2f}" for t in python))
    ratio = statistics.median(python) / statistics.median(cli)
    print(f"python / command line, medians: {ratio:.3f}")


if __name__ == "__main__":
    main()
