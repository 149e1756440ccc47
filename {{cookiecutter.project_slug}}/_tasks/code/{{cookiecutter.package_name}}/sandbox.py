"""Run untrusted Python (a solution plus its test snippets) in a sandbox, fast and in parallel.

Design
------
* **Workers.** A pool of long-lived worker processes (default: one per CPU core, at most 8) pays the interpreter
  start-up once. Each worker is a plain ``python -I`` running this module's source; with isolation on, each one
  lives in its *own* bubblewrap sandbox: read-only root, private ``/tmp`` (a size-capped tmpfs), fresh ``/dev`` and
  ``/proc``, no network (``--unshare-net``), own pid/ipc/uts namespaces, ``--die-with-parent``, ``--new-session``,
  all capabilities dropped, and, when the trainer runs as root and ``nobody`` can run its Python, as ``nobody``.
* **One fork per execution.** For each job the worker forks a fresh child which calls ``setsid`` (own process
  group), applies rlimits (CPU seconds, address space, file size, open files, processes, no core files), changes
  into a fresh scratch dir (removed afterwards), gets stdin from ``/dev/null`` and stdout/stderr into a capped pipe,
  closes every other descriptor, then runs the solution and the tests in one namespace. A wall-clock timeout kills
  the whole group. Afterwards the worker kills *every* process left in its pid namespace (``kill(-1)``; in
  fallback mode it is a child subreaper and kills all its descendants), so nothing outlives the call.
* **Sentinel.** Before forking, the worker draws a random 128-bit nonce and opens a private report pipe. After each
  test the harness writes ``nonce index status`` to that pipe; after the last one, ``nonce done``. The worker only
  credits lines carrying the nonce, in order. Stdout, exit codes, ``SystemExit``, ``os._exit`` and printed
  "passed" lines therefore earn nothing for tests that did not run.
* **Strict equality.** Each ``assert a == b`` in a test is rewritten (:func:`harden_test`) to a comparison that
  fails when one side is plain built-in data and the other holds an object whose ``__eq__`` is written in Python
  (the "always equal" reward hack); forks of the solution cannot report (the harness checks its own pid).
* **Fallback.** If bubblewrap is missing or cannot start (e.g. no user namespaces), ``isolation="auto"`` falls back
  to rlimit-only workers (same forking, limits and clean-up; as root the child drops to ``nobody``) with one loud
  warning per process; ``isolation="required"`` refuses with :class:`SandboxUnavailable`; ``"off"`` never tries.
* **Parent side.** :func:`run_batch` spreads jobs over the workers with one thread per worker, keeping two jobs
  queued on each so a worker never waits for the parent. A worker that dies or stops answering (a hostile child
  may signal it) is killed and replaced; the job it was running scores as an error, the queued one is re-run.

Defaults (change with :func:`configure`, which ``train.py`` calls from the YAML ``sandbox`` settings):
``isolation="auto"``, ``timeout_s=3.0`` per job (solution + all its tests), ``memory_mb=512`` address space,
``workers=0`` (one per core, at most 8), ``max_output_bytes=1 MiB``, ``max_procs=32``, ``max_file_mb=16``.

Known limits: the harness and the solution share one process, so a program that deliberately inspects the
harness's frames can read the nonce (no exit/print trick can). When the sandbox runs as uid 0 (root whose Python is
not readable by ``nobody``), the kernel does not enforce the process-count rlimit; the time limit and the
kill-everything clean-up still bound a fork bomb. Rlimit-only mode has no network or filesystem isolation beyond
the ``nobody`` drop. This module imports only the standard library; its worker part (after the "worker side"
marker) is sent to the workers as ``python -I -c <source>``: keep that part free of relative imports, threading
and import-time side effects.
"""

from __future__ import annotations

import ast
import atexit
import functools
import json
import logging
import math
import os
import resource
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

log = logging.getLogger(__name__)

Isolation = Literal["auto", "required", "off"]
Status = Literal["passed", "failed", "error", "timeout", "memory", "output_limit"]

_START_TIMEOUT_S = 20.0
_GRACE_S = 5.0  # extra time a worker gets to answer beyond the job's own timeout


