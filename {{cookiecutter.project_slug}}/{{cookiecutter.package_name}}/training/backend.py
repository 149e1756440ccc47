"""The ``model_backend`` config field: ``trl`` (transformers + PEFT) or ``unsloth`` (FastLanguageModel).

Unsloth patches transformers and trl when it is imported first, so the launchers call :func:`preload` before
anything imports them. Stdlib + PyYAML only.
"""

from __future__ import annotations

from pathlib import Path

from .. import DEFAULT_CONFIG
from ..constants import BACKENDS  # noqa: F401 - the backends' names, with the loader that reads them
from ..settings import DEFAULTS, read_yaml, setting


def option(argv: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` or ``--name=VALUE`` in a command line (the last one wins), else None."""
    value = None
    for index, arg in enumerate(argv):
        if arg == f"--{name}" and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith(f"--{name}="):
            value = arg.split("=", 1)[1]
    return value


def requested(argv: list[str]) -> str:
    """The backend a command line asks for: ``--model_backend``, else its config's ``model_backend``, else trl."""
    chosen = option(argv, "model_backend")
    if chosen is not None:
        return chosen
    path = Path(option(argv, "config") or DEFAULT_CONFIG)
    try:
        config = read_yaml(path)
    except Exception:  # noqa: BLE001 - unreadable or not YAML: the config parser reports it, with one line
        return DEFAULTS["model_backend"]
    return str(setting(config, "model_backend"))


def preload(argv: list[str]) -> None:
    """Import Unsloth before transformers and trl when the run uses it (it is GPU-only and optional on CPU)."""
    if requested(argv) == "unsloth":
        try:
            import unsloth  # noqa: F401
        except ImportError:
            pass  # model.load says how to install it when a GPU run needs it
