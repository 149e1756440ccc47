"""Keep the training prompts the model solves sometimes but not always (offline pass-rate filtering).

    python filter.py --config configs/24gb.yaml --samples 8                    # keeps 0.1 <= pass rate <= 0.9
    python filter.py --config configs/24gb.yaml --samples 8 --low 0.2 --high 0.8 --output data/filtered.jsonl

Writes the kept rows (with a ``pass_rate`` column) as JSONL, a report and a histogram, and prints the
``dataset_name:`` line to train on them; see ``{{ cookiecutter.package_name }}/filtering.py``.
"""

import sys

from {{ cookiecutter.package_name }} import filtering

if __name__ == "__main__":
    sys.exit(filtering.main(sys.argv[1:]))
