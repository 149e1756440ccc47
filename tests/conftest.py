import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "{{cookiecutter.project_slug}}"
OPTIONS = json.loads((ROOT / "cookiecutter.json").read_text())  # the questions, as cookiecutter passes them to hooks
# pytest-cookies renders the answers itself, outside cookiecutter's import patch for the template's directory, so
# the template's Jinja extension (local_extensions.py, named in _extensions) must be importable from here too.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import local_extensions  # noqa: E402 - importable once ROOT is on the path


def task_names() -> list[str]:
    """The task choices; each has its folder _tasks/<task>/ in the template."""
    return list(OPTIONS["task"])


def task_settings(task: str) -> local_extensions.TaskTemplate:
    """The task's template settings (_tasks/<task>/task.toml and task.md): dataset, reward_mixes, readme_*, ..."""
    return local_extensions.load_task_spec(TEMPLATE / "_tasks" / task)


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
