"""Fill the Hugging Face cache with what a config needs, on a machine with internet, for compute nodes without it.

    python -m <package>.download --config configs/24gb.yaml

Downloads the config's model (``snapshot_download``: weights, tokenizer, chat template) and its hub dataset
(``load_dataset``, as train.py loads it) into the cache (``HF_HOME``, by default ``~/.cache/huggingface``), then
prints the command for the offline node: ``HF_HUB_OFFLINE=1 python train.py --config ...`` (the launch script
for a multi-GPU config) with the same ``HF_HOME``. Local paths, the tiny smoke model and generated datasets
(``generate:N``, ``curriculum:N``) need nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import data, hub
from .evaluation.options import EvalError, OneLineParser, read_config
from .settings import setting

SKIP_FILES = ["original/*", "*.gguf", "*.pth", "*.onnx", "onnx/*"]  # other runtimes' copies of the weights


class DownloadError(ValueError):
    """A download that cannot happen; its message is one line that says what to fix."""


def is_local_dataset(name: str) -> bool:
    return name.startswith(("generate:", "curriculum:")) or Path(name).suffix in data.LOCAL_FORMATS


def hub_failure(kind: str, name: str, error: BaseException, key: str) -> DownloadError:
    """One line for a failed download, naming the config's ``key``: a typo (no such repository), a gated one, or no
    network."""
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if isinstance(error, GatedRepoError):
        why = "it is gated: accept its license on its Hub page, then log in (hf auth login, or HF_TOKEN=...)"
    elif isinstance(error, RevisionNotFoundError):
        why = "no such revision: check model_revision in the config"
    elif isinstance(error, RepositoryNotFoundError) or "not found" in reason.lower():
        why = f"no such repository on the Hub: check {key} for a typo (or log in, if it is private)"
    elif os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        why = "HF_HUB_OFFLINE is set: run this step on a machine with internet, without HF_HUB_OFFLINE"
    else:
        why = f"the Hub could not be reached ({reason}): run this step on a machine with internet"
    return DownloadError(f"cannot download {kind} {name!r} ({key}): {why}")


def download_model(cfg: dict, log=print) -> str | None:
    """Fill the cache with the config's model; return its local snapshot folder (None when nothing to download)."""
    name = str(setting(cfg, "model_name_or_path") or "")
    if not name or setting(cfg, "build_tiny_model") or not hub.is_hub_id(name):
        log(f"model {name!r}: a local model, nothing to download")
        return None
    from huggingface_hub import snapshot_download

    log(f"model {name!r}: downloading (weights, tokenizer, chat template)")
    try:
        folder = snapshot_download(name, revision=setting(cfg, "model_revision"), ignore_patterns=SKIP_FILES)
    except (OSError, ValueError) as error:
        raise hub_failure("model", name, error, "model_name_or_path") from error
    log(f"model {name!r}: cached in {folder}")
    return folder


def download_dataset(cfg: dict, log=print) -> dict[str, int] | None:
    """Fill the datasets cache with the config's hub dataset, loaded as train.py loads it; return rows per split."""
    name = str(setting(cfg, "dataset_name") or "")
    if not name or is_local_dataset(name):
        log(f"dataset {name!r}: a local or generated dataset, nothing to download")
        return None
    from datasets import load_dataset

    config = cfg.get("dataset_config")
    log(f"dataset {name!r}{f' (config {config!r})' if config else ''}: downloading")
    try:
        dataset = load_dataset(name, config)
    except (OSError, ValueError) as error:
        raise hub_failure("dataset", name, error, "dataset_name") from error
    parts = dataset.items() if hasattr(dataset, "items") else [("train", dataset)]
    rows = {split: len(part) for split, part in parts}
    log(f"dataset {name!r}: cached ({', '.join(f'{split} {count} rows' for split, count in rows.items())})")
    return rows


def offline_command(config: str, cfg: dict) -> str:
    """The training command for the offline node: the config's launch script where it trains on several GPUs."""
    if int(setting(cfg, "num_processes")) > 1:
        return f"HF_HUB_OFFLINE=1 scripts/launch_colocate.sh configs/accelerate/zero3.yaml {config}"
    return f"HF_HUB_OFFLINE=1 python train.py --config {config}"


def cache_home() -> str:
    from huggingface_hub import constants

    return str(Path(constants.HF_HOME).expanduser())


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=f"python -m {__package__}.download",
        description="Download a config's model and dataset into the Hugging Face cache for an offline node.",
    )
    parser.add_argument("--config", required=True, help="the training config (YAML)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        cfg = read_config(args.config)
        download_model(cfg)
        download_dataset(cfg)
    except DownloadError as error:  # the config file it came from, then the key, the id and what to do
        print(f"error: {args.config}: {str(error).strip().splitlines()[0]}", file=sys.stderr)
        return 1
    except (EvalError, data.DataError) as error:
        print(f"error: {str(error).strip().splitlines()[0]}", file=sys.stderr)
        return 1
    print(f"cache: {cache_home()} (HF_HOME); copy it to the offline node or share it, then run there, with the same "
          "HF_HOME:")
    print(f"  {offline_command(args.config, cfg)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
