"""Run model-written Python against a row's tests so that the verdict is out of the model's reach.

What it guarantees
------------------
* **Verdicts are decided outside the model's process.** The solution runs in a sandboxed child (the worker,
  ``worker.py``) that only loads it and serves calls to its functions. The tests run in the trainer's own process
  (``harness.py``), where each solution function a test calls is a stub that sends the arguments to the child and
  gets the return value back, both as plain data (``None``, bool, int, float, str, and lists, tuples, dicts, sets
  of them; anything else fails the test). The child never sees the tests, the expected values or the harness, and
  nothing it does to its own interpreter (builtins, frames, tracing, exit codes, output, forged objects) can change
  a comparison made here. A test passes only if it runs to the end here without an exception.
* **No unsafe fallback.** ``isolation: bwrap`` (``auto``/``required`` mean the same) refuses with one line naming
  ``apt-get install bubblewrap`` when bubblewrap cannot start. Running without isolation needs the explicit
  setting ``isolation: unsafe-rlimit-only`` (rlimits only: model code can read and write what the trainer's user
  can; for trusted code or throwaway machines).
* **With bubblewrap**, each worker sees a minimal root: read-only ``/usr`` (and ``/lib*``, ``/bin``), the
  interpreter's own prefix read-only at ``/sbx/py``, the worker file, a fresh ``/proc`` and a read-only ``/dev``; no
  ``/etc``, ``/root``, ``/home``, project, venv or ``/run``. It runs in its own pid, network (no sockets reach the
  host, abstract ones included), ipc and uts namespaces, with no capabilities, as an unprivileged uid even when
  the trainer is root (a per-worker uid; otherwise uid 65534 in a user namespace), non-dumpable (a job's processes
  cannot open the worker's ``/proc/<pid>/fd`` or ptrace it). ``/tmp`` is a size-capped tmpfs emptied after every
  job (the worker is replaced if it cannot be emptied), so no job sees another's files.
* **Budgets per job**: wall clock (``timeout_s``, loading plus every call), CPU rlimit, ``memory_mb`` as an
  address-space rlimit per process plus a watchdog that kills the job when the resident memory of all its
  processes together exceeds it, ``max_procs`` as ``RLIMIT_NPROC`` for the job's uid plus the same watchdog, file
  size and open-file rlimits. After each job the worker kills every process left in its pid namespace.

Not covered: the test snippets themselves are trusted dataset content and run unbounded in the trainer (a test
that loops forever without calling the solution hangs its worker thread). Tests that rely on the solution
mutating an argument in place, or on returning non-plain objects, fail. The watchdog polls every 20 ms, so a job
with several processes may briefly exceed ``memory_mb`` by what they allocate in that time (each process stays
under the address-space rlimit).

Use: ``with Sandbox(SandboxConfig(...)) as sb: results = sb.run_batch([Job(code, tests), ...])``.
"""

from __future__ import annotations

from .harness import RemoteError
from .pool import Sandbox
from .types import SAFE, UNSAFE, Job, Result, SandboxConfig, SandboxUnavailable, TestResult

__all__ = ["SAFE", "UNSAFE", "Job", "RemoteError", "Result", "Sandbox", "SandboxConfig", "SandboxUnavailable",
           "TestResult"]  # fmt: skip
