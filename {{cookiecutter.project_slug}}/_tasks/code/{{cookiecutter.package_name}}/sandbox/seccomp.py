"""The seccomp filter every job's processes run under (standard library and ctypes only; no relative imports: the
worker loads it by path, like ``wire``).

A job runs as the same uid as its worker (or, in the unsafe mode as root, a uid of the worker's own), in the
worker's IPC namespace and with its kernel keyrings. Without this filter it could stop or starve the worker, so
that a later job (a sibling completion) fails, or leave kernel objects that outlive it, through which later copies
of one completion learn what earlier ones were told, and that hold memory no process maps. The worker installs the
filter on itself once, at start (it needs none of these calls: it kills a job's processes one pid at a time), so
every job's process inherits it when it is forked, at no cost per job; it answers EPERM to:

* signalling a protected process (pid 1, the worker, the worker's parent) or a process group (negative pids):
  ``kill``, ``tkill``, ``tgkill``, ``rt_sigqueueinfo``, ``rt_tgsigqueueinfo``; joining another process group
  (``setpgid`` with a group other than 0, so ``kill(0)`` reaches only the job's own group); any pidfd
  (``pidfd_open``, ``pidfd_getfd``, ``pidfd_send_signal``, which also takes a ``/proc/<pid>`` directory); SIGIO
  owners (``fcntl`` F_SETOWN/F_SETOWN_EX, ``ioctl`` FIOSETOWN/SIOCSPGRP, whose signal the kernel sends with the
  job's credentials); tracing or touching another process (``ptrace``, ``process_vm_readv``/``writev``,
  ``process_madvise``, ``process_mrelease``, ``kcmp``, ``migrate_pages``, ``move_pages``, ``perf_event_open``);
  limits and scheduling of another process (``prlimit64``, ``sched_setaffinity``, ``sched_setscheduler``,
  ``sched_setparam``, ``sched_setattr`` with a pid other than 0; ``setpriority`` other than its own process;
  ``ioprio_set``);
* sockets of any family but ``AF_UNIX`` (``socket``, ``socketpair``): a TCP connection on the worker's loopback leaves
  state in its network namespace that outlives the job (a port in TIME_WAIT, which the next job on the worker finds
  it cannot bind: a bit per port), and a network namespace of each job's own would cost ~15% of the throughput;
  there is no other network there to reach (bubblewrap), and in the unsafe mode this keeps jobs off the host's;
* kernel state that outlives a process: System V shared memory, message queues and semaphores, POSIX message
  queues, keyrings (``add_key``, ``request_key``, ``keyctl``), and memory outside every process's resident set
  (``memfd_create``, ``memfd_secret``); ``io_uring``, whose requests bypass seccomp.

Where each job has a pid namespace of its own (``namespaces``), a job cannot name the worker, its parent or the
machine's pid 1 at all; the protected numbers then name processes of the job's own namespace (1 is the job itself,
which therefore cannot signal itself by pid), a restriction on it and no more.

A system call of another ABI (i386 or x32 on x86_64, arm32 on aarch64) kills the process: the numbers above are
those of the machine's own ABI. Machines other than x86_64 and aarch64 are refused (no filter, no sandbox).
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys

# The machine's own ABI: AUDIT_ARCH and system call numbers (x86_64: asm/unistd_64.h; aarch64: asm-generic/unistd.h).
_NAMES = (
    "kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo pidfd_send_signal pidfd_open pidfd_getfd ptrace "
    "process_vm_readv process_vm_writev process_madvise process_mrelease kcmp migrate_pages move_pages "
    "perf_event_open prlimit64 sched_setaffinity sched_setscheduler sched_setparam sched_setattr setpriority "
    "ioprio_set setpgid fcntl ioctl shmget shmat shmctl shmdt semget semop semctl semtimedop msgget msgsnd msgrcv "
    "msgctl mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr add_key request_key keyctl "
    "memfd_create memfd_secret io_uring_setup io_uring_enter io_uring_register socket socketpair"
).split()
_ABI = {
    "x86_64": (0xC000003E, (
        62, 200, 234, 129, 297, 424, 434, 438, 101, 310, 311, 440, 448, 312, 256, 279, 298, 302, 203, 144, 142, 314,
        141, 251, 109, 72, 16, 29, 30, 31, 67, 64, 65, 66, 220, 68, 69, 70, 71, 240, 241, 242, 243, 244, 245, 248,
        249, 250, 319, 447, 425, 426, 427, 41, 53)),
    "aarch64": (0xC00000B7, (
        129, 130, 131, 138, 240, 424, 434, 438, 117, 270, 271, 440, 448, 272, 238, 239, 241, 261, 122, 119, 118, 274,
        140, 30, 154, 25, 29, 194, 196, 195, 197, 190, 193, 191, 192, 186, 189, 188, 187, 180, 181, 182, 183, 184,
        185, 217, 218, 219, 279, 447, 425, 426, 427, 198, 199)),
}  # fmt: skip
SIGNAL = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")  # first argument: the target
SELF_ONLY = ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr")  # pid 0 only
SOCKETS = ("socket", "socketpair")  # first argument: the address family; AF_UNIX (1) only
DENY = tuple(n for n in _NAMES if n not in SIGNAL + SELF_ONLY + SOCKETS + ("setpriority", "setpgid", "fcntl", "ioctl"))
F_SETOWN, F_SETOWN_EX, FIOSETOWN, SIOCSPGRP = 8, 15, 0x8901, 0x8902

# Classic BPF: (code, jump if true, jump if false, k); seccomp_data is nr (0), arch (4), ip (8), args (16 + 8 i).
_LD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _EPERM, _KILL = 0x7FFF0000, 0x00050000 | 1, 0x80000000  # SECCOMP_RET_ALLOW, ERRNO(EPERM), KILL_PROCESS


def _arg(i: int) -> int:
    return 16 + 8 * i  # the low 32 bits (little-endian): pids, commands and flags are 32-bit in the kernel


def program(machine: str, protected: list[int]) -> bytes:
    """The filter for ``machine`` (``os.uname().machine``) as ``struct sock_filter`` array; ``protected``: pids no
    job may signal. Raises ValueError for another machine or byte order."""
    if machine not in _ABI or sys.byteorder != "little":
        raise ValueError(f"no seccomp filter for {machine} ({sys.byteorder}-endian); x86_64 and aarch64 only")
    arch, numbers = _ABI[machine]
    nr = dict(zip(_NAMES, numbers, strict=True))
    code: list = [(_LD, 4), (_JEQ, arch, None, "kill"), (_LD, 0)]
    if machine == "x86_64":
        code.append((_JGE, 0x40000000, "kill", None))  # the x32 ABI
    code += [(_JEQ, nr[n], "deny", None) for n in DENY]
    code += [(_JEQ, nr[n], "signal", None) for n in SIGNAL]
    code += [(_JEQ, nr[n], "self", None) for n in SELF_ONLY]
    code += [(_JEQ, nr[n], n, None) for n in ("setpriority", "setpgid", "fcntl", "ioctl")]
    code += [(_JEQ, nr[n], "unix", None) for n in SOCKETS]
    code += [(_RET, _ALLOW)]
    code += ["signal", (_LD, _arg(0)), (_JSET, 0x80000000, "deny", None)]  # a group, or every process (-1)
    code += [(_JEQ, pid, "deny", None) for pid in sorted(set(protected))] + [(_RET, _ALLOW)]
    code += ["self", (_LD, _arg(0)), (_JEQ, 0, "allow", "deny")]
    code += ["setpriority", (_LD, _arg(0)), (_JEQ, 0, None, "deny"), (_LD, _arg(1)), (_JEQ, 0, "allow", "deny")]
    code += ["setpgid", (_LD, _arg(1)), (_JEQ, 0, "allow", "deny")]
    code += ["fcntl", (_LD, _arg(1)), (_JEQ, F_SETOWN, "deny", None), (_JEQ, F_SETOWN_EX, "deny", "allow")]
    code += ["ioctl", (_LD, _arg(1)), (_JEQ, FIOSETOWN, "deny", None), (_JEQ, SIOCSPGRP, "deny", "allow")]
    code += ["unix", (_LD, _arg(0)), (_JEQ, 1, "allow", "deny")]
    code += ["allow", (_RET, _ALLOW), "deny", (_RET, _EPERM), "kill", (_RET, _KILL)]
    return _assemble(code)


def _assemble(code: list) -> bytes:
    """Instructions and labels (strings) to bytes; jumps name a later label (None: the next instruction)."""
    labels: dict[str, int] = {}
    ops = []
    for item in code:
        if isinstance(item, str):
            labels[item] = len(ops)
        else:
            ops.append(item)
    out = []
    for i, (op, k, *jumps) in enumerate(ops):
        jt, jf = ((labels[j] - i - 1 if j else 0) for j in (jumps or [None, None]))
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise ValueError("seccomp program too long for a jump")
        out.append(struct.pack("=HBBI", op, jt, jf, k))
    return b"".join(out)


def install(protected: list[int]) -> None:
    """Filter this process and every process it starts from now on, for good (the worker installs it on itself
    once, so that a job's fork inherits it at no cost); raises OSError if the kernel refuses, ValueError if there
    is no filter for this machine."""
    data = program(os.uname().machine, protected)
    insns = ctypes.create_string_buffer(data, len(data))
    fprog = ctypes.create_string_buffer(struct.pack("HP", len(data) // 8, ctypes.addressof(insns)))  # sock_fprog
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    # PR_SET_NO_NEW_PRIVS (38), then PR_SET_SECCOMP (22) with SECCOMP_MODE_FILTER (2)
    if prctl(38, 1, 0, 0, 0) or prctl(22, 2, ctypes.addressof(fprog), 0, 0):
        err = ctypes.get_errno()
        raise OSError(err, f"the kernel refused the seccomp filter: {os.strerror(err)}")


def check() -> str:
    """Why a child of this (filtered) process could still signal it, or "" when it cannot."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.kill(os.getppid(), 0)
            os.write(w, b"the seccomp filter let a job signal its worker")
        except PermissionError:
            pass
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    with os.fdopen(r, "rb") as f:
        return f.read().decode()
