"""Verifier audit: is the correctness reward right on *these* rows, before the GPU hour starts?

    python -m <package>.audit --config configs/<preset>.yaml [--rows N] [--output PATH]

For a seeded sample of the configured training rows it scores the row's gold completion
(``task.gold_completion``) and a family of known-wrong completions derived from the gold (the task's
``audit_cases.wrong_completions``: an off-by-one or sign-flipped answer, a hedge, a stubbed function, a changed
JSON value, ...) with the audited reward, and measures

* the **false-negative rate**: rows whose gold completion is not credited (scores below :data:`FULL`);
* the **false-positive rate**: wrong completions that do not score less than their row's gold (nor less than
  :data:`FULL`): a hole the policy will find.

It prints both with example rows, writes ``audit.json`` and, before training (``train.py`` runs it on
``audit_rows`` rows unless ``audit: false``), refuses to start when a rate is above ``audit_max_false_negative`` /
``audit_max_false_positive``. The post-generation quick smoke (``selfcheck``) runs it on ``data/sample.jsonl``.
The audited reward is ``audit_reward``: unset, ``correctness`` when the config lists it, else the first dotted
(user) reward of ``reward_funcs``. A score of None (a verifier that is not installed) leaves that completion
unchecked. One batch call of the reward scores everything, so the audit takes seconds (the code task's sandbox runs
each completion as a real job).

Stdlib only at module level: the post-generation quick smoke imports this in cookiecutter's interpreter.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import task
from .training.checkpoints import write_text

FULL = 1.0  # a right answer's correctness (rewards are unweighted; correctness is in [0, 1])
MAX_FALSE_NEGATIVE = 0.05  # defaults of the config's audit_max_false_negative / audit_max_false_positive
MAX_FALSE_POSITIVE = 0.05
DEFAULT_ROWS = 64
EXAMPLES = 3  # example rows printed (and written) per kind of error


class AuditError(ValueError):
    """The audited reward is above a threshold; its message is one line naming the knob to change."""


def wrong_family() -> Callable[[dict], list[tuple[str, str]] | None]:
    """The task's known-wrong completions of a row (``audit_cases.wrong_completions``; None skips a row with no
    gold), or a generic family (an empty answer block) for a task that has none."""
    try:
        from . import audit_cases
    except ImportError:
        return generic_wrong_completions
    return audit_cases.wrong_completions


def generic_wrong_completions(row: dict) -> list[tuple[str, str]]:
    return [("empty answer", "<reasoning>\nNo idea.\n</reasoning>\n<answer>\n\n</answer>")]


def choose_reward(reward_funcs: Sequence[str], audit_reward: str | None = None) -> str:
    """The reward the audit scores: ``audit_reward`` when set, else ``correctness`` when listed, else the first
    dotted (user) reward, else ``correctness``."""
    if audit_reward:
        return audit_reward
    if "correctness" in reward_funcs:
        return "correctness"
    return next((name for name in reward_funcs if "." in name), "correctness")


def sample(rows: Sequence[dict], count: int | None, seed: int = 0) -> list[tuple[int, dict]]:
    """Up to ``count`` rows (all when None or fewer), drawn with ``seed``, as (index, row) in their order."""
    indices = list(range(len(rows)))
    if count is not None and 0 <= count < len(rows):
        indices = sorted(random.Random(seed).sample(indices, count))
    return [(index, rows[index]) for index in indices]


def _excerpt(text: str, limit: int = 160) -> str:
    from .answer_format import extract_answer

    answer = extract_answer(text)
    shown = answer if answer is not None else text
    shown = " ".join(str(shown).split())
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def run(rows: Sequence[tuple[int, dict]], reward: Callable, name: str = "correctness",
        family: Callable[[dict], list[tuple[str, str]] | None] | None = None) -> dict:
    """Score every sampled row's gold and known-wrong completions with ``reward`` (one batch call) and return the
    audit's result (the content of ``audit.json``)."""
    family = family or wrong_family()
    cases: list[tuple[int, dict, str, str]] = []  # (row index, row, variant, completion)
    skipped = 0  # rows with no gold to derive from (a code row without a reference solution)
    for index, row in rows:
        wrong = family(row)
        if wrong is None:
            skipped += 1
            continue
        cases.append((index, row, "gold", task.gold_completion(row)))
        cases.extend((index, row, variant, text) for variant, text in wrong)
    keys = sorted({key for _, row, _, _ in cases for key in row})
    columns = {key: [row.get(key) for _, row, _, _ in cases] for key in keys}
    prompts = [row.get("question") for _, row, _, _ in cases]
    scores = list(reward(prompts=prompts, completions=[text for *_, text in cases], **columns)) if cases else []
    if len(scores) != len(cases):
        raise AuditError(f"reward {name} returned {len(scores)} scores for {len(cases)} completions")

    gold = {index: score for (index, _, variant, _), score in zip(cases, scores, strict=True) if variant == "gold"}
    false_negatives, false_positives, variants = [], [], {}
    unchecked = 0
    for (index, _, variant, text), score in zip(cases, scores, strict=True):
        entry = {"row": index, "variant": variant, "score": score, "answer": _excerpt(text)}
        if score is None:
            unchecked += 1
            continue
        if variant == "gold":
            if score < FULL:
                false_negatives.append(entry)
            continue
        stats = variants.setdefault(variant, {"checked": 0, "credited": 0})
        stats["checked"] += 1
        bar = FULL if gold[index] is None else min(gold[index], FULL)
        if score >= bar:
            stats["credited"] += 1
            false_positives.append({**entry, "gold_score": gold[index]})
    gold_checked = sum(score is not None for score in gold.values())
    wrong_checked = sum(stats["checked"] for stats in variants.values())
    return {
        "reward": name,
        "rows": len(rows),
        "skipped": skipped,
        "gold_checked": gold_checked,
        "wrong_checked": wrong_checked,
        "unchecked": unchecked,
        "false_negative_rate": len(false_negatives) / gold_checked if gold_checked else 0.0,
        "false_positive_rate": len(false_positives) / wrong_checked if wrong_checked else 0.0,
        "false_negatives": len(false_negatives),
        "false_positives": len(false_positives),
        "variants": variants,
        "false_negative_examples": false_negatives[:EXAMPLES],
        "false_positive_examples": false_positives[:EXAMPLES],
    }


