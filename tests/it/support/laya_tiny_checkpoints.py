"""Writes tiny random-weight checkpoints in laya 0.4.15's on-disk layout, so the real laya-serve
runs offline in the tests (tests/it/real_laya.rs). Their answers mean nothing; the server's request
validation, answer shapes, limits and the number of requests a decision takes are the real ones.

Run by scripts/test with the laya venv's python, HF_HUB_OFFLINE=1. Usage:
    python laya_tiny_checkpoints.py OUTDIR
Writes OUTDIR/<name>/ for english, multilingual and typed-decisions, each with:
    tokenizer/               a character-level WordPiece tokenizer (every word splits into letters)
    encoder/config.json      a one-layer ModernBERT, hidden size 32
    rl_agent_config.json     what laya's loader requires (encoder, head_layers, act_costs, ...)
    model.safetensors        laya.common.DecisionModel's weights, seeded, so every build is the same
"""

import json
import os
import string
import sys

import torch
from laya.common import DecisionModel
from safetensors.torch import save_file
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
from transformers import AutoModel, ModernBertConfig, PreTrainedTokenizerFast

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# Each checkpoint's context window as laya-serve 0.4.15 documents it.
WINDOWS = {"english": 512, "multilingual": 1024, "typed-decisions": 1024}


def tokenizer():
    # A fixed vocabulary instead of a trained one: the characters, alone and as word pieces.
    chars = string.ascii_lowercase + string.digits + string.punctuation
    vocab = {token: i for i, token in enumerate(SPECIALS + list(chars) + ["##" + c for c in chars])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=200))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]"), vocab


def main(out):
    torch.manual_seed(18)
    fast, vocab = tokenizer()
    config = ModernBertConfig(
        vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, max_position_embeddings=8192, pad_token_id=vocab["[PAD]"],
        cls_token_id=vocab["[CLS]"], sep_token_id=vocab["[SEP]"], bos_token_id=vocab["[CLS]"],
        eos_token_id=vocab["[SEP]"])
    model = DecisionModel(AutoModel.from_config(config, attn_implementation="sdpa"), head_layers=1, n_act=2).eval()
    with torch.no_grad():
        # Spread the scores a little, so answers differ from question to question.
        for name, p in model.named_parameters():
            if name.startswith("scorer."):
                p.mul_(3.0)
    weights = {k: v.contiguous() for k, v in model.state_dict().items()}
    for name, window in WINDOWS.items():
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        fast.save_pretrained(os.path.join(d, "tokenizer"))
        config.save_pretrained(os.path.join(d, "encoder"))
        with open(os.path.join(d, "rl_agent_config.json"), "w") as f:
            json.dump({"encoder": "tiny-random-modernbert", "head_layers": 1, "act_costs": {"escalate": 1.0},
                       "max_len": window, "head_max_len": 192, "temperature": [1.0, 1.0, 1.0]}, f, indent=2)
        save_file(weights, os.path.join(d, "model.safetensors"))
    print("wrote", ", ".join(WINDOWS), "in", out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: laya_tiny_checkpoints.py OUTDIR")
    main(sys.argv[1])
