"""Sandbox throughput: the same (solution, tests) batch through ``sandbox.run_batch`` and through a naive
``subprocess.run([sys.executable, "-c", code])`` per execution; prints executions/s for both and the ratio.

Run from the project root::

    python benchmarks/bench_sandbox.py                 # isolation=required (bubblewrap), 400 executions
    python benchmarks/bench_sandbox.py --isolation off --n 200 --naive-n 50

The naive side runs a subset (``--naive-n``) sequentially, one fresh interpreter per execution, with no isolation;
its rate is per execution, so the ratio is fair. The sandbox side uses its worker pool (one worker per core).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from _pkg import PKG  # noqa: E402

sandbox = importlib.import_module(f"{PKG}.sandbox")


def load_pairs(path: Path) -> list[tuple[str, list[str]]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(r["solution"], list(r["tests"])) for r in rows]


def tree_cpu_s(root: int) -> float:
    """CPU seconds (user + system, including reaped children) of a live process and all its descendants."""
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return total / os.sysconf("SC_CLK_TCK")


def sandbox_cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = [w.proc.pid for w in (sandbox._pool.workers if sandbox._pool else []) if w is not None]
    return own.ru_utime + own.ru_stime + sum(tree_cpu_s(p) for p in workers)


def children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def naive(code: str, tests: list[str], timeout: float) -> bool:
    program = code + "\n" + "\n".join(tests) + "\n"
    try:
        proc = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=400, help="executions through the sandbox")
    ap.add_argument("--naive-n", type=int, default=60, help="executions through naive subprocess.run")
    ap.add_argument("--isolation", default="required", choices=["auto", "required", "off"])
    ap.add_argument("--workers", type=int, default=0, help="sandbox workers (0 = one per core)")
    ap.add_argument("--data", default=str(ROOT / "data" / "sample.jsonl"))
    args = ap.parse_args()

    pairs = load_pairs(Path(args.data))
    batch = [pairs[i % len(pairs)] for i in range(args.n)]
    sandbox.configure(isolation=args.isolation, workers=args.workers)
    mode = sandbox.isolation_mode()  # start the workers outside the timed region
    sandbox.run_batch([sandbox.Job(c, t) for c, t in pairs])  # warm-up

    c0, t0 = sandbox_cpu_s(), time.perf_counter()
    results = sandbox.run_batch([sandbox.Job(c, t) for c, t in batch])
    t_sandbox = time.perf_counter() - t0
    cpu_sandbox = (sandbox_cpu_s() - c0) / len(batch) * 1000
    ok_sandbox = sum(r.ran and r.fraction == 1.0 for r in results)
    for r in results:
        if not (r.ran and r.fraction == 1.0):
            print("sandbox failure:", r.error or [t.reason for t in r.tests if not t.passed], file=sys.stderr)
            break

    own0, c0, t0 = resource.getrusage(resource.RUSAGE_SELF), children_cpu_s(), time.perf_counter()
    ok_naive = sum(naive(c, t, 10.0) for c, t in batch[: args.naive_n])
    t_naive = time.perf_counter() - t0
    own1 = resource.getrusage(resource.RUSAGE_SELF)
    own_cpu = own1.ru_utime + own1.ru_stime - own0.ru_utime - own0.ru_stime
    cpu_naive = (children_cpu_s() - c0 + own_cpu) / args.naive_n * 1000

    rate_s = len(batch) / t_sandbox
    rate_n = args.naive_n / t_naive
    workers = len(sandbox._pool.workers) if sandbox._pool else 0
    print(
        f"sandbox ({mode}, {workers} workers): {len(batch)} executions in {t_sandbox:.2f} s = {rate_s:.1f} exec/s "
        f"({ok_sandbox} all-pass), {cpu_sandbox:.2f} ms CPU per execution"
    )
    print(
        f"naive subprocess.run:  {args.naive_n} executions in {t_naive:.2f} s = {rate_n:.1f} exec/s "
        f"({ok_naive} all-pass), {cpu_naive:.2f} ms CPU per execution"
    )
    print(f"ratio: {rate_s / rate_n:.1f}x executions/s, {cpu_naive / cpu_sandbox:.1f}x less CPU per execution")
    print(f"(cores available: {len(os.sched_getaffinity(0))}, load average: {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
