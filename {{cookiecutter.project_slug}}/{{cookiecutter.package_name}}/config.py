"""The typed configuration: the script arguments, parsed with TRL's GRPOConfig and ModelConfig and the task's own
TaskArguments by one TrlParser, from a YAML preset with command-line overrides."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from trl import GRPOConfig, ModelConfig, ScriptArguments, TrlParser

from . import DEFAULT_CONFIG, difficulty, task
from .backend import BACKENDS
from .rewards import check_reward_config, reward_names


@dataclass
class GRPOScriptArguments(ScriptArguments):
    """Script arguments on top of TRL's (dataset_name, dataset_config, dataset_train_split, dataset_test_split)."""

    reward_funcs: list[str] = field(
        default_factory=lambda: ["correctness", "format"],
        metadata={"help": f"Reward names, one weight each in reward_weights. Known: {reward_names()}"},
    )
    max_prompt_length: int = field(default=512, metadata={"help": "Prompts longer than this (tokens) are dropped."})
    eval_fraction: float = field(default=0.1, metadata={"help": "Seeded hold-out when the dataset has no test split."})
    system_prompt: str | None = field(default=None, metadata={"help": "Override the format's system prompt."})
    build_tiny_model: bool = field(
        default=False,
        metadata={"help": "Build a tiny random-weight model at model_name_or_path from the dataset (smoke runs)."},
    )
    format_priming_steps: int = field(
        default=0, metadata={"help": "SFT steps on gold completions before GRPO (0 = none); see priming.py."}
    )
    format_priming_lr: float = field(default=3e-3, metadata={"help": "Learning rate of format priming."})
    num_processes: int = field(default=1, metadata={"help": "Training processes this preset's batch is sized for."})
    auto_resume: bool = field(default=True, metadata={"help": "Resume from the last checkpoint in output_dir."})
    model_backend: str = field(
        default="trl",
        metadata={"help": f"Model loading, one of {BACKENDS}: transformers + PEFT, or Unsloth (GPU only)."},
    )
    eval_num_samples: int = field(default=1, metadata={"help": "eval.py's default samples per prompt (1 = greedy)."})
    health_monitor: bool = field(default=True, metadata={"help": "Warn on unhealthy metrics; write health.json."})
    health_window: int | None = field(default=None, metadata={"help": "Steps a health condition must last (10)."})
    health_zero_std_max: float | None = field(default=None, metadata={"help": "frac_reward_zero_std alarm (0.9)."})
    health_clipped_max: float | None = field(default=None, metadata={"help": "Clipped-ratio alarm (0.5)."})
    difficulty_pool: bool = field(default=False, metadata={"help": "Retire prompts whose groups all score alike."})
    pool_retire_after: int = field(default=2, metadata={"help": "Consecutive all-same visits before retiring."})
    pool_revisit_prob: float = field(default=0.1, metadata={"help": "Chance a retired prompt is drawn on its turn."})


Arguments = tuple[GRPOScriptArguments, GRPOConfig, ModelConfig, "task.TaskArguments"]


def parser() -> TrlParser:
    return TrlParser((GRPOScriptArguments, GRPOConfig, ModelConfig, task.TaskArguments))


def with_default_config(argv: list[str]) -> list[str]:
    if any(a == "--config" or a.startswith("--config=") for a in argv):
        return argv
    return ["--config", DEFAULT_CONFIG, *argv]


def parse_args(argv: list[str]) -> Arguments:
    """(script_args, training_args, model_args, task_args) from ``--config`` (default: the project's preset)."""
    return tuple(parser().parse_args_and_config(with_default_config(argv)))


def check_arguments(script_args: GRPOScriptArguments, training_args: GRPOConfig) -> None:
    """Refuse configurations TRL would only reject later (or silently mis-train on), with one line each."""
    problems = check_reward_config(script_args.reward_funcs, training_args.reward_weights)
    if script_args.model_backend not in BACKENDS:
        problems.append(f"model_backend={script_args.model_backend!r} is not one of {', '.join(BACKENDS)}")
    if problems:
        raise ValueError(problems[0])
    difficulty.pool_settings(script_args)  # bad pool values raise here
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size != script_args.num_processes:
        print(
            f"note: this preset is sized for {script_args.num_processes} process(es), running with {world_size}; "
            f"prompts per step = {training_args.generation_batch_size // training_args.num_generations}",
            file=sys.stderr,
        )