class SandboxUnavailable(RuntimeError):
    """Isolation is required but bubblewrap is missing or cannot start."""


@dataclass
class SandboxConfig:
    """Sandbox settings; see the module docstring for what each one bounds."""

    isolation: Isolation = "auto"
    timeout_s: float = 3.0
    memory_mb: int = 512
    workers: int = 0  # 0 = one per available core, at most 8
    max_output_bytes: int = 1 << 20
    max_procs: int = 32
    max_file_mb: int = 16
    bwrap_path: str | None = None  # None = look up "bwrap" on PATH


@dataclass
class Job:
    """A solution and the test snippets run after it in the same namespace (each passes if it raises nothing)."""

    code: str
    tests: list[str]
    timeout_s: float | None = None  # None = the configured default


@dataclass
class TestResult:
    status: Status
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass
class Result:
    """The outcome of one job. Only tests whose report carried the execution's nonce can be ``passed``."""

    tests: list[TestResult]
    ran: bool = False  # True iff the harness proved (nonce) it ran every test to the end
    error: str = ""  # solution or sandbox error, if any
    output: str = ""  # the start of the captured stdout/stderr
    elapsed_s: float = 0.0
    isolation: str = ""  # "bwrap" or "rlimit"

    @property
    def n_passed(self) -> int:
        return sum(t.passed for t in self.tests)

    @property
    def fraction(self) -> float:
        """Fraction of tests passed (0.0 for a job without tests)."""
        return self.n_passed / len(self.tests) if self.tests else 0.0


_config = SandboxConfig()
_pool: _Pool | None = None
_lock = threading.Lock()
_warned = False


