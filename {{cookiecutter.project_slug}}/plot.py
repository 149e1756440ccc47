"""Plot a run's training curves (rewards, reward spread, completion length, KL, learning rate) to a PNG.

    python plot.py outputs/smoke                          # writes outputs/smoke/training.png
    python plot.py outputs/24gb --output outputs/24gb.png

Reads trainer_state.json from the run dir or its latest checkpoint-*/; see ``{{ cookiecutter.package_name }}/plots.py``.
"""

import sys

from {{ cookiecutter.package_name }} import plots

if __name__ == "__main__":
    sys.exit(plots.main(sys.argv[1:]))
