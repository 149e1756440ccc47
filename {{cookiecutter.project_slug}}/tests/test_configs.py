"""Every config parses through TrlParser into a valid GRPOConfig and meets the batch rule."""

import re
from pathlib import Path

import pytest
import yaml
from _pkg import mod

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
selfcheck = mod("selfcheck")


PRESETS = [path for path in CONFIGS if path.stem != "smoke"]
ESTIMATE = re.compile(
    r"^# Estimated peak memory \(\S+\): (\d+\.\d) GiB[^(\n]*(?:\((\d+)% free\))?", re.M
)


def test_presets_are_the_files_and_the_readme_table():
    assert "smoke" in {path.stem for path in CONFIGS} and len(PRESETS) >= 2
    table = re.findall(r"^\| ([\w-]+) \| [^|]+\(", (ROOT / "README.md").read_text(), re.M)
    assert set(table) - {"preset"} == {path.stem for path in PRESETS}
    for path in PRESETS:
        assert path.read_text().startswith(f"# GPU preset {path.stem}:"), path.name


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_vllm_context_is_prompt_plus_completion(path):
    raw = yaml.safe_load(path.read_text())
    if raw.get("use_vllm"):
        assert raw["vllm_max_model_length"] == raw["max_prompt_length"] + raw["max_completion_length"]


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.stem)
def test_stated_estimate_is_the_estimators(path):
    memory = mod("memory")
    stated = ESTIMATE.search(path.read_text())
    assert stated, f"{path.name} states no estimated peak"
    config = memory.load_config(path)
    try:
        # a multi-process preset is launched under DeepSpeed ZeRO-3 (its comment and launch line say so)
        launch = mod("launch").from_accelerate_config(ROOT / "configs" / "accelerate" / "zero3.yaml") if int(
            config.get("num_processes", 1)) > 1 else None
        est = memory.estimate(config, memory.gpu_gb_from_preset(path), launch=launch)
    except memory.EstimateError:
        pytest.skip(f"{config.get('model_name_or_path')!r} is a user model the estimator has no facts for")
    if config.get("model_name_or_path") not in memory.KNOWN_MODELS:
        pytest.skip("the preset's model was replaced at generation; its comment states the default model's peak")
    # equal at the stated precision (0.1 GiB, 1%), whichever way the last digit was rounded
    assert abs(est.total - float(stated.group(1))) <= 0.05 + 1e-6, memory.report(est)
    if stated.group(2) is not None:
        assert abs(100 * est.margin - int(stated.group(2))) <= 0.5 + 1e-6, memory.report(est)


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
    assert set(script_args.reward_funcs) <= set(mod("rewards").reward_names())
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


def test_the_8gb_preset_leaves_a_sixth_of_a_desktop_card_free():
    """Desktop 8 GB cards leave ~7.3-7.6 GiB to a process (the display and the driver take the rest)."""
    memory = mod("memory")
    config = memory.load_config(ROOT / "configs" / "8gb.yaml")
    if config.get("model_name_or_path") not in memory.KNOWN_MODELS:
        pytest.skip("the preset's model was replaced at generation")
    assert memory.estimate(config, 7.3).total <= 0.85 * 7.3


def test_the_defaults_table_is_what_train_py_parses():
    # The plain-YAML readers fall back on settings.DEFAULTS; train.py's dataclasses give the same keys these values.
    from dataclasses import fields

    from trl import GRPOConfig

    script = {f.name: f.default for f in fields(mod("config").GRPOScriptArguments)}
    grpo = {f.name: f.default for f in fields(GRPOConfig)}
    for key, value in mod("settings").DEFAULTS.items():
        assert value == (script[key] if key in script else grpo[key]), key


def test_cpu_threads_sets_torchs_threads():
    import torch

    before = torch.get_num_threads()
    try:
        mod("settings").use_cpu_threads(0)  # 0: torch's default, untouched
        assert torch.get_num_threads() == before
        mod("settings").use_cpu_threads(1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
