"""Recall and false credit of the math ``correctness`` reward on Math-Verify's own test suite, beside raw math-verify.

Run from the project root: ``python benchmarks/bench_math_recall.py [--show_all]``.

The cases are ``benchmarks/math_verify_cases.jsonl`` (extracted from the ``tests/`` of
https://github.com/huggingface/Math-Verify by ``extract_math_verify_cases.py``; its first line names the commit and
the licence): 232 positives (the suite expects the prediction to match the gold) and 38 negatives. The 232 are
the 230 literal rows of the ``parametrize`` lists whose names include a gold and a prediction, the one row written
as an f-string (``test_float_precision``) and the one ``compare_strings(...) == 1`` written out in
``test_precision``; the 38 negatives are the rows expecting 0.

- project: each prediction is the content of the answer block of a completion
  (``<reasoning>..</reasoning><answer>PRED</answer>``), the gold is the row's ``answer``, scored by
  ``correctness``; a second figure puts the prediction as the whole completion (no tags: only a ``\\boxed{}`` is
  an answer there).
- raw math-verify: ``verify(parse(gold), parse(pred))`` run as the suite runs it (its ``match_types``,
  ``precision``, ``strict`` and ``allow_set_relation_comp`` per case), in this process; and with math-verify's
  defaults (which refuse the suite's reduced-precision, non-strict and set-relation cases: 227/232).

Prints recall (positives credited / positives) and false credit (negatives credited / negatives) for both, then
every refused positive with the reward's reason, and every negative credited. A positive the reward refuses on
purpose is listed in ``REFUSED_ON_PURPOSE`` with why; a positive whose scoring had a comparison run out of time
(``VERIFY_TIMEOUT_S``; sympy is slower on a busy machine) is printed as such, not as a verdict; any other refusal is
printed as unexplained. The cases are scored one at a time to tell them apart.

Two pairs of the suite are the same (gold, prediction) expected both ways under different math-verify settings
(``strict``, ``allow_set_relation_comp``), so no reward credits both of each pair without crediting a negative.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PKG = next(p.parent.parent.name for p in ROOT.glob("*/rewards/__init__.py"))
math_task = importlib.import_module(f"{PKG}.rewards.task")
CASES = Path(__file__).with_name("math_verify_cases.jsonl")

# (test, the prediction's first 60 characters) -> why the reward refuses this positive of the suite on purpose
_PRECISION = "an approximation below the documented precision (a decimal matches 1/3 from 6 places on)"
_CHAIN = "a false chain: every side of an equation chain must equal the answer"
_PAIR = ("the suite holds this same (gold, prediction) pair as a negative too ({}): the reward refuses it, as "
         "math-verify's defaults do")
REFUSED_ON_PURPOSE: dict[tuple[str, str], str] = {
    ("test_precision", "0.3333$"): _PRECISION,
    ("test_complex_math_expressions", "$\\begin{pmatrix}0.33\\\\0.2 \\end{pmatrix}$"): _PRECISION,
    ("test_complex_math_expressions", "$(0.6,2.6667]$"): _PRECISION,
    ("test_relations_math", "$x = 5+5+1 = 7 =11$"): _CHAIN,
    ("test_relations_math", "$x = 5+5+1 = 1/3 \\approx 11$"): _CHAIN,
    ("test_relations_math", "$x\\approx11$"): "an approximation of a gold that has a finite decimal expansion",
    ("test_relations_math", "$x=1/3\\approx1.3$"): "a false approximation (1/3 is not about 1.3)",
    ("test_latex_notation", "Answer $ \\frac{1}{2} \\$ = \\frac{10}{9} $"): _CHAIN + " (1/2 = 10/9)",
    ("test_string_extraction", "$1 + \\frac{1}{\\mathrm{e}}$"): "not equal: 1 + 1/e for 1 - 1/e",
    ("test_strict_variable_comparison", "$f(y)$"): "another variable; " + _PAIR.format("strict=True"),
    ("test_set_rel_assymetry", "$-2 \\\\le x \\\\le 7$"):
        "a relation for a set; " + _PAIR.format("allow_set_relation_comp=False"),
    ("test_number_extraction", "Soucis : 2,74 $ a.."): "a letter after the number ('2,74 $ a'), read as a product as "
                                                       "'72 a' is",
}


def load() -> tuple[dict[str, object], list[dict[str, object]]]:
    lines = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[0], lines[1:]


def raw_verdict(case: dict[str, object]) -> bool:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    if case["match_types"] is None:
        return bool(verify(parse(case["gold"]), parse(case["pred"])))
    configs = {"latex": LatexExtractionConfig(boxed_match_priority=0), "expr": ExprExtractionConfig()}
    targets = [configs[m] for m in case["match_types"]]
    gold, pred = parse(case["gold"], targets), parse(case["pred"], targets)
    return bool(verify(gold, pred, float_rounding=case["precision"], strict=case["strict"],
                       allow_set_relation_comp=case["allow_set_relation_comp"]))


def raw_default(case: dict[str, object]) -> bool:
    from math_verify import parse, verify

    return bool(verify(parse(case["gold"]), parse(case["pred"])))


def in_answer_block(pred: str) -> str:
    return f"<reasoning>\nWorking.\n</reasoning>\n<answer>\n{pred}\n</answer>"


def summary(name: str, cases: list[dict[str, object]], verdicts: list[bool]) -> str:
    pos = [v for c, v in zip(cases, verdicts, strict=True) if c["expected"] == 1]
    neg = [v for c, v in zip(cases, verdicts, strict=True) if c["expected"] == 0]
    return (f"{name:<44} recall {sum(pos)}/{len(pos)} ({100 * sum(pos) / len(pos):.1f}%)   "
            f"false credit {sum(neg)}/{len(neg)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--show_all", action="store_true", help="also list the positives raw math-verify refuses")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    header, cases = load()
    print(f"cases: {header['source']} @ {header['commit']} ({header['licence']})")
    print(f"{header['positives']} positives, {header['negatives']} negatives")
    golds = [c["gold"] for c in cases]
    block, timed_out = [], set()
    for i, case in enumerate(cases):  # one at a time, to tell a comparison that ran out of time from a refusal
        overruns = math_task.WORKER.overruns
        block += math_task.correctness_reward(completions=[in_answer_block(case["pred"])], answer=[case["gold"]])
        if math_task.WORKER.overruns != overruns:
            timed_out.add(i)
    whole = math_task.correctness_reward(completions=[c["pred"] for c in cases], answer=golds)
    raw = [raw_verdict(c) for c in cases]
    default = [raw_default(c) for c in cases]
    print(summary("correctness, prediction in the answer block", cases, [s == 1.0 for s in block]))
    print(summary("correctness, prediction as the whole completion", cases, [s == 1.0 for s in whole]))
    print(summary("raw math-verify (the suite's own settings)", cases, raw))
    print(summary("raw math-verify (defaults: verify(parse, parse))", cases, default))
    refused = [c for c, s in zip(cases, block, strict=True) if c["expected"] == 1 and s != 1.0]
    on_purpose = sum((c["test"], c["pred"][:60]) in REFUSED_ON_PURPOSE for c in refused)
    late = sum(1 for i, (c, s) in enumerate(zip(cases, block, strict=True)) if c["expected"] == 1 and s != 1.0
               and i in timed_out and (c["test"], c["pred"][:60]) not in REFUSED_ON_PURPOSE)
    print(f"refused positives: {len(refused)}, of which on purpose {on_purpose}, a comparison out of time {late}, "
          f"neither {len(refused) - on_purpose - late}; comparisons out of time in all: {len(timed_out)} "
          f"(VERIFY_TIMEOUT_S = {math_task.VERIFY_TIMEOUT_S} s each; a busy machine makes sympy slower)")
    print("\nrefused positives (prediction in the answer block):")
    for i, (case, s, r) in enumerate(zip(cases, block, raw, strict=True)):
        if case["expected"] == 1 and s != 1.0:
            key = (case["test"], case["pred"][:60])
            late = "a comparison ran out of time (not a verdict: rerun on a quieter machine)"
            why = REFUSED_ON_PURPOSE.get(key) or (late if i in timed_out else
                                                  "not credited, not on purpose (a reading the reward lacks)")
            print(f"  [{case['test']}] gold={case['gold']!r} pred={case['pred'][:120]!r} raw={int(r)}\n      {why}")
    print("\ncredited negatives:")
    for case, s, r, d in zip(cases, block, raw, default, strict=True):
        if case["expected"] == 0 and (s == 1.0 or r or d):
            print(f"  [{case['test']}] gold={case['gold']!r} pred={case['pred'][:120]!r} reward={s} raw={int(r)}"
                  f" raw_defaults={int(d)}")
    if args.show_all:
        print("\npositives raw math-verify (defaults) refuses:")
        for case, r in zip(cases, default, strict=True):
            if case["expected"] == 1 and not r:
                print(f"  [{case['test']}] gold={case['gold']!r} pred={case['pred'][:120]!r}")


if __name__ == "__main__":
    main()
