r"""Math correctness: is the final answer of a completion equal to the row's gold ``answer``?

Prediction: the content of the last ``<answer>`` block, first judged as a whole (the rules below); without an answer
block, the last balanced ``\boxed{...}`` of the completion, judged in its context (:mod:`.math_box`: its sentence; a
box that anything outside it operates on, ``-\boxed{72}``, ``2 \times \boxed{72}``, ``\boxed{72} or 73``, scores
0.0); otherwise no answer (0.0). When an answer block fails as a whole, its final statement is found and narrowed to
the answer it states (:mod:`.math_final`): a sentence or a true chain of working that ends in one answer is credited
("Therefore $x \geq 5$ is the solution.", "48 + 24 = 72, so the answer is \boxed{72}", a whole solution ending in
"The final answer is $14{,}916$. I hope it is correct."), while another statement stating a different answer, a
statement after it taking it back ("Wait, actually 73."), hedging or negating words before it, or a chain of
working ending in the answer that does not hold ("2^6 = 72, so the answer is 72") score 0.0. A later "The final
answer is 10,455" is the final statement, and a box that ends a step of working (``0.05 \cdot 10200 = \boxed{255}``)
states no competing answer. Several boxes joined only by commas, "and", spacing or words such as ``\text{ for part
(a) and }`` are one list answer (``\boxed{1}, \boxed{2}``; a gold written that way too), named when every box has
its own name (``y_1 = \boxed{a}`` and ``y_2 = \boxed{b}``; one name twice is no list). "Rounded to the nearest
cent" is no approximation for a gold written to the cent. LaTeX with every backslash doubled (``\\frac``, as in
an escaped string) is read with them halved, on either side.

Gold (column ``answer``): a bare value (``"72"``), a GSM8K solution ending ``#### 1,234``, or LaTeX (its last box,
or its boxes as a list; a box left open: what follows it); a whole solution without a box: what follows its last
"The final answer is"; an equation chain ending in a variable's value (``1 = a = x = 0``): that value.

Scoring (``correctness`` in {0, 1}, or None):

1. Normalise both sides (:mod:`.math_answer`): LaTeX delimiters, ``\boxed``, ``\text{}``, ``\mathbf{}``/
   ``\boldsymbol{}``, ``\cfrac``, ``{a \over b}``, currency, thousands separators (``1,000``, ``5\,000``,
   ``1{,}000``, ``11,\!111``, ``1 000``), a decimal comma (``1000,99``, ``0,111``; never ``1,000`` or ``1,2``), Markdown
   bold, a lead-in ("The answer is"), a single ``x =`` or ``x \in``, a trailing period, ``%``, degrees
   (``\sin 60^\circ`` is read in degrees), and trailing unit words, never a word that changes the value
   (``million``, ``grand``, ``thirds``, number words; ``\text{ K}``) and never a single letter (``72x``, ``72 m``).
   A measurement unit that differs from the gold's (cents for dollars, km for cm, hours for minutes), or a set
   for a tuple, scores 0.0 (:mod:`.math_units`); a gold with a unit accepts the bare number.
2. A numeric gold is matched by a plain number (also ``7.2e1``, ``seventy-two``, ``72 thousand``, ``|72|``,
   ``\{72\}``, ``6.02 \times 10^{23}``, and ``72\%`` for 0.72 or 0.72 for ``72\%``), compared exactly (a decimal
   correctly rounded to >= ``MIN_ROUNDED_PLACES`` = 6 places also matches a gold with no finite decimal expansion:
   1/3 ~ 0.333333, never 0.333); a short sentence holding exactly one number; or an arithmetic expression or an
   equation chain of them, every side of which equals the gold ("48 + 24 = 72"; "2^6 = 72" scores 0.0).
3. Any other gold: identical normalised strings; a word answer compared as words; named values (``x=2, y=3``)
   need the names or the values in the gold's order (``4, 5`` for ``AB=4, CD=5``; math-verify's lists are sets, so
   the values go to it as tuples); an equation gold is compared as an equation (``y = -x/2 + 3/4`` is
   ``2x + 4y - 3 = 0``); otherwise math-verify decides (``parse`` + ``verify`` on ``\boxed{...}``-wrapped strings,
   so "72 or 73" parses as a set, never as "the last number"). An equation chain must hold on every side.

Anti-gaming (each scores 0.0 against a gold that does not itself have the feature): several candidates ("72 or
73", "73 \to 72", "between 70 and 74", "73, actually 72", one number per line, "72 73"); disagreeing boxes; more than
``MAX_BOXES`` boxes in a completion; a question mark; a negation ("not", "wrong", ``\not``); a separator or hidden
text (``|``, ``\\``, ``;``, "...", ``\equiv``, ``\phantom``, ``\color``...); a bound ("at least 72", "> 72"); an
approximation ("about 72", "≈ 72") unless the gold has no finite decimal expansion (then only the rounding rule);
a one-letter variable in the answer when the gold has none. Matrix rows stay apart (``\\`` is never read as the
spacing ``\ ``), so a permuted vector or a transposed matrix scores 0.0.

Time bound (any input, any thread): extraction and the statement scan are linear in the completion (cut at
``MAX_COMPLETION_CHARS``); a context, statement or extracted answer over ``MAX_RAW_ANSWER_CHARS`` scores 0.0 before
any other regex; normalisation and the screens run on that bounded text with regexes that cannot backtrack. All of
this stays under ``OWN_CODE_BOUND_S`` (0.2 s; ``benchmarks/bench_math_reward.py`` measures it). An answer that needs
math-verify is screened first (longer than ``MAX_ANSWER_CHARS``, nesting deeper than ``MAX_NESTING``, power towers,
huge exponents, large or nested factorials (``(3!)!``, ``3!!``, ``(10^5)!``) or binomials score 0.0 at once), then
compared in a persistent worker process (``math_verify_worker.py``) that is killed and restarted when a comparison
takes over ``VERIFY_TIMEOUT_S``. A completion may need a few comparisons (one per narrowing of its final statement),
each bounded by ``VERIFY_TIMEOUT_S``, plus one worker start on the first call and after a kill.

``None``: the gold is empty/unparseable, or the pair needs math-verify and it is not installed. Stdlib only here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..answer_format import extract_answer
from .common import column, completion_texts, register
from .math_answer import (
    MATH_NAMES,
    MAX_BOXES,
    MAX_RAW_ANSWER_CHARS,
    as_number,
    decimals,
    gold_text,
    last_boxed,
    normalize,
    several_boxes,
    strip_delims,
    top_level_boxes,
    undouble,
)
from .math_box import box_answer, box_list, extract_prediction
from .math_final import candidates, competing, final_statement, gold_answer, without_stated_rounding
from .math_screens import (
    APPROX,
    ARITHMETIC,
    BOUND,
    NEGATION,
    SEPARATORS,
    free_letter,
    multiple_candidates,
    number_in_prose,
    pathological,
)
from .math_units import ordered_values, other_quantity, renamed_argument
from .timed_worker import TimedWorker

VERIFY_TIMEOUT_S = 1.0
OWN_CODE_BOUND_S = 0.2  # extraction, normalisation and screens on any input (see the module docstring)
WORKER_START_TIMEOUT_S = 60.0
WORKER_SCRIPT = Path(__file__).with_name("math_verify_worker.py")
MIN_ROUNDED_PLACES = 6  # a decimal rounded to this many places matches a gold with no finite decimal expansion


def _terminates(x: Fraction) -> bool:
    d = x.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def numbers_equal(gold: Fraction, pred: Fraction, pred_text: str) -> bool:
    """Exact equality, or ``pred`` is ``gold`` correctly rounded to >= ``MIN_ROUNDED_PLACES`` places when ``gold``
    does not terminate (1/3 ~ 0.333333, never 0.333)."""
    if gold == pred:
        return True
    places = decimals(pred_text)
    if places >= MIN_ROUNDED_PLACES and not _terminates(gold):
        return abs(gold - pred) <= Fraction(1, 2 * 10**places)
    return False


# ----------------------------------------------------------------------------------------------- gold


@dataclass(frozen=True)
class Gold:
    text: str  # normalised gold answer
    number: Fraction | None
    raw: str  # the gold's final answer before normalisation


@lru_cache(maxsize=8192)
def parse_gold(gold: str) -> Gold | None:
    """The normalised gold of an ``answer`` cell, or None when it is empty."""
    gold = undouble(gold)
    raw = gold_answer(gold, gold_text(gold))
    boxes = top_level_boxes(gold) if "####" not in gold else []
    if len({gold[a:b].strip() for _, a, b in boxes}) > 1:  # "\boxed{1} and \boxed{2}": one answer, a list
        raw = box_list(gold, boxes, lenient=True) or raw
    text = normalize(raw)
    if not text:
        return None
    return Gold(text=text, number=as_number(text), raw=raw)


# --------------------------------------------------------------------------------------- math-verify worker


class MathVerifyWorker(TimedWorker):
    """The persistent math-verify process (``math_verify_worker.py``); killed and restarted on overrun."""

    def __init__(self) -> None:
        super().__init__(WORKER_SCRIPT, start_timeout=WORKER_START_TIMEOUT_S)
        self.overruns = 0  # comparisons that ran out of time: a completion that had one tries nothing more

    def verify(self, gold: str, pred: str | list[str], timeout: float = VERIFY_TIMEOUT_S) -> bool | None:
        """math-verify's verdict on the normalised pair (with a list: every one equals the gold), all within one
        ``timeout``; False on timeout; None if math-verify is unavailable."""
        reply = self.call({"g": gold, "p": pred}, timeout)
        if reply is None:
            self.overruns += self.available is not False
            return None if self.available is False else False
        return bool(reply.get("ok"))


WORKER = MathVerifyWorker()


# ------------------------------------------------------------------------------------------------ reward

def _hedged(raw: str, gold: Gold) -> bool:
    """A question, a negation, a separator, a bound or an approximation the gold does not make itself."""
    if "?" in raw and "?" not in gold.raw:
        return True
    for screen in (NEGATION, SEPARATORS):
        if screen.search(raw) and not screen.search(gold.raw):
            return True
    if BOUND.search(raw) and not BOUND.search(gold.raw):
        return True
    if APPROX.search(raw) and not APPROX.search(gold.raw):
        return gold.number is None or _terminates(gold.number)
    return False


def score(completion_text: str, gold_cell: object) -> float | None:
    """Correctness of one completion text against one gold cell: 1.0, 0.0, or None (not applicable)."""
    if not isinstance(gold_cell, (str, int, float)) or isinstance(gold_cell, bool):
        return None
    gold = parse_gold(str(gold_cell))
    if gold is None:
        return None
    if completion_text.count("\\boxed") + completion_text.count("\\fbox") > MAX_BOXES:
        return 0.0
    completion_text = _IN_BOX.sub(r"\1 = \\boxed", undouble(completion_text))  # "x \in \boxed{[0, 1)}" names the box
    answer = extract_answer(completion_text)
    raw = extract_prediction(completion_text)
    region = answer if answer is not None else completion_text
    overruns = WORKER.overruns
    if raw is None or len(raw) > MAX_RAW_ANSWER_CHARS or several_boxes(region, answer_block=answer is not None):
        whole: float | None = 0.0
    else:
        whole = _judge(raw, gold)
    if whole != 0.0 or answer is None or WORKER.overruns != overruns:
        return whole
    return _final(answer, gold, raw)


_IN_BOX = re.compile(r"(?<![A-Za-z\\])([A-Za-z])\s*\\in\s*\\boxed")


def _final(block: str, gold: Gold, judged: str | None) -> float | None:
    """The block's final statement, narrowed to its answer (:mod:`.math_final`), when the block as a whole fails."""
    found = final_statement(block)
    if found is None or competing(*found):
        return 0.0
    overruns = WORKER.overruns
    places = decimals(gold.text) if gold.number is not None else 0
    for answer, head in candidates(without_stated_rounding(found[0], places)):
        if answer.strip() == (judged or "").strip() or WORKER.overruns != overruns:
            continue  # judged already, or a comparison ran out of time: nothing more is tried
        clauses = [c for c in _CLAUSE.split(head) if c and "=" in c]
        if clauses and not _holds(clauses[-1], gold):
            continue  # "2^6 = 72, so the answer is 72": the working before the answer must hold
        verdict = _part(answer, gold)
        if verdict != 0.0:
            return verdict
    return 0.0


