#!/usr/bin/env python3
"""A reference forward pass of Hugging Face's AlbertForMaskedLM, for tst_huggingfaceexport.

It follows the formulas of transformers' modeling_albert.py (AlbertEmbeddings, AlbertTransformer
with its layer groups, AlbertLayer, AlbertAttention, AlbertMLMHead) and reads an exported folder
the way `from_pretrained` would: config.json for the shape, model.safetensors under transformers'
parameter names, loaded strictly (every parameter present, nothing unexpected, shapes as the
config says). It needs only python3 and torch: the safetensors file is parsed here with json and
struct, from the format's specification, not with the safetensors package.

Usage: albert_reference.py MODEL_DIR IDS_FILE LOGITS_FILE
  IDS_FILE     one sequence per line, token ids separated by spaces (all lines of one length)
  LOGITS_FILE  written: float32 little-endian, row-major [sequences, tokens, vocab_size]
Computes in float64; no attention mask (every token attends to every token) and token type 0.
Exit status 0 on success, 1 with a message on stderr otherwise.
"""
import json
import math
import struct
import sys
from array import array

import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    if metadata.get("format") != "pt":
        raise ValueError("__metadata__ lacks format=pt, which transformers requires")
    start = 8 + n
    tensors = {}
    for name, spec in header.items():
        if spec["dtype"] != "F32":
            raise ValueError(f"{name}: dtype {spec['dtype']}, expected F32")
        begin, end = spec["data_offsets"]
        raw = bytearray(data[start + begin:start + end])
        flat = torch.frombuffer(raw, dtype=torch.float32) if raw else torch.zeros(0)
        tensors[name] = flat.reshape(spec["shape"]).to(torch.float64)
    return tensors


def expected_shapes(c):
    """AlbertForMaskedLM's state dict (less non-persistent buffers) for config `c`."""
    V, E, H, I, P = c["vocab_size"], c["embedding_size"], c["hidden_size"], c["intermediate_size"], \
        c["max_position_embeddings"]
    shapes = {
        "albert.embeddings.word_embeddings.weight": [V, E],
        "albert.embeddings.position_embeddings.weight": [P, E],
        "albert.embeddings.token_type_embeddings.weight": [c["type_vocab_size"], E],
        "albert.embeddings.LayerNorm.weight": [E], "albert.embeddings.LayerNorm.bias": [E],
        "albert.encoder.embedding_hidden_mapping_in.weight": [H, E],
        "albert.encoder.embedding_hidden_mapping_in.bias": [H],
        "predictions.bias": [V], "predictions.dense.weight": [E, H], "predictions.dense.bias": [E],
        "predictions.LayerNorm.weight": [E], "predictions.LayerNorm.bias": [E],
        "predictions.decoder.weight": [V, E], "predictions.decoder.bias": [V],
    }
    layer = {"attention.query": [H, H], "attention.key": [H, H], "attention.value": [H, H],
             "attention.dense": [H, H], "ffn": [I, H], "ffn_output": [H, I]}
    for g in range(c["num_hidden_groups"]):
        for i in range(c["inner_group_num"]):
            prefix = f"albert.encoder.albert_layer_groups.{g}.albert_layers.{i}."
            for name, shape in layer.items():
                shapes[prefix + name + ".weight"] = shape
                shapes[prefix + name + ".bias"] = [shape[0]]
            for norm in ("attention.LayerNorm", "full_layer_layer_norm"):
                shapes[prefix + norm + ".weight"] = [H]
                shapes[prefix + norm + ".bias"] = [H]
    return shapes


