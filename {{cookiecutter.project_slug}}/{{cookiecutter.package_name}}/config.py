"""The typed configuration: the script arguments, parsed with TRL's GRPOConfig and ModelConfig and the task's own
TaskArguments by one TrlParser, from a YAML preset with command-line overrides."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import typing
from dataclasses import dataclass, field

from trl import GRPOConfig, ModelConfig, ScriptArguments, TrlParser

from . import task
from .constants import AUDIT_MAX_FALSE_NEGATIVE, AUDIT_MAX_FALSE_POSITIVE, AUDIT_ROWS, BACKENDS
from .known import (  # noqa: F401 - re-exported: the parser's first checks
    _type_problem,
    check_options,
    check_yaml,
    glue_negative_values,
    raise_first,
    with_default_config,
)
from .rewards import reward_names
from .rules import check_values, pool_settings
from .settings import DEFAULTS, ConfigError, read_yaml  # noqa: F401 - ConfigError: the parser's error, re-exported


@dataclass
class GRPOScriptArguments(ScriptArguments):
    """Script arguments on top of TRL's (dataset_name, dataset_config, dataset_train_split, dataset_test_split).
    Defaults that other commands read too come from the one table, ``settings.DEFAULTS``."""

    reward_funcs: list[str] = field(
        default_factory=lambda: list(DEFAULTS["reward_funcs"]),
        metadata={"help": f"Reward names, one weight each in reward_weights. Known: {reward_names()}"},
    )
    max_prompt_length: int = field(
        default=DEFAULTS["max_prompt_length"], metadata={"help": "Prompts longer than this (tokens) are dropped."}
    )
    eval_fraction: float = field(
        default=DEFAULTS["eval_fraction"], metadata={"help": "Seeded hold-out when the dataset has no test split."}
    )
    system_prompt: str | None = field(default=None, metadata={"help": "Override the format's system prompt."})
    build_tiny_model: bool = field(
        default=DEFAULTS["build_tiny_model"],
        metadata={"help": "Build a tiny random-weight model at model_name_or_path from the dataset (smoke runs)."},
    )
    format_priming_steps: int = field(
        default=DEFAULTS["format_priming_steps"],
        metadata={"help": "SFT steps on gold completions before GRPO (0 = none); see training/priming.py."}
    )
    format_priming_lr: float = field(
        default=DEFAULTS["format_priming_lr"], metadata={"help": "Learning rate of format priming (peak)."}
    )
    format_priming_batch_size: int = field(
        default=DEFAULTS["format_priming_batch_size"], metadata={"help": "Gold completions per priming step."}
    )
    format_priming_target_loss: float | None = field(
        default=None, metadata={"help": "Stop priming once its loss is below this (format_priming_steps is the cap)."}
    )
    num_processes: int = field(
        default=DEFAULTS["num_processes"], metadata={"help": "Training processes this preset's batch is sized for."}
    )
    cpu_threads: int = field(
        default=DEFAULTS["cpu_threads"],
        metadata={"help": "torch threads per process on CPU (0 = torch's default, one per core)."}
    )
    auto_resume: bool = field(default=True, metadata={"help": "Resume from the last checkpoint in output_dir."})
    model_backend: str = field(
        default=DEFAULTS["model_backend"],
        metadata={"help": f"Model loading, one of {BACKENDS}: transformers + PEFT, or Unsloth (GPU only)."},
    )
    eval_num_samples: int = field(
        default=DEFAULTS["eval_num_samples"], metadata={"help": "eval.py's default samples per prompt (1 = greedy)."}
    )
    health_monitor: bool = field(default=True, metadata={"help": "Warn on unhealthy metrics; write health.json."})
    health_window: int | None = field(default=None, metadata={"help": "Steps a health condition must last (10)."})
    health_zero_std_max: float | None = field(default=None, metadata={"help": "frac_reward_zero_std alarm (0.9)."})
    health_clipped_max: float | None = field(default=None, metadata={"help": "Clipped-ratio alarm (0.5)."})
    difficulty_pool: bool = field(
        default=False, metadata={"help": "Retire prompts (one entry per distinct prompt) whose groups all score alike."}
    )
    pool_retire_after: int = field(default=2, metadata={"help": "Consecutive all-same visits before retiring."})
    pool_revisit_prob: float = field(default=0.1, metadata={"help": "Chance a retired prompt is drawn on its turn."})
    audit: bool = field(
        default=True, metadata={"help": "Audit the correctness reward on training rows before training (audit.py)."}
    )
    audit_rows: int = field(default=AUDIT_ROWS, metadata={"help": "Rows the audit samples."})
    audit_reward: str | None = field(
        default=None,
        metadata={"help": "Reward to audit; unset: correctness if listed, else the first dotted reward_funcs name."},
    )
    audit_max_false_negative: float = field(
        default=AUDIT_MAX_FALSE_NEGATIVE, metadata={"help": "Refuse to train above this gold-missed rate."}
    )
    audit_max_false_positive: float = field(
        default=AUDIT_MAX_FALSE_POSITIVE, metadata={"help": "Refuse to train above this wrong-credited rate."}
    )


Arguments = tuple[GRPOScriptArguments, GRPOConfig, ModelConfig, "task.TaskArguments"]


class Parser(TrlParser):
    """TRL's parser with no abbreviated options (``--learning_rat`` is refused, not read as ``--learning_rate``) and
    argparse's errors as one ConfigError line instead of the usage text."""

    def __init__(self, dataclass_types) -> None:
        super().__init__(dataclass_types, allow_abbrev=False)

    def error(self, message: str):
        raise ConfigError(f"{message} (see python train.py --help)")