def configure(
    isolation: Isolation = "auto",
    timeout_s: float = 3.0,
    memory_mb: int = 512,
    workers: int = 0,
    **extra: Any,
) -> SandboxConfig:
    """Set the sandbox settings (and restart the workers on the next batch). Extra keys: the other fields of
    :class:`SandboxConfig`. Raises ``ValueError`` for unknown keys or values."""
    global _config
    if isolation not in ("auto", "required", "off"):
        raise ValueError(f"sandbox isolation must be 'auto', 'required' or 'off', not {isolation!r}")
    unknown = set(extra) - set(SandboxConfig.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown sandbox settings: {sorted(unknown)}")
    cfg = SandboxConfig(
        isolation=isolation, timeout_s=float(timeout_s), memory_mb=int(memory_mb), workers=int(workers), **extra
    )
    if cfg.timeout_s <= 0 or cfg.memory_mb < 32 or cfg.workers < 0:
        raise ValueError("sandbox needs timeout_s > 0, memory_mb >= 32 and workers >= 0")
    with _lock:
        _shutdown_locked()
        _config = cfg
    return cfg


def get_config() -> SandboxConfig:
    return _config


def run_batch(jobs: list[Job]) -> list[Result]:
    """Run every job in its own sandboxed child, spread over the worker pool; one Result per job, in order.

    Raises :class:`SandboxUnavailable` only when ``isolation="required"`` and bubblewrap cannot run.
    """
    if not jobs:
        return []
    with _lock:
        pool = _get_pool_locked()
        return pool.run(jobs)


def isolation_mode() -> str:
    """The mode the workers run in ("bwrap" or "rlimit"), starting them if needed."""
    with _lock:
        return _get_pool_locked().mode


def shutdown() -> None:
    """Stop every worker (also registered with ``atexit``)."""
    with _lock:
        _shutdown_locked()


def _shutdown_locked() -> None:
    global _pool
    if _pool is not None:
        _pool.close()
        _pool = None


def _get_pool_locked() -> _Pool:
    global _pool
    if _pool is None:
        _pool = _Pool(_config)
    return _pool


def _warn_once(message: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(message, RuntimeWarning, stacklevel=4)
        log.warning(message)


atexit.register(shutdown)


# ------------------------------------------------------------------------------------------------ parent side


def _clean_env() -> dict[str, str]:
    """The only environment a sandboxed process sees: nothing of the parent's."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", "PYTHONHASHSEED": "0"}


def _interpreter_binds() -> list[str]:
    """Read-only binds for an interpreter that lives under /tmp or /dev/shm (a venv in a temporary checkout, as in
    CI), which the sandbox's private /tmp and /dev/shm would otherwise hide."""
    paths = {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix, os.path.dirname(sys.executable))}
    binds: list[str] = []
    for path in sorted(paths):
        if any(path == top or path.startswith(top + "/") for top in ("/tmp", "/dev/shm")) and os.path.isdir(path):
            binds += ["--ro-bind", path, path]
    return binds


def _bwrap_argv(bwrap: str, cfg: SandboxConfig) -> list[str]:
    tmp_bytes = str(max(64, 4 * cfg.max_file_mb) << 20)
    return [
        bwrap,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--size", tmp_bytes, "--tmpfs", "/tmp",
        "--size", "1048576", "--tmpfs", "/dev/shm",
        *_interpreter_binds(),
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--die-with-parent", "--new-session",
        "--cap-drop", "ALL",
        "--clearenv", *[a for k, v in _clean_env().items() for a in ("--setenv", k, v)],
        "--chdir", "/tmp",
        "--",
    ]  # fmt: skip


class _Worker:
    """Parent-side handle of one worker process."""

    def __init__(self, argv: list[str], user: int | None, cfg: SandboxConfig) -> None:
        self.cfg = cfg
        kwargs: dict[str, Any] = {}
        if user is not None:
            kwargs.update(user=user, group=user, extra_groups=[])
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_clean_env(),
            cwd="/",
            start_new_session=True,
            close_fds=True,
            **kwargs,
        )
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._out = self.proc.stdout.fileno()
        try:
            self.hello = _read_frame(self._out, time.monotonic() + _START_TIMEOUT_S)
        except Exception as exc:
            self.kill()
            err = b""
            try:
                err = self.proc.stderr.read(2000) or b""
            except Exception:
                pass
            raise RuntimeError(f"worker failed to start ({exc}): {err.decode(errors='replace').strip()}") from None
        self.proc.stderr.close()

    def send(self, job: Job) -> None:
        """Queue a job on the worker (it runs jobs in order; the pipe holds the next one while one runs)."""
        cfg = self.cfg
        limits = {
            "timeout": float(job.timeout_s or cfg.timeout_s),
            "memory_mb": cfg.memory_mb,
            "max_output": cfg.max_output_bytes,
            "max_procs": cfg.max_procs,
            "max_file_mb": cfg.max_file_mb,
        }
        assert self.proc.stdin
        tests = [harden_test(t) for t in job.tests]
        self.proc.stdin.write(_frame({"code": job.code, "tests": tests, "limits": limits}))
        self.proc.stdin.flush()

    def receive(self, job: Job) -> Result:
        """The result of the oldest queued job; raises if the worker dies or takes too long."""
        reply = _read_frame(self._out, time.monotonic() + float(job.timeout_s or self.cfg.timeout_s) + _GRACE_S)
        return Result(
            tests=[TestResult(s, r) for s, r in reply["tests"]],
            ran=bool(reply["ran"]),
            error=reply["error"],
            output=reply["output"],
            elapsed_s=float(reply["elapsed"]),
            isolation=self.hello["mode"],
        )

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


