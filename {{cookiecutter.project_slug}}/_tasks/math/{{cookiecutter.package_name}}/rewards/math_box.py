r"""The final answer of a completion, and when a ``\boxed{}`` is that answer: only when it is the whole of its context.

Context: the answer block (the last ``<answer>`` block) as a whole. Without one, the last box's sentence: from the
last sentence end (``.``, ``!`` or ``?`` before a space) or the end of the previous box, to the end of the box's
line, joined over line breaks that do not end the sentence (the line before ends in a word, an operator or a comma;
the line after starts with neither a capital nor markup: "It is either 73 or\n\boxed{72}" and "\boxed{72}\nor 73"
are one sentence; working such as "48 + 24 = 72" on the line before, a blank line or a new capitalised sentence end
it), widened to a ``$$...$$`` or ``\[...\]`` display around the box that opens or closes on another line. A context
over ``MAX_RAW_ANSWER_CHARS`` scores 0.0.

1. No box may be operated on from outside (else 0.0). What precedes it (spaces and spacing commands skipped) is the
   start, ``$``, ``\[``, ``\(``, ``**``, ``=``, ``&``, ``:``, ``,``, ``#``, a ``.`` not after a digit, a tag
   (``<answer>``), a ``\text{...}`` ending in a word, another box, or a word of 2+ letters that is no value word
   (``twice``) or math name (``pi``). What follows it is the end, a glued unit (``\boxed{5}cm``), or (spaces, ``~``
   and tags skipped) such a word, ``$``, ``\]``, ``\)``, ``**``, ``=``, ``&``, ``:``, ``%``, ``\%``, ``°``, ``^\circ``,
   ``.``/``,`` not before a digit, a ``\text{...}`` starting with such a word or a unit letter (``\text{ m}``), or
   another box. Anything else (a sign, digit, operator, bracket, brace, ``^``, ``_``, ``'``, ``!``, ``?``, ``\\``, a
   one-letter name, any other command: ``\sqrt``, ``\neq``, ``\pm``, ``\cdot``...) operates on it.
2. When the context less its boxes is only framing -- words (none that hedges, negates, bounds, approximates or
   changes a value: "or", "not", "about", "at least", "twice", "pi"), spaces, ``, . : ( ) # % &``, tags, ``**``,
   math delimiters, spacing commands, ``\text{words}``, degrees, and one ``=`` before the box ("x =") -- the answer
   is the content of the last box ("The answer is $\boxed{72}$ dollars.").
3. Else, when the box is in a math span (``$...$``, ``$$...$$``, ``\[...\]``, ``\(...\)``) and the context less that
   span is framing, the span is judged by rule 2, and if it fails there as a whole (its lines joined); else the whole
   context is the answer. "As a whole" means with its boxes unwrapped (``\boxed{72}`` -> `` 72 ``) and judged like
   any unboxed answer: ``48 + 24 = \boxed{72}`` is the equation chain "48 + 24 = 72", ``\boxed{72} or 73`` is "72 or
   73".

Time: finding the context is ``str.find``/``rfind``/``count`` and one single-character regex over the completion;
every other scan runs on the bounded context, by hand loops or regexes whose tokens each start differently, so
nothing can backtrack.
"""

from __future__ import annotations

import re

from ..answer_format import MAX_COMPLETION_CHARS, extract_answer
from .math_answer import (
    MATH_NAMES,
    MAX_RAW_ANSWER_CHARS,
    SINGLE_LETTER_UNITS,
    VALUE_WORDS,
    is_unit,
    top_level_boxes,
)
from .math_screens import APPROX, BOUND, HEDGE_WORDS, NEGATION

Span = tuple[int, int, int]  # (command start, content start, closing brace)

