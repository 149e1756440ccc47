"""What the launch set up (processes, DeepSpeed, FSDP) and the checks that depend on it, run once before any data or
weights load (train.py and the doctor, through ``checked_args``).

``launch_env`` is the one place that reads the launcher's environment: ``torchrun``/``accelerate launch`` set
``WORLD_SIZE``/``LOCAL_RANK``; ``accelerate launch`` with a DeepSpeed config sets ``ACCELERATE_USE_DEEPSPEED`` (and
``ACCELERATE_DEEPSPEED_ZERO_STAGE`` or ``ACCELERATE_DEEPSPEED_CONFIG_FILE``), with an FSDP config
``ACCELERATE_USE_FSDP``; every accelerate launch sets ``ACCELERATE_MIXED_PRECISION``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..files import is_model_dir
from .launch import deepspeed_file_stage, env_deepspeed_stage, is_true

TRAINING = __package__.rpartition(".")[0] + ".training"  # where format priming runs as a command


@dataclass(frozen=True)
class LaunchEnv:
    world_size: int = 1
    local_rank: int = 0
    deepspeed: bool = False
    zero_stage: int | None = None  # None: DeepSpeed without a stage we could read
    fsdp: bool = False
    mixed_precision: str = "no"

    @property
    def multi_process(self) -> bool:
        return self.world_size > 1

    @property
    def keeps_fp32_master_weights(self) -> bool:
        """DeepSpeed's ZeRO optimizers keep fp32 partitions; accelerate's FSDP upcasts trainable 16-bit params to
        fp32 whenever mixed precision is on."""
        return self.deepspeed or (self.fsdp and self.mixed_precision != "no")


def launch_env(environ=None, training_args=None) -> LaunchEnv:
    """The launch as this process sees it, from the environment (and TrainingArguments' deepspeed/fsdp fields)."""
    env = os.environ if environ is None else environ
    deepspeed = is_true(env.get("ACCELERATE_USE_DEEPSPEED", ""))
    stage = env_deepspeed_stage(env) if deepspeed else None  # None: unknown, read as ZeRO-3 where it matters
    fsdp = is_true(env.get("ACCELERATE_USE_FSDP", ""))
    mixed = env.get("ACCELERATE_MIXED_PRECISION", "no").lower()
    if training_args is not None:  # deepspeed/fsdp given to train.py directly, without accelerate launch
        ds_config = getattr(training_args, "deepspeed", None)
        if ds_config:
            deepspeed = True
            if stage is None:
                stage = (ds_config.get("zero_optimization", {}).get("stage") if isinstance(ds_config, dict)
                         else deepspeed_file_stage(str(ds_config)))
        if getattr(training_args, "fsdp", None):
            fsdp = True
        if getattr(training_args, "bf16", False):
            mixed = "bf16"
        elif getattr(training_args, "fp16", False):
            mixed = "fp16"
    return LaunchEnv(
        world_size=int(env.get("WORLD_SIZE", "1") or 1),
        local_rank=int(env.get("LOCAL_RANK", "0") or 0),
        deepspeed=deepspeed,
        zero_stage=stage,
        fsdp=fsdp,
        mixed_precision=mixed,
    )


def check_full_finetune_precision(model_args, training_args, launch: LaunchEnv) -> None:
    """Refuse full fine-tuning on 16-bit weights without fp32 master weights: at GRPO learning rates (1e-6 to 1e-5)
    most bf16 updates round away, so the run trains far less than the config says."""
    if getattr(model_args, "use_peft", False) or getattr(model_args, "load_in_4bit", False):
        return
    dtype = str(getattr(model_args, "dtype", None) or "auto").removeprefix("torch.")
    if dtype == "float32" or launch.keeps_fp32_master_weights:
        return
    loaded = "the checkpoint's own dtype (16-bit for most models)" if dtype == "auto" else dtype
    raise ValueError(
        f"full fine-tuning (use_peft: false) with dtype {dtype} outside DeepSpeed/FSDP trains {loaded} weights "
        f"directly and updates at learning rate {training_args.learning_rate:g} mostly round away: set dtype: "
        "float32 (fp32 master weights; bf16: true keeps bf16 compute), set use_peft: true, or launch with "
        "configs/accelerate/zero3.yaml or fsdp.yaml"
    )


def primed_dir(training_args) -> Path:
    """Where format priming writes its model (train.py reuses it when it is there)."""
    return Path(training_args.output_dir) / "format-primed"


def check_priming_launch(script_args, training_args, launch: LaunchEnv, package: str = TRAINING) -> None:
    """Format priming is a plain single-process loop: under several processes the main rank would load and train
    the whole model alone while the others wait (and under ZeRO-3 its from_pretrained is a collective the others
    never join: a hang). Refuse unless the primed model is already there."""
    if getattr(script_args, "format_priming_steps", 0) <= 0:
        return
    if is_model_dir(primed_dir(training_args)):
        return
    if launch.multi_process or (launch.deepspeed and launch.zero_stage in (3, None)):
        why = f"{launch.world_size} processes" if launch.multi_process else "DeepSpeed ZeRO-3"
        raise ValueError(
            f"format priming cannot run under {why}: prime once in a single process first with "
            f"`python -m {package}.priming --config <this config> --output_dir {training_args.output_dir}` "
            f"(writes {primed_dir(training_args)}, which this launch then uses), or set format_priming_steps: 0"
        )


def check_launch(script_args, training_args, model_args, environ=None) -> None:
    """Every launch-dependent refusal, one ValueError line each; call once before any data or weights load."""
    launch = launch_env(environ, training_args)
    check_full_finetune_precision(model_args, training_args, launch)
    check_priming_launch(script_args, training_args, launch)


def checked_args(argv: list[str]):
    """train.py's parsed arguments once every check before the data loads passed (the doctor runs the same); raises
    ValueError or FileNotFoundError with one line."""
    from .. import config

    script_args, training_args, model_args, task_args = config.parse_args(argv)
    config.check_arguments(script_args, training_args)
    check_launch(script_args, training_args, model_args)  # precision, priming under this launch
    return script_args, training_args, model_args, task_args
