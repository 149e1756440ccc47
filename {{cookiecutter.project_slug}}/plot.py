"""Plot a run's training curves (rewards, reward spread, completion length, KL, learning rate) to a PNG.

    python plot.py outputs/smoke                          # writes outputs/smoke/training.png
    python plot.py outputs/24gb --output outputs/24gb.png

Reads trainer_state.json from the run dir or its latest checkpoint-*/; see ``<package>/plots.py``.
"""

import importlib
import sys

PACKAGE = "{{ cookiecutter.package_name }}"

if __name__ == "__main__":
    sys.exit(importlib.import_module(f"{PACKAGE}.plots").main(sys.argv[1:]))
