"""Reference embeddings for the real-model parity tests and benchmarks.

onnxruntime runs the ONNX export that `make model` imports and Hugging Face's
tokenizers reads its tokenizer.json, truncated at 256 word pieces without
padding, as sentence-transformers does for all-MiniLM-L6-v2; vectors are
mean-pooled over the tokens and L2-normalised.

  python ort_ref.py vectors MODEL.onnx TOKENIZER.json < texts.json > out.json
      out: {"ids": [[...], ...], "vectors": [[...], ...]}, one per text
  [ORT_THREADS=N] python ort_ref.py bench MODEL.onnx TOKENIZER.json < texts.json
      throughput, CPU time and latency on this machine, as JSON
"""
import json
import os
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

MAX_TOKENS = 256


def load(model, tokenizer, threads=0):
    tok = Tokenizer.from_file(tokenizer)
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS)
    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    return tok, sess


def embed(sess, rows):
    """rows: lists of ids; padded into one batch, pooled over the mask."""
    T = max(len(r) for r in rows)
    ids = np.zeros((len(rows), T), dtype=np.int64)
    mask = np.zeros((len(rows), T), dtype=np.int64)
    for b, r in enumerate(rows):
        ids[b, : len(r)] = r
        mask[b, : len(r)] = 1
    h = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    m = mask[:, :, None].astype(np.float64)
    v = (h.astype(np.float64) * m).sum(1) / m.sum(1)
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return v.astype(np.float32)


def main():
    mode, model, tokenizer = sys.argv[1:4]
    texts = json.load(sys.stdin)
    threads = int(os.environ.get("ORT_THREADS", "0"))
    tok, sess = load(model, tokenizer, threads)
    rows = [e.ids for e in tok.encode_batch(texts)]
    if mode == "vectors":
        vecs = [embed(sess, [r])[0].tolist() for r in rows]
        json.dump({"ids": rows, "vectors": vecs}, sys.stdout)
        return
    if mode != "bench":
        sys.exit("mode is vectors or bench")
    short = ["tell me about arduino circuits", "that caching trick", "flight to Boston",
             "what did we decide about bbolt", "materialized views", "arduino LED resistor",
             "who owns the planes topic", "deadline next week"]
    short_ids = [e.ids for e in tok.encode_batch(short)]
    for i in range(5):
        embed(sess, [short_ids[i % len(short_ids)]])
    lat = []
    c0 = time.process_time()
    for i in range(100):
        t0 = time.perf_counter()
        embed(sess, [tok.encode(short[i % len(short)]).ids])
        lat.append((time.perf_counter() - t0) * 1e3)
    cpu_q = (time.process_time() - c0) * 1e3 / 100
    lat.sort()
    res = {"runtime": "onnxruntime " + ort.__version__, "threads": threads or "default (all cores)",
           "short_query_median_ms": lat[50], "short_query_cpu_ms": cpu_q, "sentences": len(texts),
           "mean_tokens": sum(map(len, rows)) / len(rows)}
    by_len = sorted(rows, key=len)
    for label, lst, bs in [("batch1", rows, 1), ("batch32_sorted", by_len, 32)]:
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(0, len(lst), bs):
            embed(sess, lst[i : i + bs])
        res[label + "_sentences_per_s"] = len(lst) / (time.perf_counter() - t0)
        res[label + "_cpu_ms_per_sentence"] = (time.process_time() - c0) * 1e3 / len(lst)
    json.dump(res, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
