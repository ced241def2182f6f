#!/usr/bin/env python3
"""Checks a run's percentiles against numpy on its own requests.jsonl.

For every level directory under ARTIFACT_DIR (one holding profile_export_genai_perf.json and
requests.jsonl), recomputes TTFT, request latency, ITL, output and input sequence length per
measured successful request (exact integers, as ttftbench records them), takes numpy.percentile
(default linear method, GenAI-Perf's) at p1 ... p99.9, and compares with the level JSON:

* each percentile within 1/2048 of numpy's (half an HDR bucket; exact below 2048 stored units),
* each percentile within [min, max].

Levels written with `--percentile-method nearest-rank` are compared with perf_analyzer's rule
instead. Prints TTFT p90/p99 per level beside numpy's and exits 1 on any mismatch.

    python3 -m venv /tmp/np && /tmp/np/bin/pip install numpy
    cargo run --release -- demo --artifact-dir /tmp/x
    /tmp/np/bin/python scripts/percentiles/check_artifacts.py /tmp/x
"""

import json
import math
import sys
from pathlib import Path

import numpy as np

PERCENTS = {"p1": 1, "p5": 5, "p10": 10, "p25": 25, "p50": 50, "p75": 75, "p90": 90,
            "p95": 95, "p99": 99, "p99.9": 99.9}


def per_request(rows):
    """Stored-unit samples per metric key (ns for times, tokens for lengths)."""
    out = {k: [] for k in ("time_to_first_token", "request_latency", "inter_token_latency",
                           "output_sequence_length", "input_sequence_length")}
    for r in rows:
        if r["phase"] != "measure" or r["error"] is not None:
            continue
        sent, first, last = r["sent_ns"], r["first_token_ns"], r["last_token_ns"]
        if first is not None:
            out["time_to_first_token"].append(max(first - sent, 0))
        if last is not None:
            out["request_latency"].append(max(last - sent, 0))
        if r["chunks"] >= 2 and r["osl"] >= 2 and first is not None and last is not None:
            # Rust's f64::round: half away from zero.
            out["inter_token_latency"].append(math.floor(max(last - first, 0) / (r["osl"] - 1) + 0.5))
        out["output_sequence_length"].append(r["osl"])
        out["input_sequence_length"].append(r["isl"])
    return out


def reference(samples, p, method):
    if method == "nearest-rank":
        s = sorted(samples)
        return float(s[int(p / 100.0 * (len(s) - 1) + 0.5)])
    return float(np.percentile(np.array(samples, dtype=np.float64), p))


def check_level(dir_):
    doc = json.loads((dir_ / "profile_export_genai_perf.json").read_text())
    method = doc.get("level", {}).get("percentile_method") or "linear"
    rows = [json.loads(line) for line in (dir_ / "requests.jsonl").open()]
    problems, worst = [], 0.0
    for key, samples in per_request(rows).items():
        stats = doc.get(key)
        if not samples or not isinstance(stats, dict):
            continue
        scale = 1e-6 if stats["unit"] == "ms" else 1.0
        for name, p in PERCENTS.items():
            ours, want = stats[name], reference(samples, p, method) * scale
            tol = 1e-9 if max(samples) < 2048 else want / 2048.0
            worst = max(worst, abs(ours - want) / want if want else 0.0)
            if abs(ours - want) > tol + 1e-9:
                problems.append(f"{key}.{name}: ttftbench {ours} vs reference {want}")
            if not stats["min"] - 1e-9 <= ours <= stats["max"] + 1e-9:
                problems.append(f"{key}.{name} {ours} outside [{stats['min']}, {stats['max']}]")
    ttft = doc.get("time_to_first_token")
    samples = per_request(rows)["time_to_first_token"]
    if isinstance(ttft, dict) and samples:
        print(f"{dir_.name}: n={len(samples)} method={method} TTFT p90 {ttft['p90']:.3f} "
              f"(numpy {reference(samples, 90, method) * 1e-6:.3f}) p99 {ttft['p99']:.3f} "
              f"(numpy {reference(samples, 99, method) * 1e-6:.3f}) max {ttft['max']:.3f} ms; "
              f"largest relative difference {worst:.2e}")
    return problems


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "artifacts/demo")
    levels = sorted(p.parent for p in root.rglob("profile_export_genai_perf.json")
                    if (p.parent / "requests.jsonl").exists())
    if not levels:
        sys.exit(f"no level with profile_export_genai_perf.json and requests.jsonl under {root}")
    problems = [f"{d.name}: {p}" for d in levels for p in check_level(d)]
    for p in problems:
        print("MISMATCH", p)
    print(f"{len(levels)} levels checked, {len(problems)} mismatches")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
