"""Files that a kill cannot leave half-written, and model folders that from_pretrained loads whole: the ground floor
every layer may import (audit, plots, evaluation, filtering, training). Stdlib only.

What the project writes itself appears atomically: ``atomic_file`` and ``atomic_dir`` write under a temporary sibling
name (``<name>.partial``) and rename it into place only once it is complete, so the final name never holds a
half-written file or folder (the primed model, the tiny model, health.json, eval and filter reports).
"""

from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

PARTIAL = ".partial"
# Files from_pretrained can load: full weights (single file or sharded with an index) or a PEFT adapter.
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
    "adapter_model.safetensors",
    "adapter_model.bin",
)

# ----------------------------------------------------------------------------------------------- atomic writes


@contextmanager
def atomic_file(path: str | Path, mode: str = "w"):
    """Open ``<path>.partial`` for writing; once the block ends without error, it replaces ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + PARTIAL)
    try:
        with open(tmp, mode, encoding=None if "b" in mode else "utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> Path:
    with atomic_file(path) as handle:
        handle.write(text)
    return Path(path)


@contextmanager
def atomic_dir(path: str | Path):
    """Yield the empty folder ``<path>.partial`` to fill; once the block ends without error it becomes ``path``
    (replacing whatever was there). A leftover ``.partial`` of a killed save is removed first."""
    path = Path(path)
    tmp = path.with_name(path.name + PARTIAL)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if path.exists():  # an incomplete earlier save (callers reuse a complete one instead of writing again)
        shutil.rmtree(path)
    os.replace(tmp, path)


def saved_model_files(directory: str | Path) -> list[str]:
    """The loadable weight files in ``directory`` (empty when there are none, or a sharded index misses a shard)."""
    path = Path(directory)
    found = sorted(name for name in WEIGHT_FILES if (path / name).is_file())
    for index in (name for name in found if name.endswith(".index.json")):
        try:
            shards = set(json.loads((path / index).read_text(encoding="utf-8"))["weight_map"].values())
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return []
        if not all((path / shard).is_file() for shard in shards):
            return []
    return found


def is_model_dir(directory: str | Path) -> bool:
    """A folder from_pretrained loads whole: config.json (or a PEFT adapter's adapter_config.json), the weights and
    the tokenizer (what priming saves)."""
    path = Path(directory)
    config = (path / "config.json").is_file() or (path / "adapter_config.json").is_file()
    return config and (path / "tokenizer_config.json").is_file() and bool(
        saved_model_files(path)
    )