def report(result: dict, source: str = "") -> list[str]:
    """The audit's printed lines: both rates, the credited variants, and example rows."""
    where = f" on {result['rows']} rows of {source}" if source else f" on {result['rows']} rows"
    lines = [
        f"verifier audit of {result['reward']}{where}: "
        f"false negatives {result['false_negatives']}/{result['gold_checked']} "
        f"({result['false_negative_rate']:.1%}, gold not credited), "
        f"false positives {result['false_positives']}/{result['wrong_checked']} "
        f"({result['false_positive_rate']:.1%}, known-wrong credited)"
        + (f", {result['unchecked']} unchecked (no verifier)" if result["unchecked"] else "")
        + (f", {result['skipped']} rows skipped (no gold)" if result["skipped"] else "")
    ]
    credited = [f"{name} {s['credited']}/{s['checked']}" for name, s in result["variants"].items() if s["credited"]]
    if credited:
        lines.append(f"  credited wrong variants: {', '.join(credited)}")
    for entry in result["false_negative_examples"]:
        lines.append(f"  gold not credited: row {entry['row']} scored {entry['score']}: {entry['answer']!r}")
    for entry in result["false_positive_examples"]:
        lines.append(f"  wrong credited: row {entry['row']} {entry['variant']} scored {entry['score']} "
                     f"(gold {entry['gold_score']}): {entry['answer']!r}")
    return lines


