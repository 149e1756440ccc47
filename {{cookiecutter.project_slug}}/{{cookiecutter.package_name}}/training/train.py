"""The training recipe: data, optional tiny model and format priming, model, rewards, GRPOTrainer, resume.

Run through the project's ``train.py`` (``python train.py --config configs/<preset>.yaml``); every
hyperparameter lives in the YAML config (see ``config.py``).
"""

from __future__ import annotations

import os
import shlex
import sys
import warnings

from transformers import PrinterCallback, ProgressCallback
from trl import GRPOConfig, ModelConfig

from .. import audit, config, data, hub, task
from ..preflight import memory
from ..preflight.launch_checks import checked_args
from ..rewards import RewardSettings, build_reward_funcs
from ..settings import use_cpu_threads
from . import checkpoints, difficulty, distributed, health, model, priming, recheck, tiny
from .progress import Interrupt, ProgressLine
from .vllm_check import attach as measure_sampler_gap


def main(
    script_args: config.GRPOScriptArguments,
    training_args: GRPOConfig,
    model_args: ModelConfig,
    task_args: task.TaskArguments,
) -> None:
    use_cpu_threads(script_args.cpu_threads)
    checkpoint = checkpoints.resume_point(training_args, script_args.auto_resume)  # before any expensive step
    if checkpoint and finished(checkpoint, training_args):
        return
    train_split, eval_split = data.load_splits(
        script_args.dataset_name,
        script_args.dataset_config,
        script_args.dataset_train_split,
        script_args.dataset_test_split,
        eval_fraction=script_args.eval_fraction,
        seed=training_args.seed,
    )
    # Rewards bound to this run's settings (the code task's sandbox starts here: a missing bubblewrap is reported
    # before priming or loading any weight).
    reward_settings = RewardSettings(training_args.max_completion_length, task_args)
    reward_funcs = build_reward_funcs(script_args.reward_funcs, reward_settings)
    # The verifier audit: gold completions credited, the hack catalogue not, by every weighted reward and their sum.
    audit.audit_before_training(script_args, train_split, reward_funcs, reward_settings, training_args.output_dir,
                                weights=training_args.reward_weights)
    # ... and while training: full-credit completions re-judged, the catalogue scored by the live rewards (recheck.py)
    reward_funcs, checker = recheck.from_args(script_args, training_args.reward_weights, reward_funcs,
                                              seed=training_args.seed)
    if script_args.build_tiny_model:
        # Built once, reused by the other ranks; on several nodes the first node builds it on the shared filesystem.
        with training_args.main_process_first(local=training_args.save_on_each_node, desc="tiny model"):
            tiny.build_tiny_model(
                model_args.model_name_or_path, script_args.dataset_name, system_prompt=script_args.system_prompt
            )
    if script_args.format_priming_steps > 0:
        model_args.model_name_or_path = format_primed(script_args, training_args, model_args, train_split)

    if int(os.environ.get("RANK", "0")) == 0:  # the estimator's verdict for this GPU, before any weight is loaded
        settings = {**vars(model_args), **training_args.to_dict(), **vars(script_args)}
        for line in memory.check_fits(settings):
            print(f"warning: {line}", file=sys.stderr)
    trainer = build_trainer(script_args, training_args, model_args, reward_funcs, train_split, eval_split, checker)
    run_trainer(trainer, training_args, checkpoint)


def format_primed(script_args: config.GRPOScriptArguments, training_args: GRPOConfig, model_args: ModelConfig,
                  train_split) -> str:
    """The format-primed model under output_dir (a short try: format-primed-try), primed now unless it is there
    (priming.py); its path."""
    primed, steps, note = priming.for_a_try(os.path.join(training_args.output_dir, "format-primed"),
                                            script_args.format_priming_steps, training_args.max_steps)
    if int(os.environ.get("RANK", "0")) == 0 and not checkpoints.is_model_dir(primed):
        settings = {**vars(model_args), **training_args.to_dict(), **vars(script_args)}
        if line := priming.refusal(settings):  # before priming loads any weight: what will not fit is refused
            sys.exit(f"error: {line}")
        if note:  # a short try primes as many steps as it trains, and says so
            print(note, file=sys.stderr)
    # The main process primes (only it may save under torch.distributed); the others wait, then reuse it.
    with training_args.main_process_first(local=training_args.save_on_each_node, desc="format priming"):
        if not checkpoints.is_model_dir(primed):  # saved atomically: there whole, or not at all
            priming.prime(
                model_args.model_name_or_path,
                primed,
                data.priming_rows(script_args.dataset_name, train_split, seed=training_args.seed),
                steps=steps,
                learning_rate=script_args.format_priming_lr,
                batch_size=script_args.format_priming_batch_size,
                target_loss=None if note else script_args.format_priming_target_loss,  # a try is not meant to reach it
                seed=training_args.seed,
                system_prompt=script_args.system_prompt,
                dtype=model_args.dtype,
                use_cpu=training_args.use_cpu,
                gradient_checkpointing=training_args.gradient_checkpointing,
                max_prompt_length=script_args.max_prompt_length,
                peft_config=priming.lora_config(vars(model_args)),
            )
    return primed


