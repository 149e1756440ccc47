"""Post-generation hook: move the chosen task's folder (``_tasks/<task>/``) into place, then run the smoke test.

Smoke levels: ``quick`` runs the project's stdlib self-check (compile, configs, reward self-check) in
cookiecutter's own interpreter; ``full`` adds the CPU smoke training when torch and trl import, in this interpreter
or in the project's ``.venv``, and otherwise prints the command that runs it; ``skip`` runs nothing.

A smoke failure never deletes the project: the hook prints the failed step and why and exits 0 (cookiecutter would
otherwise remove the directory). Set ``GRPO_TEMPLATE_STRICT_SMOKE=1`` (together with cookiecutter's
``--keep-project-on-failure``) to make a failure exit non-zero, for CI.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

TASKS_DIR = "_tasks"  # one folder per task, laid out like the project; names starting with "_" stay behind
SMOKE_TIMEOUT_S = 900
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"  # the CPU build (PyPI's Linux torch is the CUDA one)


def task_files(task_dir: Path) -> list[Path]:
    """The files a task folder puts into the project, relative to the folder (template-only "_" entries excluded)."""
    return sorted(
        path.relative_to(task_dir)
        for path in task_dir.rglob("*")
        if path.is_file() and not path.relative_to(task_dir).parts[0].startswith("_")
    )


def promote_task(root: Path, task: str) -> None:
    """Move the chosen task's folder onto the project root, then remove every task folder."""
    tasks = root / TASKS_DIR
    source = tasks / task
    if not source.is_dir():
        raise FileNotFoundError(f"the template has no task folder {TASKS_DIR}/{task}")
    for relative in task_files(source):
        target = root / relative
        if target.exists():
            raise FileExistsError(f"task {task!r} would overwrite {relative}; give the file another name")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(source / relative, target)
    shutil.rmtree(tasks)


def training_python(root: Path) -> str | None:
    """An interpreter where torch and trl import: this one, or the project's .venv; None if neither."""
    if all(importlib.util.find_spec(name) for name in ("torch", "trl")):
        return sys.executable
    venv = root / ".venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if venv.is_file():
        probe = subprocess.run([str(venv), "-c", "import torch, trl"], check=False, capture_output=True, cwd=root)
        if probe.returncode == 0:
            return str(venv)
    return None


def run_step(name: str, command: list[str], root: Path, timeout: float, show: str = "") -> bool:
    """Run one smoke step in the project; print its stdout (only the lines starting with ``show`` when given)."""
    print(f"smoke: {name}: {' '.join(command)}", flush=True)
    try:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # leave no __pycache__ behind in the new project
        done = subprocess.run(command, check=False, cwd=root, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"SMOKE FAILED at step '{name}': no result after {timeout:.0f} s")
        return False
    lines = [line for line in done.stdout.rstrip().splitlines() if line.startswith(show)]
    if lines:
        print("\n".join(lines))
    if done.returncode != 0:
        tail = "\n".join((done.stderr or "").strip().splitlines()[-15:])
        print(f"SMOKE FAILED at step '{name}' (exit {done.returncode}):\n{tail}")
        return False
    return True


def smoke(root: Path, context: dict) -> bool:
    level = context["smoke_test"]
    if level == "skip":
        return True
    package = context["package_name"]
    ok = run_step("quick self-check", [sys.executable, "-m", f"{package}.selfcheck"], root, timeout=300)
    if level != "full" or not ok:
        return ok
    python = training_python(root)
    command = "python train.py --config configs/smoke.yaml"
    if python is None:
        print(
            "smoke: torch and trl are not importable here nor in .venv; to run the smoke training:\n"
            f"  cd {root} && pip install torch==2.13.0 --index-url {CPU_TORCH_INDEX} && pip install -e '.[dev]' && "
            f"{command}"
        )
        return True
    # of train.py's output, only its health verdict and the rise of correctness it rests on (health.py)
    return run_step("smoke training", [python, "train.py", "--config", "configs/smoke.yaml"], root, SMOKE_TIMEOUT_S,
                    show="health:")


def next_path(root: Path, environ=os.environ) -> str:
    """The project as a path from where cookiecutter was started (the shell's ``PWD``; the hook itself runs in the
    project), e.g. ``build/demo/grpo-reasoner`` for ``make demo``; its absolute path when it lies elsewhere."""
    start = environ.get("PWD")
    if start and Path(start).is_dir():
        relative = os.path.relpath(root, start)
        if not relative.startswith(".."):
            return relative
    return str(root)


def main(context: dict, root: Path | None = None) -> int:
    root = root or Path.cwd()
    promote_task(root, context["task"])
    ok = smoke(root, context)
    print(f"\nGenerated {root}. Next: cd {next_path(root)} && see README.md ('Install', then 'Train').")
    if not ok:
        print("The project was kept; fix the step above and rerun it there.")
        return 1 if os.environ.get("GRPO_TEMPLATE_STRICT_SMOKE") == "1" else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(r'''{{ cookiecutter | tojson }}''')))
