"""One table from a `rmld bench` run and its peers' JSON lines: chain-steps/s, GFLOP/s, the
fraction of the device's FP32 peak, and rmld's ratio to each peer at each chain count.

Reads OUT/rmld/bench.json (rmld's rows) and OUT/peers.jsonl (one JSON object per peer run, as the
peer scripts print them, or {"peer": ..., "chains": ..., "error": ...} for a run that failed) and
writes OUT/table.md, OUT/table.csv and OUT/table.json. Standard library only.

Usage: python bench_table.py OUT [--peak-gflops N] [--peak-source TEXT]
"""

import argparse
import csv
import json
import os
import sys

# FP32 (non-tensor-core) peak of NVIDIA data-centre and desktop GPUs, GFLOP/s, from NVIDIA's
# datasheets (boost clock). Matched as a substring of nvidia-smi's name, first match wins, so the
# more specific names come first.
FP32_PEAK_GFLOPS = [
    ("H200", 66_900.0),
    ("H100 PCIe", 51_200.0),
    ("H100 NVL", 60_000.0),
    ("H100", 66_900.0),  # SXM5 (the "H100 80GB HBM3" of nvidia-smi)
    ("A100", 19_500.0),
    ("L40S", 91_600.0),
    ("L4", 30_300.0),
    ("A10", 31_200.0),
    ("RTX 4090", 82_600.0),
    ("V100", 15_700.0),
    ("T4", 8_100.0),
]

PEERS = ("numpy", "torch", "jax")


def peak_for(name):
    """The datasheet FP32 peak of a GPU named `name` (nvidia-smi), or None."""
    for key, gflops in FP32_PEAK_GFLOPS:
        if key.lower() in name.lower():
            return gflops
    return None


def load_peers(path):
    """{(peer, chains): record} from a JSON-lines file; bad lines are reported and skipped."""
    peers = {}
    if not os.path.exists(path):
        return peers
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
                peers[(rec["peer"], int(rec["chains"]))] = rec
            except (ValueError, KeyError, TypeError) as e:
                print(f"bench_table: {path}:{number}: not a peer record ({e}): {line[:120]}",
                      file=sys.stderr)
    return peers


def build(bench, peers, peak, peak_source):
    """The table's rows (dicts) from rmld's bench.json and the peer records."""
    rows = []
    steps = bench["problem"]["steps"]
    for row in bench["rows"]:
        if row.get("status") != "ok":
            continue
        chains = int(row["chains"])
        rate = row["chain_steps_per_second"]
        gflops = row["gflops_counted"]
        # The same chain-steps over the device time of their passes (timestamp queries), where
        # the adapter gives it: the step without the read-back of every sample, which the peers
        # do not do.
        device_seconds = row.get("device_seconds")
        outer = row.get("outer_iterations") or bench["problem"]["outer"]
        device_rate = chains * steps * outer / device_seconds if device_seconds else None
        out = {
            "backend": row["backend"],
            "device": row.get("device", ""),
            "chains": chains,
            "rmld_chain_steps_per_second": rate,
            "rmld_device_chain_steps_per_second": device_rate,
            "rmld_gflops": gflops,
            "fraction_of_peak": gflops / peak if peak else None,
            "peak_gflops": peak,
            "peak_source": peak_source,
        }
        for name in PEERS:
            rec = peers.get((name, chains))
            peer_rate = rec.get("chain_steps_per_second") if rec else None
            out[f"{name}_chain_steps_per_second"] = peer_rate
            out[f"rmld_over_{name}"] = rate / peer_rate if peer_rate else None
            out[f"rmld_device_over_{name}"] = (
                device_rate / peer_rate if peer_rate and device_rate else None
            )
            out[f"{name}_note"] = (rec or {}).get("error", "" if rec else "not run")
            out[f"{name}_device"] = (rec or {}).get("device", "CPU" if name == "numpy" else "")
        rows.append(out)
    return rows


