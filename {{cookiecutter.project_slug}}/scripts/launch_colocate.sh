#!/usr/bin/env bash
# Train on every visible GPU of this node, vLLM colocated in each training process (use_vllm: true, vllm_mode: colocate).
#   scripts/launch_colocate.sh [accelerate-config] [train.py config] [extra train.py args...]
# e.g. scripts/launch_colocate.sh configs/accelerate/zero3.yaml configs/8x80gb.yaml
# GPUs: those in CUDA_VISIBLE_DEVICES when set, else all that nvidia-smi lists; GPUS=N uses the first N.
set -euo pipefail
ACCEL=${1:-configs/accelerate/zero3.yaml}
CONFIG=${2:-configs/8x80gb.yaml}
shift $(( $# < 2 ? $# : 2 ))
source "$(dirname "$0")/_gpus.sh"
visible_gpu_ids
N=$GPU_COUNT
TRAIN_ARGS=(--config "$CONFIG" --num_processes "$N" --use_vllm true --vllm_mode colocate "$@")
# vLLM's share of each GPU must hold its own copy of the weights and one full-length request, else it never starts:
# checked on the settings as train.py resolves them (the config, then the command line's overrides).
"${PYTHON:-python}" -m {{ cookiecutter.package_name }}.preflight.resolved --colocate -- "${TRAIN_ARGS[@]}" || exit 1
CUDA_VISIBLE_DEVICES=$(IFS=,; echo "${GPU_IDS[*]}") exec accelerate launch --config_file "$ACCEL" --num_processes "$N" \
  train.py "${TRAIN_ARGS[@]}"