class _Pool:
    def __init__(self, cfg: SandboxConfig) -> None:
        self.cfg = cfg
        n = cfg.workers or min(8, len(os.sched_getaffinity(0)) or 1)
        self.argv, self.user, self.mode = self._choose_launcher()
        self.workers: list[_Worker | None] = [None] * n
        self._closed = False

    def _choose_launcher(self) -> tuple[list[str], int | None, str]:
        cfg = self.cfg
        py = [sys.executable, "-I", "-c", _worker_source()]
        if cfg.isolation != "off":
            bwrap = cfg.bwrap_path or shutil.which("bwrap")
            problems: list[str] = []
            if bwrap and os.access(bwrap, os.X_OK):
                users: list[int | None] = [NOBODY, None] if os.geteuid() == 0 else [None]
                for user in users:
                    argv = _bwrap_argv(bwrap, cfg) + py + ["bwrap"]
                    try:
                        probe = _Worker(argv, user, cfg)
                    except Exception as exc:
                        problems.append(str(exc).splitlines()[0][:300] if str(exc) else repr(exc))
                        continue
                    ok = probe.hello.get("pidns")
                    probe.kill()
                    if ok:
                        return argv, user, "bwrap"
                    problems.append("bwrap started but the worker is not alone in a pid namespace")
            else:
                problems.append(f"bubblewrap not found ({bwrap or 'bwrap'} is not an executable on PATH)")
            reason = "; ".join(problems)
            if cfg.isolation == "required":
                raise SandboxUnavailable(
                    f"sandbox isolation is 'required' but bubblewrap cannot run: {reason} "
                    "(install the 'bubblewrap' package and allow user namespaces, or set sandbox isolation to 'auto')"
                )
            _warn_once(
                f"SANDBOX WARNING: bubblewrap unavailable ({reason}); running generated code with rlimits only: "
                "NO filesystem or network isolation. Install bubblewrap or set sandbox isolation: required."
            )
        else:
            _warn_once("SANDBOX WARNING: isolation is 'off'; running generated code with rlimits only.")
        return py + ["rlimit"], None, "rlimit"

    def _worker(self, i: int) -> _Worker:
        w = self.workers[i]
        if w is None or not w.alive():
            if w is not None:
                w.kill()
            w = self.workers[i] = _Worker(self.argv, self.user, self.cfg)
        return w

    def run(self, jobs: list[Job]) -> list[Result]:
        results: list[Result | None] = [None] * len(jobs)
        next_job = iter(range(len(jobs)))
        take = threading.Lock()

        def loop(i: int) -> None:
            # Two jobs in flight per worker, so that it never waits for this process between executions.
            pending: deque[int] = deque()
            retry: deque[int] = deque()  # sent to a worker that died before reaching them
            worker: _Worker | None = None
            while True:
                while len(pending) < 2:
                    if retry:
                        j: int | None = retry.popleft()
                    else:
                        with take:
                            j = next(next_job, None)
                    if j is None:
                        break
                    start = time.monotonic()
                    try:
                        worker = self._worker(i)
                        worker.send(jobs[j])
                        pending.append(j)
                    except Exception as exc:
                        self._drop(i)
                        results[j] = _error_result(jobs[j], f"sandbox: cannot start worker: {exc}", start)
                if not pending:
                    return
                j = pending.popleft()
                start = time.monotonic()
                try:
                    assert worker is not None
                    results[j] = worker.receive(jobs[j])
                except Exception as exc:  # dead, stopped or confused worker: no credit for this job, replace it
                    self._drop(i)
                    results[j] = _error_result(jobs[j], f"sandbox: worker lost ({type(exc).__name__}: {exc})", start)
                    retry.extend(pending)
                    pending.clear()

        n = min(len(self.workers), len(jobs))
        # Start workers in the calling thread: bubblewrap's --die-with-parent ties a sandbox to the thread that
        # spawned it, and the helper threads end with the batch. (A worker replaced mid-batch by a helper thread
        # therefore lasts one batch and is started again on the next.)
        for i in range(n):
            try:
                self._worker(i)
            except Exception:  # reported per job by the loop below
                self._drop(i)
        threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(1, n)]
        for t in threads:
            t.start()
        loop(0)
        for t in threads:
            t.join()
        return [r if r is not None else _error_result(jobs[k], "sandbox: no result") for k, r in enumerate(results)]

    def _drop(self, i: int) -> None:
        w = self.workers[i]
        if w is not None:
            w.kill()
        self.workers[i] = None

    def close(self) -> None:
        for i, w in enumerate(self.workers):
            if w is not None:
                w.kill()
                self.workers[i] = None


def _error_result(job: Job, reason: str, start: float | None = None) -> Result:
    reason = reason[:_REASON_KEEP]
    return Result(
        tests=[TestResult("error", reason) for _ in job.tests],
        error=reason,
        elapsed_s=time.monotonic() - start if start else 0.0,
    )