_TEXT_OPEN = r"\\(?:text|textbf|textnormal|mathrm|mbox)\s*\{"
_TEXT_START = re.compile(_TEXT_OPEN + r"([^{}]*)\}")
_TEXT_END = re.compile(_TEXT_OPEN + r"([^{}]*)\}$")
_GAP = re.compile(r"(?:\s|~|</?[A-Za-z]+>|\\[,;:! ]|\\q?quad(?![A-Za-z])|\\displaystyle(?![A-Za-z]))*")
_GAP_COMMANDS = ("\\quad", "\\qquad", "\\displaystyle")
_FRAMING = re.compile(
    r"(?:[\sA-Za-z',.:()#=%°&]|</?[A-Za-z]+>|\*\*|\$|\\[,;:! \[\]()%]|\\q?quad(?![A-Za-z])|\\displaystyle(?![A-Za-z])"
    r"|\^\\circ|\^\{\\circ\}|" + _TEXT_OPEN + r"[A-Za-z\s',.:]*\})*"
)
_TAG = re.compile(r"</?[A-Za-z]+>")  # <answer>, </reasoning>: framing, not a bound
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]+")
_SENTENCE_END = re.compile(r"[.!?](?=\s)")
_DOLLAR = re.compile(r"\$\$|(?<!\\)\$")


def extract_prediction(text: str) -> str | None:
    """The final answer of a completion (see the module docstring and ``task``), or None (scores 0.0)."""
    answer = extract_answer(text)
    if answer is not None:
        boxes = top_level_boxes(answer)
        return box_answer(answer, boxes) if boxes else answer
    text = text[:MAX_COMPLETION_CHARS]
    boxes = top_level_boxes(text)
    if not boxes:
        return None
    pos, a, b = boxes[-1]
    start, stop = _sentence(text, pos, b, boxes[-2][2] + 1 if len(boxes) > 1 else 0)
    sentence = text[start:stop].replace("\n", " ")  # one sentence over several lines; offsets unchanged
    return box_answer(sentence, [(pos - start, a - start, b - start)])


def _sentence(text: str, pos: int, end: int, after: int) -> tuple[int, int]:
    """The context of the box ``text[pos:end + 1]`` without an answer block: its sentence, from the last sentence end
    (or ``after``, the end of the previous box) to the end of its line, over line breaks that do not end a sentence
    (a line ending in a word or an operator joins the next, "It is either 73 or\\n\\boxed{72}"; a line starting
    with neither a capital nor markup joins the one before, "\\boxed{72}\\nor 73"), widened to a display
    (``$$``/``\\[``) around the box that opens or closes on another line (up to the end of the closer's line)."""
    start = max(text.rfind("\n", 0, pos) + 1, after)
    while start > after and pos - start < MAX_RAW_ANSWER_CHARS:
        previous = max(text.rfind("\n", 0, start - 1) + 1, after)
        if not _runs_on(text[previous : start - 1]):
            break
        start = previous
    for m in _SENTENCE_END.finditer(text, start, pos):
        start = m.end()
    stop = _line_end(text, end)
    while stop < len(text) and stop - end < MAX_RAW_ANSWER_CHARS and _continues(text, stop + 1):
        sentence = _SENTENCE_END.search(text, stop + 1, _line_end(text, stop + 1))
        stop = sentence.start() if sentence else _line_end(text, stop + 1)
        if sentence:
            break
    for opener, closer in (("$$", "$$"), ("\\[", "\\]")):
        i, j = text.rfind(opener, after, pos), text.find(closer, end)
        if i >= 0 and j >= 0 and (text.count("$$", 0, pos) % 2 if opener == "$$" else text.find(closer, i, pos) < 0):
            start, stop = min(start, i), max(stop, _line_end(text, j))
    return start, stop


def _runs_on(line: str) -> bool:
    """Whether ``line`` runs on into the next: it ends in a letter, an operator or a comma, not in a digit, a closing
    bracket, a delimiter, a sentence end or a LaTeX row break ``\\\\`` (working such as "48 + 24 = 72" stands on its
    own; a blank line ends)."""
    tail = line.rstrip()
    return bool(tail) and not tail[-1].isdigit() and tail[-1] not in ".!?:;$})]>*" and not tail.endswith("\\\\")


def _continues(text: str, i: int) -> bool:
    """Whether the line starting at ``text[i]`` continues the sentence before it: not blank, and starting with
    neither a capital nor markup ("or 73" and "73" continue; "This checks out." does not)."""
    line = text[i : _line_end(text, i)].lstrip()
    return bool(line) and not (line[0].isupper() or line[0] in "#*<|\\$")


