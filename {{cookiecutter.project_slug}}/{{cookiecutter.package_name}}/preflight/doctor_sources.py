"""The doctor's checks of what train.py will load: the model and the dataset, each local, in the Hugging Face cache
or on a reachable hub (offline, a missing one blocks with the recipe to bring it here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import ROOT
from ..settings import setting
from .doctor_report import BLOCK, OK, Check
from .machine import Machine


def _local_columns(path: Path) -> list[str]:
    if path.suffix in (".jsonl", ".json"):
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
        row = json.loads(first) if first.strip() else {}
        return list(row) if isinstance(row, dict) else []
    if path.suffix == ".csv":
        with path.open(encoding="utf-8") as handle:
            return [name.strip() for name in handle.readline().split(",")]
    import pyarrow.parquet as parquet

    return list(parquet.read_schema(path).names)


def check_dataset(config: dict[str, Any], machine: Machine, required: tuple[str, ...], root: Path = ROOT) -> Check:
    name = str(setting(config, "dataset_name") or "")
    if name.startswith(("generate:", "curriculum:")):  # the task's own generator or smoke curriculum
        return Check("dataset", OK, f"{name}: generated locally")
    local = Path(name) if Path(name).is_absolute() else root / name
    if local.suffix in (".jsonl", ".json", ".csv", ".parquet") or local.exists():
        if not local.is_file():
            return Check("dataset", BLOCK, f"{name} does not exist", "fix dataset_name or copy the file there")
        try:
            columns = _local_columns(local)
        except (OSError, ValueError, ImportError) as error:
            return Check("dataset", BLOCK, f"{name} cannot be read: {error}", "check the file's format")
        missing = [column for column in required if column not in columns]
        if missing:
            return Check("dataset", BLOCK, f"{name} lacks column(s) {', '.join(missing)} (has {', '.join(columns)})",
                         f"every row needs {', '.join(required)}")
        return Check("dataset", OK, f"{name}: columns {', '.join(required)} present")
    offline = any(machine.environ.get(key, "") in ("1", "true", "True")
                  for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))
    cached = machine.hub_cached(name)
    if cached:
        return Check("dataset", OK, f"{name}: in the local Hugging Face cache")
    if offline:
        return Check("dataset", BLOCK, f"{name}: not cached and HF_HUB_OFFLINE is set",
                     "download it once on a connected machine (python -c \"import datasets; "
                     f"datasets.load_dataset('{name}')\") and copy ~/.cache/huggingface, or use a local file")
    if machine.hub_reachable():
        return Check("dataset", OK, f"{name}: the hub is reachable (downloaded on first use)")
    return Check("dataset", BLOCK, f"{name}: not cached and the hub is not reachable from here",
                 "offline recipe: load it once where the hub is reachable, copy ~/.cache/huggingface here, then "
                 "set HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1; or point dataset_name at a local JSONL file")


def check_model(config: dict[str, Any], machine: Machine, root: Path = ROOT) -> Check:
    """The model train.py will load: built locally, a local directory, in the hub cache, or on a reachable hub."""
    from ..hub import looks_like_path

    name = str(setting(config, "model_name_or_path") or "")
    if config.get("build_tiny_model"):
        return Check("model", OK, f"{name}: a tiny model built locally on first use")
    local = Path(name).expanduser()
    local = local if local.is_absolute() else root / local
    if local.exists():
        return Check("model", OK, f"{name}: local path")
    if looks_like_path(name):
        return Check("model", BLOCK, f"{name} is meant as a local path but {local} does not exist",
                     "fix model_name_or_path (a typo?) or copy the model there")
    if machine.model_cached(name):
        return Check("model", OK, f"{name}: in the local Hugging Face cache")
    offline = any(machine.environ.get(key, "") in ("1", "true", "True")
                  for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    recipe = (f"on a connected machine run `hf download {name}`, copy ~/.cache/huggingface here and set "
              "HF_HUB_OFFLINE=1, or point model_name_or_path at a local directory")
    if offline:
        return Check("model", BLOCK, f"{name}: not cached and HF_HUB_OFFLINE is set", recipe)
    if machine.hub_reachable():
        return Check("model", OK, f"{name}: the hub is reachable (downloaded on first use)")
    return Check("model", BLOCK, f"{name}: not cached and the hub is not reachable from here", recipe)