def _holds(working: str, gold: Gold) -> bool:
    """When the working before the answer is an equation chain ending in the answer ("2^6 = 72, so the answer is",
    "p(8) = \\frac{q(8)+8}{63} = [box]"), every side of it that has no variable equals the gold (sides with a
    variable or a function name, "p(8)", "f(-2) + f(-1)", are names or steps that cannot be checked)."""
    if "=" not in working:
        return True
    cleaned = _LAYOUT.sub(" ", working)
    sides = [side.strip(" ,.$") for side in _EQUALS.split(cleaned)]
    if sides[-1] and _judge(sides[-1], gold) != 1.0:
        return True  # "y = 8.8 - 2.8 = 6, so the pair is (7, 6)": working towards another quantity
    return all(_judge(side, gold) == 1.0 for side in sides if side and not _ALPHA.search(_COMMAND.sub("", side)))


_LAYOUT = re.compile(r"&|\\\\|\\(?:begin|end)\{[A-Za-z*]*\}|\\left|\\right|\\[\[\]()]")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_ALPHA = re.compile(r"[A-Za-z]")
_CLAUSE = re.compile(r"[,;:]\s|\b(?:so|thus|hence|therefore)\b", re.IGNORECASE)


def _part(part: str, gold: Gold) -> float | None:
    """A statement or a part of one judged as a whole answer; several boxes joined as a list are one answer."""
    boxes = top_level_boxes(part)
    if len({part[a:b].strip() for _, a, b in boxes}) > 1:
        raw = box_list(part, boxes)
    else:
        raw = box_answer(part, boxes) if boxes else part
    if raw is None or len(raw) > MAX_RAW_ANSWER_CHARS:
        return 0.0
    return _judge(raw, gold)


