"""For each task: bake, then run the generated project's own pytest (rewards, configs, the smoke training)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import task_names


@pytest.mark.parametrize("task", task_names())
def test_generated_project_tests_pass(cookies, task):
    # smoke_test=full: the post-generation hook itself runs the CPU smoke training in this interpreter.
    result = cookies.bake(extra_context={"task": task, "smoke_test": "full", "project_name": f"My {task} run"})
    assert result.exit_code == 0, result.exception
    assert result.context["task"] == task
    root = Path(result.project_path)
    max_steps = yaml.safe_load((root / "configs" / "smoke.yaml").read_text())["max_steps"]
    state = json.loads((root / "outputs" / "smoke" / f"checkpoint-{max_steps}" / "trainer_state.json").read_text())
    assert state["global_step"] == max_steps  # the hook's smoke training ran to the end

    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root,
                          capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "skipped" not in summary, summary


def test_unsloth_project_tests_pass_on_cpu(cookies):
    # Unsloth is GPU-only and never installed here: the project must still compile, load every config, and run
    # its CPU smoke training through the transformers path (model.load falls back when use_cpu is set).
    result = cookies.bake(extra_context={"backend": "unsloth", "gpu": "24gb", "smoke_test": "skip"})
    assert result.exit_code == 0, result.exception
    assert result.context["backend"] == "unsloth"
    root = Path(result.project_path)
    assert "FastLanguageModel.from_pretrained" in (root / result.context["package_name"] / "model.py").read_text()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/test_configs.py", "tests/test_smoke.py", "tests/test_registry.py"],
                          cwd=root, capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "skipped" not in summary, summary
