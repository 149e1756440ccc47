# Sourced by the launch scripts: the GPUs this launch may use, as a bash array GPU_IDS (GPU_COUNT of them).
# CUDA_VISIBLE_DEVICES, when set, is the list (as CUDA reads it: up to the first invalid entry); otherwise every GPU
# `nvidia-smi -L` lists. GPUS=N keeps only the first N of them.
gpu_count() {
  local n=0 id
  for id in "${GPU_IDS[@]}"; do n=$((n + 1)); done
  echo "$n"
}

visible_gpu_ids() {
  GPU_IDS=()
  if [[ -n "${CUDA_VISIBLE_DEVICES+set}" ]]; then
    local entry entries
    IFS=',' read -r -a entries <<< "${CUDA_VISIBLE_DEVICES// /}"
    for entry in "${entries[@]}"; do
      [[ -z "$entry" || "$entry" == -* ]] && break
      GPU_IDS+=("$entry")
    done
  else
    if ! command -v nvidia-smi > /dev/null; then
      echo "error: nvidia-smi not found: no NVIDIA driver here (or set CUDA_VISIBLE_DEVICES / GPUS)" >&2
      return 1
    fi
    local count
    count=$(nvidia-smi -L | grep -c '^GPU ' || true)
    if (( count > 0 )); then
      mapfile -t GPU_IDS < <(seq 0 $((count - 1)))
    fi
  fi
  if [[ -n "${GPUS:-}" ]]; then
    if ! [[ "$GPUS" =~ ^[0-9]+$ ]] || (( GPUS > $(gpu_count) )); then
      echo "error: GPUS=$GPUS but $(gpu_count) GPU(s) are visible" >&2
      return 1
    fi
    GPU_IDS=("${GPU_IDS[@]:0:GPUS}")
  fi
  GPU_COUNT=$(gpu_count)
  if (( GPU_COUNT == 0 )); then
    echo "error: no GPU visible (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset})" >&2
    return 1
  fi
}
