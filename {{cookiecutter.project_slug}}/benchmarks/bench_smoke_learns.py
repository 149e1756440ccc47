"""Does the smoke run learn? Train configs/smoke.yaml from scratch (seeded, CPU) and compare the mean total reward
of the first and the last 20% of GRPO steps.

    python benchmarks/bench_smoke_learns.py

Target: under 2 minutes, and the last-20% mean reward at least MARGIN above the first-20% mean.
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARGIN = 0.02  # absolute reward units; the weighted total of the smoke mix starts near 0
TIME_LIMIT_S = 120.0


def window_means(log_history: list[dict], key: str = "reward") -> tuple[float, float]:
    rows = [entry[key] for entry in log_history if key in entry]
    n = max(1, len(rows) // 5)
    return sum(rows[:n]) / n, sum(rows[-n:]) / n


def main() -> int:
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "train.py", "--config", "configs/smoke.yaml", "--output_dir", out],
                              cwd=ROOT, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            print(done.stderr[-3000:])
            return 1
        state = json.loads(sorted(Path(out).glob("checkpoint-*/trainer_state.json"))[-1].read_text())
    history = state["log_history"]
    first, last = window_means(history)
    print(f"smoke run: {state['global_step']} GRPO steps (after format priming) in {elapsed:.1f} s "
          f"(target < {TIME_LIMIT_S:.0f} s)")
    print(f"mean total reward, first 20% of steps: {first:.4f}")
    print(f"mean total reward, last 20% of steps:  {last:.4f}  (delta {last - first:+.4f}, margin {MARGIN})")
    for key in ("rewards/format/mean", "rewards/correctness/mean", "completions/clipped_ratio"):
        a, b = window_means(history, key)
        print(f"  {key}: {a:.4f} -> {b:.4f}")
    ok = last - first >= MARGIN and elapsed < TIME_LIMIT_S
    print("OK: the smoke run learns" if ok else "FAILED: no clear improvement or over time")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
