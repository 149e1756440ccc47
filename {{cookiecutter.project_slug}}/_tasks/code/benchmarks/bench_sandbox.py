"""Code-reward throughput: the sandbox against the in-process limit, measured in the same run.

* **sandbox**: ``Sandbox(config).run_batch(jobs)`` with isolation on (bubblewrap by default), warm workers (one per
  core), the tests evaluated on the trusted side with calls into the sandbox;
* **in-process limit**: the same solutions and tests ``exec``'d directly, no isolation, one process per core
  (``multiprocessing``), each job in a fresh namespace;
* **fork-per-job floor**: the same, but each job in a fresh ``fork`` of a process set up like a sandbox worker
  (``python -I -S`` with the worker's preloaded modules), the tests in that same fork: no isolation, no trusted
  side, no channel. Any sandbox that gives every job a fresh process pays at least this, so it bounds what the
  sandbox's ratio can reach on this machine.

The sandbox's rate is wall-clock: what a reward call gets, the wait for the batch's last job included. The limit
and the floor are perfectly balanced: all jobs over the time their processes spent running jobs, divided by the
number of processes, so that neither a long job left to one process (HumanEval/75 alone takes ~150 ms) nor the
pool's dispatching lowers them. Each round runs every side on each slice of the jobs in turn (the order rotating),
so that a slow spell of a noisy machine falls on all three alike.

Prints jobs/s for each, the ratios to the in-process limit, and the sandbox's share of the fork-per-job floor (its
target: a median >= 0.6). Then a learner that keeps state across jobs through process numbers (it reads the mark
the previous copy on its worker left in the pid counter, and answers right only when it finds one) runs
``--learner`` copies on one worker: the copies it credits are what that channel earns (0 where each job has a pid
namespace of its own). A second learner does the same through the clock, which the sandbox does not close: it
answers each call at a whole tenth of a second, so the next job on its worker starts just after one, and answers
right only when it starts so (by chance about a third of its copies would). Jobs are
HumanEval-like: each row's solution, its asserts, and the same asserts as a HumanEval ``check(candidate)`` function.
HumanEval rows run as the reward runs them: the helpers their prompt defines on the trusted side (``prompt_helpers``).
Run from the project root::

    python benchmarks/bench_sandbox.py                       # data/sample.jsonl, 3 rounds of 1200 jobs
    python benchmarks/bench_sandbox.py --data humaneval.jsonl  # prompt, canonical_solution, test, entry_point
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from _pkg import PKG  # noqa: E402

sandbox = importlib.import_module(f"{PKG}.sandbox")
prompt_helpers = importlib.import_module(f"{PKG}.rewards.task").prompt_helpers


def load_jobs(path: Path) -> list[tuple[str, list[str], str, str]]:
    """(solution, tests, entry point, the prompt's helpers) per job; sample rows give two jobs (plain asserts and
    check(candidate))."""
    jobs = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if "canonical_solution" in row:  # HumanEval format
            code = row["prompt"] + row["canonical_solution"]
            test = row["test"] + f"\ncheck({row['entry_point']})\n"
            jobs.append((code, [test], row["entry_point"], prompt_helpers(row["prompt"], row["entry_point"])))
            continue
        entry = row["entry_point"]
        jobs.append((row["solution"], list(row["tests"]), entry, ""))
        body = "\n".join("    " + t.replace(entry + "(", "candidate(").replace("\n", "\n    ") for t in row["tests"])
        jobs.append((row["solution"], [f"def check(candidate):\n{body}\n\ncheck({entry})\n"], entry, ""))
    return jobs


def _inprocess(job: tuple[str, list[str], str, str]) -> tuple[bool, float]:
    """(whether every test passed, seconds spent)."""
    code, tests = job[:2]
    t0 = time.perf_counter()
    ns: dict = {"__name__": "__main__"}
    ok = True
    try:
        exec(code, ns)
        for t in tests:
            exec(t, ns)
    except BaseException:
        ok = False
    return ok, time.perf_counter() - t0


# One process of the fork-per-job floor: jobs (JSON on stdin) each run in a fresh fork, the tests in that fork.
FLOOR = r"""
import gc, json, os, sys, time
for name in sys.argv[1:]:
    __import__(name)
