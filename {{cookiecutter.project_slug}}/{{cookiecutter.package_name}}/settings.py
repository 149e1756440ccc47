"""The one table of defaults: what every command that reads a config as plain YAML (the memory estimator, the
doctor, launch and download checks, eval, chat, filter, format priming, the self-check) takes for a setting the
config leaves out, read through ``setting(config, key)``. The project's own settings have their default here only
(``GRPOScriptArguments`` in config.py takes it from this table); TRL's keys hold the defaults of its ``GRPOConfig``
and ``ModelConfig``, and a test checks them against those dataclasses. ``read_yaml`` is the one reader of config
files. Stdlib, and PyYAML to read a file: the self-check runs in cookiecutter's interpreter."""

from __future__ import annotations

import os
from collections.abc import Mapping

DEFAULTS = {
    # GRPOScriptArguments (config.py takes these defaults from here; dataset_* are TRL's ScriptArguments')
    "dataset_name": None,
    "dataset_train_split": "train",
    "dataset_test_split": "test",
    "reward_funcs": ["correctness", "format"],
    "max_prompt_length": 512,  # longer prompts are dropped
    "eval_fraction": 0.1,
    "build_tiny_model": False,
    "format_priming_steps": 0,
    "format_priming_lr": 1e-5,
    "format_priming_batch_size": 8,
    "num_processes": 1,
    "cpu_threads": 0,  # torch's default
    "model_backend": "trl",
    "eval_num_samples": 1,
    # GRPOConfig (TRL, on transformers' TrainingArguments)
    "output_dir": "trainer_output",
    "seed": 42,
    "max_completion_length": 512,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "steps_per_generation": None,  # gradient_accumulation_steps
    "generation_batch_size": None,  # per_device_train_batch_size x processes x steps_per_generation
    "num_generations": 8,
    "reward_weights": None,  # 1.0 each
    "beta": 0.0,
    "optim": "adamw_torch_fused",
    "gradient_checkpointing": True,
    "bf16": None,  # TRL: bf16 unless fp16 is set (GPU); the estimator reads unset as no mixed precision
    "use_cpu": False,
    "save_total_limit": None,
    "report_to": "none",
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": 0,
    "repetition_penalty": 1.0,
    "chat_template_kwargs": None,
    "trust_remote_code": False,
    "use_vllm": False,
    "vllm_mode": "colocate",
    "vllm_gpu_memory_utilization": 0.3,
    "vllm_tensor_parallel_size": 1,
    "vllm_max_model_length": None,  # vLLM: the model's whole context
    "vllm_enable_sleep_mode": False,
    "ds3_gather_for_generation": True,
    # ModelConfig (TRL)
    "model_name_or_path": None,
    "model_revision": "main",
    "dtype": "float32",
    "lora_r": 16,
    "lora_dropout": 0.05,
    "lora_target_modules": None,
    "use_peft": False,
    "load_in_4bit": False,
    "load_in_8bit": False,
}


class ConfigError(ValueError):
    """A bad config file, setting or command-line option; its message is one line that names it and the fix, and
    ``key`` the setting or option it is about (None: the file itself)."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def read_yaml(path: str | os.PathLike) -> dict:
    """A config file's settings as a dict: the one reader of config files (train.py's parser, the doctor and the
    memory estimator, the priming command, the self-check). A missing file, text that is not UTF-8 or not YAML, or
    YAML that is not a mapping is a ConfigError that says which line of the file to fix. PyYAML, imported here."""
    import yaml

    path = str(path)
    if not os.path.isfile(path):
        raise ConfigError(f"config file {path!r} does not exist; pass --config configs/<preset>.yaml")
    try:
        with open(path, encoding="utf-8") as handle:
            settings = yaml.safe_load(handle)
    except UnicodeDecodeError as error:
        raise ConfigError(f"config {path!r} is not UTF-8 text ({error.reason}); is it the right file?") from error
    except yaml.YAMLError as error:
        mark = getattr(error, "context_mark", None) or getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error).strip().splitlines()[0]
        raise ConfigError(f"config {path!r} is not valid YAML{where}: {problem}; fix that line") from error
    if settings is None:
        raise ConfigError(f"config {path!r} is empty: it needs settings, one `key: value` per line "
                          f"(start from a preset in configs/)")
    if not isinstance(settings, dict):
        kind = {list: "a list", str: "a line of text"}.get(type(settings), type(settings).__name__)
        raise ConfigError(f"config {path!r} must be a mapping of settings (one `key: value` per line), not {kind}")
    return settings


def use_cpu_threads(count: int) -> None:
    """Give torch ``count`` threads (0: leave its default). A tiny model gains nothing from more than one, and
    beside other work on the machine more threads wait on each other: two smoke runs side by side on 2 cores took
    245 s each with torch's default and 33 s with one thread each."""
    if count:
        import torch

        torch.set_num_threads(int(count))


# Settings whose default follows from others (None in DEFAULTS): what TRL computes when the config leaves them out.
DERIVED = {
    "steps_per_generation": lambda config: setting(config, "gradient_accumulation_steps"),
    "generation_batch_size": lambda config: int(setting(config, "per_device_train_batch_size"))
    * int(setting(config, "num_processes")) * int(setting(config, "steps_per_generation")),
    "reward_weights": lambda config: [1.0] * len(setting(config, "reward_funcs")),
}


def setting(config: Mapping, key: str):
    """``config[key]``, or the value train.py would use when the config leaves it out (or null): the table's, or
    for a derived setting the value computed from the others."""
    value = config.get(key)
    if value is not None:
        return value
    return DERIVED[key](config) if key in DERIVED else DEFAULTS[key]


def flag(config: Mapping, key: str) -> bool:
    """A yes/no setting as a bool: YAML's true/false, or the text a command line gives ("true", "1", "on")."""
    value = setting(config, key)
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)
