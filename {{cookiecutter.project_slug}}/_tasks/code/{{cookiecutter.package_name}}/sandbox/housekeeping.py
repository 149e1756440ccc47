"""The worker's housekeeping (standard library only; no relative imports: the worker loads it by path, like
``wire``): finding, counting and reaping a job's processes through /proc, and emptying the writable directories a
job used."""

from __future__ import annotations

import os

PAGE = os.sysconf("SC_PAGE_SIZE")
PROC = "/proc"  # where the worker reads /proc: "." once it covered /proc for its jobs (``namespaces.hide_proc``)


def reap() -> bool:
    got = False
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return got
        if pid <= 0:
            return got
        got = True


def descendants(root: int) -> list[int]:
    out: list[int] = []
    stack = [root]
    while stack:
        pid = stack.pop()
        try:
            for tid in os.listdir(f"{PROC}/{pid}/task"):
                with open(f"{PROC}/{pid}/task/{tid}/children") as f:
                    kids = [int(k) for k in f.read().split()]
                out.extend(kids)
                stack.extend(kids)
        except OSError:
            pass
    return [p for p in out if not _zombie(p)]


def _zombie(pid: int) -> bool:
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as f:
            data = f.read()
        return data[data.rindex(b")") + 2 : data.rindex(b")") + 3] == b"Z"
    except (OSError, ValueError):
        return True


def _count_procs(uid: int) -> int:
    n = 0
    for name in os.listdir(PROC):
        if name.isdigit():
            try:
                n += os.stat(f"{PROC}/{name}").st_uid == uid
            except OSError:
                pass
    return n


def _prctl(option: int, arg: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(option, arg, 0, 0, 0)
    except Exception:
        pass


def wipe(top: str) -> None:
    """Remove everything under ``top``, also what a job made unreadable or unwritable."""
    for root, dirs, _ in os.walk(top):  # first make every directory ours to list and empty (links are not followed)
        for d in dirs:
            if not os.path.islink(os.path.join(root, d)):
                _quiet(os.chmod, os.path.join(root, d), 0o700)
    for root, dirs, files in os.walk(top, topdown=False):
        for name in files:
            _quiet(os.unlink, os.path.join(root, name))
        for d in dirs:
            path = os.path.join(root, d)
            _quiet(os.unlink if os.path.islink(path) else os.rmdir, path)


def _quiet(fn, *args) -> None:
    try:
        fn(*args)
    except OSError:
        pass


def used(top: str) -> bool:
    """Whether the job's tmpfs directory ``top`` holds anything, read from its size (a tmpfs directory grows by 20
    bytes per entry from 40) rather than its listing: the names a job chose never enter this process."""
    try:
        return os.stat(top).st_size > 40
    except OSError:
        return False
