"""Writes tests/data/diagnostics_reference.json: fixed draws and what the reference libraries
compute from them (nested R-hat by arviz-stats 0.8.0, R-hat/ESS/MCSE by ArviZ 0.23.4), for
tests/diagnostics.rs to compare rmld's own estimators against.

    python3 -m venv /tmp/azv && /tmp/azv/bin/pip install arviz-stats==0.8.0 arviz==0.23.4
    /tmp/azv/bin/python scripts/reference/diagnostics_reference.py
"""

import json
from pathlib import Path

import arviz as az
import numpy as np
from arviz_stats.base import array_stats


def ar1(rng, chains, draws, rho, offsets):
    x = np.zeros((chains, draws))
    x[:, 0] = rng.normal(size=chains)
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.normal(size=chains)
    return x + np.asarray(offsets)[:, None]


def main():
    rng = np.random.default_rng(20261123)
    cases = [
        ("iid normal, two superchains of two", rng.normal(size=(4, 50)), [0, 0, 1, 1]),
        ("AR(1) 0.7, superchains apart", ar1(rng, 6, 40, 0.7, [0, 0, 0, 1.5, 1.5, 1.5]), [0, 0, 0, 1, 1, 1]),
        ("AR(1) 0.9, odd length, four superchains", ar1(rng, 8, 31, 0.9, [0] * 8), [0, 1, 2, 3, 0, 1, 2, 3]),
        ("one chain per superchain", rng.standard_t(3, size=(3, 20)), [0, 1, 2]),
        ("many short chains", ar1(rng, 32, 8, 0.5, np.repeat(rng.normal(size=8) * 0.3, 4)), list(np.repeat(np.arange(8), 4))),
    ]
    out = []
    for name, draws, superchains in cases:
        draws = np.round(draws, 6)  # what is stored is what both sides read
        out.append({
            "name": name,
            "draws": draws.tolist(),
            "superchains": [int(s) for s in superchains],
            "nested_rhat": float(array_stats.rhat_nested(draws, superchain_ids=np.asarray(superchains))),
            "rhat": float(az.rhat(draws)),
            "ess_bulk": float(az.ess(draws, method="bulk")),
            "ess_tail": float(az.ess(draws, method="tail")),
            "mcse_mean": float(az.mcse(draws, method="mean")),
        })
    path = Path(__file__).resolve().parents[2] / "tests" / "data" / "diagnostics_reference.json"
    path.write_text(json.dumps({"generated_by": "scripts/reference/diagnostics_reference.py",
                                "arviz": az.__version__, "cases": out}, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
