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
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TASKS_DIR = "_tasks"  # one folder per task, laid out like the project; names starting with "_" stay behind
SPEC_FILES = ("task.toml", "task.md")  # a task folder's template settings (local_extensions.py): they stay behind
SMOKE_TIMEOUT_S = 900  # grows with the step rate the training reports (run_step)
STALL_S = 600.0  # a step that prints nothing for this long has hung
PROGRESS_EVERY_S = 10.0  # without a terminal, one progress line this often
QUIET_S = 20.0  # a step that has shown nothing for this long gets a line saying it is still running
PROGRESS = re.compile(r"train: step (\d+)/(\d+)")
PROGRESS_PREFIXES = ("train: step", "format priming step")
# of train.py's output, the hook shows its progress, the end of priming (so the live line does not jump from priming
# to training as if priming stopped), and the health verdict with the rise of correctness it rests on (health.py)
SMOKE_SHOWS = ("health:", "format priming done", *PROGRESS_PREFIXES)
ANSWERS = ".cookiecutter.json"  # the answers cookiecutter records; update_project.py reads them
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"  # the CPU build (PyPI's Linux torch is the CUDA one)


def task_files(task_dir: Path) -> list[Path]:
    """The files a task folder puts into the project, relative to the folder (template-only entries excluded: "_"
    names and the spec files)."""
    return sorted(
        relative
        for relative in (path.relative_to(task_dir) for path in task_dir.rglob("*") if path.is_file())
        if not relative.parts[0].startswith("_") and str(relative) not in SPEC_FILES
    )


def promote_task(root: Path, task: str) -> None:
    """Move the chosen task's folder onto the project root, then remove every task folder."""
    tasks = root / TASKS_DIR
    source = tasks / task
    if not source.is_dir():
        raise FileNotFoundError(f"the template has no task folder {TASKS_DIR}/{task}")
    files = task_files(source)
    for relative in files:  # all checked before any moves
        target = root / relative
        # the same file is there when a project is rendered again over itself (cookiecutter -f): it is replaced
        if target.exists() and target.read_bytes() != (source / relative).read_bytes():
            raise FileExistsError(f"task {task!r} would overwrite {relative}, which differs from the task's; "
                                  "render into an empty folder, or give the file another name")
    for relative in files:
        target = root / relative
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


def run_step(name: str, command: list[str], root: Path, timeout: float, show: tuple[str, ...] = ()) -> bool:
    """Run one smoke step in the project and stream its stdout (only the lines starting with one of ``show``, when
    given). The step fails after ``timeout`` seconds, or later when its ``train: step N/M`` lines project a longer
    run (a slow machine gets the time its own step rate needs), or after ``STALL_S`` seconds without a line."""
    print(f"smoke: {name}: {' '.join(command)}", flush=True)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # leave no __pycache__ behind in the new project
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True).start()
        try:
            ended = _follow(lines, timeout, show, name)
        except KeyboardInterrupt:  # the step got the same Ctrl-C: training saves a checkpoint and says how to resume
            process.wait(timeout=STALL_S)
            stderr.seek(0)
            print(f"\nsmoke: {name}: {(stderr.read().strip().splitlines() or ['interrupted'])[-1]}", flush=True)
            return False
        if not ended:
            process.kill()
            process.wait()
            print(f"SMOKE FAILED at step '{name}': no result after {timeout:.0f} s or no output for {STALL_S:.0f} s")
            return False
        process.wait()
        stderr.seek(0)
        tail = "\n".join(stderr.read().strip().splitlines()[-15:])
    if process.returncode != 0:
        print(f"SMOKE FAILED at step '{name}' (exit {process.returncode}):\n{tail}")
        return False
    return True