class _StrictEq(ast.NodeTransformer):
    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        t = node.test
        if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq):
            call = ast.Call(func=ast.Name(_EQ_NAME, ast.Load()), args=[t.left, t.comparators[0]], keywords=[])
            node.test = ast.copy_location(call, t)
        return node


@functools.lru_cache(maxsize=4096)
def harden_test(test: str) -> str:
    """Rewrite ``assert a == b`` as ``assert __sandbox_eq__(a, b)``: when one side is made of plain built-in values,
    the other may not contain an object whose ``__eq__`` is defined in Python (the "always equal" hack)."""
    try:
        tree = ast.parse(test)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return test  # fails on its own in the sandbox
    if not any(isinstance(n, ast.Assert) for n in ast.walk(tree)):
        return test
    try:
        return ast.unparse(ast.fix_missing_locations(_StrictEq().visit(tree)))
    except (ValueError, RecursionError):
        return test


_SOURCE: str | None = None


_WORKER_HEADER = (
    "from __future__ import annotations\n"
    "import json, math, os, resource, select, shutil, signal, struct, sys, tempfile, time\n"
)


def _worker_source() -> str:
    """The worker program: the worker-side part of this file (see the marker below), plus a call to its main."""
    global _SOURCE
    if _SOURCE is None:
        with open(__file__, encoding="utf-8") as f:
            text = f.read()
        start = text.index("\n# " + "=" * 20 + " worker side")
        _SOURCE = _WORKER_HEADER + text[start:] + "\n\n_worker_main()\n"
    return _SOURCE


# ==================== worker side ====================
# Everything from the line above to the end of the file is also the whole program of a worker
# (``python -I -c <_WORKER_HEADER + this part> MODE``) and of its forked children. It imports only what
# _WORKER_HEADER imports: no threading (nor logging, subprocess...), whose at-fork handlers would make every
# fork about three times as expensive.

STATUSES: tuple[str, ...] = ("passed", "failed", "error", "timeout", "memory", "output_limit")
NOBODY = 65534
_OUTPUT_KEEP = 2000  # characters of captured output kept in a Result, for debugging
_REASON_KEEP = 300


def _frame(obj: Any) -> bytes:
    data = json.dumps(obj).encode()
    return struct.pack("!I", len(data)) + data


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("worker did not answer in time")
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError("worker closed its pipe")
        buf += chunk
    return bytes(buf)


def _read_frame(fd: int, deadline: float | None) -> Any:
    (size,) = struct.unpack("!I", _read_exact(fd, 4, deadline))
    if size > 64 << 20:
        raise ValueError("oversized frame from worker")
    return json.loads(_read_exact(fd, size, deadline))


def _prctl(option: int, arg: int) -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, arg, 0, 0, 0) == 0
    except Exception:
        return False


def _in_own_pidns() -> bool:
    try:
        with open("/proc/1/comm") as f:
            return os.getppid() == 1 and f.read().strip() == "bwrap"
    except OSError:
        return False


def _worker_main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "rlimit"
    # Move the protocol pipes off fds 0/1 so that children (which get fresh 0/1/2) can never reach them.
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    pidns = mode == "bwrap" and _in_own_pidns()
    _prctl(4, 0)  # PR_SET_DUMPABLE 0: same-uid children cannot ptrace or read this worker's memory
    _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphaned descendants are re-parented here, so we can kill them
    uid = os.geteuid()
    drop_to = NOBODY if uid == 0 and mode == "rlimit" and _can_run_as(NOBODY) else None
    counted_uid = drop_to if drop_to is not None else uid
    base_procs = _count_procs(counted_uid)
    os.write(proto_out, _frame({"mode": mode, "pidns": pidns, "uid": uid, "pid": os.getpid()}))
    os.dup2(devnull, 2)
    while True:
        try:
            job = _read_frame(proto_in, None)
        except (EOFError, OSError, ValueError):
            os._exit(0)
        try:
            reply = _execute(job, pidns=pidns, drop_to=drop_to, base_procs=base_procs)
        except Exception as exc:  # never die on a job; the parent gets an error result
            n = len(job.get("tests") or [])
            reply = {
                "tests": [["error", f"sandbox: {exc!r}"[:_REASON_KEEP]]] * n,
                "ran": False,
                "error": f"sandbox: {exc!r}"[:_REASON_KEEP],
                "output": "",
                "elapsed": 0.0,
            }
        os.write(proto_out, _frame(reply))


