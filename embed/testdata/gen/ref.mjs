// Reference outputs from transformers.js on onnxruntime-node, local files only.
//
//   node ref.mjs tokens  MODEL_DIR SENTENCES.json > tokenizer_golden.json
//   node ref.mjs vectors MODEL_DIR SENTENCES.json > vectors_golden.json
//   node ref.mjs bench   MODEL_DIR SENTENCES.json   (throughput and latency on stderr/stdout)
//
// MODEL_DIR holds config.json, tokenizer.json, tokenizer_config.json and
// onnx/model.onnx (make_model.py --onnx writes them). Token ids are truncated
// at 256 word pieces and vectors are mean-pooled over the attention mask and
// L2-normalised, as sentence-transformers does for all-MiniLM-L6-v2.
import fs from "node:fs";
import path from "node:path";
import { AutoTokenizer, AutoModel, Tensor, env } from "@huggingface/transformers";

env.allowRemoteModels = false;
env.allowLocalModels = true;

const [mode, modelDir, sentencesFile] = process.argv.slice(2);
const dir = path.resolve(modelDir);
env.localModelPath = path.dirname(dir) + "/";
const name = path.basename(dir);
const sentences = JSON.parse(fs.readFileSync(sentencesFile, "utf8"));
const MAX = 256;

const tokenizer = await AutoTokenizer.from_pretrained(name, { local_files_only: true });

// Two places where transformers.js 4.3 departs from Hugging Face's Python
// and Rust tokenizers, corrected here so the goldens are HF-exact:
// 1. BertNormalizer walks UTF-16 code units, so CJK ideographs outside the
//    BMP (U+20000..) are not spaced out; walk code points instead.
// 2. Truncation cuts the ids after [SEP] was added, dropping it; HF truncates
//    the word pieces to max_length - 2 and then adds [CLS] ... [SEP].
const normalizer = tokenizer._tokenizer.normalizer;
const isCJK = (cp) => (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf) ||
  (cp >= 0x20000 && cp <= 0x2a6df) || (cp >= 0x2a700 && cp <= 0x2b73f) || (cp >= 0x2b740 && cp <= 0x2b81f) ||
  (cp >= 0x2b820 && cp <= 0x2ceaf) || (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0x2f800 && cp <= 0x2fa1f);
normalizer.tokenize_chinese_chars = (text) =>
  Array.from(text, (ch) => (isCJK(ch.codePointAt(0)) ? ` ${ch} ` : ch)).join("");

function ids(text) {
  const all = Array.from(tokenizer(text).input_ids.data, Number);
  return all.length <= MAX ? all : all.slice(0, MAX - 1).concat([all[all.length - 1]]);
}

function encode(texts) {
  const rows = texts.map(ids);
  const T = Math.max(...rows.map((r) => r.length));
  const idv = new BigInt64Array(rows.length * T);
  const mask = new BigInt64Array(rows.length * T);
  rows.forEach((r, b) => r.forEach((id, t) => { idv[b * T + t] = BigInt(id); mask[b * T + t] = 1n; }));
  const dims = [rows.length, T];
  return {
    input_ids: new Tensor("int64", idv, dims),
    attention_mask: new Tensor("int64", mask, dims),
    token_type_ids: new Tensor("int64", new BigInt64Array(rows.length * T), dims),
  };
}

async function embed(model, texts) {
  const enc = encode(texts);
  const out = await model(enc);
  const h = out.last_hidden_state;
  const [B, T, H] = h.dims;
  const data = h.data;
  const mask = enc.attention_mask.data;
  const vecs = [];
  for (let b = 0; b < B; b++) {
    const v = new Float64Array(H);
    let n = 0;
    for (let t = 0; t < T; t++) {
      if (Number(mask[b * T + t]) === 0) continue;
      n++;
      for (let k = 0; k < H; k++) v[k] += data[(b * T + t) * H + k];
    }
    let norm = 0;
    for (let k = 0; k < H; k++) { v[k] /= n; norm += v[k] * v[k]; }
    norm = Math.sqrt(norm);
    vecs.push(Array.from(v, (x) => Math.fround(x / norm)));
  }
  return vecs;
}

if (mode === "tokens") {
  const rows = sentences.map((text) => ({ text, ids: ids(text) }));
  process.stdout.write(JSON.stringify(rows, null, 0).replace(/\},\{/g, "},\n{") + "\n");
} else if (mode === "vectors" || mode === "bench") {
  const model = await AutoModel.from_pretrained(name, { local_files_only: true, dtype: "fp32" });
  if (mode === "vectors") {
    const rows = [];
    for (const text of sentences) {
      const [vector] = await embed(model, [text]);
      rows.push({ text, ids: ids(text), vector });
    }
    process.stdout.write(JSON.stringify(rows) + "\n");
  } else {
    const short = ["tell me about arduino circuits", "that caching trick", "flight to Boston",
      "what did we decide about bbolt", "materialized views", "arduino LED resistor",
      "who owns the planes topic", "deadline next week"];
    for (let i = 0; i < 5; i++) await embed(model, [short[i % short.length]]);
    const lat = [];
    for (let i = 0; i < 100; i++) {
      const t0 = process.hrtime.bigint();
      await embed(model, [short[i % short.length]]);
      lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    lat.sort((a, b) => a - b);
    let toks = 0;
    for (const s of sentences) toks += ids(s).length;
    const res = { short_query_median_ms: lat[50], sentences: sentences.length, mean_tokens: toks / sentences.length };
    // "sorted": batches of similar length, so padding wastes little (the
    // Go side needs no padding and sorts its batches the same way).
    const sorted = [...sentences].sort((a, b) => ids(a).length - ids(b).length);
    for (const [label, list, bs] of [["batch1", sentences, 1], ["batch32", sentences, 32], ["batch32_sorted", sorted, 32]]) {
      const t0 = process.hrtime.bigint();
      const c0 = process.cpuUsage();
      for (let i = 0; i < list.length; i += bs) await embed(model, list.slice(i, i + bs));
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      const c = process.cpuUsage(c0);
      res[`${label}_sentences_per_s`] = list.length / s;
      res[`${label}_cpu_ms_per_sentence`] = (c.user + c.system) / 1000 / list.length;
    }
    console.log(JSON.stringify(res));
  }
} else {
  console.error("usage: node ref.mjs tokens|vectors|bench MODEL_DIR SENTENCES.json");
  process.exit(2);
}