def _pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def _follow(lines: queue.Queue, timeout: float, show: tuple[str, ...], name: str = "step") -> bool:
    """Print the step's lines until its output ends (True) or its deadline passes (False). On a terminal, progress
    lines overwrite each other; elsewhere one is printed every ``PROGRESS_EVERY_S`` seconds. After ``QUIET_S``
    seconds with nothing shown (imports, the tiny model, the audit), one line says the step is still running."""
    started = time.monotonic()
    deadline = started + timeout
    first: tuple[float, int] | None = None  # (time, step) of the first training progress line
    printed = 0.0
    live = sys.stdout.isatty()
    heard = shown = started  # the step's last line; the last line shown
    while True:
        now = time.monotonic()
        try:
            line = lines.get(timeout=max(0.0, min(heard + STALL_S, deadline, shown + QUIET_S) - now))
        except queue.Empty:
            now = time.monotonic()
            if now >= min(heard + STALL_S, deadline):
                return False
            print(("\n" if live and printed else "") + f"smoke: {name}: still running ({now - started:.0f} s)",
                  flush=True)
            shown, printed = now, 0.0 if live else printed
            continue
        now = heard = time.monotonic()
        if line is None:
            if live and printed:
                print(flush=True)
            return True
        step = PROGRESS.match(line)
        if step:
            done, total = int(step.group(1)), int(step.group(2))
            first = first or (now, done)
            if done > first[1]:  # projected end from the measured rate, with room for the save and a slow spell
                rest = (now - first[0]) / (done - first[1]) * (total - done)
                deadline = max(deadline, now + 2 * rest + 120)
        if show and not line.startswith(show):
            continue
        if line.startswith(PROGRESS_PREFIXES):
            if live:
                print(f"\r\033[K{line}", end="", flush=True)
                printed = shown = now
            elif now - printed >= PROGRESS_EVERY_S:
                print(line, flush=True)
                printed = shown = now
            continue
        print(("\n" if live and printed else "") + line, flush=True)
        printed, shown = (0.0 if live else printed), now


def smoke(root: Path, context: dict) -> tuple[bool, str | None]:
    """(whether the smoke steps passed, the interpreter the smoke training ran in or None)."""
    level = context["smoke_test"]
    if level == "skip":
        return True, None
    package = context["package_name"]
    ok = run_step("quick self-check", [sys.executable, "-m", f"{package}.selfcheck"], root, timeout=300)
    if level != "full" or not ok:
        return ok, None
    python = training_python(root)
    command = "python train.py --config configs/smoke.yaml"
    if python is None:
        print(
            "smoke: torch and trl are not importable here nor in .venv; to run the smoke training:\n"
            f"  cd {root} && python -m venv .venv && . .venv/bin/activate && scripts/install.sh && {command}\n"
            f"  (scripts/install.sh: pip install torch==2.13.0 --index-url {CPU_TORCH_INDEX}, then pip install -e "
            "'.[dev]', with a line at least every 20 s)"
        )
        return True, None
    return run_step("smoke training", [python, "train.py", "--config", "configs/smoke.yaml"], root, SMOKE_TIMEOUT_S,
                    show=SMOKE_SHOWS), python


def next_path(root: Path, environ=os.environ) -> str:
    """The project as a path from where cookiecutter was started (the shell's ``PWD``; the hook itself runs in the
    project), e.g. ``build/demo/grpo-reasoner`` for ``make demo``; its absolute path when it lies elsewhere."""
    start = environ.get("PWD")
    if start and Path(start).is_dir():
        relative = os.path.relpath(root, start)
        if not relative.startswith(".."):
            return relative
    return str(root)


def record_source(root: Path, source: dict) -> None:
    """Add the template's commit and path (``local_extensions.template_source``: none for a template with
    uncommitted changes, or not a git clone) to the project's ``.cookiecutter.json``, so ``update_project.py`` knows
    where the project came from."""
    answers = root / ANSWERS
    if source and answers.is_file():
        saved = json.loads(answers.read_text(encoding="utf-8"))
        answers.write_text(json.dumps({**saved, **source}, indent=4, sort_keys=True) + "\n", encoding="utf-8")


def main(context: dict, root: Path | None = None, source: dict | None = None) -> int:
    root = root or Path.cwd()
    try:
        promote_task(root, context["task"])
    except (FileExistsError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    record_source(root, source or {})
    ok, trained_with = smoke(root, context)
    if ok and trained_with:  # the smoke trained in an environment that has everything: no second install
        print(f"\nGenerated {root}. Next: cd {next_path(root)} && see README.md ('Train'); the environment the smoke "
              f"ran in ({Path(trained_with).parent.parent}) has all it needs: skip 'Install'.")
    else:
        print(f"\nGenerated {root}. Next: cd {next_path(root)} && see README.md ('Install', then 'Train').")
    if not ok:
        print("The project was kept; fix the step above and rerun it there.")
        return 1 if os.environ.get("GRPO_TEMPLATE_STRICT_SMOKE") == "1" else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(r'''{{ cookiecutter | tojson }}'''),
                  source=json.loads(r'''{{ template_source() | tojson }}''')))
