"""Reward registry: every name usable in a config's ``reward_funcs`` maps to one function here.

Each function follows TRL's convention ``f(prompts=..., completions=..., **dataset_columns) -> list[float | None]``,
returns an *unweighted* score (weights live in the YAML ``reward_weights``) and never raises. Its ``__name__``
equals its registry key, so TRL logs it as ``rewards/<name>/mean``.

To add a reward: write the function (see ``common.py`` for the ``register`` helper), add it to this dict, and list
its name in ``reward_funcs`` (with a weight in ``reward_weights``) in your config.
"""

from __future__ import annotations

from collections.abc import Callable

from . import task as task_rewards
from .common import SHARED_REWARDS

REWARD_FUNCS: dict[str, Callable[..., list[float | None]]] = {**SHARED_REWARDS, **task_rewards.TASK_REWARDS}

__all__ = ["REWARD_FUNCS"]
