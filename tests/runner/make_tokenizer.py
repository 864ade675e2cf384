"""Build a tiny fast tokenizer laid out as a Hugging Face hub cache entry `local/stubtok`.

Run with the AIPerf virtualenv's Python (it has `tokenizers` and `transformers`):
    python make_tokenizer.py HF_HOME
"""

import sys
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

home = Path(sys.argv[1])
words = ["<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(200)] + ["the", "a", "of", "tok"]
tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
rev = "0" * 40
snap = home / "hub" / "models--local--stubtok" / "snapshots" / rev
snap.mkdir(parents=True, exist_ok=True)
fast.save_pretrained(str(snap))
(snap / "config.json").write_text('{"model_type": "gpt2"}\n')
refs = home / "hub" / "models--local--stubtok" / "refs"
refs.mkdir(parents=True, exist_ok=True)
(refs / "main").write_text(rev)
print(snap)
