#!/usr/bin/env python3
"""Writes a GenAI-Perf artifact directory with GenAI-Perf's own code, from a raw export.

Usage: genai_perf_artifacts.py RAW_EXPORT.json -- <genai-perf profile arguments>

Runs `genai-perf profile` (PyPI `genai-perf`, pinned in requirements.txt) with one stage
replaced: instead of starting perf_analyzer, the given `profile_export.json` (perf_analyzer's raw
export, e.g. one written by `ttftbench profile`) is copied to where perf_analyzer would have
written it. Everything else is GenAI-Perf's: its inputs.json, its parser and statistics, and its
exporters writing `profile_export_genai_perf.json` and `.csv`. `--tokenizer` should name a local
tokenizer directory (no hub is reachable); `--tokenizer builtin` writes out ttftbench's GPT-2.

This is how tests/fixtures/genai_perf_run was made (see its README).
"""
import gzip
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from genai_perf import main as gp_main  # noqa: E402
from genai_perf.subcommand.subcommand import Subcommand  # noqa: E402
from genai_perf.telemetry_data.dcgm_telemetry_data_collector import (  # noqa: E402
    DCGMTelemetryDataCollector,
)

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    if len(sys.argv) < 3 or sys.argv[2] != "--":
        print(__doc__)
        return 2
    raw = Path(sys.argv[1]).resolve()
    args = sys.argv[3:]
    tmp = Path(tempfile.mkdtemp())
    if "builtin" in args:
        with gzip.open(ROOT / "assets" / "gpt2-tokenizer.json.gz", "rb") as f:
            (tmp / "tokenizer.json").write_bytes(f.read())
        (tmp / "tokenizer_config.json").write_text(
            json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1024})
        )
        args = [str(tmp) if a == "builtin" else a for a in args]

    def replay(self, perf_analyzer_config):
        shutil.copyfile(raw, perf_analyzer_config.get_profile_export_file())

    Subcommand._run_perf_analyzer = replay
    # No DCGM exporter here: skip the probe of localhost:9400.
    DCGMTelemetryDataCollector.is_url_reachable = lambda self: False
    sys.argv = ["genai-perf", "profile", *args]
    try:
        return gp_main.main()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
