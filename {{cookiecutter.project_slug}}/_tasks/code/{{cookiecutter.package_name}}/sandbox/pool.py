"""The worker pool: ``Sandbox(config).run_batch(jobs)`` spreads jobs over long-lived sandboxed workers."""

from __future__ import annotations

import itertools
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from typing import Any

from . import launch, wire
from .harness import run_tests
from .types import Job, Result, SandboxConfig, SandboxUnavailable, TestResult

_START_TIMEOUT_S = 20.0
_SLOTS = itertools.count()  # every worker of every sandbox in this process gets its own slot, hence its own uid
_GRACE_S = 5.0  # how much longer than a job's own limit the worker may take to answer
_ANSWER_S = 5.0  # how long the worker may take to answer FINISH (it kills the job first)


class WorkerLost(RuntimeError):
    pass


class _Worker:
    """Parent-side handle of one worker process: a control socket to the worker and, for each job, two pipes of the
    job's own to its child (the worker makes them with the child and hands over their other ends; it never reads or
    writes them)."""

    def __init__(self, argv: list[str]) -> None:
        self.scratch_root: str | None = None
        if "unsafe" in argv[-3:]:  # job directories live in one directory per worker, removed with the worker
            self.scratch_root = tempfile.mkdtemp(prefix="sbx-")
            os.chmod(self.scratch_root, 0o711)
            argv = [*argv, self.scratch_root]
        self.ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                argv, stdin=theirs.fileno(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=launch.clean_env(),
                cwd="/", start_new_session=True, close_fds=True,
            )  # fmt: skip
        finally:
            theirs.close()
        assert self.proc.stderr
        self._ctl = self.ctl.fileno()
        self.req = self.rep = -1  # this job's pipes: requests to its child, its replies
        self.reader: wire.Reader | None = None
        self.deadline = 0.0
        self.ended: bytes | None = None  # how the job ended, once its channel did
        # control messages the worker still owes: how the last job ended, then "clean" with the next job's pipes
        self.owed = 1  # (at start: the first job's pipes)
        self.spare = 0  # the next job's process, made ahead (its pid in the worker's namespace; 0: none)
        self.pipes: list[int] = []  # the next job's pipes: requests to its process, its replies
        try:
            self.hello = wire.decode(self._recv(time.monotonic() + _START_TIMEOUT_S))
        except Exception as exc:
            self.kill()
            err = self.proc.stderr.read(2000) or b""
            raise WorkerLost(f"worker failed to start ({exc}): {err.decode(errors='replace').strip()}") from None
        self.proc.stderr.close()

    # --------------------------------------------------------------------------------------------- control

    def _recv(self, deadline: float, fds: list[int] | None = None) -> bytes:
        """The worker's next message; the descriptors attached to it go to ``fds`` (else they are closed)."""
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self._ctl], [], [], left)[0]:
            raise WorkerLost("worker did not answer in time")
        try:
            msg, got, _, _ = socket.recv_fds(self.ctl, 1 << 16, 2)
        except OSError as exc:
            raise WorkerLost(f"worker channel: {exc}") from None
        for fd in got:
            os.set_inheritable(fd, False)
        if fds is None:
            for fd in got:
                os.close(fd)
        else:
            fds += got
        if not msg:
            raise WorkerLost("worker closed its channel")
        return msg

    def _send(self, msg: bytes) -> None:
        try:
            self.ctl.send(msg)
        except OSError as exc:
            raise WorkerLost(f"worker channel: {exc}") from None

    def settle(self, deadline: float) -> None:
        """Take what the worker owes for the last job; the last message confirms its processes and files are gone,
        and carries the next job's pipes."""
        while self.owed:
            fds: list[int] = []
            msg = self._recv(deadline, fds)
            self.owed -= 1
            if self.owed:
                continue
            try:
                done = wire.decode(msg)
            except (ValueError, RecursionError):
                done = None
            if not isinstance(done, dict) or type(done.get("clean")) is not int or len(fds) != 2:
                for fd in fds:
                    os.close(fd)
                raise WorkerLost("worker did not clean up after the job")
            self.spare, self.pipes = done["clean"], fds

    # --------------------------------------------------------------------------------------------- a job

    def start_job(self, limits: bytes, first: bytes, deadline: float) -> bytes:
        """Confirm the previous job was cleaned up (and take this job's pipes), send the job's limits to the worker
        and its first frame (budgets and solution) to its process; returns that process's first reply."""
        self.settle(deadline)
        (self.req, self.rep), self.pipes = self.pipes, []
        os.set_blocking(self.req, False)
        self.reader = wire.Reader(self.rep)
        self.deadline, self.ended = deadline, None
        self._send(wire.JOB + limits)
        return self._reply() if self._write(first) else self._end(eof=True)

    def exchange(self, payload: bytes) -> bytes:
        """Send one frame to the job's child and return its reply; once the child's channel is closed or broken,
        how the job ended (the worker's account)."""
        if self.ended is not None:
            return self.ended
        return self._reply() if self._write(payload) else self._end(eof=True)

    def _write(self, payload: bytes) -> bool:
        """Send one frame to the job's child; False if its channel is closed."""
        view = memoryview(struct.pack("!I", len(payload)) + payload)
        while view:
            try:
                view = view[os.write(self.req, view) :]
            except BlockingIOError:  # the child is not reading: wait within the job's limits
                self._ready(self.req, write=True)
            except BrokenPipeError:
                return False
        return True

    def _reply(self) -> bytes:
        assert self.reader is not None
        try:
            return self.reader.payload(self._ready)
        except EOFError:
            return self._end(eof=True)
        except ValueError:
            return self._end(eof=False, why="reply too large")

    def _ready(self, fd: int, write: bool = False) -> bool:
        """Wait until the child's pipe is ready. The worker says nothing unasked during a job, so a readable control
        socket means it is gone; past the hard deadline it failed to end the job."""
        left = self.deadline - time.monotonic()
        r, w, _ = select.select([self._ctl] if write else [fd, self._ctl], [fd] if write else [], [], max(left, 0))
        if self._ctl in r:
            raise WorkerLost("worker closed its channel")
        if not r and not w:
            raise WorkerLost("worker did not end the job in time")
        return True

    def _end(self, eof: bool, why: str = "") -> bytes:
        """The child's channel ended: finish the job now and return the worker's account of how it ended."""
        self._close_pipes()
        self._send(wire.FINISH + (wire.EOF if eof else b""))
        status = wire.decode(self._recv(time.monotonic() + _ANSWER_S))
        self.owed = 1  # "clean"
        if not isinstance(status, dict):
            raise WorkerLost("malformed worker reply")
        if status.get("end") is None:  # the child was still there: the trainer ended the job
            status = {"end": "error", "why": why or "the program closed its channel"}
        self.ended = wire.dumps(status)
        return self.ended

    def finish(self) -> None:
        """End the job: the worker kills its processes and removes its files, then confirms (see ``settle``)."""
        if self.ended is None:
            self._close_pipes()
            self._send(wire.FINISH)
            self.owed = 2

    def _close_pipes(self) -> None:
        for fd in (self.req, self.rep, *self.pipes):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.req = self.rep = -1
        self.pipes = []

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        self._close_pipes()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.ctl.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except Exception:
            pass
        for _ in range(20):  # a job's child still dying (a loaded machine) can write into it while it is removed
            if not self.scratch_root or not os.path.exists(self.scratch_root):
                break
            shutil.rmtree(self.scratch_root, ignore_errors=True)
            if os.path.exists(self.scratch_root):
                time.sleep(0.05)