def _can_run_as(uid: int) -> bool:
    """Whether a child switched to ``uid`` can still read this interpreter's standard library."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.listdir(os.path.dirname(os.__file__))
            with open(os.path.join(os.path.dirname(os.__file__), "heapq.py"), "rb"):
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _count_procs(uid: int) -> int:
    n = 0
    try:
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    if os.stat(f"/proc/{name}").st_uid == uid:
                        n += 1
                except OSError:
                    pass
    except OSError:
        return 0
    return n


def _execute(job: dict, *, pidns: bool, drop_to: int | None, base_procs: int) -> dict:
    cfg = _worker_limits(job)
    tests: list[str] = [str(t) for t in job.get("tests") or []]
    code = str(job.get("code") or "")
    timeout = cfg["timeout"]
    scratch = tempfile.mkdtemp(prefix="sbx-")
    if drop_to is not None:
        os.chown(scratch, drop_to, drop_to)
    nonce = os.urandom(16).hex()
    out_r, out_w = os.pipe()
    rep_r, rep_w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # ----------------------------------------------------------------- child
        try:
            os.setsid()
            os.dup2(out_w, 1)
            os.dup2(out_w, 2)
            os.dup2(rep_w, 3)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.closerange(4, 1 << 16)  # close_range(2): cheaper than listing /proc/self/fd
            os.chdir(scratch)
            _set_limits(cfg, base_procs)
            if drop_to is not None:
                os.setgroups([])
                os.setgid(drop_to)
                os.setuid(drop_to)
            _harness(code, tests, nonce, 3)
        finally:
            os._exit(70)
    # --------------------------------------------------------------------------------- worker
    os.close(out_w)
    os.close(rep_w)
    state = _collect(pid, out_r, rep_r, nonce, len(tests), timeout, cfg["max_output"])
    _kill_all(pid, pidns)
    os.close(out_r)
    os.close(rep_r)
    shutil.rmtree(scratch, ignore_errors=True)
    return _verdict(state, len(tests), time.monotonic() - start)


def _worker_limits(job: dict) -> dict:
    limits = dict(_DEFAULT_LIMITS)
    limits.update({k: v for k, v in (job.get("limits") or {}).items() if k in _DEFAULT_LIMITS})
    return limits


_DEFAULT_LIMITS: dict[str, Any] = {
    "timeout": 3.0, "memory_mb": 512, "max_output": 1 << 20, "max_procs": 32, "max_file_mb": 16,
}  # fmt: skip


def _set_limits(cfg: dict, base_procs: int) -> None:
    cpu = math.ceil(cfg["timeout"]) + 1
    mem = cfg["memory_mb"] << 20
    fsize = cfg["max_file_mb"] << 20
    limits = [
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_FSIZE, (fsize, fsize)),
        (resource.RLIMIT_NOFILE, (64, 64)),
        (resource.RLIMIT_NPROC, (base_procs + cfg["max_procs"],) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
    ]
    for what, value in limits:
        resource.setrlimit(what, value)


def _harness(code: str, tests: list[str], nonce: str, fd: int) -> None:
    """Runs in the child: the solution, then each test in the same namespace, reporting each test on ``fd``."""
    import builtins

    write, exit_now, exec_ = os.write, os._exit, exec
    base, mem_error, assert_error = BaseException, MemoryError, AssertionError

    me = os.getpid()
    getpid = os.getpid

    def report(line: str) -> None:
        if getpid() == me:  # a fork of the solution carries a copy of this harness: it must not report
            write(fd, (line.replace("\n", " ")[:_REASON_KEEP] + "\n").encode("utf-8", "replace"))

    eq = _strict_eq
    ns: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec_(code, ns)  # (exec of a str is ~3 ms cheaper after fork than compile())
    except base as exc:
        report(f"{nonce} solution {_describe(exc)}")
        exit_now(0)
    for i, test in enumerate(tests):
        try:
            ns[_EQ_NAME] = eq  # reset before every test: the solution shares (and may rewrite) this namespace
            exec_(test, ns)
            status, reason = "passed", ""
        except assert_error as exc:
            status, reason = "failed", _describe(exc)
        except mem_error as exc:
            status, reason = "memory", _describe(exc)
        except base as exc:
            status, reason = "error", _describe(exc)
        report(f"{nonce} {i} {status} {reason}")
    report(f"{nonce} done")
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except base:
        pass
    exit_now(0)


_EQ_NAME = "__sandbox_eq__"
_PLAIN = (int, float, complex, str, bytes, bool, type(None))
_CONTAINERS = (list, tuple, set, frozenset, dict)


def _values(v: object, budget: list[int]):
    """``v`` and, for exact built-in containers, everything inside it (at most ``budget[0]`` objects)."""
    stack = [v]
    while stack and budget[0] > 0:
        budget[0] -= 1
        x = stack.pop()
        yield x
        t = type(x)
        if t is dict:
            stack.extend(x.keys())
            stack.extend(x.values())
        elif t in _CONTAINERS:
            stack.extend(x)


def _is_plain(v: object) -> bool:
    budget = [10_000]
    ok = all(type(x) in _PLAIN or type(x) in _CONTAINERS for x in _values(v, budget))
    return ok and budget[0] > 0


def _python_eq(v: object) -> bool:
    """Whether ``v`` (or anything in it) compares with an ``__eq__`` written in Python, e.g. by the solution."""
    for x in _values(v, [10_000]):
        for klass in type(x).__mro__:
            if "__eq__" in klass.__dict__:
                if klass.__flags__ & (1 << 9):  # Py_TPFLAGS_HEAPTYPE: a class statement, not a C type
                    return True
                break
    return False


def _strict_eq(a: object, b: object) -> bool:
    if (_is_plain(b) and _python_eq(a)) or (_is_plain(a) and _python_eq(b)):
        return False
    return bool(a == b)


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"[:_REASON_KEEP]
    except BaseException:
        return "exception"


def _collect(pid: int, out_r: int, rep_r: int, nonce: str, n_tests: int, timeout: float, max_output: int) -> dict:
    """Wait for the child, reading its output (capped) and its reports, until it exits or a limit is hit."""
    deadline = time.monotonic() + timeout
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    out = bytearray()
    out_total = 0
    rep = bytearray()
    killed: str | None = None
    status: int | None = None
    open_fds = {out_r, rep_r}
    while True:
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
        if status is not None:
            # The child is gone: take what is already in the pipes (descendants may hold them open) and stop.
            for fd in tuple(open_fds):
                while select.select([fd], [], [], 0)[0]:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    if fd == rep_r:
                        rep += chunk[: 1 << 20]
                    else:
                        out_total += len(chunk)
                        out += chunk[: max(0, _OUTPUT_KEEP - len(out))]
            break
        left = deadline - time.monotonic()
        if left <= 0:
            killed = "timeout"
            break
        watch = list(open_fds) + ([pidfd] if pidfd is not None else [])
        ready = select.select(watch, [], [], min(left, 0.05 if pidfd is None else left))[0]
        for fd in ready:
            if fd == pidfd:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                open_fds.discard(fd)
            elif fd == rep_r:
                if len(rep) < 1 << 20:
                    rep += chunk
            else:
                out_total += len(chunk)
                out += chunk[: max(0, _OUTPUT_KEEP - len(out))]
                if out_total > max_output:
                    killed = "output_limit"
        if killed:
            break
    if killed:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        _, status = os.waitpid(pid, 0)
    if pidfd is not None:
        os.close(pidfd)
    return {"rep": bytes(rep), "out": bytes(out), "killed": killed, "status": status, "nonce": nonce}


def _kill_all(pid: int, pidns: bool) -> None:
    """Kill the child's group and every other process this worker's execution may have left behind."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    for _ in range(200):
        if pidns:
            try:
                os.kill(-1, signal.SIGKILL)  # everyone in this pid namespace but us and its init
            except ProcessLookupError:  # nobody else left: reap what is ours and stop
                _reap()
                return
            except OSError:
                pass
        else:
            for p in _descendants(os.getpid()):
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        reaped_any = _reap()
        alive = _others_in_ns() if pidns else _descendants(os.getpid())
        if not alive and not reaped_any:
            return
        if not alive:
            continue
        time.sleep(0.002)


