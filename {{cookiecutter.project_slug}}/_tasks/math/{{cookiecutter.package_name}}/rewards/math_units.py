r"""Math answers: measurement units, and named values given in order.

:func:`unit_of` names the measurement unit an answer gives (``5 cm``, ``5\\text{ km}``, ``\\$72``, ``72 cents``),
so that an answer in another unit than the gold's scores 0.0 (count nouns such as "72 clips" name none). It runs on
an answer of at most ``MAX_RAW_ANSWER_CHARS`` characters with regexes that cannot backtrack (numbers written in
words: ``math_words.py``). :func:`ordered_values` reads a gold of several named values against an answer that gives
them unnamed, in the gold's order; :func:`renamed_argument` renames a defined function's dummy argument to the gold's.
"""

from __future__ import annotations

import re

from .math_answer import _ALPHA, _TEXT_CMD, strip_delims, strip_unit_tail

_NAMED = re.compile(r"\s*[A-Za-z][A-Za-z_{}0-9]*\s*=(?!=)")  # "AB = ", "y_{1}="


def top_level_split(s: str, sep: str) -> list[str]:
    """``s`` split at each ``sep`` outside brackets and braces (one pass)."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(s):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif c == sep and depth == 0:
            parts.append(s[start:i])
            start = i + 1
    return [*parts, s[start:]]


def ordered_values(gold: str, pred: str) -> tuple[str, str] | None:
    """A gold of several named values ("AB=4, CD=5"; solutions apart by ";": "p=5,q=2;p=7,q=2") and an answer
    giving the values without names ("4, 5"; "(5,2),(7,2)") as tuples in the gold's order, for math-verify (whose
    tuples are ordered): ``("(4, 5)", "(4, 5)")``; None when they are not of that form or their counts differ."""
    solutions = [top_level_split(part, ",") for part in gold.split(";")]
    if not all(_NAMED.match(v) for values in solutions for v in values) or len(solutions[0]) < 2:
        return None
    tuples = ["(" + ", ".join(_NAMED.sub("", v, count=1).strip() for v in values) + ")" for values in solutions]
    items = [v.strip() for v in top_level_split(pred.strip(), ",")]
    if len(solutions) == 1 and len(items) == 1 and items[0].startswith("(") and items[0].endswith(")"):
        items = [v.strip() for v in top_level_split(items[0][1:-1], ",")]  # "(4, 5)"
    if any("=" in v for v in items):
        return None
    if len(solutions) == 1:
        return (tuples[0], "(" + ", ".join(items) + ")") if len(items) == len(solutions[0]) else None
    return (", ".join(tuples), ", ".join(items)) if len(items) == len(solutions) else None


# Measurement units by canonical name: an answer naming one that differs from the gold's is another quantity
_MEASURES = {
    **dict.fromkeys("mm millimeter millimetre millimeters millimetres".split(), "mm"),
    **dict.fromkeys("cm centimeter centimetre centimeters centimetres".split(), "cm"),
    **dict.fromkeys("m meter metre meters metres".split(), "m"),
    **dict.fromkeys("km kilometer kilometre kilometers kilometres".split(), "km"),
    **dict.fromkeys("in inch inches".split(), "inch"),
    **dict.fromkeys("ft foot feet".split(), "foot"),
    **dict.fromkeys("yd yard yards".split(), "yard"),
    **dict.fromkeys("mi mile miles".split(), "mile"),
    **dict.fromkeys("ms millisecond milliseconds".split(), "ms"),
    **dict.fromkeys("s sec secs second seconds".split(), "second"),
    **dict.fromkeys("min mins minute minutes".split(), "minute"),
    **dict.fromkeys("h hr hrs hour hours".split(), "hour"),
    **dict.fromkeys("day days".split(), "day"),
    **dict.fromkeys("wk wks week weeks".split(), "week"),
    **dict.fromkeys("month months".split(), "month"),
    **dict.fromkeys("yr yrs year years".split(), "year"),
    **dict.fromkeys("mg milligram milligrams".split(), "mg"),
    **dict.fromkeys("g gram grams".split(), "g"),
    **dict.fromkeys("kg kilogram kilograms kilo kilos".split(), "kg"),
    **dict.fromkeys("lb lbs pound pounds".split(), "pound"),
    **dict.fromkeys("oz ounce ounces".split(), "ounce"),
    **dict.fromkeys("ml mL milliliter millilitre milliliters millilitres".split(), "ml"),
    **dict.fromkeys("l L liter litre liters litres".split(), "liter"),
    **dict.fromkeys("gal gallon gallons".split(), "gallon"),
    **dict.fromkeys("dollar dollars usd $ \\$".split(), "dollar"),
    **dict.fromkeys("cent cents ¢".split(), "cent"),
    **dict.fromkeys("euro euros eur € \\euro".split(), "euro"),
}
_MONEY = re.compile(r"\\\$|\$|€|¢|\\euro")


def unit_of(s: str) -> str | None:
    r"""The measurement unit an answer names (canonical: "cm", "hour", "dollar"), or None: a word after the number
    (``5 cm``, ``5\text{ cm}``, ``5 \mbox{cm}^2``) or a currency sign (``\$5``); a count noun ("72 clips") is none."""
    s = strip_delims(_TEXT_CMD.sub(lambda m: " " + m.group(1) + " ", s.replace("²", "").replace("³", "")))
    money = _MONEY.search(s)
    if money and (money.group(0) != "$" or s.count("$") == 1):  # "$72" is money, "$72$" is math
        return _MEASURES.get(money.group(0))
    s = s.strip().rstrip(".").strip()
    body = strip_unit_tail(s)
    words = [w for w in _ALPHA.findall(s[len(body) :]) if w.lower() not in ("square", "cubic", "sq", "cu")]
    if not words and body == s and s[-1:].isalpha():  # glued "5cm" / "72\text{ K}" kept whole by strip_unit_tail
        glued = re.search(r"\d\s*([A-Za-z]+)$", s)
        words = [glued.group(1)] if glued else []
    units = {_MEASURES.get(w, _MEASURES.get(w.lower())) for w in words}
    return units.pop() if len(units) == 1 and None not in units else None


def _kind(s: str) -> str | None:
    """"set" for ``\\{...\\}``, "tuple" for ``(a, b)``, else None (a bare list may be either)."""
    s = strip_delims(s).replace("\\left", "").replace("\\right", "").strip()
    if s.startswith("\\{") and s.endswith("\\}"):
        return "set"
    return "tuple" if s.startswith("(") and s.endswith(")") and "," in s else None


def other_quantity(answer: str, gold: str) -> bool:
    """Whether ``answer`` names another measurement unit than ``gold`` ("5 km" for "5 cm", "72 cents" for
    "\\$72", "3 hours" for "3 minutes"), or a set where the gold has a tuple or the reverse."""
    unit, gold_unit = unit_of(answer), unit_of(gold)
    if unit is not None and gold_unit is not None and unit != gold_unit:
        return True
    kind, gold_kind = _kind(answer), _kind(gold)
    return kind is not None and gold_kind is not None and kind != gold_kind


_DEFINED = re.compile(r"(?<![A-Za-z\\])([A-Za-z])\(\s*([A-Za-z])\s*\)\s*=")  # "W(n) =": a function defined
_GLUED = re.compile(r"(?<=[\d)}])(or|and)(?=[A-Za-z\\(])")  # "W(x)=1orW(x)=-1"


def renamed_argument(answer: str, gold: str) -> str:
    """``answer`` with the argument of the functions it defines renamed to the gold's ("W(x)=1 or W(x)=-1" for
    "W(n) = 1 and W(n) = -1": the argument of a definition is a dummy), and a word glued into its math spaced out
    ("1orW" -> "1 or W"); only when both define the same one-letter function of one one-letter argument each and
    the gold's argument is no other letter of the answer. Else ``answer`` (spaced out)."""
    answer = _GLUED.sub(r" \1 ", answer)
    mine = {(m.group(1), m.group(2)) for m in _DEFINED.finditer(answer)}
    theirs = {(m.group(1), m.group(2)) for m in _DEFINED.finditer(gold)}
    if len(mine) != 1 or len(theirs) != 1 or mine == theirs or next(iter(mine))[0] != next(iter(theirs))[0]:
        return answer
    (_, old), (_, new) = next(iter(mine)), next(iter(theirs))
    if re.search(rf"(?<![A-Za-z\\]){new}(?![A-Za-z])", answer):
        return answer
    return re.sub(rf"(?<![A-Za-z\\]){old}(?![A-Za-z])", new, answer)

