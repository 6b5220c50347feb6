"""NumPy peer of one RMLD outer iteration, the step `rmld bench` times on the CPU.

`rmld bench --peers` runs this file (embedded in the binary) with the same d, p, C, m, T, outer
iterations and thread count as its own CPU rows, with OMP/OPENBLAS/MKL thread counts pinned to
rmld's. Per step and chain: gather a minibatch of m images and take its mean ybar (C x d), the
two products R = Z A^T - ybar and G = R A, then the Laplace update of Algorithm 1
(g = G + lam*sign(z); r <- r - eta*g - eta*r; z <- z + eta*r); per outer iteration the full
residual A Z - xbar and gradient at Z. All float32, as rmld. Prints one JSON object.

Usage: python numpy_step.py --d 784 --p 3136 --chains 512 --batch 64 --steps 20 --outer 3
"""

import argparse
import json
import sys
import time

import numpy as np


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=784)
    ap.add_argument("--p", type=int, default=3136)
    ap.add_argument("--chains", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--outer", type=int, default=3)
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--lam", type=float, default=0.05)
    ap.add_argument("--eta", type=float, default=0.001)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if min(a.d, a.p, a.chains, a.batch, a.steps, a.outer, a.images) < 1:
        ap.error("every size must be at least 1")

    rng = np.random.default_rng(a.seed)
    f32 = np.float32
    dictionary = rng.standard_normal((a.d, a.p), dtype=f32) / f32(np.sqrt(a.d))
    dictionary_t = np.ascontiguousarray(dictionary.T)
    # 8-bit images, as rmld keeps them: the gather reads a quarter of the bytes of float32 rows.
    images = rng.integers(0, 256, size=(a.images, a.d), dtype=np.uint8)
    xbar = images.mean(axis=0, dtype=f32) / f32(255)
    gather_scale = f32(1.0 / (255.0 * a.batch))
    z = np.zeros((a.chains, a.p), dtype=f32)
    r = np.zeros((a.chains, a.p), dtype=f32)
    ybar = np.empty((a.chains, a.d), dtype=f32)
    residual = np.empty((a.chains, a.d), dtype=f32)
    gradient = np.empty((a.chains, a.p), dtype=f32)
    lam, eta = f32(a.lam), f32(a.eta)

    def outer_iteration():
        nonlocal z, r, residual, gradient  # updated in place
        r[:] = rng.standard_normal((a.chains, a.p), dtype=f32)
        for _ in range(a.steps):
            # Gather: each chain's minibatch mean (summed from the 8-bit rows, then scaled).
            rows = rng.integers(0, a.images, size=(a.chains, a.batch))
            np.add.reduce(images[rows], axis=1, dtype=f32, out=ybar)
            np.multiply(ybar, gather_scale, out=ybar)
            # The two products.
            np.matmul(z, dictionary_t, out=residual)
            residual -= ybar
            np.matmul(residual, dictionary, out=gradient)
            # The update (Laplace prior, sigma^2 = 1).
            gradient += lam * np.sign(z)
            r *= f32(1) - eta
            r -= eta * gradient
            z += eta * r
        # Full residual and gradient at Z (the MH terms' inputs).
        np.matmul(z, dictionary_t, out=residual)
        residual -= xbar
        np.matmul(residual, dictionary, out=gradient)
        gradient += lam * np.sign(z)
        return float(np.sum(residual * residual))

    outer_iteration()  # warm-up, as rmld bench
    started = time.perf_counter()
    for _ in range(a.outer):
        outer_iteration()
    seconds = time.perf_counter() - started
    chain_steps = a.chains * a.steps * a.outer
    blas = "unknown"
    try:
        info = np.show_config(mode="dicts")  # numpy >= 1.25
        b = info["Build Dependencies"]["blas"]
        blas = f"{b.get('name')} {b.get('version')}"
    except Exception:  # noqa: BLE001 - older numpy: leave the BLAS unnamed
        pass
    print(
        json.dumps(
            {
                "peer": "numpy",
                "numpy": np.__version__,
                "python": sys.version.split()[0],
                "blas": blas,
                "chains": a.chains,
                "seconds": seconds,
                "chain_steps_per_second": chain_steps / seconds,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
