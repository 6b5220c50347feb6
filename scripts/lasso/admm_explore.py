"""LASSO on MNIST rows: iterations FISTA and ADMM need, in NumPy (f64), for docs/benchmarks.md's
"LASSO by ADMM". Usage: python admm_explore.py DICTIONARY.npy MNIST_DIR [ROWS]

DICTIONARY.npy is an augment run's dictionary.npy (784 x 3136); the rows are the first ROWS
(300) training images at pixel-max 1."""

import gzip
import sys

import numpy as np

A = np.load(sys.argv[1]).astype(np.float64)
ROWS = int(sys.argv[3]) if len(sys.argv) > 3 else 300
with gzip.open(f"{sys.argv[2]}/train-images-idx3-ubyte.gz") as f:
    X = np.frombuffer(f.read()[16:], np.uint8).reshape(-1, A.shape[0])[:ROWS] / 255.0
d, p = A.shape
L = np.linalg.norm(A, 2) ** 2
soft = lambda v, t: np.sign(v) * np.maximum(np.abs(v) - t, 0)


def objective(Z, lam):
    return 0.5 * ((Z @ A.T - X) ** 2).sum(1) + lam * np.abs(Z).sum(1)


def dual(R, lam):
    """D(θ) at θ = s·R, R = x − A z, s scaling θ into ||Aᵀθ||∞ ≤ λ."""
    s = np.minimum(1, lam / np.abs(R @ A).max(1))
    th = R * s[:, None]
    return (th * X).sum(1) - 0.5 * (th * th).sum(1)


def mfista(lam, iterations=200):
    """rmld's monotone FISTA (backend/cpu/fista.rs): the objective after each iteration."""
    Z = np.zeros((len(X), p)); Y = Z.copy(); t = 1.0; F = objective(Z, lam); history = []
    for _ in range(iterations):
        U = soft(Y - ((Y @ A.T - X) @ A) / L, lam / L)
        FU = objective(U, lam)
        Zn = np.where((FU <= F)[:, None], U, Z)
        tn = (1 + np.sqrt(1 + 4 * t * t)) / 2
        Y = Zn + (t / tn) * (U - Zn) + ((t - 1) / tn) * (Zn - Z)
        Z, F, t = Zn, np.minimum(F, FU), tn
        history.append(F.copy())
    return Z, np.array(history)


def admm(lam, rho, alpha, iterations=200):
    """Relaxed ADMM with the Woodbury step: per iteration, the objective at v and the gaps with
    the dual at v's residual and at the quadratic step's z's."""
    M = np.linalg.inv(rho * np.eye(d) + A @ A.T)
    Atx = X @ A
    V = np.zeros((len(X), p)); U = np.zeros_like(V); history = []
    for _ in range(iterations):
        q = Atx + rho * (V - U)
        s = (q @ A.T) @ M  # A z
        Z = (q - s @ A) / rho
        relaxed = alpha * Z + (1 - alpha) * V
        V = soft(relaxed + U, lam / rho)
        U = U + relaxed - V
        P = objective(V, lam)
        history.append((P, (P - dual(X - V @ A.T, lam)) / P, (P - dual(X - s, lam)) / P))
    return history


def first(reached):
    """Per row, the first iteration (1-based) where `reached` holds; 10**9 if never."""
    return np.where(reached.any(0), reached.argmax(0) + 1, 10**9)


lam = 0.05
_, fista = mfista(lam)
print(f"L = {L:.3f}; FISTA-200 relative gap median "
      f"{np.median((fista[-1] - dual(X - mfista(lam)[0] @ A.T, lam)) / fista[-1]):.1e}")
print("iterations until every row's objective is at or below FISTA-200's (median, max):")
for rho, alpha in [(0.2, 1.0), (0.2, 1.8), (0.3, 1.8)]:
    P = np.array([h[0] for h in admm(lam, rho, alpha)])
    it = first(P <= fista[-1][None, :] * (1 + 1e-9))
    print(f"  ADMM rho {rho} alpha {alpha}: {np.median(it):.0f}, {it.max()}")
print("mean iterations to a 5e-3 gap, checked every 10 (dual at v, dual at z):")
for c in [20, 25, 30, 40]:
    history = admm(lam, L / c, 1.8)
    gv = np.array([h[1] for h in history]); gz = np.array([h[2] for h in history])
    up = lambda it: np.ceil(it / 10) * 10
    print(f"  rho = L/{c}: {up(first(gv <= 5e-3)).mean():.1f}, {up(first(gz <= 5e-3)).mean():.1f}")
