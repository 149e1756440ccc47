"""Verifier audit: are the rewards this run trains with right on *these* rows, before the GPU hour starts?

    python -m <package>.audit --config configs/<preset>.yaml [--rows N] [--output PATH] [--reward_funcs ...]

For a seeded sample of the configured training rows it scores the row's gold completion (``task.gold_completion``)
and the task's hack catalogue (``audit_cases.wrong_completions``: families of wrong completions derived from the
gold, each built to expose one kind of lax reward) with every reward of ``reward_funcs`` that has a non-zero weight,
and measures

* the **false-negative rate**: rows whose gold completion a judging reward does not credit (scores below
  :data:`FULL`);
* the **false-positive rate**, overall and per family: wrong completions that earn at least ``max_credit``
  (:data:`MAX_CREDIT`, 0.9) of the gold's credit from a judging reward, or whose weighted total is not below the
  gold's by more than ``(1 - max_credit)`` x the gold's weighted judging credit: a hole the policy will find.

The judging rewards are ``correctness`` and every dotted (user) reward, whatever else the config lists (a dotted
reward that only shapes, such as a penalty, says so with ``judges_answer = False`` on its function); the other
registered rewards (format, length, repetition, syntax...) shape the completion rather than judge its answer, so
they count in the weighted total only. ``audit_reward`` adds one more judge (audited alone when it is not trained);
a config without a judging reward gets ``correctness`` audited alone. A wrong completion scoring 0 is never
credited, whatever its gold scored; a score of None (a verifier that is not installed, a row the reward does not
apply to) leaves that pair unchecked. The audit prints every family it probed with its false-positive rate, writes
``audit.json`` and, before training (``train.py`` runs it on ``audit_rows`` rows unless ``audit: false``), refuses
to start when a rate reaches ``audit_max_false_negative`` / ``audit_max_false_positive`` (inclusive: exactly 5.0%
refuses). The post-generation quick smoke (``selfcheck``) runs it on ``data/sample.jsonl``. One batch call per
reward scores everything, so the audit takes seconds.

Stdlib only at module level: the post-generation quick smoke imports this in cookiecutter's interpreter.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import task
from .constants import AUDIT_MAX_FALSE_NEGATIVE as MAX_FALSE_NEGATIVE
from .constants import AUDIT_MAX_FALSE_POSITIVE as MAX_FALSE_POSITIVE
from .constants import AUDIT_ROWS as DEFAULT_ROWS  # noqa: F401 - the audit's names for them
from .files import write_text

FULL = 1.0  # a right answer's correctness (rewards are unweighted; correctness is in [0, 1])
MAX_CREDIT = 0.9  # a wrong completion earning this fraction of the gold's credit (or more) is a false positive
EXAMPLES = 3  # example rows printed (and written) per kind of error
SUM = "weighted sum"


class AuditError(ValueError):
    """The audited rewards are at or above a threshold; its message is one line naming the knob to change."""


@dataclass
class Audited:
    """One reward as the audit sees it: its name, the function, its weight in the run and whether it judges the
    answer (audited alone) or only shapes the completion (counted in the weighted total)."""

    name: str
    func: Callable
    weight: float = 1.0
    judge: bool = True


def is_judge(name: str, func: object = None) -> bool:
    """``correctness`` and every dotted (user) reward judge the answer, unless the function says otherwise
    (``my_reward.judges_answer = False``: a penalty or another shaping term); the other registered rewards shape it."""
    from .rewards import reward_names

    if getattr(func, "judges_answer", True) is False:
        return False
    return name == "correctness" or name not in reward_names()


def audited(names: Sequence[str], weights: Sequence[float] | None, funcs: Sequence[Callable],
            extra: str | None = None, build: Callable[[str], Callable] | None = None) -> list[Audited]:
    """The rewards a run trains with (non-zero weights), plus ``extra`` (or ``correctness`` when none of them
    judges the answer) built with ``build`` and audited alone at weight 0."""
    weights = list(weights) if weights else [1.0] * len(names)
    out = [Audited(n, f, float(w), is_judge(n, f) and w > 0) for n, f, w in zip(names, funcs, weights,
                                                                                   strict=False) if w]
    alone = extra if extra and extra not in [a.name for a in out] else None
    if alone is None and not any(a.judge for a in out):
        alone = extra or "correctness"
    if alone is not None and build is not None:
        out.append(Audited(alone, build(alone), 0.0, True))
    return out


def wrong_family() -> Callable[[dict], list[tuple[str, str]] | None]:
    """The task's hack catalogue (``audit_cases.wrong_completions``; None skips a row with no gold), or a generic
    family (an empty answer block) for a task that has none."""
    try:
        from . import audit_cases
    except ImportError:
        return generic_wrong_completions
    return audit_cases.wrong_completions


def generic_wrong_completions(row: dict) -> list[tuple[str, str]]:
    """An empty answer block, and the gold's answer in the reasoning before an empty answer block."""
    from .answer_format import extract_answer

    gold = (extract_answer(task.gold_completion(row)) or "").strip()
    return [("empty answer", "<reasoning>\nNo idea.\n</reasoning>\n<answer>\n\n</answer>"),
            ("right answer in the reasoning", f"<reasoning>\n{gold}\n</reasoning>\n<answer>\n\n</answer>")]


