"""Issue 41's lines read off a benchmark run: paired gains per seed from `OUT/rows.jsonl`.

    python scripts/usefulness/criteria.py target/usefulness/rows.jsonl

For each dataset and classifier (balanced accuracy, paired over the seeds both rows have):
- few labels (every `few` setting): rmld − none (the line: at least +1 point) and
  shifts+rmld − shifts (above 0; `rmld+shifts` is the same union under run.py's other name);
- imbalanced (every `imbalanced` setting): rmld − SMOTE (at least 0).
Each line gives the mean ± its standard error, the lowest seed, the seeds, and whether the mean
meets the line (`–` where the issue draws none: the 8×8 digits, the MLP, Quick Draw imbalanced). A comparison whose rows are missing from the run is left out, not guessed.

With `--groups K` (the issue checks 3 seeds) each line also gives the share of the run's K-seed
groups whose mean meets it: every group of K of its seeds (20,000 drawn with seed 0 where there
are more), so a run of many seeds says how often a K-seed check of the same default would pass.
"""

import argparse
import itertools
import json
import math
import random
import sys
from collections import defaultdict
from pathlib import Path

# (regime, augmenter, reference, line, strict, datasets the issue names): the mean paired gain
# must be >= line (> where the issue says "above"). Every dataset and classifier of the run is
# shown; only the datasets with LR and the RBF SVM are held against the line.
FEW_LABELS = ("mnist", "fashion-mnist", "quickdraw")
CHECKS = (
    ("few", "rmld", "none", 1.0, False, FEW_LABELS),
    ("few", "shifts+rmld", "shifts", 0.0, True, FEW_LABELS),
    ("imbalanced", "rmld", "smote", 0.0, False, ("mnist", "fashion-mnist")),
)
CLASSIFIERS = ("lr", "svm")
SAME = {"rmld+shifts": "shifts+rmld"}  # run.py's two names for originals + shifts + rmld


def load(paths):
    """{(dataset, regime, setting, classifier, augmenter): {seed: bacc}} from rows.jsonl files."""
    table = defaultdict(dict)
    for path in paths:
        for number, line in enumerate(Path(path).read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if row.get("error"):  # a peer that refused the cut (ADASYN): no numbers
                    continue
                if row.get("classifier") == "proxies":  # --proxies' rows: no accuracy
                    continue
                key = (row["dataset"], row["regime"], row["setting"], row["classifier"],
                       SAME.get(row["augmenter"], row["augmenter"]))
                table[key][int(row["seed"])] = float(row["bacc"])
            except (ValueError, KeyError, TypeError) as e:
                raise SystemExit(f"{path}:{number}: not a row of run.py ({e})")
    return table


def paired(a: dict, b: dict):
    """(mean, standard error, lowest, seeds, gains) of a − b over the seeds both have, or None."""
    seeds = sorted(set(a) & set(b))
    if not seeds:
        return None
    d = [a[s] - b[s] for s in seeds]
    mean = sum(d) / len(d)
    se = math.sqrt(sum((v - mean) ** 2 for v in d) / (len(d) - 1) / len(d)) if len(d) > 1 else float("nan")
    return mean, se, min(d), seeds, d


# More groups than this are sampled (seed 0) rather than all enumerated.
MAX_GROUPS = 20000


def group_share(gains, k: int, line: float, strict: bool):
    """The share of `k`-seed groups of `gains` whose mean meets the line, or None (fewer seeds)."""
    if k < 1 or len(gains) < k:
        return None
    if math.comb(len(gains), k) <= MAX_GROUPS:
        groups = list(itertools.combinations(gains, k))
    else:
        rng = random.Random(0)
        groups = [rng.sample(gains, k) for _ in range(MAX_GROUPS)]
    meets = sum(1 for g in groups if (sum(g) / k > line if strict else sum(g) / k >= line))
    return meets / len(groups)


def lines(table, groups_of: int = 0):
    """One result per check found in the run: dicts with the numbers and `met` (and with
    `groups_of` > 0, `groups_met`: the share of that many seeds' groups meeting the line)."""
    out = []
    groups = sorted({key[:4] for key in table})
    for dataset, regime, setting, classifier in groups:
        for check_regime, augmenter, reference, line, strict, datasets in CHECKS:
            if regime != check_regime:
                continue
            a = table.get((dataset, regime, setting, classifier, augmenter))
            b = table.get((dataset, regime, setting, classifier, reference))
            result = paired(a, b) if a and b else None
            if result is None:
                continue
            mean, se, lowest, seeds, gains = result
            met = mean > line if strict else mean >= line
            share = group_share(gains, groups_of, line, strict)
            if dataset not in datasets or classifier not in CLASSIFIERS:
                met = share = None  # shown, but not one of the lines
            out.append(dict(dataset=dataset, regime=regime, setting=setting, classifier=classifier,
                            comparison=f"{augmenter} − {reference}", line=line, mean=mean, se=se,
                            lowest=lowest, seeds=seeds, met=met, groups_met=share))
    return out


def markdown(results, groups_of: int = 0) -> str:
    header = "| dataset | cut | classifier | comparison | mean ± se | lowest seed | seeds | line | met |"
    rule = "|---|---|---|---|---|---|---|---|---|"
    if groups_of:
        header += f" {groups_of}-seed groups meeting it |"
        rule += "---|"
    rows = [header, rule]
    for r in results:
        seeds = f"{r['seeds'][0]}–{r['seeds'][-1]}" if len(r["seeds"]) > 1 else str(r["seeds"][0])
        row = (f"| {r['dataset']} | {r['regime']} {r['setting']} | {r['classifier']} | "
               f"{r['comparison']} | {r['mean']:+.2f} ± {r['se']:.2f} | {r['lowest']:+.2f} | "
               f"{seeds} ({len(r['seeds'])}) | {'>' if r['comparison'].startswith('shifts') else '≥'} "
               f"{r['line']:g} | {'–' if r['met'] is None else 'yes' if r['met'] else '**no**'} |")
        if groups_of:
            share = r.get("groups_met")
            row += " – |" if share is None else f" {100 * share:.0f}% |"
        rows.append(row)
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rows", nargs="+", help="rows.jsonl files of run.py")
    ap.add_argument("--groups", type=int, default=0, metavar="K",
                    help="also give the share of K-seed groups meeting each line (the issue: 3)")
    args = ap.parse_args(argv)
    if args.groups < 0:
        raise SystemExit(f"--groups {args.groups}: expected a number of seeds, 1 or more (0 for none)")
    for path in args.rows:
        if not Path(path).is_file():
            raise SystemExit(f"{path}: no such file (run.py writes OUT/rows.jsonl)")
    results = lines(load(args.rows), args.groups)
    if not results:
        raise SystemExit("no comparison found: the run needs none, shifts, shifts+rmld and rmld "
                         "rows (few labels) or smote and rmld rows (imbalanced)")
    print(markdown(results, args.groups))
    return 0


if __name__ == "__main__":
    sys.exit(main())