def _line_end(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def box_answer(context: str, boxes: list[Span]) -> str | None:
    """The answer of a ``context`` holding ``boxes`` (top level, in order; rules 1-3 of the module docstring)."""
    if len(context) > MAX_RAW_ANSWER_CHARS:
        return None
    starts = {pos for pos, _, _ in boxes}
    ends = {b for _, _, b in boxes}
    if not all(_free_before(context, pos, ends) and _free_after(context, b + 1, starts) for pos, _, b in boxes):
        return None
    pos, a, b = boxes[-1]
    if _framing(*_outside(context, boxes, 0, len(context))):
        return context[a:b]
    span = _math_span(context, pos, b + 1)
    if span is not None and _framing(context[: span[0]], context[span[1] :]):
        inner = [box for box in boxes if span[0] <= box[0] and box[2] < span[1]]
        if _framing(*_outside(context, inner, *span)):
            return context[a:b]
        return _unwrap(context, inner, *span).replace("\n", " ")  # a display's lines are one formula
    return _unwrap(context, boxes, 0, len(context))


def _outside(context: str, boxes: list[Span], start: int, end: int) -> tuple[str, str]:
    """``context[start:end]`` without its boxes: what precedes the last box (other boxes replaced by a space) and
    what follows it."""
    parts, at = [], start
    for pos, _, b in boxes:
        parts.append(context[at:pos])
        at = b + 1
    return " ".join(parts), context[at:end]


def _unwrap(context: str, boxes: list[Span], start: int, end: int) -> str:
    """``context[start:end]`` with each box replaced by its spaced content."""
    parts, at = [], start
    for pos, a, b in boxes:
        parts += [context[at:pos], " ", context[a:b], " "]
        at = b + 1
    return "".join(parts) + context[at:end]


def _framing(head: str, tail: str) -> bool:
    """Rule 2: ``head`` and ``tail``, what precedes and follows the answer box, frame it without changing it."""
    if not _FRAMING.fullmatch(head + " " + tail) or "=" in tail or head.count("=") > 1:
        return False
    rest = _TAG.sub(" ", head + " " + tail)
    if any(w.lower() in VALUE_WORDS or w.lower() in MATH_NAMES for w in _WORD.findall(rest)):
        return False
    return not any(screen.search(rest) for screen in (HEDGE_WORDS, NEGATION, APPROX, BOUND))


def _math_span(context: str, start: int, end: int) -> tuple[int, int] | None:
    """The ``$...$``/``$$...$$``/``\\[...\\]``/``\\(...\\)`` span (delimiters included) around ``[start, end)``."""
    dollars = [m.span() for m in _DOLLAR.finditer(context)]
    before = [d for d in dollars if d[1] <= start]
    after = [d for d in dollars if d[0] >= end]
    if len(before) % 2 and after:
        return before[-1][0], after[0][1]
    for opener, closer in (("\\[", "\\]"), ("\\(", "\\)")):
        i = context.rfind(opener, 0, start)
        j = context.find(closer, end)
        if i >= 0 and j >= 0 and context.find(closer, i, start) < 0:
            return i, j + 2
    return None


def _word_before(context: str, i: int) -> str | None:
    """The word of ASCII letters ending at ``i``, or None when it is a ``\\command``."""
    j = i
    while j > 0 and context[j - 1].isascii() and context[j - 1].isalpha():
        j -= 1
    return None if j > 0 and context[j - 1] == "\\" else context[j:i]


def _plain_word(word: str | None) -> bool:
    """A word that may stand next to a box: 2+ letters, no value word ("twice") or math name ("pi")."""
    if not word or len(word) < 2 or not (word.isascii() and word.isalpha()):
        return False
    return word.lower() not in VALUE_WORDS and word.lower() not in MATH_NAMES


def _free_before(context: str, i: int, box_ends: set[int]) -> bool:
    """Whether what precedes ``context[i:]`` (a box) leaves it alone (rule 1)."""
    while i > 0:
        if context[i - 1].isspace():
            i -= 1
        elif i > 1 and context[i - 2] == "\\" and context[i - 1] in ",;:! ":
            i -= 2
        elif context.endswith(_GAP_COMMANDS, 0, i):
            i = context.rfind("\\", 0, i)
        else:
            break
    if i == 0:
        return True
    c, prev = context[i - 1], context[i - 2] if i > 1 else ""
    if c in "$=&:,#":
        return True
    if c == "*":
        return prev == "*"
    if c == ".":
        return not prev.isdigit()
    if c in "[(":
        return prev == "\\"
    if c == ">":
        return _TAG.fullmatch(context, max(0, context.rfind("<", 0, i)), i) is not None
    if c == "}":
        text = _TEXT_END.search(context, 0, i)
        return i - 1 in box_ends or (text is not None and _free_before(text.group(1), len(text.group(1)), set()))
    return c.isascii() and c.isalpha() and _plain_word(_word_before(context, i))


def _free_after(context: str, k: int, box_starts: set[int]) -> bool:
    """Whether what follows a box ending before ``context[k]`` leaves it alone (rule 1)."""
    n = len(context)
    if k < n and context[k].isascii() and context[k].isalpha():  # glued letters: only a unit ("5cm")
        j = k
        while j < n and context[j].isascii() and context[j].isalpha():
            j += 1
        return is_unit(context[k:j])
    j = _GAP.match(context, k).end()
    if j == n:
        return True
    c, nxt = context[j], context[j + 1 : j + 2]
    if c.isascii() and c.isalpha():
        m = _WORD.match(context, j)
        return m is not None and _plain_word(m.group(0))
    if c in "$=&:%°":
        return True
    if c == "*":
        return nxt == "*"
    if c in ".,":
        return not nxt.isdigit()
    if c == "^":
        return context.startswith(("^\\circ", "^{\\circ}"), j)
    if c != "\\":
        return False
    if j in box_starts or context.startswith(("\\]", "\\)", "\\%"), j):
        return True
    text = _TEXT_START.match(context, j)
    words = text.group(1).split() if text else []
    return bool(words) and (_plain_word(words[0].rstrip(".,:")) or words[0] in SINGLE_LETTER_UNITS)


_LIST_JOINERS = re.compile(r"(?:[\sA-Za-z,&$]|\\[,;: !()]|\\q?quad(?![A-Za-z])|\\text\s*\{[A-Za-z\s,()]*\})*")
# "y_1 = " before a box: its name, when every box of a list has one ("y_1 = \boxed{a} and y_2 = \boxed{b}")
_NAME_BEFORE = re.compile(r"(?<![A-Za-z\\])([A-Za-z](?:_\{?[A-Za-z0-9]{1,3}\}?)?)\s*=\s*\$?\s*$")
_NOT_A_LIST = re.compile(
    r"\b(?:or|nor|not|no|to|then|either|maybe|perhaps|vs|versus|actually|instead|rather|wait|than|from|between|"
    r"but|except|plus|minus|times|over)\b",
    re.IGNORECASE,
)


def box_list(context: str, boxes: list[Span], lenient: bool = False) -> str | None:
    r"""Several boxes forming one answer (``\boxed{1}, \boxed{2}``, ``\boxed{1} and \boxed{2}``): their contents
    joined by commas, when only commas, "and", words, spacing or ``\text{and}`` join them (never "or", "not", an
    arrow or an operator) and the rest of the context frames them; else None. ``lenient`` (a gold, which is
    trusted): anything but those words joins them, and the rest of the context is not checked."""
    names = _names(context, boxes)
    starts = [m.start() if m else pos for m, (pos, _, _) in zip(names, boxes, strict=True)]
    for (_, _, end), start in zip(boxes, starts[1:], strict=False):
        joiner = context[end + 1 : start]
        if not (lenient or _LIST_JOINERS.fullmatch(joiner)) or _NOT_A_LIST.search(joiner):
            return None
    if not (lenient or _framing(context[: starts[0]], context[boxes[-1][2] + 1 :])):
        return None
    if not all(context[a:b].strip() for _, a, b in boxes):
        return None  # an empty box
    label = [f"{m.group(1)} = " if m else "" for m in names]
    return ", ".join(name + context[a:b].strip() for name, (_, a, b) in zip(label, boxes, strict=True))


def _names(context: str, boxes: list[Span]) -> list[re.Match[str] | None]:
    """The ``name =`` before each box when every box has one and the names differ ("y_1", "y_2"), else Nones (one
    name given twice, "x = \\boxed{72} and x = \\boxed{73}", names no list)."""
    ends = [0] + [b + 1 for _, _, b in boxes[:-1]]
    found = [_NAME_BEFORE.search(context, end, pos) for end, (pos, _, _) in zip(ends, boxes, strict=True)]
    keys = {m.group(1).replace("{", "").replace("}", "") for m in found if m}
    return found if len(keys) == len(boxes) else [None] * len(boxes)
