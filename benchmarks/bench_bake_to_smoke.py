"""Wall time from `cookiecutter --no-input` to a finished smoke training, for each task (target < 90 s, 2 cores).

    python benchmarks/bench_bake_to_smoke.py

Runs the real command line (the post-generation hook runs the smoke training with smoke_test=full) in a fresh
output folder, so the tiny model is built from scratch each time.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 90.0


def main() -> int:
    cookiecutter = Path(sys.executable).with_name("cookiecutter")
    worst = 0.0
    for task in json.loads((ROOT / "cookiecutter.json").read_text())["task"]:
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
                print(f"{task}: FAILED after {elapsed:.1f} s")
                return 1
            worst = max(worst, elapsed)
            print(f"{task}: cookiecutter --no-input to finished smoke training ({steps} steps): {elapsed:.1f} s")
    print(f"worst: {worst:.1f} s (target < {TARGET_S:.0f} s): {'OK' if worst < TARGET_S else 'OVER TARGET'}")
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
