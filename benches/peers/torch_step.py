"""PyTorch peer of one RMLD outer iteration: the step of numpy_step.py, on a CPU or a CUDA device.

Same sizes, same flops, same float32 arithmetic as `numpy_step.py` and `rmld bench`: per step and
chain, gather a minibatch of m images and take its mean ybar (C x d), the two products
R = Z A^T - ybar and G = R A, then the Laplace update of Algorithm 1 (g = G + lam*sign(z);
r <- r - eta*g - eta*r; z <- z + eta*r); per outer iteration the full residual A Z - xbar and the
gradient at Z. Everything stays on the device (random numbers included), with no Python loop over
chains. On CUDA the clock is read after `torch.cuda.synchronize()`, and TF32 is off unless
`--tf32` is given, so the products are true FP32 as rmld's. Prints one JSON object.

Usage: python torch_step.py --device cuda --d 784 --p 3136 --chains 4096 --batch 64 --steps 20 --outer 3
"""

import argparse
import json
import sys
import time

import torch


def flops_per_chain(d, p, steps):
    """The flops `rmld bench` counts per chain and outer iteration: 4*d*p per step (the two
    products) plus 4*d*p for the full residual and gradient at Z."""
    return 4 * d * p * (steps + 1)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
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
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: PyTorch's default)")
    ap.add_argument("--tf32", action="store_true", help="allow TF32 products on CUDA (not FP32)")
    a = ap.parse_args(argv)
    if min(a.d, a.p, a.chains, a.batch, a.steps, a.outer, a.images) < 1:
        ap.error("every size must be at least 1")
    device = torch.device(a.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error(f"--device {a.device}: PyTorch {torch.__version__} sees no CUDA device")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32

    gen = torch.Generator(device=device)
    gen.manual_seed(a.seed)
    f32 = torch.float32
    dictionary = torch.randn(a.d, a.p, generator=gen, device=device, dtype=f32) / a.d**0.5
    dictionary_t = dictionary.t().contiguous()
    images = torch.randint(0, 256, (a.images, a.d), generator=gen, device=device).to(f32) / 255
    xbar = images.mean(dim=0)
    z = torch.zeros(a.chains, a.p, device=device, dtype=f32)
    r = torch.empty_like(z)
    residual = torch.empty(a.chains, a.d, device=device, dtype=f32)
    gradient = torch.empty_like(z)
    lam, eta = a.lam, a.eta

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    @torch.no_grad()
    def outer_iteration():
        torch.randn(a.chains, a.p, generator=gen, device=device, out=r)
        for _ in range(a.steps):
            # Gather: each chain's minibatch mean, by embedding_bag (no C x m x d intermediate:
            # 15x faster than images[rows].mean(1) on this CPU).
            rows = torch.randint(0, a.images, (a.chains, a.batch), generator=gen, device=device)
            ybar = torch.nn.functional.embedding_bag(rows, images, mode="mean")
            # The two products.
            torch.matmul(z, dictionary_t, out=residual)
            residual.sub_(ybar)
            torch.matmul(residual, dictionary, out=gradient)
            # The update (Laplace prior, sigma^2 = 1).
            gradient.add_(torch.sign(z), alpha=lam)
            r.mul_(1 - eta).sub_(gradient, alpha=eta)
            z.add_(r, alpha=eta)
        # Full residual and gradient at Z (the MH terms' inputs).
        torch.matmul(z, dictionary_t, out=residual)
        residual.sub_(xbar)
        torch.matmul(residual, dictionary, out=gradient)
        gradient.add_(torch.sign(z), alpha=lam)
        return residual.square().sum()

    outer_iteration()  # warm-up, as rmld bench
    sync()
    started = time.perf_counter()
    for _ in range(a.outer):
        last = outer_iteration()
    sync()
    seconds = time.perf_counter() - started
    if not torch.isfinite(last):
        sys.exit("torch peer: the state became non-finite; lower --eta")
    chain_steps = a.chains * a.steps * a.outer
    flops = flops_per_chain(a.d, a.p, a.steps) * a.chains * a.outer
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(
        json.dumps(
            {
                "peer": "torch",
                "torch": torch.__version__,
                "python": sys.version.split()[0],
                "device": name,
                "threads": torch.get_num_threads(),
                "tf32": a.tf32,
                "chains": a.chains,
                "seconds": seconds,
                "chain_steps_per_second": chain_steps / seconds,
                "gflops": flops / seconds / 1e9,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
