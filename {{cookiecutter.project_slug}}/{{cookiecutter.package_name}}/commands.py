"""Console commands, installed by ``pip install -e .`` (``[project.scripts]`` in pyproject.toml): ``<project>-train``
runs what ``python train.py`` runs, Unsloth imported first when the config asks for it. The other commands
(``-eval``, ``-filter``, ``-merge``, ``-chat``, ``-plot``, ``-doctor``, ``-download``) are their modules' ``main``."""

import sys

from .training.backend import preload


def train() -> None:
    argv = sys.argv[1:]
    preload(argv)  # before anything imports transformers or trl
    from .training.train import cli

    cli(argv)
