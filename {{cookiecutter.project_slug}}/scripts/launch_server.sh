#!/usr/bin/env bash
# Server mode: `trl vllm-serve` generates on the last GPU, training runs on the others.
#   scripts/launch_server.sh [accelerate-config] [train.py config] [extra train.py args...]
# With N GPUs, N-1 train: per_device_train_batch_size x (N-1) x gradient_accumulation_steps must stay divisible
# by num_generations (e.g. 7 training GPUs: choose num_generations 7 or 14 as open-r1 does). train.py checks the
# rule through GRPOConfig and refuses with one line if it does not hold.
set -euo pipefail
ACCEL=${1:-configs/accelerate/zero3.yaml}
CONFIG=${2:-configs/8x80gb.yaml}
shift $(( $# < 2 ? $# : 2 ))
GPUS=${GPUS:-$(nvidia-smi -L | wc -l)}
TRAIN_GPUS=$((GPUS - 1))
MODEL=$(python -c "import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))['model_name_or_path'])" "$CONFIG")
CUDA_VISIBLE_DEVICES=$TRAIN_GPUS trl vllm-serve --model "$MODEL" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((TRAIN_GPUS - 1))) accelerate launch --config_file "$ACCEL" \
  --num_processes "$TRAIN_GPUS" train.py --config "$CONFIG" --num_processes "$TRAIN_GPUS" \
  --use_vllm true --vllm_mode server "$@"