def choose_reward(reward_funcs: Sequence[str], audit_reward: str | None = None) -> str:
    """The first judging reward: ``audit_reward`` when set, else ``correctness`` when listed, else the first dotted
    (user) reward, else ``correctness`` (the audit judges all of them: see :func:`audited`)."""
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


def cases_of(rows: Sequence[tuple[int, dict]], family: Callable) -> tuple[list[tuple[int, dict, str, str]], int]:
    """(row index, row, family, completion) for every sampled row's gold and wrong completions, and how many rows
    had no gold to derive from (a code row without a reference solution)."""
    cases, skipped = [], 0
    for index, row in rows:
        wrong = family(row)
        if wrong is None:
            skipped += 1
            continue
        cases.append((index, row, "gold", task.gold_completion(row)))
        cases.extend((index, row, name, text) for name, text in wrong)
    return cases, skipped


def score_all(rewards: Sequence[Audited], rows: Sequence[dict], texts: Sequence[str]) -> dict[str, list]:
    """Every reward's scores of ``texts`` (the completions of ``rows``), one batch call each."""
    keys = sorted({key for row in rows for key in row})
    columns = {key: [row.get(key) for row in rows] for key in keys}
    prompts = [row.get("question") for row in rows]
    out = {}
    for reward in rewards:
        try:
            scores = list(reward.func(prompts=prompts, completions=list(texts), **columns)) if texts else []
        except Exception as error:
            raise AuditError(f"reward {reward.name} raised {type(error).__name__}: "
                             f"{str(error).strip().splitlines()[0] if str(error).strip() else ''}") from error
        if len(scores) != len(texts):
            raise AuditError(f"reward {reward.name} returned {len(scores)} scores for {len(texts)} completions")
        out[reward.name] = [None if s is None else float(s) for s in scores]
    return out


def credited_by(rewards: Sequence[Audited], scores: dict[str, list], k: int, g: int,
                max_credit: float) -> list[str] | None:
    """The judges (and ``weighted sum``) that credit wrong completion ``k`` against its gold ``g``; None when no
    check applied to it."""
    judges = [r for r in rewards if r.judge]
    out, checked = [], False
    for r in judges:
        mine, gold = scores[r.name][k], scores[r.name][g]
        if mine is None or gold is None:
            continue
        checked = True
        if mine > 0 and mine >= max_credit * min(gold, FULL):
            out.append(r.name)
    weighted = [r for r in rewards if r.weight]
    gold_credit = sum(r.weight * min(scores[r.name][g] or 0.0, FULL) for r in judges if r.weight > 0)
    if gold_credit > 0 and all(scores[r.name][i] is not None for r in judges if r.weight for i in (k, g)):
        checked = True
        total = {i: sum(r.weight * (scores[r.name][i] or 0.0) for r in weighted) for i in (k, g)}
        if total[g] - total[k] <= (1 - max_credit) * gold_credit:
            out.append(SUM)
    return out if checked else None


