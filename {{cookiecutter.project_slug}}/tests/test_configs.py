"""Every config parses through TrlParser into a valid GRPOConfig and meets the batch rule."""

from pathlib import Path

import pytest
import yaml
from _pkg import mod

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
selfcheck = mod("selfcheck")


def test_every_gpu_preset_and_smoke_is_there():
    names = {path.stem for path in CONFIGS}
    assert names == {"cpu-only", "8gb", "16gb", "24gb", "40-48gb", "80gb", "8x80gb", "smoke"}


@pytest.fixture(scope="module")
def parser():
    return mod("config").parser()  # the one TrlParser train.py uses


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_config_builds_grpo_config(path, parser, tmp_path):
    # This machine may have no GPU: use_cpu lets bf16 presets construct here; nothing else is changed.
    script_args, training_args, model_args, _task_args = parser.parse_args_and_config(
        ["--config", str(path), "--output_dir", str(tmp_path), "--use_cpu", "true"]
    )
    raw = yaml.safe_load(path.read_text())
    processes = script_args.num_processes
    assert training_args.generation_batch_size == raw["per_device_train_batch_size"] * raw.get(
        "gradient_accumulation_steps", 1
    )
    assert (training_args.generation_batch_size * processes) % training_args.num_generations == 0
    assert training_args.num_generations == raw["num_generations"]
    assert len(training_args.reward_weights) == len(script_args.reward_funcs)
    assert set(script_args.reward_funcs) <= set(mod("rewards").REWARD_FUNCS)
    assert model_args.model_name_or_path == raw["model_name_or_path"]
    assert selfcheck.check_config(raw) == []


def test_batch_rule_catches_a_bad_config():
    bad = {
        "per_device_train_batch_size": 6, "gradient_accumulation_steps": 1, "num_generations": 4,
        "max_completion_length": 64, "max_prompt_length": 64, "reward_funcs": ["correctness"], "reward_weights": [1.0],
    }
    assert "not divisible by num_generations=4" in selfcheck.check_config(bad)[0]
    assert selfcheck.check_config({**bad, "per_device_train_batch_size": 8}) == []
    assert "unknown reward" in selfcheck.check_config({**bad, "per_device_train_batch_size": 8,
                                                       "reward_funcs": ["nope"]})[0]


def test_selfcheck_passes():
    assert selfcheck.compile_all() == []
    assert selfcheck.check_configs() == []
    problems, unchecked = selfcheck.reward_selfcheck(selfcheck.load_sample())
    assert problems == [] and unchecked == 0


@pytest.mark.parametrize("name", ["ddp", "zero2", "zero3", "fsdp"])
def test_accelerate_configs_load(name):
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(str(ROOT / "configs" / "accelerate" / f"{name}.yaml"))
    expected = {"ddp": "MULTI_GPU", "zero2": "DEEPSPEED", "zero3": "DEEPSPEED", "fsdp": "FSDP"}[name]
    assert config.distributed_type.value == expected
    assert config.num_processes == 8
