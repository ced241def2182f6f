#!/usr/bin/env python3
"""Builds assets/gpt2-tokenizer.json.gz, the GPT-2 byte-level BPE tokenizer that ships inside
ttftbench, from the original GPT-2 `encoder.json` (vocabulary) and `vocab.bpe` (merge ranks).

Usage: scripts/make_gpt2_tokenizer.py ENCODER_JSON VOCAB_BPE OUT.json.gz

Those two files are OpenAI's GPT-2 release (MIT licence); a copy travels in the `tiktoken-rs`
crate's `assets/` folder, which is how they were obtained here without a model hub. The output is
a Hugging Face `tokenizer.json` (the format `--tokenizer` also accepts), so the same file serves
the built-in fast BPE and the `tokenizers` crate, and a test checks that the two agree.
"""
import gzip
import json
import sys


def main() -> None:
    encoder_path, merges_path, out_path = sys.argv[1:4]
    with open(encoder_path, encoding="utf-8") as f:
        vocab = json.load(f)
    with open(merges_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    merges = [l for l in lines[1:] if l and not l.startswith("#version")]
    assert len(vocab) == 50257, len(vocab)
    assert len(merges) == 50000, len(merges)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": vocab["<|endoftext|>"],
                "content": "<|endoftext|>",
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": True,
                "special": True,
            }
        ],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": dict(byte_level, trim_offsets=False),
        "decoder": byte_level,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": merges,
        },
    }
    data = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    # mtime=0 keeps the gzip bytes reproducible.
    with open(out_path, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as gz:
            gz.write(data)


if __name__ == "__main__":
    main()
