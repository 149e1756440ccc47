"""The settings a launch script needs, resolved exactly as train.py resolves them: the config file, then the
command line's overrides, through the project's parser (``config.parse_args``). Prints the values on one line,
tab-separated, in the order asked (``-`` for an optional one that is unset); a bad config or option, or a required
setting the config lacks, is one ``error:`` line on stderr and exit status 1. Parsed with ``--use_cpu true``
appended, so that it runs where no GPU is visible (a login node); no value it prints depends on it.

    python -m <package>.preflight.resolved model_name_or_path vllm_max_model_length? -- --config X.yaml [args...]
    python -m <package>.preflight.resolved --colocate -- --config X.yaml [args...]

A name ending in ``?`` is optional. ``--colocate``: silent when vLLM colocated can start with these settings,
else the reason in one line and exit status 1 (``memory.colocate_problem``).
"""

from __future__ import annotations

import sys

from .. import config


def settings(train_argv: list[str]) -> dict:
    """Every setting of ``train.py train_argv`` in one dict; raises ConfigError (one line)."""
    # parsed as on a machine without a GPU (this may run on a login node): device checks are train.py's
    script_args, training_args, model_args, task_args = config.parse_args([*train_argv, "--use_cpu", "true"])
    return {**vars(task_args), **vars(model_args), **training_args.to_dict(), **vars(script_args)}


def colocate_problem(train_argv: list[str]) -> str | None:
    """Why vLLM colocated cannot start with these settings on this GPU (``memory.colocate_problem``; the GPU's size
    detected, else the preset's), or None."""
    from . import memory

    path = config.with_default_config(train_argv)[1]
    gpu_gb = memory.detect_gpu_gb() or memory.gpu_gb_from_preset(path)
    problem = memory.colocate_problem(settings(train_argv), gpu_gb) if gpu_gb else None
    return f"{path}: {problem}" if problem else None


def resolve(names: list[str], train_argv: list[str]) -> list[str]:
    """The values of ``names`` for ``train.py train_argv``; raises ConfigError (one line)."""
    merged = settings(train_argv)
    values = []
    for name in names:
        key = name.rstrip("?")
        if key not in merged:
            raise config.ConfigError(f"no setting named {key}")
        value = merged[key]
        if value is None or value == "":
            if not name.endswith("?"):
                source = config.with_default_config(train_argv)[1]
                raise config.ConfigError(f"{source} sets no {key}: add it there, or pass --{key}")
            value = "-"
        values.append(str(value))
    return values


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        print("usage: python -m <package>.preflight.resolved NAME[?]... -- [train.py args...]", file=sys.stderr)
        return 2
    split = argv.index("--")
    try:
        if argv[:split] == ["--colocate"]:  # silent when vLLM colocated can start, else one line and exit 1
            problem = colocate_problem(argv[split + 1:])
            if problem:
                print(f"error: {problem}", file=sys.stderr)
            return 1 if problem else 0
        print("\t".join(resolve(argv[:split], argv[split + 1:])))
    except (config.ConfigError, FileNotFoundError) as error:
        text = str(error).strip().splitlines()
        print(f"error: {text[0] if text else type(error).__name__}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
