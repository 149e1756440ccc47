"""Hub ids versus local paths, and one quick look at the Hugging Face Hub before a run needs a model or dataset.

``check_available`` answers in about a second (one request, no retries) with one line naming the id: not in the
cache while offline, not found on the hub (a typo, or a private or gated repo), or the hub unreachable (no network),
each with the offline recipe. Without it transformers and datasets retry for 30-50 s and print pages of traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

LOCAL_ROOTS = {"outputs", "eval_reports", "checkpoints", "runs"}  # "outputs/run" is never a hub id
LOCAL_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")
PROBE_TIMEOUT_S = 5.0


class HubError(ValueError):
    """A model or dataset id the hub cannot give us; its message is one line that says what to do."""


def shaped_like_hub_id(name: str) -> bool:
    """Whether ``name`` is written as a hub id (``name`` or ``org/name``), whatever exists on disk: not ``./x``,
    ``/x``, ``~/x``, ``a/b/c``, a data file, or a folder under one of the project's output folders."""
    if name.startswith((".", "/", "~")) or "\\" in name or name.count("/") > 1 or name.endswith(LOCAL_SUFFIXES):
        return False
    return not ("/" in name and name.split("/", 1)[0] in LOCAL_ROOTS)


def looks_like_path(name: str) -> bool:
    """Whether a model or dataset argument is meant as a local path (a hub id is ``name`` or ``org/name``)."""
    return not shaped_like_hub_id(name) or ("/" in name and Path(name.split("/", 1)[0]).is_dir())


def is_hub_id(name: str | None) -> bool:
    """A name that only the hub can resolve: not empty, not an existing path, not meant as a path, not generated."""
    if not name or name.startswith(("generate:", "curriculum:")):
        return False
    return not os.path.exists(os.path.expanduser(name)) and not looks_like_path(name)


def cache_dir() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def cached(name: str, kind: str = "model") -> bool:
    """Whether the hub cache holds a snapshot of ``name`` (``kind``: model or dataset)."""
    snapshots = cache_dir() / f"{kind}s--{name.replace('/', '--')}" / "snapshots"
    return snapshots.is_dir() and any(snapshots.iterdir())


def offline() -> bool:
    return any(os.environ.get(key, "").upper() in ("1", "ON", "YES", "TRUE")
               for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"))


def recipe(name: str, kind: str, field: str) -> str:
    repo_type = " --repo-type dataset" if kind == "dataset" else ""
    return (f"on a machine with network run `hf download {name}{repo_type}`, copy ~/.cache/huggingface here and set "
            f"HF_HUB_OFFLINE=1; or point {field} at a local path")


def probe(name: str, kind: str) -> str | None:
    """None when the hub knows ``name``; else ``"missing"``, ``"gated"``, ``"invalid"`` or ``"unreachable: why"``."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, HFValidationError, RepositoryNotFoundError

    api = HfApi()
    info = api.dataset_info if kind == "dataset" else api.model_info
    try:
        info(name, timeout=PROBE_TIMEOUT_S)
    except GatedRepoError:
        return "gated"
    except RepositoryNotFoundError:
        return "missing"
    except HFValidationError:
        return "invalid"
    except Exception as error:  # noqa: BLE001 - any other failure: the hub did not answer
        return f"unreachable: {(str(error).strip().splitlines() or [type(error).__name__])[0]}"
    return None


def check_available(name: str | None, kind: str = "model", field: str = "model_name_or_path") -> None:
    """Raise HubError, in one line, when ``name`` is a local path that does not exist or a hub id this run cannot
    get; ``field`` is its config key."""
    what = f"{kind} {name!r} ({field})"
    if name and not name.startswith(("generate:", "curriculum:")) and looks_like_path(name):
        where = Path(name).expanduser()
        if not where.exists():
            raise HubError(f"{what} is meant as a local path but {where.resolve()} does not exist: a typo in {field}?")
    if not is_hub_id(name) or cached(name, kind):
        return
    if offline():
        raise HubError(f"{what} is not in the Hugging Face cache ({cache_dir()}) and HF_HUB_OFFLINE is set: "
                       f"{recipe(name, kind, field)}")
    status = probe(name, kind)
    if status is None:
        return
    if status == "invalid":
        raise HubError(f"{what} is neither an existing local path nor a valid hub id (org/name); fix {field}")
    if status == "missing":
        raise HubError(f"{what} was not found on the hub: a typo in {field}? (a private repo needs `hf auth login`)")
    if status == "gated":
        raise HubError(f"{what} is gated: accept its licence on huggingface.co/{name} and run `hf auth login`")
    raise HubError(f"{what} is not cached and the hub cannot be reached (no network? {status[len('unreachable: '):]}):"
                   f" {recipe(name, kind, field)}")
