"""Console commands, installed by ``pip install -e .`` (``[project.scripts]`` in pyproject.toml): ``<project>-train``
runs what ``python train.py`` runs, Unsloth imported first when the config asks for it. The other commands
(``-filter``, ``-merge``, ``-chat``, ``-plot``, ``-doctor``, ``-download``) are their modules' ``main``; ``-eval``
says it is loading before its slow imports."""

import os
import sys

from . import DEFAULT_CONFIG
from .known import refuse_early
from .settings import ConfigError, read_yaml
from .training.backend import option, preload

HELP_ALL = "--help_all"  # --help-all too, unlisted (flags.py)


def train_help(argv: list[str]) -> str:
    """train.py's --help: the config's own settings, each an option (stdlib and PyYAML: no torch, in a blink).
    ``--help_all`` lists every setting TRL and transformers accept (over a thousand lines, after their imports)."""
    path = option(argv, "config") or DEFAULT_CONFIG
    name = os.path.basename(sys.argv[0])
    lines = [f"usage: {name} [--config CONFIG] [--SETTING VALUE ...] [{HELP_ALL}]", "",
             "GRPO training. Every setting lives in the YAML config (default: the project's preset); any of them can",
             "be given on the command line too, which wins: --learning_rate 5e-6 --max_steps 200.", ""]
    try:
        settings = read_yaml(path)
    except ConfigError as error:
        return "\n".join([*lines, f"({error})", f"{HELP_ALL}: every setting there is."])
    lines.append(f"The settings of {path}:")
    lines += [f"  --{key} {value}" for key, value in settings.items()]
    lines += ["", f"{HELP_ALL}: every setting there is (TRL's GRPOConfig and ModelConfig, the task's), with its help."]
    return "\n".join(lines)


def train() -> None:
    argv = sys.argv[1:]
    if {"-h", "--help"} & set(argv):
        print(train_help(argv))
        return
    argv = ["--help" if arg in (HELP_ALL, "--help-all") else arg for arg in argv]
    if "--help" not in argv:
        try:
            refuse_early(argv)  # a misspelt key or a bad value: one line now, not after 10 s of imports
        except ConfigError as error:
            sys.exit(f"error: {str(error).strip().splitlines()[0]}")
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
