"""What the verifier audit costs: before training (the audit of a config's rewards on its rows) and while training
(one in-training check: re-judging full-credit completions and probing the live reward).

    python benchmarks/bench_audit.py [--config configs/smoke.yaml] [--rows 64] [--checks 20]

Prints the audit's wall time on the config's training rows and on data/sample.jsonl (the rewards already built, as
train.py has them), and the mean time of one in-training check over ``--checks`` checks fed batches of gold
completions (each re-judged by the task's independent check) and catalogue wrong completions. A run's own figure is
``recheck`` in its health.json (seconds per check and share of the training time).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--config", default=str(ROOT / "configs" / "smoke.yaml"))
    cli.add_argument("--rows", type=int, default=64)
    cli.add_argument("--checks", type=int, default=20)
    args = cli.parse_args()
    from importlib import import_module

    package = next(p.parent.name for p in ROOT.glob("*/audit.py"))
    audit, config, data = (import_module(f"{package}.{m}") for m in ("audit", "config", "data"))
    rewards, recheck = import_module(f"{package}.rewards"), import_module(f"{package}.training.recheck")
    script_args, training_args, _, task_args = config.parse_args(["--config", args.config])
    settings = rewards.RewardSettings(training_args.max_completion_length, task_args)
    funcs = [rewards.build_reward(name, settings) for name in script_args.reward_funcs]
    judged = audit.audited(script_args.reward_funcs, training_args.reward_weights, funcs)
    raw = data.load_raw(script_args.dataset_name, script_args.dataset_config)
    split = raw[script_args.dataset_train_split] if script_args.dataset_train_split in raw else next(iter(raw.values()))
    sources = {script_args.dataset_name: [split[i] for i in range(len(split))]}
    if (ROOT / "data" / "sample.jsonl").is_file():
        lines = (ROOT / "data" / "sample.jsonl").read_text().splitlines()
        sources["data/sample.jsonl"] = [json.loads(line) for line in lines if line.strip()]
    audit.run(audit.sample(sources["data/sample.jsonl" if "data/sample.jsonl" in sources else
                                   script_args.dataset_name], 2), judged)  # warm: workers, sandbox
    for source, rows in sources.items():
        picked = audit.sample(rows, args.rows)
        started = time.perf_counter()
        result = audit.run(picked, judged)
        seconds = time.perf_counter() - started
        print(f"audit before training, {source}: {len(picked)} rows, {result['gold_checked'] + result['wrong_checked']}"
              f" completions x {len(judged)} rewards in {seconds:.2f} s")
    judge = next(f for n, f in zip(script_args.reward_funcs, funcs, strict=True) if audit.is_judge(n))
    recorder = recheck.Recorder("correctness", judge)
    checker = recheck.Recheck([recorder], budget=math.inf)
    state = SimpleNamespace(is_world_process_zero=True, log_history=[], global_step=0)
    checker.on_train_begin(None, state, None)
    rows = [data_row for data_row in next(iter(sources.values()))[: 8]]
    times = []
    for step in range(args.checks):
        texts, cols = [], []
        for row in rows:
            wrong = audit.wrong_family()(row) or []
            for text in [audit.task.gold_completion(row), *(t for _, t in wrong[:3])]:
                texts.append(text)
                cols.append(row)
        columns = {key: [row.get(key) for row in cols] for key in cols[0]}
        recorder(prompts=columns.get("question"), completions=texts, trainer_state=state, **columns)
        started = time.perf_counter()
        checker.check(step)
        times.append(time.perf_counter() - started)
    checker.on_train_end(None, state, None)
    for func in funcs:
        if hasattr(func, "close"):
            func.close()
    times.sort()
    print(f"in-training check: {len(times)} checks of {recheck.SAMPLES} re-judged + {recheck.PROBES} probes: "
          f"median {times[len(times) // 2] * 1000:.1f} ms, max {times[-1] * 1000:.1f} ms per check "
          f"(a check runs while the checks stay under {recheck.BUDGET:.0%} of the training time)")


if __name__ == "__main__":
    main()
