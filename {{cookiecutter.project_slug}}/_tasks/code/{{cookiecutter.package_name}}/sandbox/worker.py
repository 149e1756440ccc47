"""The sandbox worker: the only program that ever runs model-written code. Standard library only; no relative imports
(it is started by path as ``python -I -S worker.py MODE UID``, inside bubblewrap in the safe mode).

The trainer controls it over one socket (fd 0): a JOB message carries the job's limits and two pipe ends the
trainer made for this job alone; the worker hands them to the job's child (``jobproc``: forked ahead, while the
previous job ran, in a pid namespace of the job's own, see ``namespaces``: every job is pid 1, and sees no /proc) and
sleeps until FINISH. The child reads the solution from its pipe, loads it and then serves calls to the solution's
functions: it reads
``{"n": name, "a": args, "k": kwargs}`` frames and answers ``{"v": value}`` or ``{"x": [type, message]}``, values
encoded as plain data (see ``wire``); an object that is not plain data stays in the child and is answered as
``{"h": index}``, whose methods the trusted side may call in turn. The job's code, calls and answers pass only
between the trainer and the child: they never enter the worker's memory, which every later job's child inherits,
and nothing a job leaves in its pipes reaches a later job. The worker never interprets a verdict; it enforces the
job's wall-clock, memory and process budget, and after the job kills every process the job left and empties every
writable directory. It installs the seccomp filter (``seccomp``) on itself at start: every job's process inherits
it, so no job can signal or trace the worker or leave kernel objects behind."""

from __future__ import annotations

import _socket
import gc
import os
import select
import signal
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its sibling wire.py (started by path, with -I)
import housekeeping  # noqa: E402
import jobproc  # noqa: E402
import namespaces  # noqa: E402
import seccomp  # noqa: E402
from housekeeping import PAGE, _count_procs, _prctl, _quiet, descendants, reap, used, wipe  # noqa: E402
from wire import EOF, FINISH, JOB, decode, dumps  # noqa: E402

TICK_S = 0.02  # period of the job-wide memory and process check
WRITABLE = ("/tmp", "/dev/shm")
# Standard modules solutions commonly import, loaded once here so that each job's fresh child inherits them rather
# than importing them again (``typing`` alone costs a few ms per job). A child's changes to them stay in the child.
# Only cheap, small ones: a larger worker makes every fork dearer (hashlib and random add ~4 MB).
PRELOAD = ("typing", "math", "collections", "itertools", "functools", "heapq", "bisect", "re", "string")  # ~1 MB


# ------------------------------------------------------------------------------------------------ worker


class Job:
    """One job's child and budgets. The trainer talks to the child over two pipes made for this job alone; this
    process only hands them to the child, so no byte of the job's code, calls or answers enters its memory (which
    every later job's child inherits)."""

    def __init__(self, limits: dict, worker: Worker) -> None:
        self.w = worker
        self.timeout = float(limits.get("timeout", 3.0))
        self.memory = int(limits.get("memory_mb", 512)) << 20
        self.max_procs = int(limits.get("max_procs", 16))
        self.max_file = int(limits.get("max_file_mb", 16)) << 20
        self.deadline = time.monotonic() + self.timeout
        self.next_check = time.monotonic() + TICK_S
        self.ended: dict | None = None  # {"end": status, "why": reason} once this process ended the job
        self.scratch = "/tmp" if worker.mode == "bwrap" else None
        self.pid = -1
        self.swept = False  # whether every process of the job was killed

    def start(self) -> None:
        """Run the job in the worker's spare (forked now where it was not made ahead): the trainer already holds the
        other ends of its pipes and sends it the job's budgets and solution, then the calls."""
        spare, self.w.spare = self.w.spare, None
        if spare is None:  # no pipes were handed to the trainer: nothing to run the job in
            raise EOFError
        spare.fork()
        self.pid, self.scratch = spare.pid, spare.scratch

    def end(self, status: str, why: str) -> None:
        if self.ended is None:
            self.ended = {"end": status, "why": why}
            self.kill()

    def wait_finish(self, ctl) -> bool:
        """Sleep until the trainer's FINISH, enforcing the job's deadline and (every TICK_S) its job-wide budgets;
        whether the trainer found the job's channel closed. Until a budget check, nothing here runs while the
        child does (each page this process writes while they share it is copied)."""
        while True:
            timeout = None
            if self.ended is None:
                now = time.monotonic()
                if now >= self.deadline:
                    self.end("timeout", "time limit exceeded")
                    continue
                if now >= self.next_check:
                    self.next_check = now + TICK_S
                    over = self.w.over_budget(self.memory, self.max_procs)
                    if over:
                        self.end("memory", over)
                        continue
                timeout = min(self.deadline, self.next_check) - now
            if select.select([ctl], [], [], timeout)[0]:
                msg = receive(ctl, 0)[0]
                if msg[:1] != FINISH:
                    raise EOFError
                return msg[1:] == EOF

    def stop(self, eof: bool) -> dict:
        """End the job now; how it ended if this process ended it or the child went (None: the trainer ended it)."""
        if self.ended is None and eof:
            self.exited()
        self.kill()
        return self.ended or {"end": None}

    def exited(self) -> None:
        """How the child ended after its channel closed (it is given 50 ms to exit, else killed)."""
        for _ in range(50):
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.001)
        else:
            self.end("error", "the program closed its channel")
            return
        self.pid = -1
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
            self.end("timeout", "CPU time limit exceeded")
        elif os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
            self.end("memory", "killed (likely out of memory)")
        else:
            self.end("error", "the program exited")

    def kill(self) -> None:
        """Kill the job's process and every other it left (once: after that no process of the job is left to fork)."""
        if self.pid > 0:
            _quiet(os.kill, self.pid, signal.SIGKILL)
            _quiet(os.waitpid, self.pid, 0)  # gone once this returns; kill_all finds whatever else the job left
        if not self.swept:
            self.w.kill_all()
            self.swept = True
        self.pid = -1

    def close(self) -> bool:
        """Kill what is left of the job and remove its files; whether its scratch space is empty."""
        self.kill()
        if self.w.mode != "bwrap":
            if self.scratch:
                wipe(self.scratch)
                _quiet(os.rmdir, self.scratch)
            return True
        if not any(used(top) for top in WRITABLE):
            return True
        pid = os.fork()  # emptied by a short-lived child, so that no name the job chose enters this process (whose
        if pid == 0:  # memory the next job's process inherits)
            for top in WRITABLE:
                wipe(top)
            os._exit(0)
        os.waitpid(pid, 0)
        return not any(used(top) for top in WRITABLE)


