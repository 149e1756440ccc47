"""Keep the training prompts the model solves sometimes but not always (offline pass-rate filtering).

    python filter.py --config configs/24gb.yaml --samples 8                    # keeps 0.1 <= pass rate <= 0.9
    python filter.py --config configs/24gb.yaml --samples 8 --low 0.2 --high 0.8 --output data/filtered.jsonl

Writes the kept rows (with a ``pass_rate`` column) as JSONL, a report and a histogram, and prints the
``dataset_name:`` line to train on them; see ``<package>/filtering.py``.
"""

import importlib
import sys

PACKAGE = "{{ cookiecutter.package_name }}"

if __name__ == "__main__":
    sys.exit(importlib.import_module(f"{PACKAGE}.filtering").main(sys.argv[1:]))