def fmt(v, digits=0):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return str(v)


def markdown(rows, bench):
    prob = bench["problem"]
    lines = [
        f"rmld bench: d = {prob['d']}, p = {prob['p']}, m = {prob['batch']}, T = {prob['steps']}, "
        f"{prob['outer']} timed outer iteration(s); a chain-step is one gradient (two products, "
        f"4·d·p flops); peers at the same sizes (JAX: one leapfrog step = one chain-step).",
        "",
        "| backend | C | rmld chain-steps/s | rmld, device time | rmld GFLOP/s | % of FP32 peak "
        "| NumPy (CPU) | rmld/NumPy | PyTorch | rmld/PyTorch | rmld/PyTorch, device time "
        "| JAX HMC | rmld/JAX |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        pct = None if r["fraction_of_peak"] is None else 100 * r["fraction_of_peak"]
        cells = [r["backend"], str(r["chains"]), fmt(r["rmld_chain_steps_per_second"]),
                 fmt(r["rmld_device_chain_steps_per_second"]), fmt(r["rmld_gflops"], 1),
                 fmt(pct, 1)]
        for name in PEERS:
            rate = r[f"{name}_chain_steps_per_second"]
            cells.append(fmt(rate) if rate else (r[f"{name}_note"] or "-")[:40])
            cells.append(fmt(r[f"rmld_over_{name}"], 2))
            if name == "torch":
                cells.append(fmt(r["rmld_device_over_torch"], 2))
        lines.append("| " + " | ".join(cells) + " |")
    if rows:
        lines += ["", f"Peak: {fmt(rows[0]['peak_gflops'], 0)} GFLOP/s ({rows[0]['peak_source']})."]
        devices = {n: r[f"{n}_device"] for r in rows for n in PEERS if r[f"{n}_device"]}
        if devices:
            lines.append("Peer devices: " + ", ".join(f"{n}: {d}" for n, d in devices.items()) + ".")
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="the folder gpu-bench.sh wrote (rmld/bench.json, peers.jsonl)")
    ap.add_argument("--peak-gflops", type=float, default=0.0,
                    help="the device's FP32 peak (default: from --gpu-name, else rmld's CPU ceiling)")
    ap.add_argument("--gpu-name", default="", help="nvidia-smi's name of the GPU, if any")
    a = ap.parse_args(argv)
    bench_path = os.path.join(a.out, "rmld", "bench.json")
    try:
        with open(bench_path, encoding="utf-8") as f:
            bench = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"bench_table: cannot read {bench_path}: {e}")
    if a.peak_gflops < 0:
        sys.exit(f"bench_table: --peak-gflops must be positive, got {a.peak_gflops}")
    if a.peak_gflops > 0:
        peak, source = a.peak_gflops, "--peak-gflops"
    elif a.gpu_name and peak_for(a.gpu_name):
        peak, source = peak_for(a.gpu_name), f"datasheet FP32 peak of {a.gpu_name}"
    else:
        backend = bench["rows"][0]["backend"] if bench.get("rows") else "cpu"
        ceil = [c for c in bench.get("ceilings", []) if c.get("backend") == backend]
        peak = ceil[0]["gflops"] if ceil else None
        source = f"rmld's measured {backend} ceiling: {ceil[0]['what']}" if ceil else "unknown"
        if a.gpu_name:
            source += f" (no datasheet peak known for {a.gpu_name}; give --peak-gflops)"
    rows = build(bench, load_peers(os.path.join(a.out, "peers.jsonl")), peak, source)
    if not rows:
        sys.exit(f"bench_table: {bench_path} has no successful rows")
    with open(os.path.join(a.out, "table.json"), "w", encoding="utf-8") as f:
        json.dump({"problem": bench["problem"], "rows": rows}, f, indent=1)
    with open(os.path.join(a.out, "table.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    text = markdown(rows, bench)
    with open(os.path.join(a.out, "table.md"), "w", encoding="utf-8") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
