#!/usr/bin/env python3
"""Has GenAI-Perf's own parser recompute a ttftbench level from its raw export, and compares.

Usage: crosscheck.py LEVEL_DIR [LEVEL_DIR ...]

For each level directory written by `ttftbench profile` (with the default `--raw-export full`),
GenAI-Perf's `LLMProfileDataParser` reads `profile_export.json` with the GPT-2 tokenizer that
ships inside ttftbench (written out as a local Hugging Face tokenizer directory: no hub, no
network), and every statistic it computes is compared with ttftbench's own
`profile_export_genai_perf.json`:

* avg, min, max and std of every per-request metric, and every system metric (request and output
  token throughput, request count), must agree to float precision (relative 1e-6): ttftbench keeps
  exact sums, minima and maxima beside its histograms. Per-user throughput is stored in
  thousandths of a token/s, so its values may differ by up to 1e-3 tokens/s.
* Percentiles are checked against the samples GenAI-Perf's parser produced: ttftbench's pN must lie
  between the two order statistics around rank N/100*(n-1) (where numpy's linear interpolation,
  nearest-rank and HDR bucket values all fall), widened by the HDR histogram's precision of three
  significant digits (relative 1e-3) plus one unit of the stored value. An exact equality would only
  hold for one percentile definition; this holds for each of them, and a different sample set or a
  different metric definition fails it.

One definition differs on purpose, and the check states it: Triton (`service_kind` triton) streams
end with an empty final response (perf_analyzer and ttftbench ask for it). GenAI-Perf counts it as
the request's last response; ttftbench ends a request at its last token. So for those levels:
  1. GenAI-Perf's parser on the export with empty responses dropped agrees with ttftbench on every
     metric (above);
  2. on the export as written, TTFT, ISL and OSL agree, and GenAI-Perf's average request latency is
     ttftbench's plus the mean gap between each request's last token and its empty final response.

Prints one table row per compared value and exits 1 if any check fails.
"""
import copy
import gzip
import json
import math
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from genai_perf.profile_data_parser import LLMProfileDataParser  # noqa: E402
from genai_perf.tokenizer import Tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TIME = {"time_to_first_token", "time_to_second_token", "inter_token_latency", "request_latency"}
PER_REQUEST = [
    "time_to_first_token",
    "time_to_second_token",
    "request_latency",
    "inter_token_latency",
    "output_token_throughput_per_user",
    "output_sequence_length",
    "input_sequence_length",
]
SYSTEM = ["request_throughput", "output_token_throughput", "request_count"]
PERCENTILES = [1, 5, 10, 25, 50, 75, 90, 95, 99]


def tokenizer_dir(out: Path) -> Path:
    """The built-in GPT-2 tokenizer as a Hugging Face tokenizer directory."""
    with gzip.open(ROOT / "assets" / "gpt2-tokenizer.json.gz", "rb") as f:
        (out / "tokenizer.json").write_bytes(f.read())
    (out / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1024})
    )
    return out


def unit_step(metric: str) -> float:
    """One unit of ttftbench's stored value, in the reported unit."""
    if metric in TIME:
        return 1e-6  # ns stored, ms reported
    if metric == "output_token_throughput_per_user":
        return 1e-3
    return 1.0


class Check:
    def __init__(self, label: str):
        self.label = label
        self.rows = []
        self.failures = []

    def row(self, metric, stat, theirs, ours, ok, note=""):
        self.rows.append((self.label, metric, stat, theirs, ours, "ok" if ok else "FAIL", note))
        if not ok:
            self.failures.append(f"{self.label}: {metric}.{stat}: GenAI-Perf {theirs} vs ttftbench {ours} {note}")

    def close(self, metric, stat, theirs, ours, absolute=0.0, note=""):
        ok = ours is not None and math.isclose(theirs, ours, rel_tol=1e-6, abs_tol=absolute + 1e-9)
        self.row(metric, stat, theirs, ours, ok, note)


def parse(export: Path, tok: Tokenizer):
    data = json.loads(export.read_text())
    exp = data["experiments"][0]["experiment"]
    parser = LLMProfileDataParser(filename=export, tokenizer=tok)
    stats = parser.get_statistics(exp["mode"], str(exp["value"]))
    samples = {}
    for attr, values in stats.metrics.data.items():
        name = stats.metrics.get_base_name(attr)
        scale = 1e-6 if name in TIME else 1.0
        samples[name] = sorted(v * scale for v in values)
    stats.scale_data()
    return data, stats.stats_dict, samples


