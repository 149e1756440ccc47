"""A job's own process (standard library only; no relative imports: the worker loads it by path, like ``wire``).

The worker makes each job's process before its job comes, with two pipes made for it alone: it reads the job's
first frame (its budgets and the solution) and then the calls from one and writes its answers to the other; the
trainer gets the other ends of both from the worker (once the previous job on the worker is cleaned up) and talks to
this process only: the worker never reads or writes them, so nothing of any job enters the worker's memory, which
every later job's process inherits. Where each job has a pid namespace of its own (``namespaces``), the process is
forked ahead, as a **spare**, while the previous job runs: it sets itself up (its own process group, ``/dev/null``
on 0-2, its pipes at 3 and 4, every other descriptor closed, its scratch directory) and waits on its pipe; the
running job cannot reach it (another pid namespace, no ``/proc``, none of its descriptors). Elsewhere a job could
signal the next job's process, so the worker forks it when its job comes.

The first frame is ``FIRST`` (the job's wall-clock seconds, memory and file-size bytes, processes) followed by the
solution's UTF-8 text: the process sets its rlimits, then loads the solution and serves calls (``serve``).
"""

from __future__ import annotations

import os
import resource

from wire import FIRST, Reader, decode, encode, frame, write_all


def spare_main(rfd: int, wfd: int, scratch: str, base_procs: int, uid: int) -> None:
    """Runs in the forked process: set up, wait for the job's first frame, set its budgets, then serve it.
    ``base_procs``: processes its uid already counts (0 in a user namespace of its own); ``uid``: the job's uid (the
    unsafe mode as root), or -1. Never returns."""
    os.setpgid(0, 0)  # its own group, so kill(0) cannot reach the worker; no setsid (a session costs a sched group)
    requests, replies = os.dup2(rfd, 101), os.dup2(wfd, 102)  # clear of 0-4 first
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.dup2(requests, 3)
    os.dup2(replies, 4)
    os.closerange(5, 1 << 16)  # the worker's control socket, and every pipe end that is not this job's
    os.chdir(scratch)
    reader = Reader(3)
    try:
        first = reader.payload()
        seconds, memory, max_file, procs = FIRST.unpack_from(first)
        code = first[FIRST.size :].decode("utf-8", "surrogatepass")
    except BaseException:
        os._exit(0)  # no job came (the trainer or the worker went away)
    cpu = seconds + 2
    for what, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (memory, memory)),
        (resource.RLIMIT_FSIZE, (max_file, max_file)),
        (resource.RLIMIT_NOFILE, (64, 64)),
        (resource.RLIMIT_NPROC, (base_procs + procs, base_procs + procs)),
        (resource.RLIMIT_CORE, (0, 0)),
    ):
        resource.setrlimit(what, value)
    if uid >= 0:  # the unsafe mode as root: its directory (made ahead, 0700, root's) becomes the job's
        os.chown(".", uid, uid)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    serve(reader, 4, code)


def serve(requests: Reader, wfd: int, code: str) -> None:
    """Load the solution, report its callables, then serve calls (frames from ``requests``) until EOF."""
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

    ns: dict = {"__name__": "__main__", "__builtins__": builtins}
    try:
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