def _judge(raw: str, gold: Gold) -> float | None:
    """The extracted answer ``raw`` against the gold (the rules of the module docstring)."""
    if other_quantity(raw, gold.raw):
        return 0.0  # "5 km" for "5 cm", "72 cents" for "\$72", a set for a tuple
    raw = renamed_argument(raw, gold.text)  # "W(x) = 1" for "W(n) = 1": a definition's argument is a dummy
    equation = "=" in gold.text and "=" in raw and not (pathological(raw) or pathological(gold.text))
    if equation and not _hedged(raw, gold) and _verified(gold, [strip_delims(raw)]) == 1.0:
        return 1.0  # an equation of the same line in another form: 2x + 4y - 3 = 0 and y = -x/2 + 3/4
    if _LIST.search(gold.raw):  # "(5, 8) and (8, 5)" lists the answers of a gold that is a list
        raw = _AND.sub(", ", raw)
    single = _SINGLE.fullmatch(raw.strip(" $"))
    if single and gold.number is not None and as_number(normalize(single.group(1) or single.group(2))) is not None:
        raw = single.group(1) or single.group(2)  # |72| or \{72\}: the value itself, for a number gold
        if single.group(1) and raw.strip().startswith("-"):
            return 0.0  # |-72| is 72, but a minus sign inside bars is no plain answer
    if multiple_candidates(raw) and not multiple_candidates(gold.raw):
        return 0.0
    if _hedged(raw, gold):
        return 0.0
    pred = normalize(APPROX.sub(" ", raw))
    if not pred:
        return 0.0
    if pred == gold.text:
        return 1.0
    if gold.number is not None:
        verdict, value = _numeric(gold, pred), as_number(pred)
        if verdict == 0.0 and value is not None and ("%" in raw) != ("%" in gold.raw):  # 72% for 0.72, both ways
            return 1.0 if (value / 100 if "%" in raw else value * 100) == gold.number else 0.0
        return verdict
    if _WORDS.fullmatch(gold.text) and not MATH_NAMES & set(gold.text.lower().split()):  # "Monday", "yes"
        return 1.0 if pred.casefold() == gold.text.casefold() else 0.0
    named = len(_ASSIGNMENT.findall(gold.text))
    if named > 1 and len(_ASSIGNMENT.findall(pred)) != named:  # "x=2, y=3": the names, or the values in that order
        ordered = ordered_values(gold.text, pred) if not pathological(pred) else None
        return 0.0 if ordered is None else _verified(Gold(ordered[0], None, gold.raw), [ordered[1]])
    sides = [pred]
    if "=" in pred and "=" not in gold.text:  # an equation chain: every side must equal the gold
        sides = _sides(pred)
        if len(sides) > 1 and _LABEL.fullmatch(sides[0]):
            sides = sides[1:]  # "(x, y) = (1, 2)": names, not a value
    if not all(sides) or (any(free_letter(side) for side in sides) and not free_letter(gold.text)):
        return 0.0  # a variable ("72x", "72 y^2") cannot equal a constant gold
    if any(pathological(side) for side in sides) or pathological(gold.text):
        return 0.0
    return _verified(gold, sides)


