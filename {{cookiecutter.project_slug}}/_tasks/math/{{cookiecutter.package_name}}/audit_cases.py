r"""The math task's hack catalogue: families of wrong completions derived from a row, for the verifier audit
(``audit.py``) and the in-training check.

Each family is the row's gold completion with one thing wrong, built to expose one way a home-made correctness
reward is lax (the reward it exposes in brackets):

* ``off by one``, ``sign flipped``: a plainly wrong value (a reward that credits any answer);
* ``right value in the reasoning``, ``right value boxed in the reasoning``, ``right value after the answer
  block``: a wrong answer block, the gold's value elsewhere in the text (the last number of the text, the gold
  found anywhere, the last ``\boxed{}`` of the text);
* ``hedged``, ``wrong value then right``, ``one of several candidates``, ``boxed beside another``: the gold beside
  wrong values in the answer block ("72 or 73", "73 or 72", "73, 72, 74": the last number of the block, the gold
  among a listed set, the first box);
* ``close value``, ``same integer part``, ``truncated``, ``rounded fraction``: a nearby value (within 0.5 of the
  gold, the integer part only, a prefix of the gold's digits, a rounded fraction);
* ``scaled by a unit word``: the gold followed by ``thousand`` (a reward that drops the words after a number).

A gold that is not a number (LaTeX, sets, intervals) gets ``<gold>+1`` as its wrong value and the families that
need no arithmetic. None of them is a right answer, so a correctness reward must score each below the gold.
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


def with_answer(row: dict, answer: str, note: str = "", after: str = "") -> str:
    """The row's gold completion with ``answer`` as its final answer, ``note`` added at the end of its reasoning and
    ``after`` written after its answer block."""
    head, _, _ = gold_completion(row).rpartition("<answer>")
    if note:
        body, tag, rest = head.rpartition("</reasoning>")
        head = f"{body.rstrip()}\n{note}\n{tag}{rest}" if tag else f"{head}{note}\n"
    return f"{head}<answer>\n{answer}\n</answer>" + (f"\n{after}" if after else "")


def _common(row: dict, final: str, other: str, third: str) -> list[tuple[str, str]]:
    """The families every gold gets: the gold elsewhere than the answer, or beside a wrong value in it."""
    return [
        ("right value in the reasoning", with_answer(row, other, note=f"So the answer is {final}.")),
        ("right value boxed in the reasoning", with_answer(row, other, note="\\boxed{" + final + "}")),
        ("right value after the answer block", with_answer(row, other, after=f"The answer is {final}.")),
        ("hedged", with_answer(row, f"{final} or {other}")),
        ("wrong value then right", with_answer(row, f"{other} or {final}")),
        ("one of several candidates", with_answer(row, f"{other}, {final}, {third}")),
        ("boxed beside another", with_answer(row, "\\boxed{" + final + "} " + other)),
    ]


def _near(number: Fraction) -> list[tuple[str, Fraction]]:
    """Values near a numeric gold, each different from it."""
    near = [("close value", number + Fraction(3, 10))]
    whole = Fraction(int(number))  # the integer part (towards zero)
    near.append(("same integer part", whole if whole != number else number + (Fraction(9, 10) if number >= 0
                                                                                  else Fraction(-9, 10))))
    digits = show(number)
    if len(digits.lstrip("-").replace(".", "")) >= 2 and "frac" not in digits:
        cut = digits[:-1].rstrip(".")
        if cut not in ("", "-") and Fraction(cut) != number:
            near.append(("truncated", Fraction(cut)))
    if number.denominator != 1:
        for places in (2, 1, 0):
            rounded = Fraction(round(float(number), places)).limit_denominator(10**places)
            if rounded != number:
                near.append(("rounded fraction", rounded))
                break
    return near


def wrong_completions(row: dict) -> list[tuple[str, str]]:
    """(family, completion) pairs, each a wrong answer to ``row``."""
    final = bare(split_gold(row["answer"])[1])
    number = value(final)
    if number is None:  # LaTeX, sets, intervals, words: wrong by construction, whatever the value
        other = f"{final}+1"
        return [("off by one", with_answer(row, other)), ("sign flipped", with_answer(row, f"-({final})")),
                *_common(row, final, other, f"{final}+2")]
    other = show(number + 1)
    out = [("off by one", with_answer(row, other))]
    if number != 0:
        out.append(("sign flipped", with_answer(row, show(-number))))
    out += _common(row, final, other, show(number + 2))
    out += [(name, with_answer(row, show(near))) for name, near in _near(number)]
    out.append(("scaled by a unit word", with_answer(row, f"{final} thousand")))
    return out


# ------------------------------------------------------------------ the in-training check (training/recheck.py)

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_DOLLARS = re.compile(r"\\?\$")


def _plain(text: str) -> str:
    """The few spellings math-verify does not read itself: thousands separators and dollar signs."""
    return _DOLLARS.sub("", _THOUSANDS.sub("", text)).strip()


_WORD = re.compile(r"[A-Za-z]{2,}[.,:;!]?")


def _in_words(answer: str, number: Fraction, value_words: frozenset) -> bool | None:
    """For a numeric gold: an answer that is one number among plain words ("72 clips", "She earned $10.") is right
    when that number is the gold; None when the answer is anything else (math-verify decides)."""
    text = _plain(answer).rstrip(".!")
    numbers = _NUMBER.findall(text)
    if len(numbers) != 1:
        return None
    words = text.replace(numbers[0], " ", 1).split()
    if not all(_WORD.fullmatch(w) and w.rstrip(".,:;!").lower() not in value_words for w in words):
        return None
    return Fraction(numbers[0]) == number


def recheck(texts: list[str], rows: list[dict], reward: object = None) -> list[bool | None]:
    """An independent verdict on completions a reward gave full credit: the answer block (else the last
    ``\\boxed{}``; a box beside another number is no answer) through math-verify itself, after the hedge screens
    (several candidates, a question, a negation, a separator, a bound, an approximation the gold does not make); for
    a numeric gold, one number among plain words (no value word such as "thousand") is that number. None where
    math-verify is unavailable."""
    from .answer_format import extract_answer
    from .rewards.math_answer import VALUE_WORDS, last_boxed
    from .rewards.math_screens import APPROX, BOUND, NEGATION, SEPARATORS, multiple_candidates
    from .rewards.task import WORKER

    out: list[bool | None] = []
    for text, row in zip(texts, rows, strict=True):
        gold = bare(split_gold(str(row.get("answer", "")))[1])
        answer = extract_answer(text)
        answer = (answer if answer is not None else last_boxed(text) or "").strip()
        if "\\boxed" in answer:  # a box is the answer only with no other number beside it
            inner = last_boxed(answer) or ""
            answer = inner if not re.search(r"\d", answer.replace("\\boxed{" + inner + "}", "", 1)) else ""
        hedged = ("?" in answer and "?" not in gold) or (multiple_candidates(answer) and not multiple_candidates(gold))
        hedged = hedged or any(s.search(answer) and not s.search(gold) for s in (APPROX, BOUND, NEGATION, SEPARATORS))
        if hedged or not answer or len(answer) > 300:
            out.append(False)
            continue
        number = value(gold)
        words = _in_words(answer, number, VALUE_WORDS) if number is not None else None
        out.append(words if words is not None else WORKER.verify(_plain(gold), _plain(answer)))
    return out