def build_trainer(script_args: config.GRPOScriptArguments, training_args: GRPOConfig, model_args: ModelConfig,
                  reward_funcs: list, train_split, eval_split, checker: recheck.Recheck | None = None):
    """The policy and tokenizer loaded, the splits with their prompts, and the GRPO trainer (with the difficulty
    pool and the health monitor when the config asks for them)."""
    policy, tokenizer, peft_config = model.load(
        model_args, training_args, script_args.max_prompt_length, script_args.model_backend
    )
    peft = peft_config is not None or hasattr(policy, "peft_config")
    distributed.reentrant_checkpointing(training_args, peft, distributed.launch_env(training_args=training_args))
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
        reward_funcs=reward_funcs,
        args=training_args,
        train_dataset=splits["train"],
        eval_dataset=splits["eval"] if training_args.eval_strategy != "no" else None,
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    if checker is not None:
        trainer.add_callback(checker)  # before the monitor: it logs the disagreement the monitor reads
    if (monitor := health.monitor_from_args(script_args, training_args.beta, checker)) is not None:
        trainer.add_callback(monitor)  # warnings while training, health.json at the end (see health.py)
    measure_sampler_gap(trainer)  # vLLM runs: its log-probs against the trainer's, first batches (vllm_check.py)
    return trainer


def run_trainer(trainer, training_args: GRPOConfig, checkpoint: str | None) -> None:
    """Train (from ``checkpoint`` when resuming) with one compact progress line per logging step and Ctrl-C saving
    a checkpoint first (raises Interrupted then), then save the final model."""
    for printer in (ProgressCallback, PrinterCallback):  # one compact line per logging step instead
        trainer.remove_callback(printer)
    trainer.add_callback(ProgressLine())
    interrupt = Interrupt().install(trainer.accelerator.num_processes)
    trainer.add_callback(interrupt)
    if checkpoint:
        trainer.accelerator.print(f"resuming from {checkpoint}")
    try:
        trainer.train(resume_from_checkpoint=checkpoint)
    finally:
        interrupt.uninstall()
    if interrupt.stopped_at is not None:
        raise Interrupted(f"interrupted at step {interrupt.stopped_at}: saved "
                          f"{os.path.join(training_args.output_dir, f'checkpoint-{interrupt.stopped_at}')}")
    print(f"rank {trainer.accelerator.process_index}: finished at step {trainer.state.global_step}", flush=True)
    distributed.save_final_model(trainer, training_args.output_dir)  # checks the weights are on disk


def finished(checkpoint: str, training_args: GRPOConfig) -> bool:
    """True (and says so) when ``checkpoint`` already reached max_steps: a rerun of a finished run does nothing.
    A run killed between its last checkpoint and its final save gets the final model copied from it."""
    step = checkpoints.finished_step(checkpoint, training_args.max_steps, training_args.num_train_epochs)
    if step is None:
        return False
    if int(os.environ.get("RANK", "0")) == 0:
        out = training_args.output_dir
        if not checkpoints.saved_model_files(out) and checkpoints.restore_final_model(checkpoint, out):
            print(f"the final model save was interrupted: copied the model of {checkpoint} to {out}")
        end = ("= max_steps" if training_args.max_steps > 0
               else f"(the end of num_train_epochs {training_args.num_train_epochs:g})")
        print(f"{out} finished at step {step} {end}: nothing to do. To train on from "
              f"{os.path.basename(checkpoint)} raise --max_steps; to start over pass --auto_resume false "
              "or another --output_dir", flush=True)
    return True


class Interrupted(Exception):
    """Ctrl-C stopped the run after saving a checkpoint (progress.Interrupt)."""


def one_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"error: {text.splitlines()[0] if text else type(error).__name__}"


def check_sources(script_args: config.GRPOScriptArguments, model_args: ModelConfig) -> None:
    """The model and dataset ids the hub must give this run, asked once, fast, before any download (hub.py)."""
    if not script_args.build_tiny_model:
        hub.check_available(model_args.model_name_or_path, "model", "model_name_or_path")
    hub.check_available(script_args.dataset_name, "dataset", "dataset_name")


def cli(argv: list[str]) -> None:
    """Parse, check and train; a bad config, bad data or an unreachable hub id ends with one line that says what to
    fix, found before the data loads (config), before priming and the model (data). Ctrl-C ends with one line too."""
    # transformers 5.24 renamed gradient to activation checkpointing; TRL 1.16 still reads the old property
    warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
    try:
        script_args, training_args, model_args, task_args = checked_args(argv)
        check_sources(script_args, model_args)
    except (ValueError, FileNotFoundError) as error:
        sys.exit(one_line(error))
    rerun = shlex.join(["python", "train.py", *argv])
    try:
        main(script_args, training_args, model_args, task_args)
    except (data.DataError, audit.AuditError, distributed.SaveError, checkpoints.CheckpointError,
            *task.ERRORS) as error:
        sys.exit(one_line(error))
    except Interrupted as stop:
        print(f"{stop}; rerun `{rerun}` to resume", file=sys.stderr, flush=True)
        sys.exit(130)
    except KeyboardInterrupt:
        print(f"interrupted; rerun `{rerun}` to resume from the last complete checkpoint in "
              f"{training_args.output_dir} (if any)", file=sys.stderr, flush=True)
        sys.exit(130)
