"""The benchmark's Markdown tables from its rows (mean ± std over the seeds)."""

from __future__ import annotations

from collections import OrderedDict, defaultdict

import numpy as np

NAMES = {"lr": "LR", "svm": "RBF SVM", "mlp": "MLP"}

TABLE2 = """
## (c) The paper's Table 2 protocol

Not re-run here: it is `scripts/table2` (docs/table2.md). The subset run, per dataset:

    bash scripts/table2/generate.sh ../shared/datasets/mnist runs/mnist --limit 3000 --test-limit 1000 --backend cpu
    target/table2-venv/bin/python scripts/table2/evaluate.py --dataset ../shared/datasets/mnist \\
        --rmld runs/mnist/rmld --limit-test 1000 --seeds 3 --paper mnist
"""


def _cell(values):
    return f"{np.mean(values):.1f}" if values else "–"


def tables(rows, mode) -> str:
    """One table per (dataset, regime, setting): a row per augmentation, per classifier the
    accuracy / balanced accuracy ± std / macro F1 (%), then the augmentation's seconds."""
    first = mode.get("first_seed", 0)
    keep = [r for r in rows if "error" not in r and r["dataset"] in mode["datasets"]
            and r["augmenter"] in mode["augmenters"]
            and r["classifier"] in mode["classifiers"] + ["proxies"]
            and first <= r["seed"] < first + mode["seeds"]]
    groups = OrderedDict()
    for r in keep:
        groups.setdefault((r["dataset"], r["regime"], r["setting"]), []).append(r)
    errors = defaultdict(set)
    for r in rows:
        if "error" in r:
            errors[(r["dataset"], r["regime"], r["setting"], r["augmenter"])].add(r["error"])
    out = []
    for (dataset, regime, setting), group in groups.items():
        classifiers = [c for c in mode["classifiers"] if any(r["classifier"] == c for r in group)]
        if not classifiers:
            continue
        seeds = sorted({r["seed"] for r in group})
        test = group[0]["test"]
        title = "few labels" if regime == "few" else "imbalanced"
        plural = "s" * (len(seeds) > 1)
        out.append(f"\n### {dataset}, {title}: {setting} ({len(seeds)} seed{plural}, {test} test images)\n")
        with_proxies = any(r["classifier"] == "proxies" for r in group)
        header = ["augmentation", "new images"] + \
                 [f"{NAMES[c]}: acc / bacc ± sd / F1" for c in classifiers] + ["augment s"] + \
                 (["label pres. (real; originals moved 1 px) / novelty / diversity"] if with_proxies else [])
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        best = {c: max((np.mean([r["bacc"] for r in group if r["augmenter"] == a and r["classifier"] == c])
                        for a in mode["augmenters"]
                        if any(r["augmenter"] == a and r["classifier"] == c for r in group)), default=None)
                for c in classifiers}
        for name in mode["augmenters"]:
            mine = [r for r in group if r["augmenter"] == name]
            if not any(r["classifier"] != "proxies" for r in mine):
                failed = errors.get((dataset, regime, setting, name))
                if failed:
                    out.append(f"| {name} | failed: {sorted(failed)[0][:80]} |")
                continue
            fitted = [r for r in mine if r["classifier"] != "proxies"]
            own = len({r["seed"] for r in fitted})
            label = name if own == len(seeds) else f"{name} ({own} seed{'s' * (own > 1)})"
            cells = [label, f"{int(np.mean([r['n_generated'] for r in fitted]))}"]
            for c in classifiers:
                these = [r for r in mine if r["classifier"] == c]
                if not these:
                    cells.append("–")
                    continue
                bacc = [r["bacc"] for r in these]
                mark = "**" if np.mean(bacc) >= best[c] - 1e-9 else ""
                cells.append(f"{_cell([r['acc'] for r in these])} / {mark}{np.mean(bacc):.1f}{mark} "
                             f"± {np.std(bacc):.1f} / {_cell([r['f1'] for r in these])}")
            per_seed = {r["seed"]: r["gen_s"] for r in mine if "gen_s" in r}
            cells.append(f"{np.mean(list(per_seed.values())):.1f}")
            if with_proxies:
                judged = [r for r in mine if r["classifier"] == "proxies"]
                cells.append("–" if not judged else
                             f"{_cell([r['preservation'] for r in judged])} ({_cell([r['real'] for r in judged])}"
                             f"{_moved(judged)}) / "
                             f"{np.mean([r['novelty'] for r in judged]):.2f} / "
                             f"{np.mean([r['diversity'] for r in judged]):.2f}")
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _moved(judged) -> str:
    """The judge's accuracy on the originals moved one pixel, when the rows have it (older rows
    do not)."""
    moved = [r["moved"] for r in judged if r.get("moved") is not None]
    return f"; {_cell(moved)}" if moved else ""
