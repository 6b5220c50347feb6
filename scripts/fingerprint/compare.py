#!/usr/bin/env python3
"""Compares two capture.sh output trees: NPY arrays by dtype, shape and data bytes (the header's
padding may differ), report.json with timing and host fields dropped and each tree's own folder
written as OUT in its paths, every other file by bytes. Prints each difference; exits 1 if any."""
import ast, json, os, sys

def npy(path):
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:6] == b"\x93NUMPY", path
    major = raw[6]
    if major == 1:
        hlen = int.from_bytes(raw[8:10], "little"); start = 10
    else:
        hlen = int.from_bytes(raw[8:12], "little"); start = 12
    header = ast.literal_eval(raw[start:start + hlen].decode("latin1"))
    return header, raw[start + hlen:]

VOLATILE = ("folder", "seconds", "time", "wall", "rss", "host", "elapsed", "per_second", "version", "device", "adapter", "threads", "run_id", "rmld_build")

def volatile(key, value):
    # The code cache's folder is per capture (a string where it is the setting, an object's
    # "folder" where it is the report of its use).
    return any(w in key.lower() for w in VOLATILE) or (key == "code_cache" and isinstance(value, str))

def scrub(value, root):
    if isinstance(value, dict):
        return {k: scrub(v, root) for k, v in value.items() if not volatile(k, v)}
    if isinstance(value, list):
        return [scrub(v, root) for v in value]
    if isinstance(value, str):
        return value.replace(root, "OUT")
    return value

def main(a, b):
    bad = 0
    for root, _, files in os.walk(a):
        for name in sorted(files):
            pa = os.path.join(root, name)
            rel = os.path.relpath(pa, a)
            pb = os.path.join(b, rel)
            if name.endswith(".log") or name == ".rmld.lock":
                continue
            if not os.path.exists(pb):
                print(f"missing in {b}: {rel}"); bad += 1; continue
            if name.endswith(".npy"):
                (ha, da), (hb, db) = npy(pa), npy(pb)
                if ha != hb or da != db:
                    print(f"differs: {rel} ({ha} vs {hb}, data equal: {da == db})"); bad += 1
            elif name.endswith(".json"):
                ja = scrub(json.load(open(pa)), os.path.abspath(a))
                jb = scrub(json.load(open(pb)), os.path.abspath(b))
                if ja != jb:
                    print(f"differs: {rel} (json after dropping timings)"); bad += 1
            else:
                if open(pa, "rb").read() != open(pb, "rb").read():
                    print(f"differs: {rel} (bytes)"); bad += 1
    print(f"compare: {bad} difference(s)")
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
