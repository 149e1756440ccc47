"""The facts the doctor reads from the machine (GPUs, driver, installed packages, disk, hub), behind one object
that tests replace with fakes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

GIB = float(2**30)


@dataclass(frozen=True)
class Gpu:
    name: str
    total_gib: float
    free_gib: float
    capability: tuple[int, int]

    @property
    def bf16(self) -> bool:
        return self.capability >= (8, 0)


@dataclass
class Machine:
    """What the checks read from the machine. The defaults read the real one; tests replace any field."""

    gpus: Callable[[], list[Gpu]] = field(default_factory=lambda: _real_gpus)
    driver: Callable[[], str | None] = field(default_factory=lambda: _real_driver)
    torch_cuda: Callable[[], str | None] = field(default_factory=lambda: _real_torch_cuda)
    version: Callable[[str], str | None] = field(default_factory=lambda: _installed_version)
    requires: Callable[[str], list[str]] = field(default_factory=lambda: _requires)
    which: Callable[[str], str | None] = field(default_factory=lambda: shutil.which)
    bwrap_runs: Callable[[str], tuple[bool, str]] = field(default_factory=lambda: _bwrap_runs)
    disk_free_gib: Callable[[Path], float] = field(default_factory=lambda: _disk_free_gib)
    hub_cached: Callable[[str], bool] = field(default_factory=lambda: _hub_cached)
    model_cached: Callable[[str], bool] = field(default_factory=lambda: _model_cached)
    settings_error: Callable[[str], str | None] = field(default_factory=lambda: _settings_error)
    hub_reachable: Callable[[], bool] = field(default_factory=lambda: _hub_reachable)
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    home: Path = field(default_factory=Path.home)


# --- the real machine -------------------------------------------------------------------------------------------------


def _real_gpus() -> list[Gpu]:
    try:
        import torch

        if not torch.cuda.is_available():
            return []
        found = []
        for index in range(torch.cuda.device_count()):
            free, total = torch.cuda.mem_get_info(index)
            props = torch.cuda.get_device_properties(index)
            found.append(Gpu(props.name, total / GIB, free / GIB, (props.major, props.minor)))
        return found
    except Exception:  # noqa: BLE001 - no torch or no driver: no GPU
        return []


def _real_driver() -> str | None:
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20)
        return done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def _real_torch_cuda() -> str | None:
    try:
        import torch

        return torch.version.cuda
    except Exception:  # noqa: BLE001
        return None


def _installed_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _requires(name: str) -> list[str]:
    from importlib import metadata

    try:
        return list(metadata.requires(name) or [])
    except metadata.PackageNotFoundError:
        return []


def _bwrap_runs(path: str) -> tuple[bool, str]:
    try:
        done = subprocess.run([path, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, str(error)
    return done.returncode == 0, (done.stderr.strip().splitlines() or [""])[-1]


def _disk_free_gib(path: Path) -> float:
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free / GIB


def _hub_cached(dataset: str) -> bool:
    from .hub import cached

    return cached(dataset, "dataset")


def _model_cached(model: str) -> bool:
    from .hub import cached

    return cached(model, "model")


def _settings_error(path: str) -> str | None:
    """train.py's own verdict on the config file (parse and every check before the data loads), or None."""
    from . import config, distributed

    try:
        script_args, training_args, model_args, _ = config.parse_args(["--config", path])
        config.check_arguments(script_args, training_args)
        distributed.check_launch(script_args, training_args, model_args)
    except (ValueError, FileNotFoundError) as error:
        return (str(error).strip().splitlines() or [type(error).__name__])[0]
    return None


def _hub_reachable() -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen("https://huggingface.co/api/status", timeout=5):  # noqa: S310 - fixed URL
            return True
    except Exception:  # noqa: BLE001 - any failure means: not reachable from here
        return False
