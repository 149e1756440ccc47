"""A job's own process (standard library only; no relative imports: the worker loads it by path, like ``wire``).

The worker makes each job's process ahead of time, as a **spare**: forked (in a pid namespace of its own, see
``namespaces``) while the previous job runs, it sets itself up (its own process group, ``/dev/null`` on 0-2, every
other descriptor closed, its scratch directory) and waits on a socket of its own for its job. The job's message
carries only the job's budgets and the two pipe ends the trainer made for this job alone; the spare then sets its
rlimits (and, in the unsafe mode as root, its uid), reads the solution from its pipe, loads it and serves calls
(``serve``). Nothing of any job enters the worker's memory, so a spare forked while a job runs inherits nothing of
it; the running job cannot reach the spare (another pid namespace, no ``/proc``). Only where each job has a pid
namespace of its own: elsewhere a job could signal the next job's process, and the worker forks it when the job
comes.
"""

from __future__ import annotations

import _socket
import os
import resource
import struct

from wire import Reader, decode, encode, frame, write_all

LIMITS = struct.Struct("5q")  # CPU seconds, address space, file size, processes, uid (-1: keep)
_SOCK = 100  # where the spare keeps its socket while it waits (clear of 0-4 and of the job's pipes)


def spare_main(sock: int, scratch: str) -> None:
    """Runs in the forked spare: set up, wait for the job (its budgets and pipes), then serve it. Never returns."""
    os.setpgid(0, 0)  # its own group, so kill(0) cannot reach the worker; no setsid (a session costs a sched group)
    os.dup2(sock, _SOCK)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, _SOCK)
    os.closerange(_SOCK + 1, 1 << 16)  # the worker's control socket and every other spare's socket
    os.chdir(scratch)
    ctl = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET, 0, _SOCK)
    try:
        msg, ancillary, flags, _ = ctl.recvmsg(LIMITS.size, _socket.CMSG_SPACE(8))
    except OSError:
        os._exit(0)
    fds = [fd for level, kind, data in ancillary if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS
           for fd in struct.unpack(f"{len(data) // 4}i", data[: len(data) // 4 * 4])]  # fmt: skip
    if len(msg) != LIMITS.size or len(fds) != 2 or flags & _socket.MSG_CTRUNC:
        os._exit(0)  # the worker went away (or sent nothing usable): no job
    requests, replies = os.dup2(fds[0], 101), os.dup2(fds[1], 102)  # clear of 3-4 first
    os.dup2(requests, 3)
    os.dup2(replies, 4)
    os.closerange(5, 1 << 16)  # the socket too
    cpu, memory, max_file, nproc, uid = LIMITS.unpack(msg)
    for what, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (memory, memory)),
        (resource.RLIMIT_FSIZE, (max_file, max_file)),
        (resource.RLIMIT_NOFILE, (64, 64)),
        (resource.RLIMIT_NPROC, (nproc, nproc)),
        (resource.RLIMIT_CORE, (0, 0)),
    ):
        resource.setrlimit(what, value)
    if uid >= 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    serve(3, 4)


def serve(rfd: int, wfd: int) -> None:
    """Read the solution, load it, report its callables, then serve calls until EOF."""
    import builtins

    def send(obj: object) -> None:
        try:
            data = frame(obj)
        except BaseException as exc:
            data = frame({"x": [type(exc).__name__, "unencodable reply"]})
        write_all(wfd, data)

    def describe(exc: BaseException) -> list:
        try:
            return [type(exc).__name__, str(exc)[:300]]
        except BaseException:
            return ["Exception", ""]

    requests = Reader(rfd)
    ns: dict = {"__name__": "__main__", "__builtins__": builtins}
    try:
        code = decode(requests.payload())
        if type(code) is not str:
            raise TypeError("the solution is not text")
        exec(code, ns)
    except BaseException as exc:
        send({"load": describe(exc)})
        os._exit(0)
    names = [k for k, v in list(ns.items()) if isinstance(k, str) and not k.startswith("__") and callable(v)]
    send({"names": names[:256]})
    handles: list = []  # objects returned by the solution that are not plain data, referred to by index
    while True:
        try:
            req = decode(requests.payload())
        except BaseException:
            os._exit(0)
        try:
            name = req["n"]
            if "o" in req:  # a method of a returned object (no dunders: the trusted side calls methods only)
                if name.startswith("__"):
                    raise AttributeError(name)
                fn = getattr(handles[req["o"]], name)
            else:
                fn = ns[name]
            value = fn(*req["a"], **req["k"])
            try:
                reply = {"v": encode(value)}
            except (TypeError, ValueError, RecursionError):
                if len(handles) >= 10_000:
                    raise
                handles.append(value)
                reply = {"h": len(handles) - 1}
        except BaseException as exc:
            reply = {"x": describe(exc)}
        send(reply)
