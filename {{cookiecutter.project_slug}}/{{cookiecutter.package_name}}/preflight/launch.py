"""How this run is launched: processes and sharding, read from the launcher instead of guessed from the config.

``accelerate launch`` passes its settings to every process as environment variables (accelerate 1.15:
``ACCELERATE_USE_DEEPSPEED``, ``ACCELERATE_DEEPSPEED_ZERO_STAGE``, ``ACCELERATE_DEEPSPEED_CONFIG_FILE``,
``ACCELERATE_USE_FSDP``, ``FSDP_SHARDING_STRATEGY``, ``FSDP_RESHARD_AFTER_FORWARD``,
``ACCELERATE_MIXED_PRECISION``); torchrun and accelerate both set ``WORLD_SIZE``. Before a launch (the estimator's
command, the doctor) the same facts come from the accelerate config file the launch will use.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..settings import setting

KINDS = ("none", "ddp", "deepspeed", "fsdp")


class LaunchError(ValueError):
    """An accelerate config that cannot be read; the message is one line."""


@dataclass(frozen=True)
class Launch:
    """Processes and sharding of one run. ``zero_stage``: DeepSpeed's stage, or FSDP's equivalent (full shard 3)."""

    world_size: int = 1
    kind: str = "none"
    zero_stage: int = 0
    mixed_precision: str = ""
    source: str = "single process"

    @property
    def description(self) -> str:
        if self.kind == "deepspeed":
            return f"DeepSpeed ZeRO-{self.zero_stage} over {self.world_size}"
        if self.kind == "fsdp":
            shard = "full shard" if self.zero_stage == 3 else f"stage {self.zero_stage}"
            return f"FSDP ({shard}) over {self.world_size}"
        if self.kind == "ddp":
            return f"DDP over {self.world_size} (no sharding)"
        return "none"


def is_true(value: Any) -> bool:
    """An accelerate environment flag (``ACCELERATE_USE_DEEPSPEED=true`` etc.) read as a bool."""
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _fsdp_stage(strategy: Any, reshard_after_forward: Any) -> int:
    text = str(strategy or "").upper()
    if "NO_SHARD" in text or text == "3":
        return 0
    if "SHARD_GRAD_OP" in text or text == "2" or str(reshard_after_forward).lower() == "false":
        return 2
    return 3


def deepspeed_file_stage(path: str) -> int | None:
    """The ZeRO stage a DeepSpeed JSON config sets (0 without ``zero_optimization``); None when unreadable."""
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8"))
        return int((config.get("zero_optimization") or {}).get("stage", 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def env_deepspeed_stage(environ: Mapping[str, str]) -> int | None:
    """The ZeRO stage of an accelerate DeepSpeed launch: its stage variable, else its config file; None when
    neither says."""
    stage = environ.get("ACCELERATE_DEEPSPEED_ZERO_STAGE", "")
    if stage.isdigit():
        return int(stage)
    if environ.get("ACCELERATE_DEEPSPEED_CONFIG_FILE"):
        return deepspeed_file_stage(environ["ACCELERATE_DEEPSPEED_CONFIG_FILE"])
    return None


def detect(environ: Mapping[str, str]) -> Launch | None:
    """The launch this process runs under, from its environment; None when nothing launched it (a plain python)."""
    world = int(environ.get("WORLD_SIZE") or 1)
    mixed = environ.get("ACCELERATE_MIXED_PRECISION", "")
    if is_true(environ.get("ACCELERATE_USE_DEEPSPEED", "")):
        found = env_deepspeed_stage(environ)
        return Launch(world, "deepspeed", found if found is not None else 0, mixed, "accelerate environment")
    if is_true(environ.get("ACCELERATE_USE_FSDP", "")):
        stage = _fsdp_stage(environ.get("FSDP_SHARDING_STRATEGY"), environ.get("FSDP_RESHARD_AFTER_FORWARD"))
        return Launch(world, "fsdp", stage, mixed, "accelerate environment")
    if world > 1:
        return Launch(world, "ddp", 0, mixed, "WORLD_SIZE")
    if "WORLD_SIZE" in environ or "ACCELERATE_MIXED_PRECISION" in environ:
        return Launch(1, "none", 0, mixed, "launcher environment")
    return None


def from_accelerate_config(path: str | Path) -> Launch:
    """The launch an accelerate config file (configs/accelerate/*.yaml) sets up."""
    import yaml

    try:
        config = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise LaunchError(f"cannot read accelerate config {path}: {error}") from None
    if not isinstance(config, dict):
        raise LaunchError(f"accelerate config {path} is not a mapping")
    world = int(config.get("num_processes") or 1) * int(config.get("num_machines") or 1)
    kind = str(config.get("distributed_type", "NO")).upper()
    mixed = str(config.get("mixed_precision") or "")
    source = f"accelerate config {Path(path).name}"
    if kind == "DEEPSPEED":
        deepspeed = config.get("deepspeed_config") or {}
        stage = deepspeed.get("zero_stage")
        if stage is None and deepspeed.get("deepspeed_config_file"):
            stage = deepspeed_file_stage(str(deepspeed["deepspeed_config_file"]))
        return Launch(world, "deepspeed", int(stage or 0), mixed, source)
    if kind == "FSDP":
        fsdp = config.get("fsdp_config") or {}
        stage = _fsdp_stage(fsdp.get("fsdp_sharding_strategy"), fsdp.get("fsdp_reshard_after_forward"))
        return Launch(world, "fsdp", stage, mixed, source)
    return Launch(world, "ddp" if world > 1 else "none", 0, mixed, source)


def from_training_config(config: Mapping[str, Any]) -> Launch | None:
    """Sharding set in the training config itself (TrainingArguments' ``deepspeed`` / ``fsdp``), if any."""
    processes = max(1, int(setting(config, "num_processes")))
    deepspeed = config.get("deepspeed")
    if isinstance(deepspeed, str) and deepspeed:
        stage = deepspeed_file_stage(deepspeed)
        return Launch(processes, "deepspeed", stage or 0, "", f"deepspeed config {deepspeed}")
    if isinstance(deepspeed, dict):
        stage = int((deepspeed.get("zero_optimization") or {}).get("stage", 0))
        return Launch(processes, "deepspeed", stage, "", "deepspeed config in the training config")
    fsdp = config.get("fsdp")
    text = " ".join(fsdp) if isinstance(fsdp, list) else str(fsdp or "")
    if text.strip():
        stage = 2 if "shard_grad_op" in text else 0 if "no_shard" in text else 3
        return Launch(processes, "fsdp", stage, "", "fsdp in the training config")
    return None


def resolve(config: Mapping[str, Any], environ: Mapping[str, str] | None = None,
            accelerate_config: str | Path | None = None) -> Launch:
    """The launch to size memory for: an explicit accelerate config, else the running launcher's environment,
    else the training config's own deepspeed/fsdp setting, else plain data parallel over the preset's
    ``num_processes`` (every GPU holds everything: the safe assumption)."""
    if accelerate_config:
        return from_accelerate_config(accelerate_config)
    detected = detect(environ or {})
    if detected is not None:
        return detected
    own = from_training_config(config)
    if own is not None:
        return own
    processes = max(1, int(setting(config, "num_processes")))
    if processes > 1:
        return Launch(processes, "ddp", 0, "", "num_processes in the config; no launch given: plain DDP assumed")
    return Launch()
