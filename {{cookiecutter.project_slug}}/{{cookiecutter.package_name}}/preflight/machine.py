"""The facts the doctor reads from the machine (GPUs, driver, installed packages, disk, hub), behind one object
that tests replace with fakes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..constants import GIB


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
    # Multi-node facts (multinode.py): this node's name, the filesystem type under a path, a TCP probe of host:port
    # ("open", "refused", "timeout" or "unresolved: ..."), whether a host names this node, SLURM's node list expanded.
    hostname: Callable[[], str] = field(default_factory=lambda: _hostname)
    fs_type: Callable[[Path], str] = field(default_factory=lambda: _fs_type)
    probe: Callable[[str, int], str] = field(default_factory=lambda: _probe)
    is_local: Callable[[str], bool] = field(default_factory=lambda: _is_local)
    port_free: Callable[[int], bool] = field(default_factory=lambda: _port_free)
    hostnames: Callable[[str], list[str]] = field(default_factory=lambda: _slurm_hostnames)
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
    from ..hub import cached

    return cached(dataset, "dataset")


def _model_cached(model: str) -> bool:
    from ..hub import cached

    return cached(model, "model")


def _settings_error(path: str) -> str | None:
    """train.py's own verdict on the config file (parse and every check before the data loads), or None."""
    from .launch_checks import checked_args

    try:
        checked_args(["--config", path])
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


def _hostname() -> str:
    import socket

    return socket.gethostname()


def _fs_type(path: Path) -> str:
    """The type of the filesystem holding ``path`` (its nearest existing parent), from /proc/mounts; "" unknown."""
    path = Path(path).resolve()
    while not path.exists() and path != path.parent:
        path = path.parent
    best, kind = "", ""
    try:
        lines = Path("/proc/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = parts[1].replace("\\040", " ")
        inside = str(path) == mount or str(path).startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, kind = mount, parts[2]
    return kind


def _probe(host: str, port: int, timeout: float = 5.0) -> str:
    import socket

    try:
        address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4]
    except OSError as error:
        return f"unresolved: {error}"
    try:
        with socket.create_connection(address[:2], timeout=timeout):
            return "open"
    except ConnectionRefusedError:
        return "refused"
    except TimeoutError:
        return "timeout"
    except OSError as error:
        return f"unreachable: {error}"


def _is_local(host: str) -> bool:
    """Whether ``host`` is this node: its name, or an address one of its interfaces holds."""
    import socket

    if host in ("localhost", socket.gethostname(), socket.getfqdn()):
        return True
    try:
        address = socket.gethostbyname(host)
    except OSError:
        return False
    if address.startswith("127."):
        return True
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((address, 0))  # only an address of this node can be bound
        return True
    except OSError:
        return False


def _port_free(port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def _slurm_hostnames(nodelist: str) -> list[str]:
    """SLURM's compact node list ("gpu[01-03]") expanded by scontrol; [] without scontrol."""
    try:
        done = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return done.stdout.split() if done.returncode == 0 else []
