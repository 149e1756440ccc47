"""The settings' rules: one table, checked in one pass over a config's merged settings (the file's values with the
command line's over them) by train.py's parser (``config.parse_args``), the doctor, eval and the self-check, before
any dataclass is built. Each problem is one line that starts with the key. Stdlib + the reward registry only: the
self-check runs it in cookiecutter's interpreter.

A task's own settings (``task.TaskArguments``) check themselves, as TRL's dataclasses do; the difficulty pool's
bounds live in ``PoolSettings`` below (the pool itself: ``training/difficulty.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .constants import BACKENDS
from .hub import shaped_like_hub_id
from .rewards import reward_config_problems
from .settings import setting


def _number(value: object) -> float | None:
    """A setting's numeric value: a number, or text a number parses from (YAML reads ``1e-5`` as text; the config
    parser converts it); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    try:
        return float(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _whole(test: Callable[[float], bool]) -> Callable[[object], bool]:
    def check(value: object) -> bool:
        number = _number(value)
        return number is not None and number == int(number) and test(number)

    return check


def _real(test: Callable[[float], bool]) -> Callable[[object], bool]:
    def check(value: object) -> bool:
        number = _number(value)
        return number is not None and test(number)

    return check


POSITIVE_INT = (_whole(lambda n: n > 0), "must be a positive integer")
POSITIVE = (_real(lambda n: n > 0), "must be a positive number")

# key: (test of the value, what the value must be). A key is checked when the settings give it.
RULES: dict[str, tuple[Callable[[object], bool], str]] = {
    "max_completion_length": POSITIVE_INT,
    "max_prompt_length": POSITIVE_INT,
    "per_device_train_batch_size": POSITIVE_INT,
    "gradient_accumulation_steps": POSITIVE_INT,
    "num_processes": POSITIVE_INT,
    "eval_num_samples": POSITIVE_INT,
    "learning_rate": POSITIVE,
    "temperature": POSITIVE,
    "format_priming_lr": POSITIVE,
    "num_generations": (_real(lambda n: n >= 2), "must be at least 2 (GRPO compares a group)"),
    "format_priming_steps": (_real(lambda n: n >= 0), "must be 0 (none) or more"),
    "cpu_threads": (_whole(lambda n: n >= 0), "must be 0 (torch's default) or a positive integer"),
    "eval_fraction": (_real(lambda n: 0 < n < 1), "must be between 0 and 1 (e.g. 0.1)"),
    "model_backend": (lambda value: value in BACKENDS, f"must be one of {', '.join(BACKENDS)}"),
}


def check_values(config: Mapping, typed: frozenset[str] | set[str] = frozenset()) -> list[tuple[str, str]]:
    """Problems with the settings a config gives, as (key, message) pairs, each message one line that starts with
    the key: the table's rules, the reward names and their weights, then where a tiny model may be built (``typed``:
    the keys the command line gave)."""
    problems = [(key, f"{key}: {config[key]!r} {wanted}") for key, (test, wanted) in RULES.items()
                if key in config and not test(config[key])]
    tiny = [("model_name_or_path", message) for message in tiny_model_problems(config, typed)]
    return problems + reward_problems(config) + tiny


def tiny_model_problems(config: Mapping, typed: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """A config that builds the smoke run's random-weight model (``build_tiny_model: true``) builds it only at the
    path its file names, and never at a name shaped like a hub id: a model typed on the command line (or a hub id)
    would otherwise be silently replaced by a random one, written into the project."""
    name = config.get("model_name_or_path")
    if not config.get("build_tiny_model") or not isinstance(name, str):
        return []
    typed_model = "model_name_or_path" in typed and "build_tiny_model" not in typed  # the file asked to build it
    if typed_model or shaped_like_hub_id(name):
        where = "the command line's model" if typed_model else "a hub id"
        return [f"model_name_or_path: {name!r} is {where}, but this config builds a random-weight tiny model at "
                f"model_name_or_path (build_tiny_model: true, the smoke run's); to train {name} use a preset "
                f"(--config configs/<preset>.yaml), or add --build_tiny_model false to load it with these settings"]
    return []


def reward_problems(config: Mapping) -> list[tuple[str, str]]:
    """reward_funcs is a list of known names, reward_weights numbers, one per name (checked when either is given)."""
    names, weights = config.get("reward_funcs"), config.get("reward_weights")
    if isinstance(names, str):
        return [("reward_funcs",
                 f"reward_funcs: {names!r} must be a list of reward names (write reward_funcs: [{names}])")]
    if weights is not None and not (isinstance(weights, list) and all(_number(w) is not None for w in weights)):
        return [("reward_weights",
                 f"reward_weights: {weights!r} must be a list of numbers, one per reward_funcs entry")]
    if "reward_funcs" in config or "reward_weights" in config:
        return reward_config_problems(setting(config, "reward_funcs"), weights)
    return []


BATCH_KEYS = ("per_device_train_batch_size", "gradient_accumulation_steps", "num_processes", "num_generations")


def check_config(config: Mapping) -> list[str]:
    """Problems with one whole config file (the self-check's and the doctor's view): the values, the lengths every
    preset states, and the batch rule (the generation batch divisible by ``num_generations``)."""
    pairs = check_values(config)
    problems = [message for _, message in pairs]
    problems += [f"{key} is not set" for key in ("max_completion_length", "max_prompt_length") if key not in config]
    if any(key in BATCH_KEYS for key, _ in pairs):
        return problems
    try:
        per_device, accumulation, processes, generations = (int(setting(config, key)) for key in BATCH_KEYS)
        steps = int(setting(config, "steps_per_generation"))
        batch = int(setting(config, "generation_batch_size"))
    except (TypeError, ValueError) as error:
        return [*problems, f"a batch setting is not an integer: {error}"]
    if batch % generations:
        problems.append(f"generation batch {batch} (= {per_device} per device x {processes} processes x {steps} "
                        f"steps) is not divisible by num_generations={generations}")
    return problems


@dataclass
class PoolSettings:
    retire_after: int = 2
    revisit_prob: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.retire_after < 1:
            raise ValueError(f"pool_retire_after must be at least 1, got {self.retire_after}")
        if not 0.0 <= self.revisit_prob <= 1.0:
            raise ValueError(f"pool_revisit_prob must be in [0, 1], got {self.revisit_prob}")


def pool_settings(script_args, seed: int = 0) -> PoolSettings | None:
    """The pool settings of a config's script arguments, None when the pool is off; bad values raise ValueError."""
    settings = PoolSettings(
        retire_after=int(getattr(script_args, "pool_retire_after", 2)),
        revisit_prob=float(getattr(script_args, "pool_revisit_prob", 0.1)),
        seed=seed,
    )
    return settings if getattr(script_args, "difficulty_pool", False) else None