class Sandbox:
    """A pool of sandboxed workers for one configuration. Thread-compatible for one caller at a time."""

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        n = self.config.workers or min(8, len(os.sched_getaffinity(0)) or 1)
        self._workers: list[_Worker | None] = [None] * n
        self._argv: list[list[str]] | None = None
        self.mode = ""
        self.job_pidns = False  # each job in a pid namespace of its own, /proc hidden (see ``namespaces``)
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """How many workers the pool runs."""
        return len(self._workers)

    # ---------------------------------------------------------------------------------------------- workers

    def _choose(self) -> None:
        """Find a launcher that starts a worker alone in a pid namespace (or the explicit unsafe mode)."""
        problems = []
        for k, (argv, mode) in enumerate(launch.launchers(self.config, next(_SLOTS))):
            try:
                probe = _Worker(argv)
            except Exception as exc:
                problems.append(str(exc).splitlines()[0][:300])
                continue
            ok = mode == "unsafe-rlimit-only" or probe.hello.get("pidns")
            probe.kill()
            if ok:
                self.job_pidns = bool(probe.hello.get("job_pidns") and probe.hello.get("proc_hidden"))
                self._argv = [launch.launchers(self.config, next(_SLOTS))[k][0] for _ in self._workers]
                self.mode = mode
                return
            problems.append(f"{mode}: the worker is not alone in a pid namespace")
        raise SandboxUnavailable(launch.unavailable_message("bubblewrap cannot start: " + "; ".join(problems)))

    def _worker(self, i: int) -> _Worker:
        w = self._workers[i]
        if w is None or not w.alive():
            if w is not None:
                w.kill()
            if self._argv is None:
                self._choose()
            assert self._argv is not None
            w = self._workers[i] = _Worker(self._argv[i])
        return w

    def _drop(self, i: int) -> None:
        w = self._workers[i]
        if w is not None:
            w.kill()
        self._workers[i] = None

    def start(self) -> str:
        """Start the workers now (else on the first batch); returns the isolation mode."""
        with self._lock:
            for i in range(len(self._workers)):
                self._worker(i)
        return self.mode

    def close(self) -> None:
        with self._lock:
            for i in range(len(self._workers)):
                self._drop(i)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---------------------------------------------------------------------------------------------- jobs

    def _one(self, i: int, job: Job) -> Result:
        start = time.monotonic()
        timeout = float(job.timeout_s or self.config.timeout_s)
        w = self._worker(i)
        limits = {"timeout": timeout, "memory_mb": self.config.memory_mb, "max_procs": self.config.max_procs,
                  "max_file_mb": self.config.max_file_mb}  # fmt: skip
        spec = wire.dumps(limits)
        code = job.code if isinstance(job.code, str) else "raise TypeError('the solution is not text')"
        budgets = (int(timeout), self.config.memory_mb << 20, self.config.max_file_mb << 20, self.config.max_procs)
        code = wire.FIRST.pack(*budgets) + code.encode("utf-8", "surrogatepass")
        try:
            deadline = time.monotonic() + timeout
            first = w.start_job(spec, code, deadline + _GRACE_S)
        except (WorkerLost, OSError):  # the previous job's clean-up failed: a fresh worker runs this one, from the
            self._drop(i)  # start of its time (the wait for the failed worker must not use up this job's)
            w = self._worker(i)
            deadline = time.monotonic() + timeout
            first = w.start_job(spec, code, deadline + _GRACE_S)
        tests, error = run_tests(job, w.exchange, first, deadline, self.config.max_calls)
        try:
            w.finish()
        except (WorkerLost, OSError):
            self._drop(i)  # the verdicts stand (decided here); the worker is replaced
        return Result(tests=tests, error=error, elapsed_s=time.monotonic() - start, isolation=self.mode)

    def run_batch(self, jobs: list[Job]) -> list[Result]:
        """One Result per job, in order. Raises SandboxUnavailable when bubblewrap is required and cannot run."""
        if not jobs:
            return []
        with self._lock:
            return self._run(jobs)

    def _run(self, jobs: list[Job]) -> list[Result]:
        results: list[Result | None] = [None] * len(jobs)
        it = iter(range(len(jobs)))
        take = threading.Lock()
        n = min(len(self._workers), len(jobs))
        # Start workers in the calling thread: --die-with-parent ties a sandbox to the thread that spawned it.
        for i in range(n):
            try:
                self._worker(i)
            except SandboxUnavailable:
                raise
            except Exception:
                self._drop(i)

        def loop(i: int) -> None:
            while True:
                with take:
                    j = next(it, None)
                if j is None:
                    w = self._workers[i]
                    try:  # the batch returns only once every job's processes and files are gone
                        if w is not None:
                            w.settle(time.monotonic() + _GRACE_S)
                    except Exception:
                        self._drop(i)
                    return
                start = time.monotonic()
                try:
                    results[j] = self._one(i, jobs[j])
                except Exception as exc:  # a lost or confused worker: no credit for this job; replace it
                    self._drop(i)
                    results[j] = _error(jobs[j], f"sandbox: {type(exc).__name__}: {exc}", start)

        threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(1, n)]
        for t in threads:
            t.start()
        loop(0)
        for t in threads:
            t.join()
        return [r if r is not None else _error(jobs[k], "sandbox: no result") for k, r in enumerate(results)]


def _error(job: Job, reason: str, start: float | None = None) -> Result:
    reason = reason[:300]
    return Result(tests=[TestResult("error", reason) for _ in job.tests], error=reason,
                  elapsed_s=time.monotonic() - start if start else 0.0)  # fmt: skip
