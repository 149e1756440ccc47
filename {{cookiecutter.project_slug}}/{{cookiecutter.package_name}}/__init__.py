"""GRPO fine-tuning on one verifiable task.

The families are subpackages: ``training/`` (the loop ``python train.py`` runs), ``evaluation/`` (``python eval.py``),
``preflight/`` (the memory estimate and the doctor) and ``rewards/``. Here: the settings (``settings.py``, the one
defaults table; ``config.py``, ``rules.py``), the task and its data (``task.py``, ``contract.py``, ``data.py``,
``answer_format.py``), and the other commands (audit, download, merge, chat, filter, plots, selfcheck).
"""

from pathlib import Path

DEFAULT_CONFIG = "configs/{{ cookiecutter.gpu }}.yaml"  # the GPU preset this project was generated for
ROOT = Path(__file__).resolve().parent.parent  # the project folder (configs/, data/, scripts/)
