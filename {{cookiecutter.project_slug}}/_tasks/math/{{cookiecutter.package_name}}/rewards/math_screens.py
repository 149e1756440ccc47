r"""Math answers: the anti-gaming screens, in bounded time. An answer that hedges ("72 or 73"), gives a range, a
bound or an approximation, negates itself, joins several values, or offers several candidates is told apart from
a plain one; :func:`pathological` refuses what math-verify/sympy could spend unbounded time on.

Time: like the normalisation in :mod:`.math_answer`, every regex here runs on an extracted answer of at most
``MAX_RAW_ANSWER_CHARS`` characters and has no nested quantifier that can backtrack.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .math_answer import MATH_NAMES, MAX_EXPONENT_DIGITS, NUMBER, SPACED_THOUSANDS, VALUE_WORDS, as_number, is_unit

MAX_ANSWER_CHARS = 300
MAX_NESTING = 8

HEDGE_WORDS = re.compile(
    r"\b(?:or|and|nor|either|not|maybe|perhaps|possibly|vs|actually|instead|rather|wait|correction|sorry)\b"
    r"|\\(?:lor|vee|text\s*\{\s*or)",
    re.IGNORECASE,
)
RANGE_WORDS = re.compile(
    r"\b(?:to|then|between|from)\b|\\(?:to\b|rightarrow|Rightarrow|implies|longrightarrow|Longrightarrow"
    r"|mapsto|iff|pm\b|mp\b)|->|=>|→|⇒|⟹|±",
    re.IGNORECASE,
)
APPROX = re.compile(
    r"\\approx|\\simeq|\\sim\b|\\(?:lesssim|gtrsim|approxeq|thickapprox|thicksim|cong|propto|asymp)\b|≈|≃|"
    r"(?:^|\s)~\s*(?=[-+.\d])|\b(?:approximately|approx|about|around|roughly|nearly|almost|circa|estimated|near|"
    r"nearest|close to|round(?:ed|ing)?|or so|give or take|ish)\b",
    re.IGNORECASE,
)
BOUND = re.compile(
    r"\\(?!left)(?:l[el]|g[egt]|less|gtr|lt|prec|succ|n(?:e|less|gtr|leq|geq))|[<>≤≥≠≪≫≲≳≺≻]|!=|"
    r"(?<!\\)\b(?:at least|at most|less than|more than|greater than|fewer than|up to|over|under|below|above|beyond|"
    r"exceed\w*|within|upwards)\b",
    re.IGNORECASE,
)
NEGATION = re.compile(
    r"\b(?:no|not|never|none|neither|except|excluding|without|wrong|incorrect|false|isn'?t|wasn'?t|aren'?t|"
    r"cannot|can'?t|impossible|nope|oops|mistake)\b|\\(?:not|neg|lnot)(?![a-zA-Z])|¬",
    re.IGNORECASE,
)
# Marks that join or separate several values, or hide text: an answer holding one the gold does not is refused
SEPARATORS = re.compile(
    r"\||\\\\|:=|;|\.\.\.|…|\\(?:cr|bmod|pmod|mod|equiv|cup|cap|setminus|therefore|because|dots|ldots|cdots|"
    r"vdots|hspace|vspace|mid|vert|Vert|lvert|rvert|lVert|rVert|colon|hline|newline|par|phantom|hphantom|"
    r"vphantom|color|textcolor|underbrace|overbrace|stackrel|overset|underset|substack)(?![a-zA-Z])"
)
# An arithmetic expression (for a numeric gold): numbers, operators, brackets, fractions and roots only
ARITHMETIC = re.compile(r"(?:[\d\s.+\-*/^()\[\]{}!]|\\(?:[dt]?frac|sqrt|times|cdot|div)(?![a-zA-Z]))+")


def multiple_candidates(pred: str) -> bool:
    """True when the answer offers several values ("72 or 73", "73 \\to 72", one per line, "72 73")."""
    if len(NUMBER.findall(pred)) < 2 or SPACED_THOUSANDS.fullmatch(pred.strip()):
        return False  # one number, or one written with spaces between its thousands ("1 000")
    if HEDGE_WORDS.search(pred) or RANGE_WORDS.search(pred):
        return True
    if sum(1 for ln in pred.splitlines() if ln.strip()) > 1 and "\\begin{" not in pred:  # a matrix spans lines
        return True
    return bool(re.search(r"\d\s+[-+]?\d", pred))  # numbers side by side with no operator between


def free_letter(s: str) -> bool:
    r"""Whether ``s`` has a one-letter name (a variable such as ``x`` or ``i``) outside ``\commands``."""
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 1
            while i < n and s[i].isalpha():
                i += 1
            continue
        if c.isascii() and c.isalpha():
            j = i
            while j < n and s[j].isascii() and s[j].isalpha():
                j += 1
            if j - i == 1:
                return True
            i = j
            continue
        i += 1
    return False


def pathological(s: str) -> bool:
    """Inputs math-verify/sympy could spend unbounded time on: long, deeply nested, power towers, huge powers."""
    if len(s) > MAX_ANSWER_CHARS:
        return True
    depth = 0
    stack: list[bool] = []  # per open brace: is it an exponent group?
    in_exp = 0
    prev = ""
    for c in s:
        if c in "{([":
            is_exp = c == "{" and prev == "^"
            if is_exp and in_exp:
                return True  # nested exponent: a power tower
            stack.append(is_exp)
            in_exp += is_exp
            depth += 1
            if depth > MAX_NESTING:
                return True
        elif c in "})]":
            if stack:
                in_exp -= stack.pop()
            depth = max(0, depth - 1)
        if not c.isspace():
            prev = c
    big = str(MAX_EXPONENT_DIGITS + 1)
    compact = "".join(s.split())  # no whitespace runs left for the patterns below to backtrack over
    if re.search(r"\^[-+]?\d{" + big + ",}", compact):
        return True  # a huge exponent (only the first digit binds without braces, so 10^100000 is 10^1 00000)
    if re.search(r"\^\{[^{}]*\d{" + big + ",}", compact):
        return True
    if compact.count("^") > 2 and re.search(r"\^[^{}]*\^", compact):
        return True  # chained exponents a^b^c^d
    # large factorials, a factorial of a factorial or of a power ("(3!)!", "3!!", "(10^5)!"), binomials
    return bool(re.search(r"\d{4,}!|![)}\]]*!|\^[^!]*[)}\]]!|\\(?:binom|choose|Gamma)", compact))


_PROSE = re.compile(r"[A-Za-z\s.,:;'\"()-]*")
_SHORT_WORDS = frozenset("of in on at by is as so it we he us my an for".split())


def number_in_prose(pred: str) -> tuple[Fraction, str] | None:
    """The one number of a short sentence ("She earned 10"), when everything else is words and punctuation."""
    numbers = list(NUMBER.finditer(pred))
    if len(numbers) != 1 or HEDGE_WORDS.search(pred):
        return None
    m = numbers[0]
    before, after = pred[: m.start()], pred[m.end() :]
    if (before and before[-1].isalpha()) or (after and (after[0].isalpha() or after[0] == "^")):
        return None  # "x72", "72x", "72i": a product, not a number in a sentence
    words = [w.strip(".,;:'\"()").lower() for w in (before + " " + after).split()]
    near = [w.strip(".,;:'\"()").lower() for w in before.split()[-3:] + after.split()[:2]]
    if any(w in MATH_NAMES for w in words) or any(w in VALUE_WORDS for w in near):
        return None  # "72 pi", "sqrt 72", "minus 72", "72 million"
    if re.search(r"[-+]\s*\(?\s*$", before):
        return None  # "-(72)": a sign the number does not carry
    nxt = after.split()[0].strip(".,;:'\"()") if after.split() else ""
    if nxt and not is_unit(nxt) and nxt.lower() not in _SHORT_WORDS:
        return None  # "72 x", "72 xyz": a name after the number that is no unit word is a variable
    if not _PROSE.fullmatch(before + " " + after):
        return None
    value = as_number(m.group(0))
    return (value, m.group(0)) if value is not None else None
