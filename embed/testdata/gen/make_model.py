#!/usr/bin/env python3
"""Build a BERT sentence encoder with random weights in the Hugging Face layout.

Reproducible: the weights come from torch's generator seeded with --seed.
The vocabulary and tokenizer files are copied from --vocab-dir (the real
all-MiniLM-L6-v2 files), so token ids are the real model's.

Writes config.json, vocab.txt, tokenizer_config.json, pytorch_model.bin and,
with --onnx, tokenizer.json and onnx/model.onnx for the reference runtime
(transformers.js on onnxruntime-node). With --golden FILE it also writes the
torch forward pass's mean-pooled, L2-normalised vectors for the sentences in
FILE (a JSON list) to DIR/torch_vectors.json, a cross-check on the ONNX run.

The forward pass below follows transformers' BertModel: absolute position
embeddings, token type 0, post-LayerNorm blocks, exact (erf) GELU and the
config's LayerNorm eps.
"""
import argparse
import json
import math
import os
import shutil

import torch
import torch.nn.functional as F


def make_state(cfg, seed, scale):
    g = torch.Generator().manual_seed(seed)
    H, FF, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]

    def rnd(*shape, std):
        return (torch.randn(*shape, generator=g) * std).float()

    sd = {}
    sd["embeddings.position_ids"] = torch.arange(cfg["max_position_embeddings"]).unsqueeze(0)
    sd["embeddings.word_embeddings.weight"] = rnd(V, H, std=1.0)
    sd["embeddings.position_embeddings.weight"] = rnd(cfg["max_position_embeddings"], H, std=0.5)
    sd["embeddings.token_type_embeddings.weight"] = rnd(cfg["type_vocab_size"], H, std=0.5)
    sd["embeddings.LayerNorm.weight"] = 1 + rnd(H, std=0.1)
    sd["embeddings.LayerNorm.bias"] = rnd(H, std=0.1)
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            sd[p + f"attention.self.{n}.weight"] = rnd(H, H, std=scale / math.sqrt(H))
            sd[p + f"attention.self.{n}.bias"] = rnd(H, std=0.1)
        sd[p + "attention.output.dense.weight"] = rnd(H, H, std=scale / math.sqrt(H))
        sd[p + "attention.output.dense.bias"] = rnd(H, std=0.1)
        sd[p + "attention.output.LayerNorm.weight"] = 1 + rnd(H, std=0.1)
        sd[p + "attention.output.LayerNorm.bias"] = rnd(H, std=0.1)
        sd[p + "intermediate.dense.weight"] = rnd(FF, H, std=scale / math.sqrt(H))
        sd[p + "intermediate.dense.bias"] = rnd(FF, std=0.1)
        sd[p + "output.dense.weight"] = rnd(H, FF, std=scale / math.sqrt(FF))
        sd[p + "output.dense.bias"] = rnd(H, std=0.1)
        sd[p + "output.LayerNorm.weight"] = 1 + rnd(H, std=0.1)
        sd[p + "output.LayerNorm.bias"] = rnd(H, std=0.1)
    sd["pooler.dense.weight"] = rnd(H, H, std=scale / math.sqrt(H))
    sd["pooler.dense.bias"] = rnd(H, std=0.1)
    return sd


class Bert(torch.nn.Module):
    def __init__(self, cfg, sd):
        super().__init__()
        self.cfg = cfg
        self.p = torch.nn.ParameterDict({k.replace(".", "__"): torch.nn.Parameter(v, requires_grad=False)
                                         for k, v in sd.items() if v.dtype == torch.float32})

    def w(self, name):
        return self.p[name.replace(".", "__")]

    def ln(self, x, name):
        return F.layer_norm(x, (self.cfg["hidden_size"],), self.w(name + ".weight"), self.w(name + ".bias"),
                            eps=self.cfg["layer_norm_eps"])

    def lin(self, x, name):
        return F.linear(x, self.w(name + ".weight"), self.w(name + ".bias"))

    def forward(self, input_ids, attention_mask, token_type_ids):
        cfg = self.cfg
        B, T = input_ids.shape
        pos = torch.arange(T).unsqueeze(0).expand(B, T)
        x = (F.embedding(input_ids, self.w("embeddings.word_embeddings.weight"))
             + F.embedding(pos, self.w("embeddings.position_embeddings.weight"))
             + F.embedding(token_type_ids, self.w("embeddings.token_type_embeddings.weight")))
        x = self.ln(x, "embeddings.LayerNorm")
        nh = cfg["num_attention_heads"]
        hd = cfg["hidden_size"] // nh
        ext = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for i in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}."

            def heads(t):
                return t.view(B, T, nh, hd).permute(0, 2, 1, 3)
            q = heads(self.lin(x, p + "attention.self.query"))
            k = heads(self.lin(x, p + "attention.self.key"))
            v = heads(self.lin(x, p + "attention.self.value"))
            s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + ext
            a = torch.matmul(torch.softmax(s, dim=-1), v).permute(0, 2, 1, 3).reshape(B, T, nh * hd)
            x = self.ln(self.lin(a, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            h = F.gelu(self.lin(x, p + "intermediate.dense"))
            x = self.ln(self.lin(h, p + "output.dense") + x, p + "output.LayerNorm")
        return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab-dir", required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=64)
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--scale", type=float, default=1.5, help="std multiplier of the dense layers")
    ap.add_argument("--onnx", action="store_true")
    ap.add_argument("--golden", help="JSON list of sentences for torch_vectors.json")
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    cfg = json.load(open(os.path.join(args.vocab_dir, "config.json")))
    cfg.update({"hidden_size": args.hidden, "num_hidden_layers": args.layers,
                "num_attention_heads": args.heads, "intermediate_size": args.ffn,
                "_name_or_path": "vc-mcp random test BERT (embed/testdata/gen/make_model.py)"})
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    files = ["vocab.txt", "tokenizer_config.json"] + (["tokenizer.json"] if args.onnx else [])
    for name in files:
        shutil.copyfile(os.path.join(args.vocab_dir, name), os.path.join(args.out, name))

    sd = make_state(cfg, args.seed, args.scale)
    torch.save(sd, os.path.join(args.out, "pytorch_model.bin"))

    model = Bert(cfg, sd).eval()
    if args.onnx:
        os.makedirs(os.path.join(args.out, "onnx"), exist_ok=True)
        ids = torch.tensor([[101, 7592, 2088, 102]])
        torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)),
                          os.path.join(args.out, "onnx", "model.onnx"),
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state"],
                          dynamic_axes={n: {0: "batch", 1: "seq"} for n in
                                        ["input_ids", "attention_mask", "token_type_ids", "last_hidden_state"]},
                          opset_version=14)
    if args.golden:
        import subprocess  # noqa: F401  (ids come from the JSON written by ref.mjs)
        data = json.load(open(args.golden))
        out = []
        with torch.no_grad():
            for item in data:
                ids = torch.tensor([item["ids"]])
                h = model(ids, torch.ones_like(ids), torch.zeros_like(ids))[0]
                v = h.mean(dim=0)
                v = v / v.norm()
                out.append(v.tolist())
        with open(os.path.join(args.out, "torch_vectors.json"), "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
