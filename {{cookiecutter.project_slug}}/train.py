"""GRPO training for the {{ cookiecutter.task }} task with TRL's GRPOTrainer.

    python train.py                                   # the default preset, configs/{{ cookiecutter.gpu }}.yaml
    python train.py --config configs/24gb.yaml        # another GPU preset
    python train.py --config configs/smoke.yaml       # tiny random model on the sample data, CPU, about a minute
    python train.py --config configs/24gb.yaml --learning_rate 5e-6 --max_steps 200   # CLI overrides win

Every hyperparameter lives in the YAML config: GRPOConfig fields, TRL's ModelConfig fields and the script
arguments below. Training resumes from the last checkpoint in ``output_dir`` when there is one.
"""
{%- if cookiecutter.backend == "unsloth" %}

try:  # Unsloth must be imported before transformers and trl to patch them; it is GPU-only and optional on CPU
    import unsloth  # noqa: F401
except ImportError:
    unsloth = None
{%- endif %}

import os
import sys
from dataclasses import dataclass, field

from transformers.trainer_utils import get_last_checkpoint
from trl import GRPOConfig, ModelConfig, ScriptArguments, TrlParser

from {{ cookiecutter.package_name }} import data, difficulty, distributed, health, memory, model, priming,{% if cookiecutter.task == "code" %} sandbox,{% endif %} tiny
from {{ cookiecutter.package_name }}.rewards import REWARD_FUNCS, common{% if cookiecutter.task == "code" %}, code_task{% endif %}

DEFAULT_CONFIG = "configs/{{ cookiecutter.gpu }}.yaml"


