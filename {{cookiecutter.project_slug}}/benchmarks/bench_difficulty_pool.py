"""Does the difficulty pool cut zero-advantage groups? Train configs/smoke.yaml twice from scratch with the same seed,
without and with ``difficulty_pool``, and compare ``frac_reward_zero_std`` (TRL's share of groups whose rewards
all match) averaged over the GRPO steps.

    python benchmarks/bench_difficulty_pool.py                                   # the smoke config's steps
    python benchmarks/bench_difficulty_pool.py --max_steps 60 --retire_after 1 --revisit_prob 0.1
    python benchmarks/bench_difficulty_pool.py -- --temperature 1.0 --reward_funcs correctness --reward_weights 1
                                                 # after "--": train.py overrides for both runs; add
                                                 # --learning_rate 1e-12 to hold the policy still

Prints both means (TRL logs the share for the weighted total reward; the pool watches correctness), the mean reward
and correctness, and the pool's final counts. Exit status 0 when the pool's mean is lower. In a learning run the pool
also changes the model (correctness tends to rise sooner, and a model that is always right ties its groups too), so
compare the correctness lines as well, or hold the policy still.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def train(out: str, steps: int, extra: list[str]) -> tuple[list[dict], float]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "train.py", "--config", "configs/smoke.yaml", "--output_dir", out,
                           "--max_steps", str(steps), "--save_steps", str(steps), "--logging_steps", "1", *extra],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    state = Path(out) / f"checkpoint-{steps}" / "trainer_state.json"
    return json.loads(state.read_text())["log_history"], time.perf_counter() - start


def mean(history: list[dict], key: str) -> float | None:
    values = [entry[key] for entry in history if entry.get(key) is not None and "train_runtime" not in entry]
    return sum(values) / len(values) if values else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max_steps", type=int, help="GRPO steps (default: the smoke config's)")
    parser.add_argument("--retire_after", type=int, default=2)
    parser.add_argument("--revisit_prob", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    steps = args.max_steps or int(yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())["max_steps"])
    common = ["--seed", str(args.seed), *extra]
    pool = ["--difficulty_pool", "true", "--pool_retire_after", str(args.retire_after),
            "--pool_revisit_prob", str(args.revisit_prob)]
    results = {}
    for name, extra in (("without pool", common), ("with pool", common + pool)):
        with tempfile.TemporaryDirectory() as out:
            history, seconds = train(out, steps, extra)
        logged = [e for e in history if "frac_reward_zero_std" in e]
        results[name] = mean(logged, "frac_reward_zero_std")
        line = (f"{name:>12}: {len(logged)} steps in {seconds:.0f} s, mean frac_reward_zero_std "
                f"{results[name]:.4f}, mean reward {mean(logged, 'reward'):.4f}, "
                f"mean correctness {mean(logged, 'rewards/correctness/mean'):.4f}")
        if name == "with pool":
            last = logged[-1]
            line += f", at the end {last.get('pool/active')} active / {last.get('pool/retired')} retired prompts"
        print(line, flush=True)
    without, with_pool = results["without pool"], results["with pool"]
    print(f"frac_reward_zero_std (mean over steps, seed {args.seed}, retire_after {args.retire_after}, "
          f"revisit_prob {args.revisit_prob}): without {without:.4f}, with {with_pool:.4f}, "
          f"difference {with_pool - without:+.4f}")
    return 0 if with_pool < without else 1


if __name__ == "__main__":
    sys.exit(main())
