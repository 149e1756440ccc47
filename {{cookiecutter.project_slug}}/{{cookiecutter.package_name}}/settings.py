"""Defaults of the settings that the commands reading a config as plain YAML (the memory estimator, the doctor,
eval, chat, filter and format priming) fall back on: the values train.py's parser gives the same keys
(``GRPOConfig``, ``ScriptArguments``), one table that a test checks against those dataclasses. Stdlib only."""

from __future__ import annotations

from collections.abc import Mapping

DEFAULTS = {
    "max_prompt_length": 512,  # ScriptArguments: longer prompts are dropped
    "max_completion_length": 512,  # GRPOConfig
    "seed": 42,  # GRPOConfig (TrainingArguments)
}


def setting(config: Mapping, key: str):
    """``config[key]``, or the value train.py would use when the config leaves it out (or null)."""
    value = config.get(key)
    return DEFAULTS[key] if value is None else value