def parser() -> TrlParser:
    return Parser((GRPOScriptArguments, GRPOConfig, ModelConfig, task.TaskArguments))


def field_hints() -> dict[str, object]:
    hints = {}
    for kind in (GRPOScriptArguments, GRPOConfig, ModelConfig, task.TaskArguments):
        resolved = typing.get_type_hints(kind)
        hints.update({f.name: resolved[f.name] for f in dataclasses.fields(kind) if f.init})
    return hints


def parse_args(argv: list[str]) -> Arguments:
    """(script_args, training_args, model_args, task_args) from ``--config`` (default: the project's preset).
    Every problem with the file, its settings or the options is one ConfigError line, found before anything runs:
    the file and its keys, then the command line's values as the parser converts them, then one pass of the rules
    (``rules.py``) over the merged settings, then the dataclasses' own checks (TRL's, the task's)."""
    argv = with_default_config(argv)
    path = argv[1] if len(argv) > 1 else ""
    the_parser = parser()
    known = {action.dest for action in the_parser._actions}
    check_options(argv[2:], known | {"config"})
    settings = read_yaml(path)
    check_yaml(settings, path, known, field_hints())
    options = command_line_values(the_parser, argv[2:])
    raise_first(path, check_values({**settings, **options}, set(options)), set(options))
    try:
        return tuple(the_parser.parse_args_and_config(argv))
    except ConfigError:
        raise
    except (ValueError, TypeError, ZeroDivisionError) as error:  # a dataclass's own check (TRL, the task)
        text = str(error).strip().splitlines()
        raise ConfigError(f"{path}: {text[0] if text else type(error).__name__}") from error


def command_line_values(the_parser: TrlParser, options: list[str]) -> dict:
    """The settings the command line gives, converted as the parser converts them (its errors are one line)."""
    given = {arg[2:].split("=", 1)[0] for arg in options if arg.startswith("--")}
    namespace, _ = argparse.ArgumentParser.parse_known_args(the_parser, options)
    return {key: getattr(namespace, key) for key in given if hasattr(namespace, key)}


def check_arguments(script_args: GRPOScriptArguments, training_args: GRPOConfig) -> None:
    """The difficulty pool's bounds (``rules.PoolSettings``), and a note when the launch's process
    count is not the one the preset's batch is sized for."""
    pool_settings(script_args)  # bad pool values raise here
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size != script_args.num_processes:
        print(
            f"note: this preset is sized for {script_args.num_processes} process(es), running with {world_size}; "
            f"prompts per step = {training_args.generation_batch_size // training_args.num_generations}",
            file=sys.stderr,
        )