def compare_all(check: Check, theirs: dict, samples: dict, ours: dict, metrics=None):
    for m in metrics or PER_REQUEST:
        if m not in theirs:
            check.row(m, "present", "missing", m in ours, m not in ours, "GenAI-Perf computed no value")
            continue
        t, o = theirs[m], ours.get(m, {})
        absolute = 1e-3 if m == "output_token_throughput_per_user" else 0.0
        for stat in ["avg", "min", "max", "std"]:
            check.close(m, stat, t[stat], o.get(stat), absolute)
        xs = samples[m]
        n = len(xs)
        for p in PERCENTILES:
            r = p / 100 * (n - 1)
            lo, hi = xs[math.floor(r)], xs[math.ceil(r)]
            slack = unit_step(m)
            v = o.get(f"p{p}")
            ok = v is not None and lo * (1 - 1e-3) - slack <= v <= hi * (1 + 1e-3) + slack
            check.row(m, f"p{p}", t[f"p{p}"], v, ok, f"order statistics [{lo:.6g}, {hi:.6g}]")
    if metrics is None:
        for m in SYSTEM:
            check.close(m, "avg", theirs[m]["avg"], ours.get(m, {}).get("avg"))


def text_of(output: dict) -> str:
    return output.get("text_output", "")


def crosscheck(level: Path, tok: Tokenizer, tmp: Path) -> Check:
    ours = json.loads((level / "profile_export_genai_perf.json").read_text())
    export = level / "profile_export.json"
    data, theirs, samples = parse(export, tok)
    label = f"{data['service_kind']}:{data['endpoint'] or 'kserve'}"
    check = Check(label)
    requests = data["experiments"][0]["requests"]
    empty = data["service_kind"] == "triton" and any(
        text_of(o) == "" for r in requests for o in r["response_outputs"]
    )
    if not empty:
        compare_all(check, theirs, samples, ours)
        return check
    # Triton's empty final response: first the same definition (empty responses dropped) ...
    trimmed = copy.deepcopy(data)
    gaps = []
    for r in trimmed["experiments"][0]["requests"]:
        keep = [i for i, o in enumerate(r["response_outputs"]) if text_of(o) != ""]
        gaps.append(r["response_timestamps"][-1] - r["response_timestamps"][keep[-1]])
        r["response_timestamps"] = [r["response_timestamps"][i] for i in keep]
        r["response_outputs"] = [r["response_outputs"][i] for i in keep]
    path = tmp / f"trimmed-{level.name}.json"
    path.write_text(json.dumps(trimmed))
    _, t2, s2 = parse(path, tok)
    check.label = label + " (empty final responses dropped)"
    compare_all(check, t2, s2, ours)
    # ... then the export as written: the stated difference.
    check.label = label + " (as written)"
    compare_all(check, theirs, samples, ours, ["time_to_first_token", "input_sequence_length", "output_sequence_length"])
    mean_gap_ms = sum(gaps) / len(gaps) * 1e-6
    check.close(
        "request_latency",
        "avg",
        theirs["request_latency"]["avg"],
        ours["request_latency"]["avg"] + mean_gap_ms,
        note=f"ttftbench + mean empty-final gap {mean_gap_ms:.6f} ms",
    )
    check.label = label
    return check


def main() -> int:
    levels = [Path(p) for p in sys.argv[1:]]
    if not levels:
        print(__doc__)
        return 2
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        tok = Tokenizer()
        tok.set_tokenizer(str(tokenizer_dir(tmp)), False, "main")
        checks = [crosscheck(level, tok, tmp) for level in levels]
    print(f"{'export':<58} {'metric':<34} {'stat':<5} {'GenAI-Perf':>14} {'ttftbench':>14}")
    for c in checks:
        for label, metric, stat, theirs, ours, verdict, note in c.rows:
            if stat in ("avg", "min", "max", "p50", "p99") or verdict != "ok":
                ours_s = "-" if ours is None else f"{ours:.6g}" if isinstance(ours, float) else str(ours)
                theirs_s = f"{theirs:.6g}" if isinstance(theirs, float) else str(theirs)
                print(f"{label:<58} {metric:<34} {stat:<5} {theirs_s:>14} {ours_s:>14} {verdict} {note if verdict != 'ok' or 'gap' in note else ''}")
    failures = [f for c in checks for f in c.failures]
    total = sum(len(c.rows) for c in checks)
    print(f"{total - len(failures)} passed, {len(failures)} failed")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
