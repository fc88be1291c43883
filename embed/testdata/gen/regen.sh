#!/bin/sh
# Regenerates embed/testdata from scratch: the tiny test model, the tokenizer
# goldens and the vector goldens. Needs Debian's python3-torch
# (apt-get install python3-torch) and Node.js with npm; CI needs neither.
#
#   sh embed/testdata/gen/regen.sh [path/to/all-MiniLM-L6-v2]
#
# The vocabulary and tokenizer files come from the real model's directory
# (default: ../shared/models/all-MiniLM-L6-v2 next to the repository).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
testdata=$(dirname "$here")
vocab=${1:-$(cd "$testdata/../../.." && pwd)/shared/models/all-MiniLM-L6-v2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 "$here/make_model.py" --out "$work/tiny" --vocab-dir "$vocab" --onnx
python3 "$here/sentences.py" > "$work/sentences.json"
python3 "$here/random_strings.py" > "$work/random.json"

cp "$here/ref.mjs" "$here/package.json" "$work/"
(cd "$work" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund >/dev/null)
(cd "$work" && node ref.mjs tokens tiny sentences.json) > "$testdata/tokenizer_golden.json"
(cd "$work" && node ref.mjs tokens tiny random.json) > "$testdata/tokenizer_random_golden.json"
(cd "$work" && node ref.mjs vectors tiny sentences.json) > "$testdata/vectors_golden.json"

mkdir -p "$testdata/tiny"
for f in config.json vocab.txt tokenizer_config.json pytorch_model.bin; do
  cp "$work/tiny/$f" "$testdata/tiny/$f"
done
echo "regenerated $testdata"
