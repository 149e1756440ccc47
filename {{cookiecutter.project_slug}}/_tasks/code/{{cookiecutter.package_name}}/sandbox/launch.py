"""How a worker is started: the bubblewrap command line (minimal root, unprivileged uid) or the unsafe mode."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig

from .types import INSTALL_HINT, SAFE, SandboxConfig, SandboxUnavailable

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.py")
PY_MOUNT = "/sbx/py"  # where the interpreter's prefix appears inside the sandbox
LIB_MOUNT = "/sbx/lib"  # this directory (worker.py and wire.py), read-only
WORKER_MOUNT = LIB_MOUNT + "/worker.py"
UID_BASE = 1_900_000_000  # workers of a root trainer run as UID_BASE + n: unprivileged uids owned by nobody else
SLOTS = 512  # uids per trainer process (UID_BASE + 4M pids x 512 stays below 2^32 - 1)


def clean_env() -> dict[str, str]:
    # LD_BIND_NOW: the worker binds every library symbol at start, so that no job's child writes (copies) the
    # worker's symbol tables the first time it calls a function (~15 fewer page faults per job).
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", "PYTHONHASHSEED": "0", "LD_BIND_NOW": "1"}


def interpreter() -> tuple[str, str]:
    """(the real interpreter binary, its installation prefix): a venv's python is its base interpreter."""
    exe = os.path.realpath(sys.executable)
    prefix = os.path.realpath(sys.base_prefix)
    return exe, prefix


def _system_binds() -> list[str]:
    """/usr read-only, and /lib, /lib64, /bin as links or read-only binds (as on the host)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/lib", "/lib64", "/lib32", "/bin"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return args


def bwrap_argv(bwrap: str, cfg: SandboxConfig, uid: int | None) -> list[str]:
    """The sandbox a worker lives in. ``uid``: the worker drops to it (the trainer is root and bubblewrap runs
    without a user namespace); None: a user namespace maps the caller to uid 65534."""
    exe, prefix = interpreter()
    # bubblewrap creates a bind's missing parents with mode 0700 when run as root: made 0755 first, else the
    # unprivileged job could not read the interpreter's stdlib (no import after the worker drops its uid)
    binds = _system_binds() + ["--perms", "0755", "--dir", "/sbx"]
    if prefix == "/usr" or prefix.startswith("/usr/"):
        py = exe
    else:  # e.g. a Python under /root: bound read-only at a neutral path, nothing else of its parents is visible
        binds += ["--ro-bind", prefix, PY_MOUNT]
        py = PY_MOUNT + exe[len(prefix) :] if exe.startswith(prefix + "/") else exe
    env = clean_env()
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    if libdir.startswith(prefix + "/") and not prefix.startswith("/usr"):
        env["LD_LIBRARY_PATH"] = PY_MOUNT + libdir[len(prefix) :]
    user = ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] if uid is not None else [
        "--unshare-user", "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL"]  # fmt: skip
    return [
        bwrap,
        *binds,
        "--ro-bind", HERE, LIB_MOUNT,
        "--proc", "/proc",
        "--dev", "/dev", "--remount-ro", "/dev",
        "--size", str(cfg.tmp_mb << 20), "--perms", "1777", "--tmpfs", "/tmp",
        "--remount-ro", "/",
        "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        *user,
        "--die-with-parent", "--new-session",
        "--clearenv", *[a for k, v in env.items() for a in ("--setenv", k, v)],
        "--chdir", "/tmp",
        "--", py, "-I", "-S", WORKER_MOUNT, "bwrap", str(uid if uid is not None else -1),
    ]  # fmt: skip


def unsafe_argv(uid: int | None) -> list[str]:
    exe, _ = interpreter()
    return [exe, "-I", "-S", WORKER, "unsafe", str(uid if uid is not None else -1)]


def find_bwrap(cfg: SandboxConfig) -> str:
    path = cfg.bwrap_path or shutil.which("bwrap")
    if not path or not os.access(path, os.X_OK):
        raise SandboxUnavailable(unavailable_message("bubblewrap (bwrap) is not installed"))
    return path


def unavailable_message(reason: str) -> str:
    return (
        f"code sandbox: {reason}; install it with `{INSTALL_HINT}` (and allow unprivileged user namespaces), or set "
        f"sandbox_isolation: unsafe-rlimit-only to run model code with NO isolation from this machine"
    )


def launchers(cfg: SandboxConfig, slot: int) -> list[tuple[list[str], str]]:
    """Candidate (argv, mode) pairs for the worker in ``slot`` (unique within this process: see ``pool``), best
    first. A root trainer's workers each get their own uid: processes are counted against ``RLIMIT_NPROC`` per uid,
    so two workers sharing one (two sandboxes of one process) would share one job's process budget."""
    uid = UID_BASE + (os.getpid() % 4_000_000) * SLOTS + slot % SLOTS
    if cfg.isolation != SAFE:
        if os.geteuid() != 0:
            return [(unsafe_argv(None), "unsafe-rlimit-only")]
        if not _others_can_read(os.path.dirname(os.__file__)):
            raise SandboxUnavailable(
                "code sandbox: unsafe-rlimit-only as root runs model code as an unprivileged uid, which cannot read "
                f"this Python ({os.path.dirname(os.__file__)}); use bubblewrap (`{INSTALL_HINT}`)"
            )
        return [(unsafe_argv(uid), "unsafe-rlimit-only")]  # the child drops to this worker's own uid
    bwrap = find_bwrap(cfg)
    out = []
    if os.geteuid() == 0:
        out.append((bwrap_argv(bwrap, cfg, uid), "bwrap"))
    out.append((bwrap_argv(bwrap, cfg, None), "bwrap-userns"))
    return out


def _others_can_read(path: str) -> bool:
    """Whether an unrelated user can reach ``path`` (every parent searchable, the directory readable)."""
    path = os.path.realpath(path)
    try:
        parts = path.split("/")
        for i in range(2, len(parts) + 1):
            if not os.stat("/".join(parts[:i]) or "/").st_mode & 0o001:
                return False
        return bool(os.stat(path).st_mode & 0o004)
    except OSError:
        return False
