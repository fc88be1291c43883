// Package embed turns text into sentence vectors with a BERT sentence encoder
// such as sentence-transformers/all-MiniLM-L6-v2, in pure Go and offline.
//
// It has three parts:
//
//   - Tokenizer: a Hugging Face-exact BERT tokenizer (BertNormalizer,
//     BertPreTokenizer, WordPiece) read from vocab.txt and tokenizer_config.json,
//     truncating at 256 word pieces as sentence-transformers does.
//   - Model: the encoder. Weights load from a Hugging Face layout directory
//     (config.json, vocab.txt, tokenizer_config.json and model.safetensors or
//     pytorch_model.bin, the latter read with cybertron's PyTorch reader) and are converted once into a flat file,
//     model.vcmcp.bin, next to them (written atomically) so later loads are fast.
//     The forward pass is this package's own: it follows the model's config
//     exactly (erf GELU, LayerNorm eps 1e-12, where cybertron hard-codes tanh
//     GELU and eps 1e-5), runs every sequence of a batch through one set of
//     matrix products without padding, and uses AVX-512 or AVX2/FMA kernels
//     where the CPU has them (pure Go elsewhere). Big batches run one pass per
//     core; a single query splits its matrix products across the cores.
//     Vectors are mean-pooled over the tokens and L2-normalised; a content-hash
//     LRU cache skips texts already seen, and blank texts get no vector.
//   - Lazy: loads a Model in the background so that a server can start at once
//     and report why semantic features are off until the model is ready.
//
// Pull downloads a model from the Hugging Face hub (or a mirror named by
// HF_ENDPOINT) with size and checksum verification; it is only ever called by
// an explicit command, never while serving.
package embed
