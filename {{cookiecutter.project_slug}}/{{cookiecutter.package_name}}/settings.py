"""Defaults of the settings that the commands reading a config as plain YAML (the memory estimator, the doctor,
eval, chat, filter and format priming) fall back on: the values train.py's parser gives the same keys
(``GRPOConfig``, ``ScriptArguments``), one table that a test checks against those dataclasses. Stdlib only."""

from __future__ import annotations

from collections.abc import Mapping

DEFAULTS = {
    "max_prompt_length": 512,  # ScriptArguments: longer prompts are dropped
    "max_completion_length": 512,  # GRPOConfig
    "seed": 42,  # GRPOConfig (TrainingArguments)
    "cpu_threads": 0,  # GRPOScriptArguments: torch's default
}


def use_cpu_threads(count: int) -> None:
    """Give torch ``count`` threads (0: leave its default). A tiny model gains nothing from more than one, and
    beside other work on the machine more threads wait on each other: two smoke runs side by side on 2 cores took
    245 s each with torch's default and 33 s with one thread each."""
    if count:
        import torch

        torch.set_num_threads(int(count))


def setting(config: Mapping, key: str):
    """``config[key]``, or the value train.py would use when the config leaves it out (or null)."""
    value = config.get(key)
    return DEFAULTS[key] if value is None else value
