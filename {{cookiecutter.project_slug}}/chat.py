"""Ask a trained model a question in the task's format (system prompt, chat template, answer tags).

    python chat.py --config configs/smoke.yaml --model outputs/smoke/merged "What is 1 * 7?"
    python chat.py --model outputs/24gb "..."                  # a run's LoRA adapter on its base model
    python chat.py --model outputs/24gb/merged                 # interactive: a prompt per line, empty line ends

Prints each completion and its extracted final answer; see ``<package>/chat.py``.
"""

import importlib
import sys

PACKAGE = "{{ cookiecutter.package_name }}"

if __name__ == "__main__":
    sys.exit(importlib.import_module(f"{PACKAGE}.chat").main(sys.argv[1:]))
