"""Reward registry: every name usable in a config's ``reward_funcs`` maps to one reward here.

Each reward follows TRL's convention ``f(prompts=..., completions=..., **dataset_columns) -> list[float | None]``,
returns an *unweighted* score (weights live in the YAML ``reward_weights``) and never raises. ``@register(name)``
(or ``@per_completion(name)``) in ``common.py`` adds a reward under the name TRL logs (``rewards/<name>/mean``);
``@factory(name)`` adds one that is built per run from :class:`RewardSettings` (``length`` is bound to the run's
``max_completion_length``, the code task's ``correctness`` to a sandbox with the config's settings). The task's
own rewards are in ``task.py``. A name with a dot (``mymodule.my_reward``) is imported instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from . import task as task_rewards  # noqa: F401  (registers the task's rewards)
from .common import FACTORIES, REGISTRY, RewardFunc, RewardSettings

REWARD_FUNCS: dict[str, RewardFunc] = REGISTRY  # the rewards that need no run settings


def reward_names() -> list[str]:
    """Every name a config's ``reward_funcs`` can use without a dot."""
    return sorted({*REGISTRY, *FACTORIES})


def load_dotted(name: str) -> RewardFunc:
    """``module.function`` imported (TRL's fallback for rewards outside the registry)."""
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def check_reward_config(names: Sequence[str], weights: Sequence[float] | None) -> list[str]:
    """Problems with a config's ``reward_funcs``/``reward_weights``, one line each (train, eval and selfcheck)."""
    return [message for _, message in reward_config_problems(names, weights)]


def reward_config_problems(names: Sequence[str], weights: Sequence[float] | None) -> list[tuple[str, str]]:
    """:func:`check_reward_config`'s problems as (setting, message) pairs."""
    problems = []
    known = reward_names()
    unknown = [name for name in names if name not in known and "." not in name]
    for name in (n for n in names if n not in known and "." in n):
        try:
            load_dotted(name)
        except (ImportError, AttributeError, ValueError):
            unknown.append(name)
    if unknown:
        problems.append(("reward_funcs", f"unknown reward function(s) {unknown}; known: {known}"))
    if weights is not None and len(weights) != len(names):
        problems.append(("reward_weights", f"reward_weights has {len(weights)} entries for {len(names)} reward_funcs"))
    if not names:
        problems.append(("reward_funcs", "reward_funcs is empty"))
    return problems


def build_reward(name: str, settings: RewardSettings) -> RewardFunc:
    """The reward ``name`` for a run: built from ``settings`` when it has a factory, else as registered."""
    if name in FACTORIES:
        return FACTORIES[name](settings)
    return REGISTRY[name] if name in REGISTRY else load_dotted(name)


def build_reward_funcs(names: Sequence[str], settings: RewardSettings) -> list[RewardFunc]:
    """The config's rewards, in order (open-r1's ``get_reward_funcs``)."""
    return [build_reward(name, settings) for name in names]


__all__ = [
    "REWARD_FUNCS", "RewardSettings", "build_reward", "build_reward_funcs", "check_reward_config", "load_dotted",
    "reward_config_problems",
    "reward_names",
]  # fmt: skip
