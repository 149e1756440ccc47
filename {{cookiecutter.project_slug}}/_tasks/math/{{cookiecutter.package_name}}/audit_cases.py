r"""The math task's known-wrong completions of a row, for the verifier audit (``audit.py``).

Each is the row's gold completion with its final answer replaced: off by one, the sign flipped, the gold hedged
with another value ("72 or 73"), the gold boxed next to another number (``\boxed{72} 73``) and, for a gold that is
not a whole number, the value rounded (``0.75`` as ``0.8``). A gold that is not a number gets ``+1`` and a minus
sign around it instead. None of them is a right answer, so a correctness reward must score each below the gold.
Stdlib only.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .task import gold_completion, split_gold

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_FRAC = re.compile(r"(-?)\\[dt]?frac\{(-?\d+)\}\{(\d+)\}")
_SLASH = re.compile(r"(-?\d+)\s*/\s*(\d+)")
_BOXED = re.compile(r"\\boxed\{(.*)\}")


def bare(final: str) -> str:
    """The gold's final answer without a ``\\boxed{}`` around it or ``$`` signs."""
    text = final.strip().strip("$").strip()
    match = _BOXED.fullmatch(text)
    return match.group(1).strip() if match else text


def value(final: str) -> Fraction | None:
    """The gold's value when it is a plain number (``1,080``, ``11.25``, ``\\frac{3}{4}``, ``3/4``), else None."""
    text = bare(final).replace(",", "").replace("\\$", "").replace(" ", "")
    if _NUMBER.fullmatch(text):
        return Fraction(text)
    for pattern in (_FRAC, _SLASH):
        match = pattern.fullmatch(text)
        if match and int(match.groups()[-1]) != 0:
            groups = match.groups()
            sign = -1 if len(groups) == 3 and groups[0] else 1
            return sign * Fraction(int(groups[-2]), int(groups[-1]))
    return None


def show(number: Fraction) -> str:
    """A number as a model would write it: an integer, a finite decimal, else ``\\frac{p}{q}``."""
    if number.denominator == 1:
        return str(number.numerator)
    denominator = number.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    if denominator == 1:
        return format(float(number), "f").rstrip("0").rstrip(".") if len(str(float(number))) < 18 else str(number)
    sign = "-" if number < 0 else ""
    return sign + "\\frac{" + str(abs(number.numerator)) + "}{" + str(number.denominator) + "}"


def with_answer(row: dict, answer: str) -> str:
    """The row's gold completion with ``answer`` as its final answer."""
    gold = gold_completion(row)
    head, _, _ = gold.rpartition("<answer>")
    return f"{head}<answer>\n{answer}\n</answer>"


def wrong_completions(row: dict) -> list[tuple[str, str]]:
    """(variant, completion) pairs, each a wrong answer to ``row``."""
    final = bare(split_gold(row["answer"])[1])
    number = value(final)
    if number is None:  # LaTeX, sets, intervals, words: wrong by construction, whatever the value
        other = f"{final}+1"
        answers = [("off-by-one", other), ("sign flipped", f"-({final})"), ("hedged", f"{final} or {other}"),
                   ("boxed beside another", "\\boxed{" + final + "} " + other)]
        return [(name, with_answer(row, answer)) for name, answer in answers]
    other = show(number + 1)
    answers = [("off-by-one", other)]
    if number != 0:
        answers.append(("sign flipped", show(-number)))
    answers += [("hedged", f"{final} or {other}"), ("boxed beside another", "\\boxed{" + final + "} " + other)]
    if number.denominator != 1:
        for places in (2, 1, 0):
            rounded = Fraction(round(float(number), places)).limit_denominator(10**places)
            if rounded != number:
                answers.append(("rounded fraction", show(rounded)))
                break
    return [(name, with_answer(row, answer)) for name, answer in answers]
