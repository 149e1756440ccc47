"""Run model-written Python against a row's tests so that the verdict is out of the model's reach.

What it guarantees
------------------
* **Verdicts are decided outside the model's process.** The solution runs in a sandboxed child (the worker,
  ``worker.py``) that only loads it and serves calls to its functions. The tests run in the trainer's own process
  (``harness.py``), where each solution function a test calls is a stub that sends the arguments to the child and
  gets the return value back, both as plain data (``None``, bool, int, float, str, and lists, tuples, dicts, sets
  of them; anything else fails the test). The child never sees the tests, the expected values or the harness, and
  nothing it does to its own interpreter (builtins, frames, tracing, exit codes, output, forged objects) can change
  a comparison made here. A test passes only if it runs to the end here without an exception; a broken channel
  (a malformed reply, a lost worker) ends the job for every later test, whatever the test catches. The row's own
  helpers (``Job.helpers``: what a HumanEval prompt defines besides its target, such as ``encode_cyclic``) run here
  too, so a solution that redefines them cannot answer for them.
* **Replies are decoded in bounded time and memory** (``wire``): a frame holds at most 4 MiB and 2**19 values,
  and a set, frozenset or dict with more than 8 hash collisions (ints ``k * (2**61 - 1)`` all hash to 0) is a
  malformed reply; any reply decodes or is refused in a few tenths of a second and ~40 MiB.
* **No job sees another.** Every job runs in a fresh child forked from its worker (ahead of time, while the previous
  job runs, where each job has a pid namespace of its own: ``jobproc``). The trainer passes the job's code, calls
  and answers over two pipes made for that job alone (by the worker, with the child: the trainer gets their other
  ends; the worker never reads or writes them), and (with bubblewrap) a job's leftover files are removed by a
  short-lived child, so nothing of an earlier job (a sibling completion's code, answers or file names) is in the
  memory a later child inherits, and nothing a job writes into its pipes reaches a later one. Jobs on one worker
  share no files or processes either, and no kernel state: the seccomp filter below refuses every call that makes an
  object outliving its process (System V shared memory, message queues and semaphores, POSIX message queues, keys
  and keyrings).
* **No job reads what an earlier one did to process numbers** (``namespaces``): each job's process is pid 1 of a pid
  namespace of its own (its threads and children 2, 3...), and jobs see an empty ``/proc`` (so neither the worker's
  pid count nor the machine's counters in ``/proc/stat``, ``loadavg``...), so a job cannot leave a number in the pid
  counter for the next copy of itself to read (``benchmarks/bench_sandbox.py`` runs such a learner: none of its
  copies is credited; with one pid namespace per worker, all but the first were). This needs user namespaces where
  the trainer is not root (bubblewrap needs them too); where the kernel refuses them, jobs are forked as before and
  ``Sandbox.job_pidns`` is False. Nor can a job leave state in its worker's network namespace: jobs may open Unix
  sockets only (a TCP port a job leaves in TIME_WAIT on the loopback is one the next job cannot bind: a bit per
  port). Still shared, and not closed: time. A job that ends at a moment of its choosing tells the next job on its
  worker something through the clock; the trusted side's call order (a test whose assertion failed makes no further
  call) is what such a channel would carry.
* **No job can reach its worker** (``seccomp``): the worker installs a seccomp filter on itself at start, which
  every job's process inherits. It refuses signals to the worker, its parent, pid 1 and any process group
  (``kill(-1)`` included), joining another process group, pidfds, SIGIO owners, ptrace and the other calls that
  read, limit or reschedule another process (``prlimit``, ``sched_setaffinity``, ``setpriority``...), io_uring,
  sockets other than Unix ones, and kills a process that makes a system call of another ABI (x86_64 and aarch64
  only; elsewhere the sandbox refuses to start). It costs no time per job (~10 ns per system call). Should a worker
  still fail between jobs, the next job runs on a fresh worker with its whole time.
* **No unsafe fallback.** ``isolation: bwrap`` (``auto``/``required`` mean the same) refuses with one line naming
  ``apt-get install bubblewrap`` when bubblewrap cannot start. Running without isolation needs the explicit
  setting ``isolation: unsafe-rlimit-only`` (rlimits only; as root the job runs as a per-worker uid, so the
  interpreter must be readable by other users, else it refuses too). That mode does not protect the host (a job's
  files outside its own directory, in ``/tmp`` say, outlive it), and run by a normal user the job shares the
  trainer's uid: it could then reach the trainer's pipes and memory (``/proc`` is hidden from it where user
  namespaces are allowed, but a process of that uid is not protected from it otherwise), so even verdicts are only
  as safe as the code is trusted. Each job still gets a pid namespace of its own and an empty ``/proc`` (as root, or
  where user namespaces are allowed).
* **With bubblewrap**, each worker sees a minimal root: read-only ``/usr`` (and ``/lib*``, ``/bin``), the
  interpreter's prefix read-only at ``/sbx/py`` (when it is not under ``/usr``), this package's directory at
  ``/sbx/lib``, a fresh ``/proc`` and a read-only ``/dev``; no ``/etc``, ``/root``, ``/home``, project, venv or
  ``/run``. It has its own pid, network (no host sockets, abstract ones included), ipc and uts namespaces, no
  capabilities, an unprivileged uid even when the trainer is root (a per-worker uid; else uid 65534 in a user
  namespace), and is non-dumpable (a job's processes cannot open the worker's ``/proc/<pid>/fd`` or ptrace it).
  ``/tmp`` is a size-capped tmpfs emptied after every job (the worker is replaced if it cannot be emptied).
* **Budgets per job**: wall clock (``timeout_s``: loading plus every call), CPU rlimit, ``memory_mb`` as an
  address-space rlimit per process plus a watchdog that kills the job when the resident memory of all its
  processes together exceeds it (memory no process maps cannot be made: ``memfd_create`` and System V shared
  memory are refused; files in ``/tmp`` count against ``tmp_mb`` instead), ``max_procs`` as ``RLIMIT_NPROC`` for
  the job's uid plus the same watchdog (only the watchdog where the kernel ignores that rlimit: bubblewrap in a
  user namespace started by root), file size and open-file rlimits. After each job the worker kills every process
  left in its pid namespace, and a batch returns only after every job's clean-up was confirmed.

Not covered: the test snippets are trusted dataset content and run in the trainer without a bound of their own (a
test that loops forever without calling the solution hangs its thread). A test that relies on the solution
mutating an argument in place fails; a returned object that is not plain data stays in the sandbox
(:class:`harness.RemoteObject`: its methods can be called, it equals only itself). The watchdog polls every
20 ms, so a job with several processes may briefly exceed ``memory_mb`` by what they allocate in that time.

Values: a test compares plain values built on the trusted side. A value of a subclass of a plain type (a
``Counter``, ``OrderedDict``, ``defaultdict``, a namedtuple, an ``IntEnum`` member) crosses as the value of that type,
so it compares as Python compares that type (``Counter('ab') == {'a': 1, 'b': 1}``), never through a method of its
own class; a test gets the standard modules it names (``math.isclose(...)``) from the trainer (see ``wire`` and
``harness``).

Use: ``with Sandbox(SandboxConfig(...)) as sb: results = sb.run_batch([Job(code, tests), ...])``.
"""

from __future__ import annotations

from .harness import RemoteError
from .pool import Sandbox
from .types import (
    BOUNDS,
    INSTALL_HINT,
    ISOLATION_MODES,
    SAFE,
    UNSAFE,
    Job,
    Result,
    SandboxConfig,
    SandboxUnavailable,
    TestResult,
    bound_problems,
)

__all__ = ["BOUNDS", "INSTALL_HINT", "ISOLATION_MODES", "SAFE", "UNSAFE", "Job", "RemoteError", "Result", "Sandbox",
           "SandboxConfig", "SandboxUnavailable", "TestResult", "bound_problems"]  # fmt: skip
