import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_hook(name: str):
    """Import a hook file as a module: its Jinja lives only inside the __main__ guard, so it imports unrendered."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def defaults() -> dict:
    """The answers --no-input gives, rendered the way cookiecutter renders the derived ones."""
    raw = json.loads((ROOT / "cookiecutter.json").read_text())
    context = {key: (value[0] if isinstance(value, list) else value) for key, value in raw.items()}
    context["project_slug"] = "grpo-reasoner"
    context["package_name"] = "grpo_reasoner"
    return context
