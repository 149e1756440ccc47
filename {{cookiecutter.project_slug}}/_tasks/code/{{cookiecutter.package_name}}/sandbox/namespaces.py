"""No job sees what an earlier job did to process numbers (standard library and ctypes only; no relative imports:
the worker loads it by path, like ``wire``).

Process ids are handed out by a counter per pid namespace. Were a job's processes numbered in a namespace that
outlives the job (the worker's), a job could write a number by starting threads or processes, and the next job on
the worker read it from its own pid, its threads' ids or ``/proc``. So:

* each job's process is created in a **pid namespace of its own** (``clone`` with ``CLONE_NEWPID``, and
  ``CLONE_NEWUSER`` where the worker is not root: an unprivileged process may make a pid namespace inside a user
  namespace of its own). The job is pid 1 there, its threads and children 2, 3...: the same numbers for every
  job, whatever ran before. In that user namespace it holds capabilities over its own namespaces only, which any
  process may give itself (``unshare(CLONE_NEWUSER)``): none over the worker's, which belong to the worker's
  user namespace (whose capabilities the worker dropped before its first job), or the host's;
* ``/proc`` is covered, for the worker's jobs, by an empty read-only tmpfs in a mount namespace of the worker's own
  (made once, at start): a ``/proc`` shows the numbers of the namespace it was mounted for (``/proc/self`` is the
  worker's count, not the job's), and its global counters (``/proc/stat``'s forks, ``loadavg``, ``meminfo``...) are
  written by every job. The worker keeps the real one as its working directory and reads it by relative paths
  (``housekeeping.PROC``).

It costs one ``clone`` per job in place of the ``fork``, made through ctypes with the interpreter's own fork hooks
(``PyOS_BeforeFork`` and the rest, as ``os.fork`` runs them). Where the kernel refuses user namespaces (a sysctl, an
AppArmor policy), jobs are forked as before and the worker says so (``hello``, ``Sandbox.job_pidns``): the pid
channel stays open there.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import struct

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_SLAVE = 1, 2, 4, 8, 0x4000, 0x80000
_CLONE = {"x86_64": 56, "aarch64": 220}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _check(rc: int, what: str) -> None:
    if rc < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def drop_capabilities() -> None:
    """No capability left in this process's user namespace (capset v3: effective, permitted, inheritable = 0)."""
    header = struct.pack("Ii", 0x20080522, 0)
    _check(_libc.capset(header, bytes(24)), "capset")


def hide_proc() -> bool:
    """Cover /proc for this process and its children with an empty read-only tmpfs, in a mount namespace of their
    own (a user namespace too where this process is not root: the worker then holds no capability outside it, and
    drops those inside it). The real /proc stays this process's working directory. Whether /proc is covered."""
    real = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
    try:
        if os.geteuid() == 0:  # the unsafe mode as root: the worker stays root to drop each job to its own uid
            _check(_libc.unshare(CLONE_NEWNS), "unshare")
            _check(_libc.mount(None, b"/", None, MS_REC | MS_SLAVE, None), "mount")  # nothing reaches the host
        else:
            uid, gid = os.geteuid(), os.getegid()
            _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
            # its own ids mapped as themselves, so that a job's user namespace can be made inside this one (the
            # files are its own only while it is dumpable: a setuid made it not; the worker makes it so again)
            _libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
        flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
        _check(_libc.mount(b"none", b"/proc", b"tmpfs", flags, b"size=4k,mode=555"), "mount")
    except OSError:
        os.close(real)
        return False
    finally:
        if os.geteuid() != 0:
            drop_capabilities()  # raises (the worker does not start) rather than leave its jobs a capability
    os.fchdir(real)
    os.close(real)
    return True


def job_flags() -> int:
    """The clone flags that give a job a pid namespace of its own here, or 0 where the kernel refuses them."""
    flags = CLONE_NEWPID | (0 if os.geteuid() == 0 else CLONE_NEWUSER)
    if _clone is None:
        return 0
    try:
        pid = fork(flags)
    except OSError:
        return 0
    if pid == 0:
        os._exit(0 if os.getpid() == 1 else 1)
    _, status = os.waitpid(pid, 0)
    return flags if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 0


def fork(flags: int) -> int:
    """``os.fork()``, the child in the new namespaces ``flags`` names (0: a plain fork). The interpreter's own fork
    hooks run as for ``os.fork`` (this process has one thread). The child does as little as it can before it
    returns: every page it writes is copied from the worker's."""
    if not flags:
        return os.fork()
    _before()
    pid = _clone(flags | signal.SIGCHLD, 0, 0, 0, 0)  # stack 0: the child runs on a copy of this stack, as with fork
    if pid == 0:
        _after_child()
        return 0
    err = ctypes.get_errno()
    _after_parent()
    if pid < 0:
        raise OSError(err, f"clone: {os.strerror(err)}")
    return pid


def _syscall(number: int | None):
    if number is None:
        return None
    fn = ctypes.CDLL(None, use_errno=True).syscall
    fn.argtypes = [ctypes.c_long, ctypes.c_ulong] + [ctypes.c_void_p] * 4
    fn.restype = ctypes.c_long
    return functools.partial(fn, number)


_before, _after_child, _after_parent = (getattr(ctypes.pythonapi, f"PyOS_{name}") for name in (
    "BeforeFork", "AfterFork_Child", "AfterFork_Parent"))  # fmt: skip
_clone = _syscall(_CLONE.get(os.uname().machine))