def _reap() -> bool:
    """Reap every exited child of this worker without blocking; True if any was reaped."""
    reaped = False
    while True:
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if done <= 0:
            return reaped
        reaped = True


def _proc_table() -> dict[int, int]:
    table: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
            fields = data[data.rindex(b")") + 2 :].split()
            if fields[0] != b"Z":  # zombies are dead already; ours get reaped
                table[int(name)] = int(fields[1])
        except (OSError, ValueError, IndexError):
            pass
    return table


def _descendants(root: int) -> list[int]:
    """All live descendants of ``root``, from ``/proc/PID/task/TID/children`` (a full /proc scan if unavailable)."""
    try:
        out: list[int] = []
        stack = [root]
        while stack:
            pid = stack.pop()
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    kids = [int(k) for k in f.read().split()]
                out.extend(kids)
                stack.extend(kids)
        return out
    except FileNotFoundError:
        if os.path.exists(f"/proc/{root}/task"):
            return _descendants_by_scan(root)
        return out  # a child vanished mid-walk; the caller loops
    except OSError:
        return _descendants_by_scan(root)


def _descendants_by_scan(root: int) -> list[int]:
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for p, pp in table.items():
        children.setdefault(pp, []).append(p)
    out: list[int] = []
    stack = [root]
    while stack:
        for c in children.get(stack.pop(), []):
            out.append(c)
            stack.append(c)
    return out


