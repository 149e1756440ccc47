"""Merge a run's LoRA adapter into its base model: a standalone model for chat.py, vllm serve and the Hub.

    python merge.py outputs/smoke                          # -> outputs/smoke/merged
    python merge.py outputs/24gb/checkpoint-200            # -> outputs/24gb/merged-checkpoint-200
    python merge.py outputs/24gb --config configs/24gb.yaml --push   # and upload it to the config's hub_model_id

A full fine-tune (use_peft: false) has nothing to merge: its weights are saved as they are; see
``<package>/merge.py``.
"""

import importlib
import sys

PACKAGE = "{{ cookiecutter.package_name }}"

if __name__ == "__main__":
    sys.exit(importlib.import_module(f"{PACKAGE}.merge").main(sys.argv[1:]))
