#!/usr/bin/env bash
# Server mode: a vLLM server generates on the last visible GPU, training runs on the others.
#   scripts/launch_server.sh [accelerate-config] [train.py config] [extra train.py args...]
# With N GPUs, N-1 train: per_device_train_batch_size x (N-1) x gradient_accumulation_steps must stay divisible
# by num_generations (e.g. 7 training GPUs: choose num_generations 7 or 14 as open-r1 does). train.py checks the
# rule through GRPOConfig and refuses with one line if it does not hold.
# GPUs: those in CUDA_VISIBLE_DEVICES when set, else all that nvidia-smi lists; GPUS=N uses the first N.
# VLLM_PORT (8000) is the server's port; training starts once its /health answers, within VLLM_WAIT_S (900) seconds.
set -euo pipefail
ACCEL=${1:-configs/accelerate/zero3.yaml}
CONFIG=${2:-configs/8x80gb.yaml}
shift $(( $# < 2 ? $# : 2 ))
PORT=${VLLM_PORT:-8000}
WAIT_S=${VLLM_WAIT_S:-900}
PYTHON=${PYTHON:-python}
source "$(dirname "$0")/_gpus.sh"
visible_gpu_ids
if (( GPU_COUNT < 2 )); then
  echo "error: server mode needs at least 2 GPUs (1 for vLLM, 1+ to train); $GPU_COUNT visible: use scripts/launch_colocate.sh" >&2
  exit 1
fi
TRAIN_GPUS=$((GPU_COUNT - 1))
SERVER_GPU=${GPU_IDS[TRAIN_GPUS]}
TRAIN_IDS=("${GPU_IDS[@]:0:TRAIN_GPUS}")

# The model, and the longest prompt + completion vLLM must hold (vllm_max_model_length), resolved as train.py
# resolves them: the config, then the command line's overrides (a config without a model: one error line).
TRAIN_ARGS=(--config "$CONFIG" --num_processes "$TRAIN_GPUS" --use_vllm true --vllm_mode server
            --vllm_server_port "$PORT" "$@")
RESOLVED=$("$PYTHON" -m {{ cookiecutter.package_name }}.preflight.resolved model_name_or_path 'vllm_max_model_length?' \
  -- "${TRAIN_ARGS[@]}") || exit 1
IFS=$'\t' read -r MODEL MAX_LEN <<< "$RESOLVED"
SERVE_ARGS=(--host 0.0.0.0 --port "$PORT" --weight-transfer-config '{"backend": "nccl"}'
            --logprobs-mode processed_logprobs --max-logprobs -1)
[[ "$MAX_LEN" != "-" ]] && SERVE_ARGS+=(--max-model-len "$MAX_LEN")

# vLLM's own server with the development endpoints TRL uses for weight sync (what `trl vllm-serve` now runs).
CUDA_VISIBLE_DEVICES=$SERVER_GPU VLLM_SERVER_DEV_MODE=1 vllm serve "$MODEL" "${SERVE_ARGS[@]}" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT

echo "waiting for the vLLM server on GPU $SERVER_GPU (http://127.0.0.1:$PORT/health, up to ${WAIT_S}s)" >&2
DEADLINE=$((SECONDS + WAIT_S))
until "$PYTHON" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)" \
    "http://127.0.0.1:$PORT/health" 2> /dev/null; do
  if ! kill -0 "$SERVER" 2> /dev/null; then
    wait "$SERVER" && status=0 || status=$?
    echo "error: the vLLM server exited (status $status) before answering on port $PORT; see its output above" >&2
    exit 1
  fi
  if (( SECONDS >= DEADLINE )); then
    echo "error: the vLLM server did not answer http://127.0.0.1:$PORT/health within ${WAIT_S}s (raise VLLM_WAIT_S, or see its output above)" >&2
    exit 1
  fi
  sleep 2
done

CUDA_VISIBLE_DEVICES=$(IFS=,; echo "${TRAIN_IDS[*]}") accelerate launch --config_file "$ACCEL" \
  --num_processes "$TRAIN_GPUS" train.py "${TRAIN_ARGS[@]}"
