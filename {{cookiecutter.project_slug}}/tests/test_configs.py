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
    memory = mod("preflight.memory")
    stated = ESTIMATE.search(path.read_text())
    assert stated, f"{path.name} states no estimated peak"
    config = memory.load_config(path)
    try:
        # a multi-process preset is launched under DeepSpeed ZeRO-3 (its comment and launch line say so)
        launch = mod("preflight.launch").from_accelerate_config(ROOT / "configs" / "accelerate" / "zero3.yaml") if int(
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
    memory = mod("preflight.memory")
    config = memory.load_config(ROOT / "configs" / "8gb.yaml")
    if config.get("model_name_or_path") not in memory.KNOWN_MODELS:
        pytest.skip("the preset's model was replaced at generation")
    assert memory.estimate(config, 7.3).total <= 0.85 * 7.3


def test_the_defaults_table_is_what_train_py_parses():
    # The plain-YAML readers fall back on settings.DEFAULTS; train.py's dataclasses give the same keys these values.
    from dataclasses import MISSING, fields

    from trl import GRPOConfig, ModelConfig

    parsed = {}
    for kind in (mod("task").TaskArguments, ModelConfig, GRPOConfig, mod("config").GRPOScriptArguments):
        for f in fields(kind):
            parsed[f.name] = f.default_factory() if f.default is MISSING and f.default_factory is not MISSING \
                else f.default
    parsed["output_dir"] = GRPOConfig(use_cpu=True).output_dir  # None in the field, set when the config is built
    table = mod("settings").DEFAULTS
    assert [key for key in table if key not in parsed] == []
    assert {key: value for key, value in table.items() if parsed[key] != value} == {}


def test_cpu_threads_sets_torchs_threads():
    import torch

    before = torch.get_num_threads()
    try:
        mod("settings").use_cpu_threads(0)  # 0: torch's default, untouched
        assert torch.get_num_threads() == before
        other = 2 if before == 1 else 1  # a count torch does not have yet (OMP_NUM_THREADS=1 starts it at 1)
        mod("settings").use_cpu_threads(other)
        assert torch.get_num_threads() == other
    finally:
        torch.set_num_threads(before)


def _fallbacks(source: str, keys: set[str]) -> list[tuple[int, str]]:
    """(line, key) of each ``x.get("key", default)`` and ``x.get("key") or default`` of a setting in ``source``; an
    empty value after ``or`` is allowed for a setting whose default is None (``dataset_name or ""``)."""
    import ast

    def key_of(node):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in keys):
            return node.args[0].value
        return None

    empty = ("''", '""', "{}", "[]", "None")
    found = []
    for node in ast.walk(ast.parse(source)):
        if key_of(node) and len(node.args) > 1:
            found.append((node.lineno, key_of(node)))
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and key_of(node.values[0]):
            key = key_of(node.values[0])
            if not (mod("settings").DEFAULTS.get(key) is None and ast.unparse(node.values[1]) in empty):
                found.append((node.lineno, key))
    return found


def test_settings_are_read_through_the_defaults_table():
    """No module falls back on a value of its own for a setting train.py parses: settings.setting(config, key)
    reads settings.DEFAULTS, the one table (eval's Settings.get reads it too)."""
    from dataclasses import fields

    from trl import GRPOConfig, ModelConfig

    keys = {f.name for kind in (GRPOConfig, ModelConfig, mod("config").GRPOScriptArguments) for f in fields(kind)}
    other_files = {("training/checkpoints.py", "num_train_epochs"): "trainer_state.json's",
                   ("preflight/launch.py", "num_processes"): "an accelerate config's"}  # a key of another file
    package = ROOT / mod("settings").__package__
    found = [f"{path.relative_to(ROOT)}:{line} {key}" for path in sorted(package.rglob("*.py"))
             if path.relative_to(package).as_posix() != "settings.py"
             for line, key in _fallbacks(path.read_text(encoding="utf-8"), keys)
             if (path.relative_to(package).as_posix(), key) not in other_files]
    assert found == []
    sample = 'a = c.get("seed", 42)\nb = c.get("output_dir") or "out"\nc = c.get("dataset_name") or ""\n'
    assert sorted(_fallbacks(sample, keys)) == [(1, "seed"), (2, "output_dir")]  # what the check finds