def check(result: dict, max_false_negative: float = MAX_FALSE_NEGATIVE,
          max_false_positive: float = MAX_FALSE_POSITIVE) -> str | None:
    """One line naming the rate over its threshold and the knob to change, or None when the reward passes."""
    if result["false_negative_rate"] > max_false_negative:
        first = result["false_negative_examples"][0]
        return (f"verifier audit: {result['reward']} does not credit the gold answer of "
                f"{result['false_negative_rate']:.1%} of the audited rows (e.g. row {first['row']}: "
                f"{first['answer']!r} scored {first['score']}), above audit_max_false_negative={max_false_negative}; "
                "fix the reward or the data, or raise audit_max_false_negative (audit: false skips the audit)")
    if result["false_positive_rate"] > max_false_positive:
        first = result["false_positive_examples"][0]
        return (f"verifier audit: {result['reward']} credits {result['false_positive_rate']:.1%} of known-wrong "
                f"completions (e.g. row {first['row']} {first['variant']}: {first['answer']!r} scored "
                f"{first['score']}), above audit_max_false_positive={max_false_positive}; fix the reward, or raise "
                "audit_max_false_positive (audit: false skips the audit)")
    return None


def write(result: dict, path: str | Path) -> Path:
    return write_text(path, json.dumps(result, indent=2, default=str) + "\n")  # whole or absent, as health.json


def audit_before_training(script_args, rows, reward_funcs: Sequence[Callable], settings, output_dir: str,
                          log: Callable[[str], None] = print) -> dict | None:
    """train.py's audit: ``audit_rows`` rows of the training split, the run's own reward when it is one of
    ``reward_funcs``; writes ``output_dir/audit.json`` (rank 0) and raises AuditError above a threshold."""
    if not script_args.audit:
        return None
    import os

    from .rewards import build_reward

    name = choose_reward(script_args.reward_funcs, script_args.audit_reward)
    built = dict(zip(script_args.reward_funcs, reward_funcs, strict=False))
    reward = built.get(name) or build_reward(name, settings)
    try:
        result = run(sample(rows, script_args.audit_rows, seed=0), reward, name)
    finally:
        if name not in built and hasattr(reward, "close"):
            reward.close()
    main_process = int(os.environ.get("RANK", "0")) == 0
    if main_process:
        for line in report(result, script_args.dataset_name):
            log(line)
        write(result, Path(output_dir) / "audit.json")
    problem = check(result, script_args.audit_max_false_negative, script_args.audit_max_false_positive)
    if problem:
        raise AuditError(problem)
    return result


class _Rows:
    """A datasets split read as a sequence of dicts, only the sampled rows materialised."""

    def __init__(self, split) -> None:
        self.split = split

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, index: int) -> dict:
        return self.split[int(index)]


def main(argv: list[str] | None = None) -> int:
    import argparse

    cli = argparse.ArgumentParser(prog=f"python -m {__package__}.audit", description=__doc__.split("\n\n")[0])
    cli.add_argument("--config", default=None, help="the training config (default: the project's preset)")
    cli.add_argument("--rows", type=int, default=None, help="rows to audit (default: the config's audit_rows)")
    cli.add_argument("--reward", default=None, help="the reward to audit (default: the config's audit_reward)")
    cli.add_argument("--output", default=None, help="where to write audit.json (default: <output_dir>/audit.json)")
    args = cli.parse_args(argv)

    from . import config, data
    from .rewards import RewardSettings, build_reward

    try:
        script_args, training_args, _, task_args = config.parse_args(["--config", args.config] if args.config else [])
        raw = data.load_raw(script_args.dataset_name, script_args.dataset_config)
        split = raw[script_args.dataset_train_split] if script_args.dataset_train_split in raw else next(
            iter(raw.values()))
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {str(error).strip().splitlines()[0]}", file=sys.stderr)
        return 1
    name = choose_reward(script_args.reward_funcs, args.reward or script_args.audit_reward)
    reward = build_reward(name, RewardSettings(training_args.max_completion_length, task_args))
    try:
        result = run(sample(_Rows(split), args.rows if args.rows is not None else script_args.audit_rows), reward,
                     name)
    finally:
        if hasattr(reward, "close"):
            reward.close()
    for line in report(result, script_args.dataset_name):
        print(line)
    path = write(result, args.output or Path(training_args.output_dir) / "audit.json")
    print(f"wrote {path}")
    problem = check(result, script_args.audit_max_false_negative, script_args.audit_max_false_positive)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