_SINGLE = re.compile(r"\|([^|]*)\||\\\{([^{},]*)\\\}")
_LIST = re.compile(r"[)\]}]\s*,\s*[(\[{]|\\boxed\{[^{}]*\}[^{}]*\\boxed|,\s*\\quad")  # "(5, 8), (8, 5)"
_AND = re.compile(r"\s*(?:\\q?quad\s*)*(?:\\text\s*\{\s*and\s*\}|\band\b)\s*(?:\\q?quad\s*)*")
_EQUALS = re.compile(r"(?<![<>!\\])=")


def _sides(pred: str) -> list[str]:
    """The normalised sides of an equation chain ("48 + 24 = 72" -> ["48 + 24", "72"]; no ``=``: [pred])."""
    return [normalize(side) for side in _EQUALS.split(pred)]


_ASSIGNMENT = re.compile(r"[A-Za-z]\s*=(?!=)")
_WORDS = re.compile(r"[A-Za-z]{2,}(?: [A-Za-z]+)*")  # a word answer, compared as words
_LABEL = re.compile(r"[(\[]?\s*[A-Za-z](?:\s*,\s*[A-Za-z])*\s*[)\]]?|[A-Za-z]\s*\(\s*[A-Za-z]\s*\)")


def _numeric(gold: Gold, pred: str) -> float | None:
    """A numeric gold: the answer is a number, a short sentence holding one number, or an arithmetic expression (or
    an equation chain of them) every side of which equals the gold; anything else scores 0.0."""
    assert gold.number is not None
    value = as_number(pred)
    if value is not None:
        return 1.0 if numbers_equal(gold.number, value, pred) else 0.0
    prose = number_in_prose(pred)
    if prose is not None:
        return 1.0 if numbers_equal(gold.number, *prose) else 0.0
    rest = []
    for side in _sides(pred):
        if not side or not ARITHMETIC.fullmatch(side) or pathological(side):
            return 0.0
        value = as_number(side)
        if value is None:
            rest.append(side)
        elif not numbers_equal(gold.number, value, side):
            return 0.0  # "73 = 72"
    return _verified(gold, rest) if rest else 1.0


def _verified(gold: Gold, preds: list[str]) -> float | None:
    verdict = WORKER.verify(gold.text, preds if len(preds) > 1 else preds[0])
    if verdict is None:
        return None
    return 1.0 if verdict else 0.0


@register("correctness")
def correctness_reward(
    prompts: object = None, completions: object = None, answer: object = None, **kwargs: Any
) -> list[float | None]:
    """1.0 when the final answer equals the gold ``answer`` (see the module docstring), else 0.0; None if n/a."""
    texts = completion_texts(completions)
    golds = column(answer, len(texts))
    out: list[float | None] = []
    for text, gold in zip(texts, golds, strict=True):
        try:
            out.append(score(text, gold))
        except Exception:
            out.append(0.0)
    return out


__all__ = [
    "WORKER",
    "correctness_reward",
    "extract_prediction",
    "last_boxed",
    "normalize",
    "parse_gold",
    "score",
]