jobs = json.loads(sys.stdin.readline())
gc.freeze()
def run(job):
    ns = {"__name__": "__main__"}
    try:
        exec(job[0], ns)
        for t in job[1]:
            exec(t, ns)
    except BaseException:
        return b"0"
    return b"1"
def forked(job):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, run(job))
        os._exit(0)
    os.close(w)
    ok = os.read(r, 1) == b"1"
    os.close(r)
    os.waitpid(pid, 0)
    return ok
for job in jobs[:8]:
    forked(job)
print("ready", flush=True)
sys.stdin.readline()  # all processes start together
t0 = time.perf_counter()
ok = sum(forked(job) for job in jobs)
print(ok, time.perf_counter() - t0)  # its time running jobs: one fork after another, nothing else
"""


def floor_time(jobs: list, procs: int) -> tuple[float, int]:
    """Jobs dealt to ``procs`` worker-like processes (started together); their summed busy time / ``procs``."""
    preload = importlib.import_module(f"{PKG}.sandbox.worker").PRELOAD
    order = list(range(len(jobs)))
    random.Random(0).shuffle(order)
    parts = [[jobs[i] for i in order[k::procs]] for k in range(procs)]
    runs = [subprocess.Popen([sys.executable, "-I", "-S", "-c", FLOOR, *preload], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True) for _ in parts]  # fmt: skip
    for p, part in zip(runs, parts, strict=True):
        p.stdin.write(json.dumps(part) + "\n")
        p.stdin.flush()
    for p in runs:
        p.stdout.readline()
    for p in runs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate()[0].split() for p in runs]
    return sum(float(o[1]) for o in outs) / procs, sum(int(o[0]) for o in outs)


def inprocess_time(pool, jobs: list, procs: int) -> tuple[float, int]:
    """The jobs over ``procs`` processes; the summed time spent in jobs / ``procs``."""
    done = pool.map(_inprocess, jobs, chunksize=max(1, len(jobs) // (procs * 8)))
    return sum(t for _, t in done) / procs, sum(ok for ok, _ in done)


def sandbox_time(box, jobs: list) -> tuple[float, int]:
    """(wall-clock time of the batch, jobs that passed every test)."""
    batch = [sandbox.Job(c, t, entry_point=e, helpers=h) for c, t, e, h in jobs]
    t0 = time.perf_counter()
    results = box.run_batch(batch)
    wall = time.perf_counter() - t0
    bad = [r for r in results if r.fraction != 1.0]
    if bad:
        print("sandbox failure:", bad[0].error or [t.reason for t in bad[0].tests if not t.passed], file=sys.stderr)
    return wall, len(results) - len(bad)


# Reads the mark the previous copy on its worker left in the pid counter (its pid, a thread's id, /proc/self,
# /proc/loadavg), then leaves one (threads until the last id is 37 mod 64); answers right only when it found one.
PID_LEARNER = (
    "import os, threading\n"
    "def tid():\n    t = threading.Thread(target=len, args=((),))\n    t.start()\n    t.join()\n"
    "    return t.native_id\n"
    "def marks():\n    out = [os.getpid() % 64 == 38, tid() % 64 == 39]\n"
    "    for read in (lambda: os.readlink('/proc/self'), lambda: open('/proc/loadavg').read().split()[-1]):\n"
    "        try: out.append(int(read()) % 64 in (38, 39, 40))\n        except (OSError, ValueError): pass\n"
    "    return out\n"
    "seen = any(marks())\nfor _ in range(128):\n    if tid() % 64 == 37: break\n"
    "def add(a, b): return a + b if seen else a - b"
)


# Starts within 30 ms after a whole tenth of a second only if the previous copy on its worker ended at one.
CLOCK_LEARNER = (
    "import time\nP = 0.1\nseen = time.time() % P < 0.03\n"
    "def add(a, b):\n    time.sleep(P - time.time() % P)\n    return a + b if seen else a - b"
)


def learner_credit(isolation: str, n: int, program: str) -> int:
    """How many of ``n`` copies of a learner, one after another on one worker, pass their tests."""
    tests = ["assert add(1234, 4321) == 5555", "assert add(-7, 19) == 12"]
    with sandbox.Sandbox(sandbox.SandboxConfig(isolation=isolation, workers=1)) as box:
        return sum(r.fraction == 1.0 for r in box.run_batch([sandbox.Job(program, tests)] * n))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1200, help="jobs per round")
    ap.add_argument("--rounds", type=int, default=3, help="measurements of each side (each one ratio)")
    ap.add_argument("--slices", type=int, default=2, help="a round interleaves the sides over this many slices")
    ap.add_argument("--isolation", default="bwrap", choices=["bwrap", "unsafe-rlimit-only"])
    ap.add_argument("--workers", type=int, default=0, help="in-process limit processes (0 = one per core)")
    ap.add_argument("--sandbox_workers", type=int, default=0, help="sandbox workers (0 = the sandbox's default)")
    ap.add_argument("--data", default=str(ROOT / "data" / "sample.jsonl"))
    ap.add_argument("--learner", type=int, default=30, help="copies of each learner (0: not run)")
    args = ap.parse_args()

    pairs = load_jobs(Path(args.data))
    jobs = [pairs[i % len(pairs)] for i in range(args.n)]
    slices = [jobs[k :: args.slices] for k in range(max(1, min(args.slices, len(jobs))))]
    procs = args.workers or min(8, len(os.sched_getaffinity(0)))
    cfg = sandbox.SandboxConfig(isolation=args.isolation, workers=args.sandbox_workers)
    sides = ("limit", "sandbox", "floor")
    with sandbox.Sandbox(cfg) as box, multiprocessing.get_context("fork").Pool(procs) as pool:
        mode = box.start()
        box.run_batch([sandbox.Job(c, t, entry_point=e, helpers=h) for c, t, e, h in pairs])  # warm-up
        pool.map(_inprocess, jobs[: procs * 4])
        ratios, floors, shares = [], [], []
        for r in range(args.rounds):
            # Each slice of the jobs is run by every side in turn (the order rotating), so that a slow spell of a
            # noisy machine falls on all three sides alike; a side's rate is all its jobs over all its slices' time.
            spent, ok = dict.fromkeys(sides, 0.0), dict.fromkeys(sides, 0)
            for k, part in enumerate(slices):
                for side in sides[k % 3 :] + sides[: k % 3]:
                    if side == "limit":
                        t, n_ok = inprocess_time(pool, part, procs)
                    elif side == "sandbox":
                        t, n_ok = sandbox_time(box, part)
                    else:
                        t, n_ok = floor_time(part, procs)
                    spent[side] += t
                    ok[side] += n_ok
            limit, rate, floor = (len(jobs) / spent[s] for s in sides)
            ratios.append(rate / limit)
            floors.append(floor / limit)
            shares.append(rate / floor)
            print(
                f"round {r + 1}: sandbox ({mode}, {box.size} workers) {rate:.0f} jobs/s "
                f"({ok['sandbox']}/{len(jobs)} all-pass); "
                f"in-process limit ({procs} processes) {limit:.0f} jobs/s ({ok['limit']}/{len(jobs)}); "
                f"fork-per-job floor {floor:.0f} jobs/s ({ok['floor']}/{len(jobs)}); "
                f"ratio {rate / limit:.2f} (floor {floor / limit:.2f}); of the floor {rate / floor:.2f}"
            )
    print(f"ratio per round: {', '.join(f'{x:.2f}' for x in ratios)}; best {max(ratios):.2f}, median "
          f"{sorted(ratios)[len(ratios) // 2]:.2f}; fork-per-job floor per round: "
          f"{', '.join(f'{x:.2f}' for x in floors)} (cores: {len(os.sched_getaffinity(0))}, "
          f"load average {os.getloadavg()[0]:.2f}, {len(slices)} slices per round)")  # fmt: skip
    print(f"sandbox / fork-per-job floor per round: {', '.join(f'{x:.2f}' for x in shares)}; median "
          f"{sorted(shares)[len(shares) // 2]:.2f} (target >= 0.60)")  # fmt: skip
    if args.learner:
        for name, program in (("pid-counter", PID_LEARNER), ("clock (not closed)", CLOCK_LEARNER)):
            credited = learner_credit(args.isolation, args.learner, program)
            print(f"{name} learner: {credited} of {args.learner} copies credited on one worker")


if __name__ == "__main__":
    main()
