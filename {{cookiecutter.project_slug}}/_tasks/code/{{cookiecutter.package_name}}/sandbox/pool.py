"""The worker pool: ``Sandbox(config).run_batch(jobs)`` spreads jobs over long-lived sandboxed workers."""

from __future__ import annotations

import itertools
import os
import select
import shutil
import signal
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


class WorkerLost(RuntimeError):
    pass


class _Worker:
    """Parent-side handle of one worker process."""

    def __init__(self, argv: list[str]) -> None:
        self.scratch_root: str | None = None
        if "unsafe" in argv[-3:]:  # job directories live in one directory per worker, removed with the worker
            self.scratch_root = tempfile.mkdtemp(prefix="sbx-")
            os.chmod(self.scratch_root, 0o711)
            argv = [*argv, self.scratch_root]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=launch.clean_env(),
            cwd="/", start_new_session=True, close_fds=True,
        )  # fmt: skip
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._in, self._out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        self._frames = wire.Reader(self._out)
        self.unclean = False  # a job was finished and its clean-up not yet confirmed
        try:
            self.hello = wire.decode(self._read(time.monotonic() + _START_TIMEOUT_S))
        except Exception as exc:
            self.kill()
            err = self.proc.stderr.read(2000) or b""
            raise WorkerLost(f"worker failed to start ({exc}): {err.decode(errors='replace').strip()}") from None
        self.proc.stderr.close()

    def _read(self, deadline: float) -> bytes:
        def ready(fd: int) -> bool:
            left = deadline - time.monotonic()
            return left > 0 and select.select([fd], [], [], left)[0] != []

        try:
            return self._frames.payload(ready, limit=wire.MAX_FRAME + 1024)
        except TimeoutError:
            raise WorkerLost("worker did not answer in time") from None
        except EOFError:
            raise WorkerLost("worker closed its pipe") from None
        except ValueError:
            raise WorkerLost("oversized frame") from None

    def exchange(self, payload: bytes, deadline: float) -> bytes:
        try:
            wire.write_all(self._in, wire.to_worker(wire.DATA, payload))
        except OSError as exc:
            raise WorkerLost(f"worker pipe: {exc}") from None
        return self._read(deadline)

    def start_job(self, limits: bytes, code: bytes, deadline: float) -> bytes:
        """Send a job (its limits, then the solution); first confirm the previous one was cleaned up (the worker
        cleans before reading this). Returns the child's first frame."""
        wire.write_all(self._in, wire.to_worker(wire.JOB, limits) + wire.to_worker(wire.DATA, code))
        self.settle(deadline)
        return self._read(deadline)

    def finish(self) -> None:
        """End the job: the worker kills its processes and removes its files, then confirms (see ``settle``)."""
        wire.write_all(self._in, wire.to_worker(wire.FINISH))
        self.unclean = True

    def settle(self, deadline: float) -> None:
        if self.unclean:
            if self._read(deadline) != b'"clean"':
                raise WorkerLost("worker did not clean up after the job")
            self.unclean = False

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f:
                    f.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except Exception:
            pass
        if self.scratch_root:
            shutil.rmtree(self.scratch_root, ignore_errors=True)


class Sandbox:
    """A pool of sandboxed workers for one configuration. Thread-compatible for one caller at a time."""

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        n = self.config.workers or min(8, len(os.sched_getaffinity(0)) or 1)
        self._workers: list[_Worker | None] = [None] * n
        self._argv: list[list[str]] | None = None
        self.mode = ""
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
        deadline = start + timeout
        hard = deadline + _GRACE_S
        w = self._worker(i)
        limits = {"timeout": timeout, "memory_mb": self.config.memory_mb, "max_procs": self.config.max_procs,
                  "max_file_mb": self.config.max_file_mb}  # fmt: skip
        spec = wire.json.dumps(limits).encode()
        code = wire.json.dumps(job.code).encode()
        try:
            first = w.start_job(spec, code, hard)
        except (WorkerLost, OSError):  # the previous job's clean-up failed: a fresh worker runs this one
            self._drop(i)
            w = self._worker(i)
            first = w.start_job(spec, code, hard)
        tests, error = run_tests(job, lambda req: w.exchange(req, hard), first, deadline, self.config.max_calls)
        try:
            w.finish()
        except OSError:
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
