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


def evaluate() -> None:
    """``python eval.py`` and ``<project>-eval``: one line before the slow imports, so a model evaluation is not
    silent while torch and transformers load (not for ``--help`` or ``--compare``, which load no model)."""
    argv = sys.argv[1:]
    if not {"-h", "--help", "--compare"} & {arg.split("=", 1)[0] for arg in argv}:
        print("eval: loading torch, transformers and the model ...", file=sys.stderr, flush=True)
    from .evaluation.evaluate import main

    sys.exit(main(argv))
