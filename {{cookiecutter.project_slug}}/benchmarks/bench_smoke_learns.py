"""Does the smoke run learn? Train a smoke config from scratch once per seed (CPU) and compare, per seed, the first
and the last 20% of GRPO steps: the mean of ``rewards/correctness/mean`` and of the total reward; then score the
held-out eval split (the curriculum's ``test`` part, questions no training row contains) with ``eval.py``, before
GRPO (the format-primed model) and after.

    python benchmarks/bench_smoke_learns.py                          # configs/smoke.yaml, seeds 0 1 2 3 4
    python benchmarks/bench_smoke_learns.py --seeds 0 -- --max_steps 60   # after "--": train.py overrides

Target per seed: correctness up by at least CORRECTNESS_RISE (absolute), the total reward up, the health verdict
``learning``, held-out accuracy up, and training under TIME_LIMIT_S of wall time. Wall time depends on what else
the machine runs, so the CPU time of each run (user + system, all its processes) is printed too.
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORRECTNESS_RISE = 0.25
TIME_LIMIT_S = 90.0  # on a quiet 2-core machine; beside other work the CPU time is the figure to read


def window_means(log_history: list[dict], key: str) -> tuple[float, float]:
    rows = [entry[key] for entry in log_history if key in entry]
    if not rows:
        return float("nan"), float("nan")
    n = max(1, len(rows) // 5)
    return sum(rows[:n]) / n, sum(rows[-n:]) / n


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def held_out_accuracy(config: str, model: Path, out: Path) -> float:
    """eval.py's accuracy on the config's eval split (for the curriculum, its held-out ``test`` part)."""
    done = subprocess.run(
        [sys.executable, "eval.py", "--config", config, "--model", str(model), "--output", str(out)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        return float("nan")
    return json.loads((out / "report.json").read_text())["metrics"]["accuracy"]


def run_seed(config: str, seed: int, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as out:
        cpu0, start = children_cpu_s(), time.perf_counter()
        done = subprocess.run(
            [sys.executable, "train.py", "--config", config, "--output_dir", out, "--seed", str(seed), *extra],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )
        wall, cpu = time.perf_counter() - start, children_cpu_s() - cpu0
        if done.returncode != 0:
            return {"seed": seed, "error": done.stderr.strip().splitlines()[-1:] or ["failed"]}
        states = sorted(Path(out).glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name[11:]))
        history = json.loads(states[-1].read_text())["log_history"]
        health_file = Path(out) / "health.json"
        verdict = json.loads(health_file.read_text())["verdict"] if health_file.is_file() else "missing"
        primed = Path(out) / "format-primed"
        before = held_out_accuracy(config, primed, Path(out) / "eval-before") if primed.is_dir() else float("nan")
        after = held_out_accuracy(config, Path(out), Path(out) / "eval-after")
    c0, c1 = window_means(history, "rewards/correctness/mean")
    r0, r1 = window_means(history, "reward")
    ok = c1 - c0 >= CORRECTNESS_RISE and r1 > r0 and verdict == "learning" and wall < TIME_LIMIT_S and after > before
    return {"seed": seed, "steps": sum("reward" in e for e in history), "correctness": (c0, c1), "reward": (r0, r1),
            "held_out": (before, after), "verdict": verdict, "wall_s": wall, "cpu_s": cpu, "ok": ok}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/smoke.yaml")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    results = []
    for seed in args.seeds:
        result = run_seed(args.config, seed, extra)
        results.append(result)
        if "error" in result:
            print(f"seed {seed}: training failed: {result['error'][0]}")
            continue
        (c0, c1), (r0, r1), (h0, h1) = result["correctness"], result["reward"], result["held_out"]
        print(f"seed {seed}: {result['steps']} steps, correctness {c0:.3f} -> {c1:.3f} ({c1 - c0:+.3f}), "
              f"total reward {r0:.3f} -> {r1:.3f} ({r1 - r0:+.3f}), held-out accuracy {h0:.3f} -> {h1:.3f}, "
              f"health {result['verdict']}, "
              f"{result['wall_s']:.0f} s wall, {result['cpu_s']:.0f} s CPU  {'OK' if result['ok'] else 'FAILED'}")
    ok = all(r.get("ok") for r in results)
    print(f"{'OK' if ok else 'FAILED'}: target per seed: correctness +{CORRECTNESS_RISE}, total reward up, "
          f"held-out accuracy up, verdict learning, training < {TIME_LIMIT_S:.0f} s wall")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
