"""The checks that depend on the launch (processes, DeepSpeed, FSDP) while training, and the verified final save.
What the launch set up is read once, before anything loads, by ``preflight/launch_checks.py`` (``launch_env``)."""

from __future__ import annotations

from pathlib import Path

from ..preflight.launch_checks import (  # noqa: F401 - re-exported: the launch as training sees it
    LaunchEnv,
    check_full_finetune_precision,
    check_launch,
    check_priming_launch,
    launch_env,
    primed_dir,
)
from .checkpoints import WEIGHT_FILES, saved_model_files


class SaveError(RuntimeError):
    """The final save left no loadable model in the output directory."""


def reentrant_checkpointing(training_args, peft: bool, launch: LaunchEnv) -> None:
    """LoRA under DeepSpeed ZeRO-3 with activation checkpointing needs reentrant checkpointing (TRL issue #2514).
    TRL 1.16 forces it on ``gradient_checkpointing_kwargs``, but transformers 5.2x's Trainer reads
    ``activation_checkpointing_kwargs`` (the old name is a copy made at parse time), so TRL's setting never reaches
    the model: set it on the name the Trainer reads, before the trainer is built."""
    if not (peft and launch.deepspeed and launch.zero_stage in (3, None)):
        return
    if not getattr(training_args, "activation_checkpointing", getattr(training_args, "gradient_checkpointing", False)):
        return
    names = [name for name in ("activation_checkpointing_kwargs", "gradient_checkpointing_kwargs")
             if hasattr(training_args, name)]
    kwargs = {**(getattr(training_args, names[0], None) or {}), "use_reentrant": True}
    for name in names:  # one dict under both names: what TRL then writes on the old one lands in it too
        setattr(training_args, name, kwargs)


def device_map(launch: LaunchEnv, backend: str, quantized: bool = False):
    """``device_map`` for from_pretrained, or ``"default"`` to leave the loader's own default.

    Under a multi-process launch each rank must load onto its own GPU, never spread over all of them ("auto").
    transformers: DeepSpeed/FSDP/DDP place or shard the weights themselves from a CPU load (``None``), except a
    quantized model, which must be quantized on its own GPU. Unsloth: its own GPU (``{"": local_rank}``), except
    under ZeRO-3, which places the weights itself."""
    if not launch.multi_process:
        return "default"
    if backend == "unsloth":
        return "default" if launch.deepspeed and launch.zero_stage == 3 else {"": launch.local_rank}
    return {"": launch.local_rank} if quantized and not launch.deepspeed and not launch.fsdp else None


def save_final_model(trainer, output_dir: str | Path) -> list[str]:
    """Save the trained model and verify the weights are on disk before saying so.

    Under FSDP, checkpoints stay sharded (fast, resumable) while this final save gathers a full state dict:
    transformers' ``save_model`` writes nothing for FSDP unless the state dict type is FULL_STATE_DICT. Every rank
    must call this (the gather is collective); only the main process writes and checks."""
    if getattr(trainer, "is_fsdp_enabled", False):
        plugin = trainer.accelerator.state.fsdp_plugin
        if "FULL_STATE_DICT" not in str(plugin.state_dict_type):
            plugin.set_state_dict_type("FULL_STATE_DICT")
    trainer.save_model(str(output_dir))
    if not trainer.accelerator.is_main_process:
        return []
    files = saved_model_files(output_dir)
    if not files:
        raise SaveError(
            f"the final save wrote no model weights to {output_dir} (expected one of {', '.join(WEIGHT_FILES[:3])} "
            "or an adapter); under DeepSpeed ZeRO-3 set zero3_save_16bit_model: true, under FSDP keep "
            "fsdp_state_dict_type a type the final save can gather"
        )
    trainer.accelerator.print(f"model saved to {output_dir} ({', '.join(files)})")
    return files
