#!/usr/bin/env python3
"""Writes the tiny random-weight GPT-2 GGUF that scripts/engines/llamacpp/start.sh serves.

    TOOLS_VENV/bin/python scripts/engines/llamacpp/make_model.py LLAMA_CPP_SRC OUT.gguf

LLAMA_CPP_SRC is the unpacked llama.cpp of the llama-cpp-python sdist (vendor/llama.cpp): its
own gguf-py writes the file (GGUFWriter, so the format matches the server built from the same
sources) and its models/ggml-vocab-gpt-2.gguf gives the tokenizer (GPT-2's real 50257-token
vocabulary and merges; every tokenizer.* field is copied). The model: architecture gpt2,
embedding 256, 4 blocks, 4 heads, feed-forward 1024, context 16384 (learned positions: as long
as the -c 16384 that start.sh passes, so no slot can run past the position table), f16 weights
drawn from N(0, 0.02) with numpy's default_rng(0) (norms 1, biases 0, output tied to the token
embedding), plus a chat template (roles as plain-text markers, turns ended by <|endoftext|>).
~42 MB, 6-15 s (mostly copying the 50000 merges through gguf-py).
Needs numpy and pyyaml (the tools venv of install.sh has both).

Deterministic: the same sources give the same bytes. OUT.gguf is written to a temporary name and
renamed. Bump RECIPE when anything here changes: start.sh keys the file name by it.
"""
import os
import sys
import time
from pathlib import Path

RECIPE = "tiny-gpt2-r1"
N_EMBD, N_LAYER, N_HEAD, N_FF, N_CTX = 256, 4, 4, 1024, 16384
EOT = "<|endoftext|>"
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}" + EOT + "\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    sys.path.insert(0, str(src / "gguf-py"))
    import numpy as np
    import gguf

    t0 = time.monotonic()
    vocab = gguf.GGUFReader(src / "models" / "ggml-vocab-gpt-2.gguf")
    n_vocab = len(vocab.fields["tokenizer.ggml.tokens"].data)

    tmp = out.parent / f".{out.name}.tmp.{os.getpid()}"
    w = gguf.GGUFWriter(str(tmp), "gpt2")
    w.add_name(RECIPE)
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_layer_norm_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    for key, field in vocab.fields.items():
        if not key.startswith("tokenizer."):
            continue
        main_type = field.types[0]
        if main_type == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, field.contents(), main_type, sub_type=field.types[-1])
        else:
            w.add_key_value(key, field.contents(), main_type)
    w.add_chat_template(CHAT_TEMPLATE)

    rng = np.random.default_rng(0)

    def rand(*shape):  # numpy shapes are ggml's reversed: (rows, n_embd) is ggml {n_embd, rows}
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

    ones = lambda n: np.ones(n, dtype=np.float32)  # noqa: E731
    zeros = lambda n: np.zeros(n, dtype=np.float32)  # noqa: E731
    w.add_tensor("token_embd.weight", rand(n_vocab, N_EMBD))
    w.add_tensor("position_embd.weight", rand(N_CTX, N_EMBD))
    for i in range(N_LAYER):
        b = f"blk.{i}"
        w.add_tensor(f"{b}.attn_norm.weight", ones(N_EMBD))
        w.add_tensor(f"{b}.attn_norm.bias", zeros(N_EMBD))
        w.add_tensor(f"{b}.attn_qkv.weight", rand(3 * N_EMBD, N_EMBD))
        w.add_tensor(f"{b}.attn_qkv.bias", zeros(3 * N_EMBD))
        w.add_tensor(f"{b}.attn_output.weight", rand(N_EMBD, N_EMBD))
        w.add_tensor(f"{b}.attn_output.bias", zeros(N_EMBD))
        w.add_tensor(f"{b}.ffn_norm.weight", ones(N_EMBD))
        w.add_tensor(f"{b}.ffn_norm.bias", zeros(N_EMBD))
        w.add_tensor(f"{b}.ffn_up.weight", rand(N_FF, N_EMBD))
        w.add_tensor(f"{b}.ffn_up.bias", zeros(N_FF))
        w.add_tensor(f"{b}.ffn_down.weight", rand(N_EMBD, N_FF))
        w.add_tensor(f"{b}.ffn_down.bias", zeros(N_EMBD))
    w.add_tensor("output_norm.weight", ones(N_EMBD))
    w.add_tensor("output_norm.bias", zeros(N_EMBD))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tmp.rename(out)
    print(
        f"make_model.py: wrote {out} ({RECIPE}: gpt2, n_embd {N_EMBD}, {N_LAYER} blocks, vocab "
        f"{n_vocab}, {out.stat().st_size / 1e6:.1f} MB) in {time.monotonic() - t0:.1f}s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
