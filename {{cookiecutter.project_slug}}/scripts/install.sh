#!/bin/sh
# Install torch and this project into the active Python environment (make one first:
# python -m venv .venv && . .venv/bin/activate), with a line at least every 20 s while pip works: pip is silent
# for a minute or more while it unpacks torch.
#   scripts/install.sh       CPU (the smoke run and the tests): torch's CPU build from PyTorch's index (PyPI's build
#                            where that index does not answer within 15 s: on Linux the multi-GB CUDA one, which also
#                            runs on CPU), then the project with its test tools (the dev extra)
#   scripts/install.sh gpu   an NVIDIA GPU: torch's CUDA 13.0 build from PyPI, then the project with the dev and gpu extras
# Extra arguments go to every pip install (e.g. --no-cache-dir).
set -e
cd "$(dirname "$0")/.."
TORCH=torch==2.13.0
CPU_INDEX=https://download.pytorch.org/whl/cpu
PY=${PYTHON:-python}
progress() { sh scripts/with_progress.sh "$@"; }
case "${1:-cpu}" in
  cpu) shift $(( $# > 0 ? 1 : 0 ))
    progress "installing $TORCH (CPU build) from $CPU_INDEX" \
      "$PY" -m pip install --quiet "$TORCH" --index-url "$CPU_INDEX" --timeout 15 --retries 1 "$@" \
      || progress "no CPU build from $CPU_INDEX (see above): installing $TORCH from PyPI instead" \
        "$PY" -m pip install --quiet "$TORCH" "$@"
    extras=dev ;;
  gpu) shift
    progress "installing $TORCH (CUDA 13.0 build) from PyPI" "$PY" -m pip install --quiet "$TORCH" "$@"
    extras='dev,gpu{% if cookiecutter.backend == "unsloth" %},unsloth{% endif %}' ;;
  *) echo "usage: scripts/install.sh [cpu|gpu] [pip options]" >&2; exit 2 ;;
esac
progress "installing the project with its $extras extras (trl, transformers, datasets, ...)" \
  "$PY" -m pip install --quiet -e ".[$extras]" "$@"
echo "installed: python train.py --config configs/smoke.yaml runs the whole loop on CPU"
