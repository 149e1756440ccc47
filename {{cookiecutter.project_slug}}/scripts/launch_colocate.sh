#!/usr/bin/env bash
# Train on every GPU of this node, vLLM colocated in each training process (use_vllm: true, vllm_mode: colocate).
#   scripts/launch_colocate.sh [accelerate-config] [train.py config] [extra train.py args...]
# e.g. scripts/launch_colocate.sh configs/accelerate/zero3.yaml configs/8x80gb.yaml
set -euo pipefail
ACCEL=${1:-configs/accelerate/zero3.yaml}
CONFIG=${2:-configs/8x80gb.yaml}
shift $(( $# < 2 ? $# : 2 ))
GPUS=${GPUS:-$(nvidia-smi -L | wc -l)}
exec accelerate launch --config_file "$ACCEL" --num_processes "$GPUS" \
  train.py --config "$CONFIG" --num_processes "$GPUS" --use_vllm true --vllm_mode colocate "$@"
