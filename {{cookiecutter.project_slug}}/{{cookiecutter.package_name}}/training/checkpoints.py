"""Saves that a kill cannot leave half-done, and resuming from the last complete checkpoint.

A kill (SIGKILL, Ctrl-C, a preempted node) can land in the middle of any save. Two rules keep every rerun going:

- What the project writes itself appears atomically: ``atomic_file`` and ``atomic_dir`` write under a temporary
  sibling name (``<name>.partial``) and rename it into place only once it is complete, so the final name never
  holds a half-written file or folder (the primed model, the tiny model, health.json, eval and filter reports).
- transformers writes a checkpoint file by file (``Trainer._save_checkpoint``: the model's weights and config, then
  optimizer.pt, scheduler.pt, scaler.pt and rng_state*.pth, and trainer_state.json last; then it deletes older
  checkpoints beyond ``save_total_limit``). ``resume_point`` takes the newest *complete* one (``problem`` says what
  an incomplete one lacks), prints one line per incomplete one it skips and moves it to ``output_dir/incomplete/``,
  where neither a later resume nor transformers' checkpoint rotation (which keeps the highest-numbered folder, and
  would delete the complete one beside it) can pick it again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from ..files import (  # noqa: F401 - re-exported: the project's saves
    PARTIAL,
    WEIGHT_FILES,
    atomic_dir,
    atomic_file,
    is_model_dir,
    saved_model_files,
    write_text,
)

TRAINER_STATE = "trainer_state.json"
INCOMPLETE = "incomplete"  # output_dir/incomplete/checkpoint-N: the checkpoints a kill left half-written
STEP = re.compile(r"^checkpoint-(\d+)$")
# What only resuming needs: save_model's output (the weights, config, tokenizer) is the loadable model.
RESUME_ONLY = re.compile(r"^(optimizer\.(pt|bin)|scheduler\.pt|scaler\.pt|rng_state(_\d+)?\.pth|trainer_state\.json"
                         r"|difficulty_pool\.json|latest|zero_to_fp32\.py)$")


class CheckpointError(ValueError):
    """resume_from_checkpoint names a folder that cannot be resumed from."""


# ------------------------------------------------------------------------------------------------- checkpoints


def _step_of(folder: Path) -> int:
    state = json.loads((folder / TRAINER_STATE).read_text(encoding="utf-8"))
    return int(state["global_step"])


def problem(folder: str | Path, save_only_model: bool = False) -> str | None:
    """Why ``folder`` cannot be resumed from (None: it is complete). ``save_only_model`` checkpoints hold no
    optimizer, scheduler or RNG state."""
    folder = Path(folder)
    if not (folder / TRAINER_STATE).is_file():
        return f"no {TRAINER_STATE} (the save stopped before its last file)"
    try:
        _step_of(folder)
    except (OSError, ValueError, KeyError, TypeError):
        return f"{TRAINER_STATE} is cut short or unreadable"
    names = {p.name for p in folder.iterdir()}
    if "latest" in names:  # DeepSpeed: weights and optimizer live in the tag folder that `latest` names
        try:
            tag = (folder / "latest").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return "DeepSpeed's latest file is unreadable"
        return None if tag and (folder / tag).is_dir() else f"DeepSpeed's latest names {tag!r}, which is missing"
    fsdp = any(name.startswith("pytorch_model_fsdp") for name in names)
    adapters = any((p / "adapter_config.json").is_file() for p in folder.iterdir() if p.is_dir())
    if not (saved_model_files(folder) or fsdp or adapters):
        return "no model weights (or a sharded index misses a shard)"
    if save_only_model:
        return None
    optimizer = any(name.startswith("optimizer") for name in names)  # .pt, .bin, or FSDP's optimizer_0/
    missing = [name for name, ok in (("optimizer.pt", optimizer), ("scheduler.pt", "scheduler.pt" in names),
                                     ("rng_state.pth", any(n.startswith("rng_state") for n in names))) if not ok]
    return f"no {', '.join(missing)}" if missing else None


def set_aside(folder: Path) -> Path:
    """Move an incomplete checkpoint to output_dir/incomplete/ (an older one of the same name there goes)."""
    target = folder.parent / INCOMPLETE / folder.name
    target.parent.mkdir(exist_ok=True)
    if target.exists():
        shutil.rmtree(target)
    os.replace(folder, target)
    return target


def last_complete(output_dir: str | Path, save_only_model: bool = False, log=print) -> str | None:
    """The newest complete ``checkpoint-N`` in ``output_dir`` (None: there is none). Each newer incomplete one is
    reported in one line and set aside."""
    root = Path(output_dir)
    if not root.is_dir():
        return None
    found = sorted(((int(m.group(1)), p) for p in root.iterdir() if p.is_dir() and (m := STEP.match(p.name))),
                   reverse=True)
    for _, folder in found:
        why = problem(folder, save_only_model)
        if why is None:
            return str(folder)
        try:
            moved = f"; moved to {set_aside(folder)}"
        except OSError:  # another process moved it first
            moved = ""
        log(f"skipping incomplete checkpoint {folder}: {why}{moved}")
    return None


def resume_point(training_args, auto_resume: bool, log=print) -> str | None:
    """The checkpoint this run resumes from: ``resume_from_checkpoint`` when set (it must be complete), else with
    ``auto_resume`` the newest complete one in output_dir, else None."""
    explicit = training_args.resume_from_checkpoint
    if explicit:
        if not Path(explicit).is_dir():
            raise CheckpointError(f"resume_from_checkpoint {explicit} is not a folder: name a checkpoint-N folder")
        why = problem(explicit, training_args.save_only_model)
        if why:
            raise CheckpointError(f"resume_from_checkpoint {explicit} is incomplete ({why}): name a complete "
                                  f"checkpoint-N folder, or drop resume_from_checkpoint to resume from the last one")
        return str(explicit)
    if not auto_resume:
        return None
    with training_args.main_process_first(local=training_args.save_on_each_node, desc="checkpoint check"):
        return last_complete(training_args.output_dir, training_args.save_only_model, log)


def finished_step(checkpoint: str | Path, max_steps: int, num_train_epochs: float) -> int | None:
    """The checkpoint's step when it already reached the run's end (``max_steps``, or with ``max_steps: -1`` the
    step count its own run computed for the same ``num_train_epochs``); None while there are steps left."""
    state = json.loads((Path(checkpoint) / TRAINER_STATE).read_text(encoding="utf-8"))
    step = int(state["global_step"])
    if max_steps > 0:
        return step if step >= max_steps else None
    same_epochs = float(state.get("num_train_epochs") or 0) == float(num_train_epochs)
    return step if same_epochs and state.get("max_steps") and step >= int(state["max_steps"]) else None


def restore_final_model(checkpoint: str | Path, output_dir: str | Path) -> list[str]:
    """Copy the loadable model (weights, config, tokenizer) of a final checkpoint into output_dir, each file
    atomically; for a run killed between its last checkpoint and its final save. Returns the weight files copied."""
    source = Path(checkpoint)
    if not saved_model_files(source):
        return []
    for item in sorted(source.iterdir()):
        if item.is_file() and not RESUME_ONLY.match(item.name):
            with atomic_file(Path(output_dir) / item.name, "wb") as handle, item.open("rb") as original:
                shutil.copyfileobj(original, handle)
    return saved_model_files(output_dir)
