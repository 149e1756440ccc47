"""For each task: bake, then run the generated project's own pytest (rewards, configs, the smoke training).

Each behaviour is tested once where it does not depend on the task: the project's task-agnostic tests (its
``any_task`` marker: checkpoints, resume, merge, distributed, launch scripts, ...) run in one task's project, the
post-generation hook's full smoke training in one bake; every task runs its own tests and its smoke training."""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import tomllib
import yaml
from conftest import OPTIONS, task_names

ALGORITHMS = OPTIONS["algorithm"]
ANY_TASK_IN = "code"  # the project whose suite runs the task-agnostic tests too: its sandbox is in every run
HOOK_SMOKE_IN = "json"  # the bake whose post-generation hook runs the full smoke training (the fastest smoke)


@pytest.mark.parametrize("task", task_names())
def test_generated_project_tests_pass(cookies, task):
    # smoke_test=full: the post-generation hook itself runs the CPU smoke training in this interpreter.
    smoke = "full" if task == HOOK_SMOKE_IN else "skip"
    result = cookies.bake(extra_context={"task": task, "smoke_test": smoke, "project_name": f"My {task} run"})
    assert result.exit_code == 0, result.exception
    assert result.context["task"] == task
    root = Path(result.project_path)
    if smoke == "full":
        max_steps = yaml.safe_load((root / "configs" / "smoke.yaml").read_text())["max_steps"]
        checkpoint = root / "outputs" / "smoke" / f"checkpoint-{max_steps}"
        assert json.loads((checkpoint / "trainer_state.json").read_text())["global_step"] == max_steps  # to the end
        health = json.loads((root / "outputs" / "smoke" / "health.json").read_text())
        assert health["verdict"] == "learning", health["reasons"]  # and learnt (its correctness rose)

    run_pytest(sys.executable, root, *([] if task == ANY_TASK_IN else ["-m", "not any_task"]))


def test_the_agnostic_and_hook_smoke_projects_are_tasks():
    assert {ANY_TASK_IN, HOOK_SMOKE_IN} <= set(task_names())


def unsloth_python() -> str:
    """The interpreter of the Unsloth backend's own stack (its trl/transformers/datasets pins), built by `make test`."""
    python = os.environ.get("GRPO_UNSLOTH_PYTHON", "")
    if python and Path(python).is_file():
        return python
    message = f"GRPO_UNSLOTH_PYTHON={python!r} names no interpreter; `make test` builds build/unsloth-venv"
    if os.environ.get("GRPO_REQUIRE_UNSLOTH_STACK") == "1" or os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@contextlib.contextmanager
def own_tmp(**extra: str):
    """The environment of a project's test run, with a temporary folder of its own (the sandbox tests count what a
    job leaves there; the template's tests run two at a time). A short path: vLLM's IPC sockets and the sandbox's
    Unix sockets live under it, and a socket path has at most 107 characters."""
    tmp = tempfile.mkdtemp(prefix="grpo-", dir="/tmp")
    try:
        yield {**os.environ, "TMPDIR": tmp, **extra}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_pytest(python: str, root: Path, *args: str) -> None:
    with own_tmp() as env:
        done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                              cwd=root, capture_output=True, text=True, timeout=1200, check=False, env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "skipped" not in summary, summary


def test_unsloth_project_tests_pass_on_cpu(cookies):
    # Unsloth is GPU-only and never installed here: on CPU the project trains through transformers + PEFT
    # (model.load falls back when use_cpu is set), and its whole test suite, the smoke training included, runs on
    # the stack its own pyproject pins (trl 1.15 / transformers 5.17 / datasets 4.x), not the trl backend's.
    python = unsloth_python()
    result = cookies.bake(extra_context={"backend": "unsloth", "gpu": "24gb", "smoke_test": "skip"})
    assert result.exit_code == 0, result.exception
    assert result.context["backend"] == "unsloth"
    root = Path(result.project_path)
    model_py = root / result.context["package_name"] / "training" / "model.py"
    assert "FastLanguageModel.from_pretrained" in model_py.read_text()
    pins = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    probe = ("import importlib.metadata as m; "
             "print(' '.join(p + '==' + m.version(p) for p in ('trl', 'transformers', 'datasets')))")
    installed = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert set(installed) <= set(pins), (installed, pins)  # the environment really is the Unsloth stack
    run_pytest(python, root)


def test_vllm_project_tests_pass_on_cpu(cookies):
    # vLLM's CPU build in its own environment (build/vllm-venv): one project's vLLM tests (colocate training through
    # TRL's real generation and weight sync, full and LoRA, with the log-prob check; chat and filter through vLLM).
    # One bake, not one per task: the vLLM path does not depend on the task.
    python = os.environ.get("GRPO_VLLM_PYTHON", "")
    if not (python and Path(python).is_file()):
        message = f"GRPO_VLLM_PYTHON={python!r} names no interpreter; `make test` builds build/vllm-venv"
        if os.environ.get("GRPO_REQUIRE_VLLM_STACK") == "1" or os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    result = cookies.bake(extra_context={"task": "json", "gpu": "24gb", "smoke_test": "skip"})
    assert result.exit_code == 0, result.exception
    started = time.monotonic()
    with own_tmp(GRPO_REQUIRE_VLLM="1") as env:
        done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "vllm", "tests"],
                              cwd=Path(result.project_path), capture_output=True, text=True, timeout=1200,
                              check=False, env=env)
    print(f"vLLM project tests: {time.monotonic() - started:.0f} s")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "skipped" not in summary, summary


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_parses_and_smoke_trains(cookies, algorithm):
    # Every config of the project goes through the project's own TrlParser and, in the same interpreter, a short
    # smoke training runs: TRL takes the algorithm's loss settings. The default algorithm's training is every
    # task's smoke run (test_generated_project_tests_pass), so its bake only parses.
    result = cookies.bake(extra_context={"algorithm": algorithm, "smoke_test": "skip"})
    assert result.exit_code == 0, result.exception
    root = Path(result.project_path)
    package = result.context["package_name"]
    train = algorithm != ALGORITHMS[0]
    script = (
        "import glob, runpy, sys\n"
        f"from {package} import config\n"
        "for path in sorted(glob.glob('configs/*.yaml')):\n"
        "    s, t, m, _ = config.parser().parse_args_and_config(['--config', path, '--output_dir', '/tmp/x',"
        " '--use_cpu', 'true'])\n"
        "    print(path, t.loss_type, t.importance_sampling_level, t.scale_rewards, t.beta, flush=True)\n"
        "sys.argv = ['train.py', '--config', 'configs/smoke.yaml', '--max_steps', '2', '--save_steps', '2',"
        " '--format_priming_steps', '2']\n"
        f"if {train}:\n"
        "    runpy.run_path('train.py', run_name='__main__')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=900,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    parsed = [line for line in done.stdout.splitlines() if line.startswith("configs/")]
    assert len(parsed) == len(list((root / "configs").glob("*.yaml")))
    if train:
        state = json.loads((root / "outputs" / "smoke" / "checkpoint-2" / "trainer_state.json").read_text())
        assert state["global_step"] == 2
