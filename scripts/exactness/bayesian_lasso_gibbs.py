"""Reference posterior of the regression example (paper 003, Section 5.1) by an exact Gibbs sampler.

The target is the one `examples/regression.rs` samples: p(beta | y) proportional to
exp(-||y - X beta||^2 / (2 sigma2) - lam * ||beta||_1) with sigma2 fixed. The Laplace prior is a
scale mixture of normals (beta_j | s_j ~ N(0, s_j), s_j ~ Exp(rate lam^2 / 2)), which gives the
Gibbs sampler of Park and Casella (2008) with sigma2 held fixed:
  beta | s  ~ N(Sigma X'y / sigma2, Sigma),  Sigma = (X'X / sigma2 + diag(1/s))^-1
              (drawn in O(n^2 p) by Bhattacharya, Chakraborty and Mallick, 2016),
  1/s_j | beta ~ InverseGaussian(mean lam / |beta_j|, shape lam^2).
It shares no code with rmld, so it checks the example's HMC and MALA independently.

Usage: python bayesian_lasso_gibbs.py DATA_DIR --lam 1 5 20 [--iterations 6000 --chains 2]
where DATA_DIR comes from `cargo run --release --example regression -- --save-data DATA_DIR`.
"""

import argparse
import json
import sys
import time

import numpy as np


def gibbs(x, y, sigma2, lam, iterations, rng):
    n, p = x.shape
    phi = x / np.sqrt(sigma2)
    alpha = y / np.sqrt(sigma2)
    s = np.full(p, 1.0 / lam**2)
    draws = np.empty((iterations, p))
    for t in range(iterations):
        u = rng.standard_normal(p) * np.sqrt(s)
        v = phi @ u + rng.standard_normal(n)
        w = np.linalg.solve((phi * s) @ phi.T + np.eye(n), alpha - v)
        beta = u + s * (phi.T @ w)
        mean = lam / np.maximum(np.abs(beta), 1e-12)
        s = 1.0 / rng.wald(mean, lam**2)
        draws[t] = beta
    return draws


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data")
    ap.add_argument("--lam", type=float, nargs="+", default=[1.0])
    ap.add_argument("--sigma2", type=float, default=3.0)
    ap.add_argument("--iterations", type=int, default=6000)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()
    load = lambda name: np.load(f"{args.data}/{name}.npy").astype(np.float64)
    x, y, x_test, y_test, beta = (load(n) for n in ("x", "y", "x_test", "y_test", "beta"))
    mse = lambda b: float(np.mean((y_test - x_test @ b) ** 2))
    print(f"true beta[:3] = {np.round(beta[:3], 3).tolist()}, oracle test MSE {mse(beta):.3f}")
    results = []
    for lam in args.lam:
        started = time.time()
        means = []
        for c in range(args.chains):
            rng = np.random.default_rng([args.seed, c, int(lam * 1000)])
            draws = gibbs(x, y, args.sigma2, lam, args.iterations, rng)
            means.append(draws[args.iterations // 2:].mean(axis=0))
        means = np.array(means)
        mean = means.mean(axis=0)
        # Between-chain spread of the means: a Monte Carlo error estimate for each coordinate.
        spread = means.std(axis=0, ddof=1) / np.sqrt(args.chains) if args.chains > 1 else np.nan * mean
        row = {
            "lam": lam,
            "posterior_mean_first": mean[:6].round(4).tolist(),
            "mc_error_first": np.round(spread[:6], 4).tolist(),
            "mean_abs_rest": float(np.abs(mean[3:]).mean()),
            "max_abs_rest": float(np.abs(mean[3:]).max()),
            "test_mse": mse(mean),
            "seconds": time.time() - started,
        }
        results.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"iterations": args.iterations, "chains": args.chains, "results": results}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
