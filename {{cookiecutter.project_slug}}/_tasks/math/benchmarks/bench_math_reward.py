"""Benchmark the math ``correctness`` reward against raw math-verify, and its worst latency on pathological input.

Run from the project root: ``python benchmarks/bench_math_reward.py [--n 1000]``.

1. 1000 (completion, gold) pairs built from ``data/sample.jsonl`` (right, wrong and reformatted answers, in
   groups of 8 completions per gold as GRPO sends them) are scored by the reward and by raw math-verify
   (``verify(parse(gold), parse(completion))``, in-process, main thread, its own signal timeouts). Prints both times
   and their ratio (target: reward <= 2x raw), and how often the two verdicts differ.
2. The worst single-call latency over pathological answers (deep ``\\frac`` nesting, power towers, huge powers and
   factorials, slow symbolic expansions), from the main thread and from a worker thread.
3. The worst single-call latency of the reward's own scanning (extraction, normalisation, screens; math-verify
   stubbed out) over hostile completions built to make regexes backtrack or scans go quadratic, against the
   documented ``OWN_CODE_BOUND_S``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import random
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PKG = next(p.parent.parent.name for p in ROOT.glob("*/rewards/__init__.py"))
math_task = importlib.import_module(f"{PKG}.rewards.task")

PATHOLOGICAL = [
    "\\frac{" * 200 + "1" + "}{2}" * 200,
    "2^{" * 30 + "2" + "}" * 30,
    "2^{2^{2^{2^{2}}}}",
    "9^{9^{9}}",
    "10^{1000000}",
    "100000!",
    "(" * 5000 + "1" + ")" * 5000,
    "\\sqrt{" * 100 + "2" + "}" * 100,
    "(x+1)^{9999} - (x-1)^{9999}",  # passes screening: bounded by the worker timeout
    "\\int_0^1 x^{x} \\, dx",
]
HOSTILE = [
    "7" + "a" * 480 + "!",
    "72 " + "ab " * 330 + "!",
    "\\boxed{" * 14_000,
    "\\boxed{}" * 12_000,
    "}\\boxed{" * 12_000,
    "{" * 50_000 + "}" * 50_000,
    "$" * 999,
    "so, the answer is " * 55,
    "1," * 499,
    "7" + " " * 998 + "!",
    "x = " * 250,
    "\\text{" * 150 + "a" * 100,
    "72 " + "\\boxed{1}, " * 90,
    "^" + " " * 299 + "7" * 5,
    "<answer>" * 12_000,
    "</answer>" * 11_000,
    "\\boxed{" + "{}" * 49_000,  # one box, 98k braces to pair
    "x. " * 33_000 + "\\boxed{72}",  # the last box's sentence and display (math_box)
    "$$" * 49_000 + "\\boxed{72}$$",
    "The answer is 72. " * 5_500,  # the final statement of an answer block (math_final): many competing statements
    "\\boxed{72}. " * 60 + "x. " * 30_000,
    "\\(" * 30_000 + "\\boxed{72}",
    "72.\n" * 24_000,
    "it is " * 160 + "72",
]


def wrap(answer: str) -> str:
    return f"<reasoning>\nStep by step.\n</reasoning>\n<answer>\n{answer}\n</answer>"


def variants(gold: str, rng: random.Random) -> list[str]:
    """Eight answers to one gold: right ones in several surface forms and wrong ones."""
    final = gold.rsplit("####", 1)[1].strip() if "####" in gold else gold
    plain = final.replace(",", "")
    out = [final, f"${final}$", "\\boxed{" + final + "}"]
    try:
        value = float(plain)
        out += [f"{value + rng.choice([1, -1, 10])}", f"{plain} units", f"{plain} or {value + 1:g}"]
        out += [f"The answer is {value * 2:g}.", f"{value:,.2f}"]
    except ValueError:
        out += [f"{final} + 1", "0", f"{final}, 1", "\\frac{1}{2}", final]
    return [wrap(a) for a in out[:8]]


def build_pairs(n: int) -> tuple[list[str], list[str]]:
    rows = [json.loads(line) for line in (ROOT / "data" / "sample.jsonl").read_text().splitlines() if line]
    rng = random.Random(0)
    completions: list[str] = []
    golds: list[str] = []
    while len(completions) < n:
        row = rows[len(completions) // 8 % len(rows)]
        vs = variants(row["answer"], rng)
        completions += vs
        golds += [row["answer"]] * len(vs)
    return completions[:n], golds[:n]


def raw_math_verify(completions: list[str], golds: list[str]) -> list[float]:
    from math_verify import parse, verify

    out = []
    for completion, gold in zip(completions, golds, strict=True):
        final = gold.rsplit("####", 1)[1].strip() if "####" in gold else gold
        out.append(1.0 if verify(parse(f"${final}$"), parse(completion)) else 0.0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    completions, golds = build_pairs(args.n)
    reward = math_task.correctness_reward

    start = time.perf_counter()
    math_task.WORKER.verify("1", "1")  # worker start, reported separately
    startup = time.perf_counter() - start

    start = time.perf_counter()
    ours = reward(completions=completions, answer=golds)
    t_ours = time.perf_counter() - start
    start = time.perf_counter()
    raw = raw_math_verify(completions, golds)
    t_raw = time.perf_counter() - start
    differ = sum(1 for a, b in zip(ours, raw, strict=True) if a != b)
    print(f"pairs: {len(completions)}  (mean reward {sum(v or 0 for v in ours) / len(ours):.3f})")
    print(f"worker start (one-time): {startup:.2f} s")
    print(f"reward:      {t_ours:.3f} s  ({1e3 * t_ours / len(completions):.3f} ms/completion)")
    print(f"math-verify: {t_raw:.3f} s  ({1e3 * t_raw / len(completions):.3f} ms/completion)")
    print(f"ratio reward/math-verify: {t_ours / t_raw:.2f}x  (target <= 2x)")
    print(f"verdicts differing from raw math-verify: {differ} (multiple-candidate answers, prose, rounding)")

    worst_main = worst_thread = 0.0
    for pred in PATHOLOGICAL:
        for gold in ("72", "x^2+1"):
            start = time.perf_counter()
            reward(completions=[wrap(pred)], answer=[gold])
            worst_main = max(worst_main, time.perf_counter() - start)

        def run(p: str = pred) -> None:
            reward(completions=[wrap(p)], answer=["x^2+1"])

        thread = threading.Thread(target=run)
        start = time.perf_counter()
        thread.start()
        thread.join()
        worst_thread = max(worst_thread, time.perf_counter() - start)
    print(
        f"pathological inputs: {len(PATHOLOGICAL)}; worst single call: main thread {worst_main:.3f} s, "
        f"other thread {worst_thread:.3f} s (includes a worker restart after a kill); "
        f"bound {math_task.VERIFY_TIMEOUT_S} s + restart; worker restarts: {math_task.WORKER.restarts}"
    )
    worst, name = hostile_worst()
    print(
        f"hostile completions: {len(HOSTILE)} x 3; worst single call of own scanning {1e3 * worst:.1f} ms on {name} "
        f"(documented bound {1e3 * math_task.OWN_CODE_BOUND_S:.0f} ms)"
    )


def hostile_worst() -> tuple[float, str]:
    """Worst single call of the reward's own code (math-verify stubbed out) over HOSTILE, bare, wrapped, repeated."""
    real = math_task.WORKER.verify
    math_task.WORKER.verify = lambda *a, **k: False
    worst, name = 0.0, ""
    try:
        for body in HOSTILE:
            for text in (body, wrap(body), (wrap(body) * 3)[:100_000]):
                start = time.perf_counter()
                math_task.correctness_reward(completions=[text], answer=["72"])
                took = time.perf_counter() - start
                if took > worst:
                    worst, name = took, f"{body[:16]!r}... ({len(text):,} chars)"
    finally:
        math_task.WORKER.verify = real
    return worst, name


if __name__ == "__main__":
    main()
