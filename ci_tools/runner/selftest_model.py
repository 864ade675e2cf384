"""The self-test's model: a random-weight Llama and a byte-level BPE tokenizer, built where the engine runs.

Run as a script by the engine's own Python (the host's engine environment, or `python3` in the
recipe's image), never imported by ci-tools: torch, transformers and tokenizers are the engine's
dependencies, not ci-tools'. It needs no network: the tokenizer is trained on the Python standard
library's own source files, the weights are random (seed 0). The engine serves it like any Llama
(`LlamaForCausalLM`, every engine knows it); its answers are noise, the GPU work is real.

    python3 selftest_model.py OUT_DIR [--size 0.5b|tiny]

Prints one JSON line: parameters, vocabulary, seconds, device.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import sysconfig
import time

SIZES = {
    # ~0.5 B parameters in bf16 (1 GB): enough to load an H100 for a few minutes of benchmark
    "0.5b": {"hidden_size": 1536, "intermediate_size": 4096, "num_hidden_layers": 16, "num_attention_heads": 12,
             "num_key_value_heads": 4},
    # a few MB: the flow on a host without a GPU (tests), nothing measured
    "tiny": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2},
}
VOCAB = 32000
CORPUS_BYTES = 3 * 2**20
SPECIAL = ["<|bos|>", "<|eos|>", "<|system|>", "<|user|>", "<|assistant|>"]
# a chat template every OpenAI-style chat request renders through (AIPerf sends text or text parts)
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] if m['content'] is string else "
                 "m['content'] | map(attribute='text') | join('') }}{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def corpus() -> list[str]:
    """About CORPUS_BYTES of the standard library's source, in a fixed order (the same tokenizer every time)."""
    root = sysconfig.get_paths()["stdlib"]
    texts, size = [], 0
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as fh:
                texts.append(fh.read())
            size += len(texts[-1])
            if size >= CORPUS_BYTES:
                break
    return texts


def build(out: str, size: str) -> dict:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    t0 = time.monotonic()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus(), trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIAL,
                                                           show_progress=False,
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|bos|>", eos_token="<|eos|>",
                                   pad_token="<|eos|>")
    fast.chat_template = CHAT_TEMPLATE
    os.makedirs(out, exist_ok=True)
    fast.save_pretrained(out)
    cfg = LlamaConfig(vocab_size=VOCAB, max_position_embeddings=8192, rope_theta=10000.0,
                      bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id, tie_word_embeddings=False,
                      **SIZES[size])
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    params = sum(p.numel() for p in model.parameters())
    model.save_pretrained(out, safe_serialization=True)
    del model
    if device == "cuda":
        torch.cuda.empty_cache()   # the engine gets the GPU right after
    return {"parameters": params, "vocabulary": len(fast), "seconds": round(time.monotonic() - t0, 1),
            "device": device, "size": size, "torch": torch.__version__}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--size", choices=sorted(SIZES), default="0.5b")
    args = ap.parse_args()
    try:
        info = build(args.out, args.size)
    except ImportError as exc:
        print(f"this Python ({sys.executable}) cannot build the model: {exc}; run the self-test with the engine's "
              "own Python (--engine-python), which has torch, transformers and tokenizers", file=sys.stderr)
        return 3
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
