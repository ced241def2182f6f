#!/usr/bin/env python3
"""Writes the tiny random-weight Llama model that scripts/engines/vllm/start.sh serves.

    VENV/bin/python scripts/engines/vllm/make_model.py OUT_DIR

No model hub is needed: a byte-level BPE tokenizer (vocabulary 8000, `<|endoftext|>` as
bos/eos/pad) is trained with the `tokenizers` library on local text (the machine's
/usr/share/common-licenses/* and the interpreter's standard-library .py files, in sorted order),
saved as a PreTrainedTokenizerFast with a chat template; then a transformers LlamaConfig (hidden
128, intermediate 256, 2 layers, 4 heads, 4096 positions, tied embeddings, bf16, vocab_size = the
tokenizer's) gets random weights from torch.manual_seed(0) and is saved with save_pretrained.
Run with vLLM's venv (it has torch, transformers and tokenizers). 8-13 s.

Deterministic for a given machine image (same files, same library versions). OUT_DIR is written
whole or not at all (a temporary directory renamed at the end); an OUT_DIR that already holds
this recipe's stamp is left alone. Bump RECIPE when anything here changes: start.sh keys the
cache directory by it.
"""
import os
import shutil
import sys
import sysconfig
import time
from pathlib import Path

RECIPE = "tiny-llama-r1"
VOCAB = 8000
EOT = "<|endoftext|>"
# Roles as plain-text markers, the generation prompt opens the assistant turn. Content that is a
# list of parts (OpenAI/Responses/Anthropic inputs) is flattened by vLLM before rendering
# (chat-template content format "string").
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}" + EOT + "\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def corpus_files():
    files = sorted(p for p in Path("/usr/share/common-licenses").glob("*") if p.is_file())
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files += sorted(p for p in stdlib.glob("*.py") if p.is_file())
    return [str(p) for p in files]


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    out = Path(sys.argv[1])
    stamp = out / ".ttftbench-recipe"
    if stamp.is_file() and stamp.read_text().strip() == RECIPE:
        print(f"make_model.py: {out} already holds {RECIPE}", file=sys.stderr)
        return 0

    t0 = time.monotonic()
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tmp = out.parent / f".{out.name}.tmp.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)

    files = corpus_files()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train(files, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=EOT, eos_token=EOT, pad_token=EOT, unk_token=None,
        model_max_length=4096,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(tmp)

    torch.manual_seed(0)
    eot_id = tok.token_to_id(EOT)
    config = LlamaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=eot_id,
        eos_token_id=eot_id,
        pad_token_id=eot_id,
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(tmp)
    params = sum(p.numel() for p in model.parameters())
    (tmp / ".ttftbench-recipe").write_text(RECIPE + "\n")

    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    print(
        f"make_model.py: wrote {out} ({RECIPE}: {params / 1e6:.2f} M parameters, vocab "
        f"{tok.get_vocab_size()}, trained on {len(files)} files) in {time.monotonic() - t0:.1f}s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
