"""Wall time from `cookiecutter --no-input` to a finished smoke training (what `make demo` runs), for each task:
the median of 3 runs (target < 90 s on 2 cores).

    python benchmarks/bench_bake_to_smoke.py             # 3 runs per task
    python benchmarks/bench_bake_to_smoke.py --runs 1 --tasks math    # `make demo`'s project only

Runs the real command line (the post-generation hook runs the smoke training with smoke_test=full) in a fresh
output folder, so the tiny model is built from scratch each time.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 90.0


def bake_to_smoke(cookiecutter: Path, task: str) -> float | None:
    """Seconds from the command to the hook's finished smoke training; None (after the output's tail) on failure."""
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        done = subprocess.run(
            [str(cookiecutter), "--no-input", "--keep-project-on-failure", "-o", out, str(ROOT),
             f"task={task}", "smoke_test=full"],
            capture_output=True, text=True, env={**os.environ, "GRPO_TEMPLATE_STRICT_SMOKE": "1"},
            check=False,
        )
        elapsed = time.perf_counter() - start
        states = sorted((Path(out) / "grpo-reasoner" / "outputs" / "smoke").glob("checkpoint-*/trainer_state.json"))
        steps = json.loads(states[-1].read_text())["global_step"] if states else 0
        if done.returncode != 0 or steps == 0:
            print(done.stdout[-2000:], done.stderr[-2000:])
            return None
        health = next((line for line in done.stdout.splitlines() if "health:" in line), "")
        print(f"  {task}: {elapsed:.1f} s, {steps} GRPO steps; {health.strip()}", flush=True)
        return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tasks", nargs="+", help="the tasks to bake (default: every task choice)")
    args = parser.parse_args(argv)
    cookiecutter = Path(sys.executable).with_name("cookiecutter")
    worst = 0.0
    for task in args.tasks or json.loads((ROOT / "cookiecutter.json").read_text())["task"]:
        times = [bake_to_smoke(cookiecutter, task) for _ in range(args.runs)]
        if None in times:
            print(f"{task}: FAILED")
            return 1
        median = statistics.median(times)
        worst = max(worst, median)
        print(f"{task}: cookiecutter --no-input to finished smoke training: median {median:.1f} s of "
              f"{', '.join(f'{t:.1f}' for t in times)}")
    print(f"worst median: {worst:.1f} s (target < {TARGET_S:.0f} s): {'OK' if worst < TARGET_S else 'OVER TARGET'}")
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
