"""Reward registry: every name usable in a config's ``reward_funcs`` maps to one function here.

Each function follows TRL's convention ``f(prompts=..., completions=..., **dataset_columns) -> list[float | None]``,
returns an *unweighted* score (weights live in the YAML ``reward_weights``) and never raises. Its ``__name__``
equals its registry key, so TRL logs it as ``rewards/<name>/mean``. The task's own rewards are in ``task.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from . import task as task_rewards
from .common import SHARED_REWARDS

REWARD_FUNCS: dict[str, Callable[..., list[float | None]]] = {**SHARED_REWARDS, **task_rewards.TASK_REWARDS}


def check_reward_config(names: Sequence[str], weights: Sequence[float] | None) -> list[str]:
    """Problems with a config's ``reward_funcs``/``reward_weights``, one line each (train, eval and selfcheck)."""
    problems = []
    unknown = [name for name in names if name not in REWARD_FUNCS]
    if unknown:
        problems.append(f"unknown reward function(s) {unknown}; known: {sorted(REWARD_FUNCS)}")
    if weights is not None and len(weights) != len(names):
        problems.append(f"reward_weights has {len(weights)} entries for {len(names)} reward_funcs")
    if not names:
        problems.append("reward_funcs is empty")
    return problems


__all__ = ["REWARD_FUNCS", "check_reward_config"]
