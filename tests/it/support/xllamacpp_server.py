"""Writes a tiny GGUF, and runs llama.cpp's server (the xllamacpp wheel) on 127.0.0.1 on it.

    python xllamacpp_server.py DIR plain|decision         # write DIR/<kind>.gguf and serve it
    python xllamacpp_server.py DIR write-plain|write-decision   # only write it

plain.gguf is a ModernBERT-shaped encoder with random weights and a 57-token WordPiece vocabulary,
and no decision metadata: a plain model, which the server's /v1/systemone answers with 501.
decision.gguf is the same encoder made a decision model the way llama.cpp reads one (its
tools/server/server-decision.cpp): `modern-bert.decision.type` = "laya" (the type of Julia-1 and
Laya), `modern-bert.decision.max_head_tokens`, and a "systemone" prompt template
(`tokenizer.chat_template.systemone`) that lays a question out as that type must be:
[CLS] question [SEP] ([MASK] option)* [SEP] state [SEP]. Its answers are meaningless (random
weights), but they come through the real server and the real API. When serving, it prints the
server's address on one line, then serves until its stdin closes.
"""

import sys
from pathlib import Path

import gguf
import numpy as np

ARCH = "modern-bert"
HIDDEN, LAYERS, FFN, HEADS = 64, 2, 128, 4
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


# The laya layout: the options' markers are the mask token, each after the question's separator.
TEMPLATE = (
    "[CLS]{{ instructions }}[SEP]"
    "{% for o in options %}[MASK]{{ o.key }}{% if o.description %} {{ o.description }}{% endif %}{% endfor %}[SEP]"
    "{% if state is string %}{{ state }}{% else %}{{ state | tojson }}{% endif %}[SEP]"
)


def write_model(path: Path, decision: bool) -> None:
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens = SPECIAL + letters + ["##" + c for c in letters]
    w = gguf.GGUFWriter(str(path), ARCH)
    if decision:
        w.add_string(f"{ARCH}.decision.type", "laya")
        w.add_uint32(f"{ARCH}.decision.max_head_tokens", 64)
        w.add_string("tokenizer.chat_template.systemone", TEMPLATE)
    w.add_context_length(512)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_block_count(LAYERS)
    w.add_head_count(HEADS)
    w.add_layer_norm_eps(1e-5)
    w.add_rope_freq_base(160000.0)
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.CLS)
    w.add_uint32(f"{ARCH}.attention.sliding_window", 128)
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL] * len(SPECIAL) + [gguf.TokenType.NORMAL] * (len(tokens) - len(SPECIAL)))
    for key, token in [("padding", 0), ("unknown", 1), ("cls", 2), ("seperator", 3), ("mask", 4)]:
        w.add_uint32(f"tokenizer.ggml.{key}_token_id", token)
    rng = np.random.default_rng(7)

    def weights(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    ones = np.ones(HIDDEN, np.float32)
    w.add_tensor("token_embd.weight", weights(len(tokens), HIDDEN))
    w.add_tensor("token_embd_norm.weight", ones)
    for i in range(LAYERS):
        if i > 0:  # ModernBERT's first layer has no attention norm
            w.add_tensor(f"blk.{i}.attn_norm.weight", ones)
        w.add_tensor(f"blk.{i}.attn_qkv.weight", weights(3 * HIDDEN, HIDDEN))
        w.add_tensor(f"blk.{i}.attn_output.weight", weights(HIDDEN, HIDDEN))
        w.add_tensor(f"blk.{i}.ffn_up.weight", weights(2 * FFN, HIDDEN))
        w.add_tensor(f"blk.{i}.ffn_down.weight", weights(HIDDEN, FFN))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", ones)
    w.add_tensor("output_norm.weight", ones)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main() -> None:
    folder, kind = Path(sys.argv[1]), sys.argv[2]
    write_only = kind.startswith("write-")
    kind = kind.removeprefix("write-")
    if kind not in ("plain", "decision"):
        sys.exit(f"unknown model kind {kind!r}")
    model = folder / f"{kind}.gguf"
    write_model(model, kind == "decision")
    if write_only:
        return
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.n_ctx = 512
    params.n_batch = 512
    params.n_ubatch = 512
    params.cpuparams.n_threads = 1
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    server = xllamacpp.Server(params)
    print(server.listening_address, flush=True)
    sys.stdin.read()
    del server


if __name__ == "__main__":
    main()
