"""Code-reward throughput: the sandbox against the in-process limit, measured in the same run.

* **sandbox**: ``Sandbox(config).run_batch(jobs)`` with isolation on (bubblewrap by default), warm workers (one per
  core), the tests evaluated on the trusted side with calls into the sandbox;
* **in-process limit**: the same solutions and tests ``exec``'d directly, no isolation, one process per core
  (``multiprocessing``), each job in a fresh namespace.

Prints jobs/s for both and their ratio (the target is >= 0.5). Jobs are HumanEval-like: each row's solution, its
asserts, and the same asserts as a HumanEval ``check(candidate)`` function. Run from the project root::

    python benchmarks/bench_sandbox.py                       # data/sample.jsonl, 600 jobs, 3 rounds
    python benchmarks/bench_sandbox.py --data humaneval.jsonl  # prompt, canonical_solution, test, entry_point
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from _pkg import PKG  # noqa: E402

sandbox = importlib.import_module(f"{PKG}.sandbox")


def load_jobs(path: Path) -> list[tuple[str, list[str], str]]:
    """(solution, tests, entry point) per job; sample rows give two jobs (plain asserts and check(candidate))."""
    jobs = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if "canonical_solution" in row:  # HumanEval format
            code = row["prompt"] + row["canonical_solution"]
            jobs.append((code, [row["test"] + f"\ncheck({row['entry_point']})\n"], row["entry_point"]))
            continue
        entry = row["entry_point"]
        jobs.append((row["solution"], list(row["tests"]), entry))
        body = "\n".join("    " + t.replace(entry + "(", "candidate(").replace("\n", "\n    ") for t in row["tests"])
        jobs.append((row["solution"], [f"def check(candidate):\n{body}\n\ncheck({entry})\n"], entry))
    return jobs


def _inprocess(job: tuple[str, list[str], str]) -> bool:
    code, tests, _ = job
    ns: dict = {"__name__": "__main__"}
    try:
        exec(code, ns)
        for t in tests:
            exec(t, ns)
    except BaseException:
        return False
    return True


def inprocess_rate(jobs: list, procs: int) -> tuple[float, int]:
    with multiprocessing.get_context("fork").Pool(procs) as pool:
        pool.map(_inprocess, jobs[: procs * 4])  # warm
        t0 = time.perf_counter()
        ok = sum(pool.map(_inprocess, jobs, chunksize=max(1, len(jobs) // (procs * 8))))
        return len(jobs) / (time.perf_counter() - t0), ok


def sandbox_rate(box, jobs: list) -> tuple[float, int]:
    batch = [sandbox.Job(c, t, entry_point=e) for c, t, e in jobs]
    t0 = time.perf_counter()
    results = box.run_batch(batch)
    rate = len(batch) / (time.perf_counter() - t0)
    bad = [r for r in results if r.fraction != 1.0]
    if bad:
        print("sandbox failure:", bad[0].error or [t.reason for t in bad[0].tests if not t.passed], file=sys.stderr)
    return rate, len(results) - len(bad)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=600, help="jobs per measurement")
    ap.add_argument("--rounds", type=int, default=3, help="alternating measurements of each side")
    ap.add_argument("--isolation", default="bwrap", choices=["bwrap", "unsafe-rlimit-only"])
    ap.add_argument("--workers", type=int, default=0, help="in-process limit processes (0 = one per core)")
    ap.add_argument("--sandbox_workers", type=int, default=0, help="sandbox workers (0 = the sandbox's default)")
    ap.add_argument("--data", default=str(ROOT / "data" / "sample.jsonl"))
    args = ap.parse_args()

    pairs = load_jobs(Path(args.data))
    jobs = [pairs[i % len(pairs)] for i in range(args.n)]
    procs = args.workers or min(8, len(os.sched_getaffinity(0)))
    cfg = sandbox.SandboxConfig(isolation=args.isolation, workers=args.sandbox_workers)
    with sandbox.Sandbox(cfg) as box:
        mode = box.start()
        box.run_batch([sandbox.Job(c, t, entry_point=e) for c, t, e in pairs])  # warm-up
        ratios = []
        for r in range(args.rounds):
            limit, ok_l = inprocess_rate(jobs, procs)
            rate, ok_s = sandbox_rate(box, jobs)
            ratios.append(rate / limit)
            print(
                f"round {r + 1}: sandbox ({mode}, {box.size} workers) {rate:.0f} jobs/s ({ok_s}/{len(jobs)} all-pass); "
                f"in-process limit ({procs} processes) {limit:.0f} jobs/s ({ok_l}/{len(jobs)}); "
                f"ratio {rate / limit:.2f}"
            )
    print(f"ratio per round: {', '.join(f'{x:.2f}' for x in ratios)}; best {max(ratios):.2f}, median "
          f"{sorted(ratios)[len(ratios) // 2]:.2f} (cores: {len(os.sched_getaffinity(0))}, "
          f"load average {os.getloadavg()[0]:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