def run(rows: Sequence[tuple[int, dict]], rewards: Callable | Sequence[Audited], name: str = "correctness",
        family: Callable[[dict], list[tuple[str, str]] | None] | None = None, max_credit: float = MAX_CREDIT) -> dict:
    """Score every sampled row's gold and wrong completions with ``rewards`` (a list of :class:`Audited`, or one
    reward judged alone under ``name``) and return the audit's result (the content of ``audit.json``)."""
    rewards = [Audited(name, rewards)] if callable(rewards) else list(rewards)
    cases, skipped = cases_of(rows, family or wrong_family())
    scores = score_all(rewards, [row for _, row, _, _ in cases], [text for *_, text in cases])
    gold_at = {index: k for k, (index, _, fam, _) in enumerate(cases) if fam == "gold"}
    result = {"reward": ", ".join(r.name for r in rewards if r.judge), "rows": len(rows), "skipped": skipped,
              "max_credit": max_credit, "margin": f"a wrong completion's weighted total must stay below the gold's "
              f"by more than {1 - max_credit:.0%} of the gold's weighted judging credit",
              "rewards": [{"name": r.name, "weight": r.weight, "judge": r.judge} for r in rewards]}
    false_negatives, false_positives, families, unchecked, gold_checked = [], [], {}, 0, 0
    for k, (index, _, fam, text) in enumerate(cases):
        entry = {"row": index, "family": fam, "scores": {r.name: scores[r.name][k] for r in rewards},
                 "answer": _excerpt(text)}
        if fam == "gold":
            judged = {r.name: scores[r.name][k] for r in rewards if r.judge and scores[r.name][k] is not None}
            gold_checked += bool(judged)
            if any(s < FULL for s in judged.values()):
                false_negatives.append({**entry, "missed_by": [n for n, s in judged.items() if s < FULL]})
            unchecked += not judged
            continue
        by = credited_by(rewards, scores, k, gold_at[index], max_credit)
        if by is None:
            unchecked += 1
            continue
        stats = families.setdefault(fam, {"checked": 0, "credited": 0})
        stats["checked"] += 1
        if by:
            stats["credited"] += 1
            gold = {r.name: scores[r.name][gold_at[index]] for r in rewards}
            false_positives.append({**entry, "gold_scores": gold, "credited_by": by})
            stats.setdefault("example", false_positives[-1])
    wrong_checked = sum(stats["checked"] for stats in families.values())
    return {**result, "gold_checked": gold_checked, "wrong_checked": wrong_checked, "unchecked": unchecked,
            "false_negative_rate": len(false_negatives) / gold_checked if gold_checked else 0.0,
            "false_positive_rate": len(false_positives) / wrong_checked if wrong_checked else 0.0,
            "false_negatives": len(false_negatives), "false_positives": len(false_positives), "families": families,
            "credited_by": dict(Counter(by for e in false_positives for by in e["credited_by"])),
            "false_negative_examples": false_negatives[:EXAMPLES],
            "false_positive_examples": _spread(false_positives)}


def _spread(entries: list[dict]) -> list[dict]:
    """Up to EXAMPLES examples, one per family first."""
    firsts = list({e["family"]: e for e in reversed(entries)}.values())[::-1]
    return (firsts + [e for e in entries if e not in firsts])[:EXAMPLES]


def _scores(scores: dict) -> str:
    return ", ".join(f"{n} {'-' if s is None else f'{s:.3g}'}" for n, s in scores.items())


def report(result: dict, source: str = "") -> list[str]:
    """The audit's printed lines: both rates, every family probed with its rate, and example rows."""
    where = f" on {result['rows']} rows of {source}" if source else f" on {result['rows']} rows"
    weighted = [f"{r['name']} x{r['weight']:g}" for r in result.get("rewards", []) if r["weight"]]
    lines = [
        f"verifier audit of {result['reward']}" + (f" and the weighted sum of {', '.join(weighted)}" if weighted
                                                  else "") + f"{where}: "
        f"false negatives {result['false_negatives']}/{result['gold_checked']} "
        f"({result['false_negative_rate']:.1%}, gold not credited), "
        f"false positives {result['false_positives']}/{result['wrong_checked']} "
        f"({result['false_positive_rate']:.1%}, wrong completions earning >= {result['max_credit']:.0%} of the "
        "gold's credit)"
        + (f", {result['unchecked']} unchecked (no verifier)" if result["unchecked"] else "")
        + (f", {result['skipped']} rows skipped (no gold)" if result["skipped"] else "")
    ]
    probed = [f"{name} {s['credited']}/{s['checked']}" for name, s in result["families"].items()]
    lines.append(f"  families probed (credited/checked): {', '.join(probed) or 'none'}")
    if result["credited_by"]:
        lines.append("  credited by: " + ", ".join(f"{n} {c}" for n, c in result["credited_by"].items()))
    for entry in result["false_negative_examples"]:
        lines.append(f"  gold not credited: row {entry['row']} ({_scores(entry['scores'])}): {entry['answer']!r}")
    for entry in result["false_positive_examples"]:
        lines.append(f"  wrong credited: row {entry['row']} {entry['family']} ({_scores(entry['scores'])}; gold "
                     f"{_scores(entry['gold_scores'])}) by {', '.join(entry['credited_by'])}: {entry['answer']!r}")
    return lines


def _reached(rate: float, limit: float) -> bool:
    return rate > 0 and rate >= limit


