"""Pre-generation hook: validate every answer and every option combination before the project is written.

The answers arrive as data (``tojson`` into a raw string, parsed with ``json.loads``), never as code. All logic
lives in importable functions; ``tests/test_hooks.py`` calls :func:`validate` directly.
"""

from __future__ import annotations

import json
import keyword
import re
import sys

# Modules the generated project imports or ships beside its package: a package of the same name would shadow them.
THIRD_PARTY = {
    "accelerate", "bitsandbytes", "chat", "configs", "data", "datasets", "deepspeed", "eval", "filter", "hypothesis",
    "idna", "jsonschema", "liger_kernel", "math_verify", "merge", "numpy", "outputs", "peft", "plot", "pytest",
    "referencing", "regress", "ruff", "setuptools", "tensorboard", "tests", "tokenizers", "torch", "trackio", "train",
    "transformers", "trl", "unsloth", "unsloth_zoo", "vllm", "wandb", "yaml",
}

# (predicate, message): combinations the template refuses, each with the reason and what to pick instead.
UNSUPPORTED = [
    (
        lambda c: c["backend"] == "unsloth" and c["gpu"] == "cpu-only",
        "backend 'unsloth' needs a CUDA GPU; choose backend=trl for gpu=cpu-only",
    ),
    (
        lambda c: c["backend"] == "unsloth" and c["gpu"] == "8x80gb",
        "backend 'unsloth' trains on one GPU; choose backend=trl (accelerate/DeepSpeed) for gpu=8x80gb",
    ),
]

SLUG = re.compile(r"[a-z0-9](?:[a-z0-9._-]{0,98}[a-z0-9])?")
PACKAGE = re.compile(r"[a-z_][a-z0-9_]{0,63}")
# A hub id (org/name) or a local path: no whitespace, quotes, braces or control characters.
BASE_MODEL = re.compile(r"[A-Za-z0-9_.~/-][A-Za-z0-9_.~/:+-]{0,199}")


def reserved_module_names() -> set[str]:
    return set(sys.stdlib_module_names) | THIRD_PARTY


def choices(options: dict) -> dict[str, tuple]:
    """The multiple-choice questions of cookiecutter.json (its lists), as cookiecutter passes them to the hook."""
    return {key: tuple(value) for key, value in options.items() if isinstance(value, list) and not key.startswith("_")}


def validate(context: dict, options: dict) -> list[str]:
    """Return one line per problem with the answers (``options``: cookiecutter.json); empty means they are fine."""
    errors: list[str] = []
    for key, allowed in choices(options).items():
        value = context.get(key)
        if value not in allowed:
            errors.append(f"{key}={value!r} is not one of {', '.join(sorted(allowed))}")

    name = str(context.get("project_name", ""))
    if not name.strip():
        errors.append("project_name is empty")
    elif any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        errors.append("project_name must be one line without control characters (newline, tab, ...)")

    slug = str(context.get("project_slug", ""))
    if not SLUG.fullmatch(slug):
        errors.append(
            f"project_slug={slug!r} is not a valid directory name: use lowercase letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit"
        )

    package = str(context.get("package_name", ""))
    if not PACKAGE.fullmatch(package) or keyword.iskeyword(package):
        errors.append(
            f"package_name={package!r} is not a valid Python package name: use lowercase letters, digits and '_', "
            "not starting with a digit (set package_name explicitly)"
        )
    elif package in reserved_module_names():
        errors.append(
            f"package_name={package!r} would shadow the module {package!r} the project imports; choose another name"
        )

    base_model = str(context.get("base_model", ""))
    if base_model and not BASE_MODEL.fullmatch(base_model):
        errors.append(
            f"base_model={base_model!r} is not a hub id (org/name) or a local path without spaces or quotes"
        )

    if not errors:  # combination rules assume each answer is a known choice
        errors.extend(message for rule, message in UNSUPPORTED if rule(context))
    return errors


def main(context: dict, options: dict) -> int:
    errors = validate(context, options)
    for line in errors:
        print(f"ERROR: {line}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(json.loads(r'''{{ cookiecutter | tojson }}'''), json.loads(r'''{{ _cookiecutter | tojson }}''')))