def load_strict(c, tensors):
    shapes = expected_shapes(c)
    missing = sorted(set(shapes) - set(tensors))
    unexpected = sorted(set(tensors) - set(shapes))
    if missing or unexpected:
        raise ValueError(f"missing {missing}, unexpected {unexpected}")
    for name, shape in shapes.items():
        if list(tensors[name].shape) != shape:
            raise ValueError(f"{name}: shape {list(tensors[name].shape)}, config says {shape}")
    # Tied in AlbertForMaskedLM: the decoder is the word embedding matrix, its bias predictions.bias.
    if not torch.equal(tensors["predictions.decoder.weight"], tensors["albert.embeddings.word_embeddings.weight"]):
        raise ValueError("predictions.decoder.weight differs from the tied word embeddings")
    if not torch.equal(tensors["predictions.decoder.bias"], tensors["predictions.bias"]):
        raise ValueError("predictions.decoder.bias differs from the tied predictions.bias")


def activation(name):
    if name == "gelu":
        return lambda x: torch.nn.functional.gelu(x)
    if name == "gelu_new":
        return lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))
    raise ValueError(f"hidden_act {name} is not handled here")


def linear(t, name, x):
    return x @ t[name + ".weight"].T + t[name + ".bias"]


def layer_norm(t, name, x, eps):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], t[name + ".weight"], t[name + ".bias"], eps)


def albert_layer(c, t, prefix, x, act):
    B, T, H = x.shape
    heads = c["num_attention_heads"]
    d = H // heads
    eps = c["layer_norm_eps"]

    def split(y):  # transpose_for_scores
        return y.view(B, T, heads, d).permute(0, 2, 1, 3)

    q = split(linear(t, prefix + "attention.query", x))
    k = split(linear(t, prefix + "attention.key", x))
    v = split(linear(t, prefix + "attention.value", x))
    scores = q @ k.transpose(-1, -2) / math.sqrt(d)
    context = (torch.softmax(scores, dim=-1) @ v).transpose(2, 1).flatten(2)
    attention = layer_norm(t, prefix + "attention.LayerNorm", x + linear(t, prefix + "attention.dense", context), eps)
    ffn = linear(t, prefix + "ffn_output", act(linear(t, prefix + "ffn", attention)))
    return layer_norm(t, prefix + "full_layer_layer_norm", ffn + attention, eps)


def forward(c, t, ids):
    act = activation(c["hidden_act"])
    eps = c["layer_norm_eps"]
    T = ids.shape[1]
    e = t["albert.embeddings.word_embeddings.weight"][ids] \
        + t["albert.embeddings.token_type_embeddings.weight"][0] \
        + t["albert.embeddings.position_embeddings.weight"][torch.arange(T)]
    x = linear(t, "albert.encoder.embedding_hidden_mapping_in", layer_norm(t, "albert.embeddings.LayerNorm", e, eps))
    L, groups, inner = c["num_hidden_layers"], c["num_hidden_groups"], c["inner_group_num"]
    for i in range(L):
        g = int(i / (L / groups))
        for j in range(inner):
            x = albert_layer(c, t, f"albert.encoder.albert_layer_groups.{g}.albert_layers.{j}.", x, act)
    h = layer_norm(t, "predictions.LayerNorm", act(linear(t, "predictions.dense", x)), eps)
    return h @ t["albert.embeddings.word_embeddings.weight"].T + t["predictions.bias"]


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__)
    model_dir, ids_file, out_file = argv[1:]
    with open(f"{model_dir}/config.json", encoding="utf-8") as f:
        c = json.load(f)
    if c.get("model_type") != "albert" or c.get("architectures") != ["AlbertForMaskedLM"]:
        raise ValueError("config.json does not describe an AlbertForMaskedLM")
    tensors = read_safetensors(f"{model_dir}/model.safetensors")
    load_strict(c, tensors)
    with open(ids_file, encoding="utf-8") as f:
        ids = torch.tensor([[int(w) for w in line.split()] for line in f if line.strip()], dtype=torch.long)
    with torch.no_grad():
        logits = forward(c, tensors, ids).to(torch.float32)
    values = array("f", logits.flatten().tolist())
    if sys.byteorder != "little":
        values.byteswap()
    with open(out_file, "wb") as f:
        values.tofile(f)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except Exception as error:  # a message for the test's log, not a traceback
        print(f"albert_reference.py: {error}", file=sys.stderr)
        sys.exit(1)
