"""The Jinja extension this template loads (``_extensions`` in cookiecutter.json): unsupported answers end in one line.

A pre-generation hook that exits non-zero makes cookiecutter log its own 11-line traceback after the hook's reason.
The same rules, run as the filter ``refuse_unsupported`` while cookiecutter renders the private ``__refusals``
variable (after the last answer), end in cookiecutter's one-line report instead: the filter raises the exception a
failed hook raises (``FailedHookException``), which cookiecutter's command line prints as one line and exits 1, and
which callers of ``cookiecutter()`` see exactly as they saw a failed hook. The rules live in
``hooks/pre_gen_project.py`` (``validate``), which still runs as the pre-generation hook.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from jinja2.ext import Extension

ROOT = Path(__file__).resolve().parent


def rules():
    """hooks/pre_gen_project.py as a module (its Jinja sits only under ``__main__``)."""
    spec = importlib.util.spec_from_file_location("grpo_template_pre_gen", ROOT / "hooks" / "pre_gen_project.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def refuse_unsupported(answers) -> str:
    """Nothing when the answers are supported; else raise cookiecutter's FailedHookException with one line."""
    from cookiecutter.exceptions import FailedHookException

    options = json.loads((ROOT / "cookiecutter.json").read_text(encoding="utf-8"))
    errors = rules().validate(dict(answers), options)
    if errors:
        raise FailedHookException(f"error: {'; '.join(errors)} (nothing was written)")
    return ""


class Refusals(Extension):
    def __init__(self, environment) -> None:
        super().__init__(environment)
        environment.filters["refuse_unsupported"] = refuse_unsupported