def check(result: dict, max_false_negative: float = MAX_FALSE_NEGATIVE,
          max_false_positive: float = MAX_FALSE_POSITIVE) -> str | None:
    """One line naming the rate at or above its threshold and the knob to change, or None when the rewards pass."""
    if _reached(result["false_negative_rate"], max_false_negative):
        first = result["false_negative_examples"][0]
        return (f"verifier audit: {', '.join(first['missed_by'])} does not credit the gold answer of "
                f"{result['false_negative_rate']:.1%} of the audited rows (e.g. row {first['row']}: "
                f"{first['answer']!r} scored {_scores(first['scores'])}), at or above audit_max_false_negative="
                f"{max_false_negative}; fix the reward or the data, or raise audit_max_false_negative "
                "(audit: false skips the audit)")
    worst = max(result["families"].items(), key=lambda item: item[1]["credited"] / item[1]["checked"],
                default=None)
    rate, what = result["false_positive_rate"], "known-wrong completions"
    first = result["false_positive_examples"][0] if result["false_positive_examples"] else None
    if worst and not _reached(rate, max_false_positive):
        name, stats = worst
        rate, what, first = stats["credited"] / stats["checked"], f"the {name!r} family", stats.get("example")
    if first is None or not _reached(rate, max_false_positive):
        return None
    return (f"verifier audit: {', '.join(first['credited_by'])} credits {rate:.1%} of {what} (e.g. row "
            f"{first['row']} {first['family']}: {first['answer']!r} scored {_scores(first['scores'])}, gold "
            f"{_scores(first['gold_scores'])}), at or above audit_max_false_positive={max_false_positive}; fix the "
            "reward, or raise audit_max_false_positive (audit: false skips the audit)")


def write(result: dict, path: str | Path) -> Path:
    return write_text(path, json.dumps(result, indent=2, default=str) + "\n")  # whole or absent, as health.json


def audit_before_training(script_args, rows, reward_funcs: Sequence[Callable], settings, output_dir: str,
                          log: Callable[[str], None] = print, weights: Sequence[float] | None = None) -> dict | None:
    """train.py's audit: ``audit_rows`` rows of the training split, the run's own rewards with their ``weights``;
    writes ``output_dir/audit.json`` (rank 0) and raises AuditError at or above a threshold."""
    if not script_args.audit:
        return None
    import os

    from .rewards import build_reward

    extra: list[Callable] = []
    rewards = audited(script_args.reward_funcs, weights, reward_funcs, script_args.audit_reward,
                      lambda name: extra.append(build_reward(name, settings)) or extra[-1])
    try:
        result = run(sample(rows, script_args.audit_rows, seed=0), rewards)
    finally:
        for reward in extra:
            if hasattr(reward, "close"):
                reward.close()
    if int(os.environ.get("RANK", "0")) == 0:
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

    cli = argparse.ArgumentParser(prog=f"python -m {__package__}.audit", description=__doc__.split("\n\n")[0],
                                  epilog="Any other --option overrides the config (--reward_funcs, --dataset_name...).")
    cli.add_argument("--config", default=None, help="the training config (default: the project's preset)")
    cli.add_argument("--rows", type=int, default=None, help="rows to audit (default: the config's audit_rows)")
    cli.add_argument("--reward", default=None, help="one more reward to audit alone (default: audit_reward)")
    cli.add_argument("--output", default=None, help="where to write audit.json (default: <output_dir>/audit.json)")
    args, overrides = cli.parse_known_args(argv)

    from . import config, data
    from .rewards import RewardSettings, build_reward

    try:
        script_args, training_args, _, task_args = config.parse_args(
            (["--config", args.config] if args.config else []) + overrides)
        raw = data.load_raw(script_args.dataset_name, script_args.dataset_config)
        split = raw[script_args.dataset_train_split] if script_args.dataset_train_split in raw else next(
            iter(raw.values()))
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {str(error).strip().splitlines()[0]}", file=sys.stderr)
        return 1
    settings = RewardSettings(training_args.max_completion_length, task_args)
    funcs = [build_reward(name, settings) for name in script_args.reward_funcs]
    rewards = audited(script_args.reward_funcs, training_args.reward_weights, funcs,
                      args.reward or script_args.audit_reward, lambda name: build_reward(name, settings))
    try:
        result = run(sample(_Rows(split), args.rows if args.rows is not None else script_args.audit_rows), rewards)
    except AuditError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        for func in {id(f): f for f in [*funcs, *(r.func for r in rewards)]}.values():
            if hasattr(func, "close"):
                func.close()
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
