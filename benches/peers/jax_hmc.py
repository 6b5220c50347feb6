"""JAX peer: `vmap` HMC on the posterior rmld samples, one image per chain, jit-compiled.

Posterior of a code z (p) given an image x (d) under the dictionary A (d x p), as rmld's `sample`
at sigma^2 = 1: U(z) = 0.5*||A z - x||^2 + lam*||z||_1, gradient A^T (A z - x) + lam*sign(z).
One HMC transition per chain: a fresh N(0, I) momentum, `--leapfrog` leapfrog steps of size eps,
an MH accept/reject on the energy. The chain is written for one chain and `jax.vmap`-ed over C
chains, so XLA batches the matrix-vector products into matrix products. One leapfrog step costs
one gradient (the two products, 4*d*p flops), the unit `rmld bench` counts a chain-step in.
Timing starts after compilation and one warm-up call; `block_until_ready` ends it. Prints one
JSON object in the schema of numpy_step.py.

Usage: python jax_hmc.py --d 784 --p 3136 --chains 4096 --leapfrog 20 --iterations 3 [--platform gpu]
"""

import argparse
import json
import sys
import time


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="", help="cpu or gpu (default: JAX's choice)")
    ap.add_argument("--d", type=int, default=784)
    ap.add_argument("--p", type=int, default=3136)
    ap.add_argument("--chains", type=int, default=512)
    ap.add_argument("--leapfrog", type=int, default=20)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--lam", type=float, default=0.05)
    ap.add_argument("--eps", type=float, default=0.001)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if min(a.d, a.p, a.chains, a.leapfrog, a.iterations, a.images) < 1:
        ap.error("every size must be at least 1")

    import jax

    if a.platform == "cpu":
        jax.config.update("jax_platforms", "cpu")
    # "gpu" keeps JAX's default, which prefers a GPU: JAX 0.11 reads jax_platforms="gpu" as CUDA
    # and ROCm and fails where ROCm is not built in (seen on an NVIDIA H200). The output's
    # "device" says where it ran.
    # FP32 products (not TF32/bf16 passes) as rmld's.
    jax.config.update("jax_default_matmul_precision", "highest")
    import jax.numpy as jnp

    key = jax.random.PRNGKey(a.seed)
    k_dict, k_img, k_pick, k_run = jax.random.split(key, 4)
    dictionary = jax.random.normal(k_dict, (a.d, a.p), jnp.float32) / jnp.sqrt(jnp.float32(a.d))
    images = jax.random.randint(k_img, (a.images, a.d), 0, 256).astype(jnp.float32) / 255
    x = images[jax.random.randint(k_pick, (a.chains,), 0, a.images)]
    lam, eps = jnp.float32(a.lam), jnp.float32(a.eps)

    def potential_and_grad(z, xc):
        residual = dictionary @ z - xc
        u = 0.5 * jnp.dot(residual, residual) + lam * jnp.sum(jnp.abs(z))
        return u, dictionary.T @ residual + lam * jnp.sign(z)

    def transition(z, xc, k):
        k_mom, k_acc = jax.random.split(k)
        r0 = jax.random.normal(k_mom, z.shape, jnp.float32)
        u0, g0 = potential_and_grad(z, xc)

        def leapfrog(_, state):
            q, r, g, _u = state
            r = r - 0.5 * eps * g
            q = q + eps * r
            u, g = potential_and_grad(q, xc)
            r = r - 0.5 * eps * g
            return q, r, g, u

        q, r, _g, u = jax.lax.fori_loop(0, a.leapfrog, leapfrog, (z, r0, g0, u0))
        log_alpha = (u0 + 0.5 * jnp.dot(r0, r0)) - (u + 0.5 * jnp.dot(r, r))
        accept = jnp.log(jax.random.uniform(k_acc)) < log_alpha
        return jnp.where(accept, q, z), accept

    @jax.jit
    def run(z, k):
        def body(i, state):
            z, accepted = state
            keys = jax.random.split(jax.random.fold_in(k, i), a.chains)
            z, acc = jax.vmap(transition)(z, x, keys)
            return z, accepted + acc.astype(jnp.int32)

        return jax.lax.fori_loop(
            0, a.iterations, body, (z, jnp.zeros(a.chains, jnp.int32))
        )

    z0 = jnp.zeros((a.chains, a.p), jnp.float32)
    z, _ = run(z0, k_run)  # compile and warm up
    z.block_until_ready()
    started = time.perf_counter()
    z, accepted = run(z, jax.random.fold_in(k_run, 1))
    z.block_until_ready()
    seconds = time.perf_counter() - started
    if not bool(jnp.all(jnp.isfinite(z))):
        sys.exit("jax peer: the state became non-finite; lower --eps")
    chain_steps = a.chains * a.leapfrog * a.iterations
    flops = 4 * a.d * a.p * chain_steps
    device = jax.devices()[0]
    print(
        json.dumps(
            {
                "peer": "jax",
                "jax": jax.__version__,
                "python": sys.version.split()[0],
                "device": f"{device.platform}: {device.device_kind}",
                "chains": a.chains,
                "seconds": seconds,
                "chain_steps_per_second": chain_steps / seconds,
                "gflops": flops / seconds / 1e9,
                "acceptance": float(accepted.sum()) / (a.chains * a.iterations),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