def _others_in_ns() -> list[int]:
    me = os.getpid()
    return [p for p in _proc_table() if p not in (1, me)]


def _verdict(state: dict, n_tests: int, elapsed: float) -> dict:
    nonce = state["nonce"]
    tests: list[list[str] | None] = [None] * n_tests
    ran = False
    error = ""
    expected = 0
    for raw in state["rep"].decode("utf-8", "replace").splitlines():
        parts = raw.split(" ", 3)
        if len(parts) < 2 or parts[0] != nonce:
            continue  # not from the harness
        if parts[1] == "done":
            ran = expected == n_tests
            break
        if parts[1] == "solution":
            error = f"solution raised {parts[2] if len(parts) > 2 else ''} {parts[3] if len(parts) > 3 else ''}"
            error = error.strip()[:_REASON_KEEP]
            break
        if parts[1] != str(expected) or len(parts) < 3 or parts[2] not in STATUSES:
            break  # out of order or malformed: stop trusting this stream
        tests[expected] = [parts[2], parts[3] if len(parts) > 3 else ""]
        expected += 1
    killed = state["killed"]
    status = state["status"]
    if error:
        fill = ["memory" if "MemoryError" in error.split(":")[0] else "error", error]
    elif killed == "timeout":
        fill = ["timeout", "time limit exceeded"]
    elif killed == "output_limit":
        fill = ["output_limit", "output limit exceeded"]
    elif status is not None and os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            fill = ["timeout", "CPU time limit exceeded"]
        elif sig == signal.SIGKILL:
            fill = ["memory", "killed (SIGKILL, likely out of memory)"]
        else:
            fill = ["error", f"killed by signal {signal.Signals(sig).name}"]
    else:
        code = os.WEXITSTATUS(status) if status is not None else -1
        fill = ["error", f"not run: the program exited (code {code}) before this test"]
    result = [t if t is not None else list(fill) for t in tests]
    return {
        "tests": result,
        "ran": ran and not killed,
        "error": error,
        "output": state["out"].decode("utf-8", "replace")[:_OUTPUT_KEEP],
        "elapsed": elapsed,
    }