@dataclass
class GRPOScriptArguments(ScriptArguments):
    """Script arguments on top of TRL's (dataset_name, dataset_config, dataset_train_split, dataset_test_split)."""

    reward_funcs: list[str] = field(
        default_factory=lambda: ["correctness", "format"],
        metadata={"help": f"Reward names, one weight each in reward_weights. Known: {sorted(REWARD_FUNCS)}"},
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
    eval_num_samples: int = field(default=1, metadata={"help": "eval.py's default samples per prompt (1 = greedy)."})
    health_monitor: bool = field(default=True, metadata={"help": "Warn on unhealthy metrics; write health.json."})
    health_window: int | None = field(default=None, metadata={"help": "Steps a health condition must last (10)."})
    health_zero_std_max: float | None = field(default=None, metadata={"help": "frac_reward_zero_std alarm (0.9)."})
    health_clipped_max: float | None = field(default=None, metadata={"help": "Clipped-ratio alarm (0.5)."})
    difficulty_pool: bool = field(default=False, metadata={"help": "Retire prompts whose groups all score alike."})
    pool_retire_after: int = field(default=2, metadata={"help": "Consecutive all-same visits before retiring."})
    pool_revisit_prob: float = field(default=0.1, metadata={"help": "Chance a retired prompt is drawn on its turn."})
{%- if cookiecutter.task == "code" %}
    sandbox_isolation: str = field(
        default="auto",
        metadata={"help": "Code sandbox: auto/required/bwrap (refuse without bubblewrap) or unsafe-rlimit-only."},
    )
    sandbox_timeout_s: float = field(default=3.0, metadata={"help": "Wall-clock limit per execution."})
    sandbox_memory_mb: int = field(default=512, metadata={"help": "Memory budget per execution (all processes)."})
{%- endif %}


def check_arguments(script_args: GRPOScriptArguments, training_args: GRPOConfig) -> None:
    """Refuse configurations TRL would only reject later (or silently mis-train on), with one line each."""
    unknown = [name for name in script_args.reward_funcs if name not in REWARD_FUNCS]
    if unknown:
        raise ValueError(f"unknown reward function(s) {unknown}; known: {sorted(REWARD_FUNCS)}")
    weights = training_args.reward_weights
    if weights is not None and len(weights) != len(script_args.reward_funcs):
        raise ValueError(
            f"reward_weights has {len(weights)} entries for {len(script_args.reward_funcs)} reward_funcs"
        )
    difficulty.pool_settings(script_args)  # bad pool values raise here
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size != script_args.num_processes:
        print(
            f"note: this preset is sized for {script_args.num_processes} process(es), running with {world_size}; "
            f"prompts per step = {training_args.generation_batch_size // training_args.num_generations}",
            file=sys.stderr,
        )


def main(script_args: GRPOScriptArguments, training_args: GRPOConfig, model_args: ModelConfig) -> None:
    train_split, eval_split = data.load_splits(
        script_args.dataset_name,
        script_args.dataset_config,
        script_args.dataset_train_split,
        script_args.dataset_test_split,
        eval_fraction=script_args.eval_fraction,
        seed=training_args.seed,
    )
    if script_args.build_tiny_model:
        with training_args.main_process_first(desc="tiny model"):  # built once, reused by the other ranks
            tiny.build_tiny_model(model_args.model_name_or_path, script_args.dataset_name)
    if script_args.format_priming_steps > 0:
        primed = os.path.join(training_args.output_dir, "format-primed")
        # The main process primes (only it may save under torch.distributed); the others wait, then reuse it.
        with training_args.main_process_first(desc="format priming"):
            if not os.path.isfile(os.path.join(primed, "config.json")):
                priming.prime(
                    model_args.model_name_or_path,
                    primed,
                    data.priming_rows(script_args.dataset_name, train_split, seed=training_args.seed),
                    steps=script_args.format_priming_steps,
                    learning_rate=script_args.format_priming_lr,
                    seed=training_args.seed,
                    system_prompt=script_args.system_prompt,
                    dtype=model_args.dtype,
                    use_cpu=training_args.use_cpu,
                    gradient_checkpointing=training_args.gradient_checkpointing,
                )
        model_args.model_name_or_path = primed
    common.configure_length(training_args.max_completion_length)
{%- if cookiecutter.task == "code" %}
    box = code_task.use_sandbox_config(sandbox.SandboxConfig(
        isolation=script_args.sandbox_isolation,
        timeout_s=script_args.sandbox_timeout_s,
        memory_mb=script_args.sandbox_memory_mb,
    ))
    # Start the workers now: without bubblewrap (and no explicit unsafe mode) this refuses before training starts.
    print(f"code sandbox: {box.start()} isolation", file=sys.stderr)
{%- endif %}

    if int(os.environ.get("RANK", "0")) == 0:  # the estimator's verdict for this GPU, before any weight is loaded
        settings = {**vars(model_args), **training_args.to_dict(), **vars(script_args)}
        for line in memory.check_fits(settings):
            print(f"warning: {line}", file=sys.stderr)
    policy, tokenizer, peft_config = model.load(model_args, training_args, script_args.max_prompt_length)
    splits = data.add_prompts(
        {"train": train_split, "eval": eval_split},
        tokenizer,
        max_prompt_length=script_args.max_prompt_length,
        system_prompt=script_args.system_prompt,
        chat_template_kwargs=training_args.chat_template_kwargs,
    )

    trainer_class, pool_kwargs = difficulty.trainer_class(script_args, seed=training_args.seed)
    trainer = trainer_class(
        **pool_kwargs,
        model=policy,
        reward_funcs=[REWARD_FUNCS[name] for name in script_args.reward_funcs],
        args=training_args,
        train_dataset=splits["train"],
        eval_dataset=splits["eval"] if training_args.eval_strategy != "no" else None,
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    if (monitor := health.monitor_from_args(script_args, training_args.beta)) is not None:
        trainer.add_callback(monitor)  # warnings while training, health.json at the end (see health.py)

    checkpoint = training_args.resume_from_checkpoint
    if checkpoint is None and script_args.auto_resume and os.path.isdir(training_args.output_dir):
        checkpoint = get_last_checkpoint(training_args.output_dir)
    if checkpoint:
        trainer.accelerator.print(f"resuming from {checkpoint}")
    trainer.train(resume_from_checkpoint=checkpoint)
    print(f"rank {trainer.accelerator.process_index}: finished at step {trainer.state.global_step}", flush=True)
    distributed.save_final_model(trainer, training_args.output_dir)  # checks the weights are on disk


def parse_args(argv: list[str]) -> tuple[GRPOScriptArguments, GRPOConfig, ModelConfig]:
    if not any(a == "--config" or a.startswith("--config=") for a in argv):
        argv = ["--config", DEFAULT_CONFIG, *argv]
    parser = TrlParser((GRPOScriptArguments, GRPOConfig, ModelConfig))
    return parser.parse_args_and_config(argv)


def one_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"error: {text.splitlines()[0] if text else type(error).__name__}"


if __name__ == "__main__":
    try:  # a bad config or bad data ends with one line that says what to fix, not a traceback
        script_args, training_args, model_args = parse_args(sys.argv[1:])
        check_arguments(script_args, training_args)
        distributed.check_launch(script_args, training_args, model_args)  # precision, priming under this launch
    except (ValueError, FileNotFoundError) as error:
        sys.exit(one_line(error))
    try:
        main(script_args, training_args, model_args)
    except {% if cookiecutter.task == "code" %}(data.DataError, sandbox.SandboxUnavailable, distributed.SaveError){% else %}(data.DataError, distributed.SaveError){% endif %} as error:
        sys.exit(one_line(error))