class Spare:
    """The next job's process (see ``jobproc``): its two pipes (the trainer gets the other ends), its scratch
    directory, and its pid once forked (ahead of its job where jobs have pid namespaces of their own)."""

    def __init__(self, w: Worker) -> None:
        self.w, self.pid, self.scratch = w, 0, "/tmp"
        if w.mode != "bwrap":
            import tempfile

            # the process makes it its job's only when its job comes (until then the running job cannot write there)
            self.scratch = tempfile.mkdtemp(prefix="job-", dir=w.scratch_root)
        self.requests, req_w = os.pipe()
        rep_r, self.replies = os.pipe()
        self.theirs = [req_w, rep_r]  # the trainer's ends, sent with the clean-up message

    def fork(self) -> None:
        if self.pid:
            return
        w = self.w
        # a job with a user namespace of its own counts its processes there from 0 (its uid's count in its namespace)
        base = 0 if w.clone_flags & namespaces.CLONE_NEWUSER else w.base_procs
        uid = -1 if w.child_uid is None else w.child_uid
        pid = namespaces.fork(w.clone_flags)  # in a pid namespace of its own where the kernel allows it
        if pid == 0:
            try:
                jobproc.spare_main(self.requests, self.replies, self.scratch, base, uid)
            finally:
                os._exit(70)
        self.pid = pid
        for fd in (self.requests, self.replies):
            os.close(fd)

    def hand_over(self, ctl) -> None:
        """The clean-up message, with the trainer's ends of this process's pipes (closed here once sent)."""
        try:
            fds = struct.pack("2i", *self.theirs)
            ctl.sendmsg([dumps({"clean": self.pid})], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        finally:
            for fd in self.theirs:
                os.close(fd)
            self.theirs = []


class Worker:
    def __init__(self, mode: str, uid: int, scratch_root: str | None = None) -> None:
        self.mode = mode
        self.scratch_root = scratch_root  # unsafe mode: the trainer's directory for this worker's job directories
        self.me = os.getpid()
        self.child_uid: int | None = None
        if uid >= 0:
            if mode == "bwrap":  # started as root without a user namespace: drop to this worker's own uid for good
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            else:
                self.child_uid = uid
        self.pidns = mode == "bwrap" and os.getppid() == 1
        self.base_procs = 1 if mode == "bwrap" else _count_procs(self.child_uid if uid >= 0 else os.geteuid())
        self.kuid = os.getuid()  # the jobs' uid on the host (as seen before any user namespace of the worker's)
        self.proc_hidden = namespaces.hide_proc()  # jobs see an empty /proc; this process reads the real one at "."
        if self.proc_hidden:
            housekeeping.PROC = "."
        self.clone_flags = namespaces.job_flags()  # each job in a pid namespace of its own, where the kernel allows
        self.spare: Spare | None = None
        self.ahead = bool(self.clone_flags)  # only where a job cannot name the next job's process (see ``jobproc``)

    def prepare(self) -> None:
        """Make the next job's pipes, and its process too where that is safe ahead of its job (while a job runs)."""
        if self.spare is None:
            self.spare = Spare(self)
        if self.ahead:
            self.spare.fork()

    def job_processes(self) -> list[int]:
        """Every process but this one, its init and the next job's process."""
        keep = (1, self.me, self.spare.pid if self.spare else 0)  # (a pid of 0 is never listed)
        if self.pidns:
            return [int(p) for p in os.listdir(housekeeping.PROC) if p.isdigit() and int(p) not in keep]
        return [p for p in descendants(self.me) if p not in keep]

    def over_budget(self, memory: int, max_procs: int) -> str:
        pids = self.job_processes()
        if len(pids) <= 1:
            return ""
        if len(pids) > max_procs:
            return f"process budget exceeded ({len(pids)} processes)"
        rss = 0
        for p in pids:
            try:
                with open(f"{housekeeping.PROC}/{p}/statm") as f:
                    rss += int(f.read().split()[1]) * PAGE
            except (OSError, ValueError, IndexError):
                pass
        return f"job memory budget exceeded ({rss >> 20} MiB)" if rss > memory else ""

    def kill_all(self) -> None:
        for _ in range(500):
            pids = self.job_processes()
            for p in pids:  # one by one: the seccomp filter refuses kill(-1) to this process as to its jobs
                _quiet(os.kill, p, signal.SIGKILL)
            reaped = reap()
            if not pids and not reaped:
                return
            if pids and not reaped:
                time.sleep(0.001)


def receive(ctl, fds: int) -> tuple[bytes, list[int]]:
    """One control message and the descriptors attached to it (``fds`` expected; any others are closed)."""
    msg, ancillary, flags, _ = ctl.recvmsg(4096, _socket.CMSG_SPACE(4 * max(fds, 1)))  # messages are small
    got: list[int] = []
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            got += struct.unpack(f"{len(data) // 4}i", data[: len(data) // 4 * 4])
    if len(got) != fds or flags & (_socket.MSG_CTRUNC | _socket.MSG_TRUNC):
        for fd in got:
            _quiet(os.close, fd)
        return (b"" if fds else msg), []
    return msg, got


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "bwrap"
    uid = int(sys.argv[2]) if len(sys.argv) > 2 else -1
    ctl = _socket.socket(fileno=os.dup(0))  # the trainer's control socket (SOCK_SEQPACKET)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans of a job come back to us, so they can be killed
    w = Worker(mode, uid, sys.argv[3] if len(sys.argv) > 3 else None)
    for name in PRELOAD:
        __import__(name)
    _prctl(4, 0)  # PR_SET_DUMPABLE 0 (after any setuid): job processes cannot open /proc/<worker>/fd or ptrace us
    try:  # inherited by every job's process: none can signal or trace this one, or leave IPC objects or keys
        seccomp.install([1, os.getpid(), os.getppid()])
        problem = seccomp.check()
    except (OSError, ValueError) as exc:
        problem = str(exc)
    if problem:
        os.write(2, f"code sandbox: {problem}\n".encode())
        os._exit(1)
    hello = {"mode": mode, "pidns": w.pidns, "uid": w.kuid, "child_uid": w.child_uid, "pid": os.getpid(),
             "job_pidns": bool(w.clone_flags), "proc_hidden": w.proc_hidden}  # fmt: skip
    ctl.send(dumps(hello))
    os.dup2(null, 2)
    gc.freeze()  # what exists now is never collected here or in a job's child: fewer pages copied after each fork
    w.prepare()
    w.spare.hand_over(ctl)  # the first job's pipes
    last: tuple[bytes, object] = (b"", None)  # the trainer sends the same limits job after job
    while True:
        msg = receive(ctl, 0)[0]
        if msg != last[0]:
            last = (msg, decode(msg[1:] or b"{}") if msg[:1] == JOB else None)
        limits = last[1]
        if not isinstance(limits, dict):
            os._exit(0)
        job = Job(limits, w)
        try:
            job.start()
            w.prepare()
            eof = job.wait_finish(ctl)
            ctl.send(dumps(job.stop(eof)))
        except (EOFError, OSError):
            job.close()
            os._exit(0)
        if not job.close():
            os._exit(3)  # could not empty the scratch space: a fresh worker gets a fresh one
        w.spare.hand_over(ctl)  # every process of the job is gone and its files removed; the next job's pipes


if __name__ == "__main__":
    main()
