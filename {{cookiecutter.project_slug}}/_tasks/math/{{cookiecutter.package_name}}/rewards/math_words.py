"""Math answers: numbers written in words. :func:`number_words` reads "seventy-two", "two hundred and five" and "72
thousand" (at most twelve words, no regex). Stdlib only; imports nothing of the project."""

from __future__ import annotations

from fractions import Fraction

_SMALL = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if i > 1}
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}


def number_words(s: str) -> Fraction | None:
    """A number written in English words ("seventy-two", "two hundred and five") or digits and a scale ("72
    thousand"), or None."""
    words = s.lower().replace("-", " ").replace(",", " ").split()
    if not words or len(words) > 12:
        return None
    total = current = 0
    for i, word in enumerate(words):
        if word in _SMALL or word in _TENS:
            current += _SMALL.get(word, _TENS.get(word, 0))
        elif word.isdigit() and i == 0 and len(words) == 2 and words[1] in _SCALES:
            current = int(word)
        elif word == "hundred" and current:
            current *= 100
        elif word in _SCALES and current:
            total, current = total + current * _SCALES[word], 0
        elif word != "and" or i == 0:
            return None
    return Fraction(total + current)
