r"""Math answers: finding boxes and normalisation to a canonical form, in bounded time.

Which box or text is a completion's answer is decided in :mod:`.math_box`; this module finds the boxes. The
anti-gaming screens (hedges, ranges, bounds, several candidates, inputs too costly to verify) are in
:mod:`.math_screens`.

Time: extraction scans the completion (at most ``MAX_COMPLETION_CHARS``) in linear time with ``str.find`` and a
brace stack, no regex; a completion with more than ``MAX_BOXES`` box commands is refused first (``str.count``). An
extracted answer longer than ``MAX_RAW_ANSWER_CHARS`` is refused before any regex runs (the caller scores it 0.0).
Every regex here then runs on at most that many characters and has no nested quantifier that can backtrack (unit
words are recognised by a hand scanner), so normalisation is at most quadratic on a bounded input: well under 10 ms
for any input.

Units are stripped only when they are words: a known unit (``cm``, ``kg``, ``mph``...), a compound of units
(``m/s``, ``km/h``, ``cm^2``), a word of four or more letters with a vowel that is not a math name (``theta``),
or the content of ``\text{...}`` right after a number. A single letter (``x``, ``i``, ``y^2``) is never a unit.

Numbers: thousands separators ``1,000``, ``5\,000`` and ``1{,}000`` (every group after the first of exactly three
digits, so ``7{,}2`` and ``1{,}00{,}000`` are no numbers), and scientific notation ``6.02 \times 10^{23}`` are read
as exact numbers (:func:`as_number`).
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache
from itertools import accumulate, repeat

from .math_words import number_words

MAX_RAW_ANSWER_CHARS = 1000
MAX_BOXES = 64  # a completion with more boxed expressions than this is spam: 0.0 before any scan
MAX_EXPONENT_DIGITS = 4

# ------------------------------------------------------------------------------------------- extraction

_BOX_COMMANDS = ("\\boxed", "\\fbox")
_BRACE_DELTA = {"{": 1, "}": -1}
_BRACE = re.compile(r"[{}]")


@lru_cache(maxsize=4)  # extraction and the several-boxes check look at the same completion
def boxed_spans(text: str) -> tuple[tuple[int, int, int], ...]:
    r"""``(command_start, content_start, content_end)`` of every balanced ``\boxed{`` / ``\fbox{``, in order.

    Linear in ``len(text)``: with up to ``MAX_BOXES`` boxes, one C-speed pass computes the brace depth after every
    character and each box's brace closes where the depth first falls below its level (``list.index``); with more,
    one stack pass over the braces pairs them all.
    """
    first = min((i for i in (text.find(c) for c in _BOX_COMMANDS) if i >= 0), default=len(text))
    openers = []  # (command start, index of its brace)
    for command in _BOX_COMMANDS:
        pos = text.find(command)
        while pos >= 0:
            j = pos + len(command)
            while j < len(text) and text[j].isspace():
                j += 1
            if j < len(text) and text[j] == "{":
                openers.append((pos, j))
            pos = text.find(command, pos + 1)
    if not openers:
        return ()
    few = len(openers) <= MAX_BOXES
    return tuple(sorted(_close_few(text, first, openers) if few else _close_many(text, openers)))


def _close_few(text: str, first: int, openers: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Partners by a C-speed depth array: each brace closes where the depth first falls below its level."""
    depth = list(accumulate(map(_BRACE_DELTA.get, text[first:], repeat(0))))
    spans = []
    for pos, j in openers:
        try:
            close = depth.index(depth[j - first] - 1, j - first + 1) + first
        except ValueError:
            continue  # unclosed
        spans.append((pos, j + 1, close))
    return spans


def _close_many(text: str, openers: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Partners by one stack pass over the braces (many boxes: linear whatever their number)."""
    partner: dict[int, int] = {}
    stack: list[int] = []
    for brace in _BRACE.finditer(text, min(j for _, j in openers)):
        i = brace.start()
        if text[i] == "{":
            stack.append(i)
        elif stack:
            partner[stack.pop()] = i
    return [(pos, j + 1, partner[j]) for pos, j in openers if j in partner]


def last_boxed(text: str) -> str | None:
    r"""Content of the last balanced ``\boxed{...}`` (or ``\fbox{...}``) in ``text`` that is not inside another
    one (``\boxed{73 \boxed{72}}`` answers ``73 \boxed{72}``), or None."""
    spans = top_level_boxes(text)
    return text[spans[-1][1] : spans[-1][2]] if spans else None


def top_level_boxes(text: str) -> list[tuple[int, int, int]]:
    """The spans (see :func:`boxed_spans`) of the boxes of ``text`` that are not inside another box, in order."""
    out: list[tuple[int, int, int]] = []
    for span in boxed_spans(text) if "\\boxed" in text or "\\fbox" in text else ():
        if not out or span[0] > out[-1][2]:
            out.append(span)
    return out


_JOINERS = re.compile(r"(?:[\s,;:/|&$.]|\\[,;:! ]|\\quad|\\qquad|\\to\b|\\rightarrow\b|\\Rightarrow\b|->|=>|or|and)*")


def several_boxes(region: str, answer_block: bool) -> bool:
    r"""Several boxed answers that disagree: any two in an answer block, or the last two joined only by
    punctuation, "or"/"and" or an arrow elsewhere (``\boxed{73}, \boxed{72}``)."""
    boxes = top_level_boxes(region)
    contents = {region[a:b].strip() for _, a, b in boxes}
    if len(contents) < 2:
        return False
    if answer_block:
        return True
    (_, first, end), (start, a, b) = boxes[-2], boxes[-1]
    disagree = region[a:b].strip() != region[first:end].strip()
    return disagree and _JOINERS.fullmatch(region, end + 1, start) is not None


_BACKSLASHES = re.compile(r"\\+(?=[A-Za-z{}()\[\]%$])")
_DOUBLED_COMMAND = re.compile(r"(?<!\\)\\\\[A-Za-z]")
_SINGLE_COMMAND = re.compile(r"(?<!\\)\\(?![nrt])[A-Za-z]")  # "\n", "\t", "\r": an escaped string's own escapes
_ESCAPES = {(1, "n"), (1, "r"), (1, "t")}
_HALVED = re.compile(r"\\\\\\\\|(?<!\\)\\\\(?=[A-Za-z{}()\[\]%$])")


def undouble(text: str) -> str:
    r"""LaTeX written with every backslash doubled, as in an escaped string (``\\frac{1}{2}``, ``\\boxed{7}``), with
    its backslashes halved; any other text unchanged. Doubled means: at least one doubled command, no single-backslash
    command (an escaped string's ``\n``, ``\t``, ``\r`` aside, left as they are), and every run of backslashes before
    a letter, a bracket, ``%`` or ``$`` of even length. Only such runs are halved (``\\\\`` to a row break): a doubled
    ``\\ `` stays a row break, never the spacing ``\ ``. The result is text its writer could have written, and it
    is judged by every rule (a misread text gains nothing: "73 \neq \\boxed{72}" still negates)."""
    if "\\\\" not in text or not _DOUBLED_COMMAND.search(text) or _SINGLE_COMMAND.search(text):
        return text
    runs = ((len(m.group(0)), text[m.end()]) for m in _BACKSLASHES.finditer(text))
    if any(n % 2 and (n, c) not in _ESCAPES for n, c in runs):
        return text
    return _HALVED.sub(lambda m: m.group(0)[: len(m.group(0)) // 2], text)


def gold_text(gold: str) -> str:
    r"""The final answer inside a gold ``answer`` cell: after ``####``, else the last ``\boxed{}``, else all."""
    if "####" in gold:
        return gold.rsplit("####", 1)[1].strip()
    boxed = last_boxed(gold)
    if boxed is None and gold.rfind("\\boxed{") >= 0:  # a box left open: what follows it
        boxed = gold[gold.rfind("\\boxed{") + len("\\boxed{") :]
    return (boxed if boxed is not None else gold).strip()


# ---------------------------------------------------------------------------------------- normalisation

_LEAD_IN = re.compile(
    r"\s*(?:(?:so|therefore|thus|hence),?\s+)?(?:the\s+)?(?:final\s+)?(?:answer|result)\b\s*(?:is\b|=|:)?\s*:?",
    re.IGNORECASE,
)
_DELIMS = [("$$", "$$"), ("$", "$"), ("\\[", "\\]"), ("\\(", "\\)")]
_TEXT_NAMES = r"\\(?:text|textbf|mathrm|mbox|textnormal|operatorname)\s*"
_TEXT_CMD = re.compile(_TEXT_NAMES + r"\{([^{}]*)\}")
_CURRENCY = re.compile(r"\\\$|\$|€|£|¥|₹|\\euro|\b(?:usd|eur|gbp|rs)\b\.?", re.IGNORECASE)
NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+")
_PLAIN_NUMBER = re.compile(r"(?P<sign>[-+])?\s*(?P<int>\d{1,3}(?:,\d{3})+|\d+)?(?:\.(?P<dec>\d+))?")
_FRACTION = re.compile(
    r"(?P<sign>[-+])?\s*(?:\\[dt]?frac\s*\{\s*(?P<a>\d+)\s*\}\s*\{\s*(?P<b>\d+)\s*\}"
    r"|\\[dt]?frac(?P<a1>\d)(?P<b1>\d)|(?P<a2>\d+)\s*/\s*(?P<b2>\d+))"
)
_TEXT_CMD_END = re.compile(_TEXT_NAMES + r"\{[^{}]*\}$")
_THIN_THOUSANDS = re.compile(r"(?<=\d)\\,(?=\d{3}(?!\d))")
_BRACED_COMMA = re.compile(r"(?<=\d) ?\{ ?, ?\} ?(?=\d{3}(?!\d))")  # LaTeX's thousands separator: 1{,}000{,}000
_SCIENTIFIC = re.compile(
    r"(?P<m>[-+]?(?:\d+(?:\.\d+)?|\.\d+))\s*(?:\\times|\\cdot|×|\*)\s*10\s*\^\s*"
    r"(?:\{\s*(?P<e>[-+]?\d{1," + str(MAX_EXPONENT_DIGITS) + r"})\s*\}|(?P<e1>\d))"
)
_SPACES = re.compile(r"\\\\|\\[,;:! ]|\\quad|\\qquad|~")  # a row break "\\\\" first: "\\\\ 2" is no "\\ "
_VAR_IN = re.compile(r"^[A-Za-z]\s*\\in(?![A-Za-z])\s*")
_VAR_ASSIGN = re.compile(r"[a-zA-Z]\s*=\s*(?=[-+\d.\\])")
_UNIT_WORD = re.compile(r"[A-Za-z]+(?:\^\{?[23]\}?)?(?:/[A-Za-z]+(?:\^\{?[23]\}?)?)?")
_ALPHA = re.compile(r"[A-Za-z]+")

KNOWN_UNITS = frozenset(
    "cm mm km nm um kg mg ml mL dl cl kl ft yd mi lb lbs oz hr hrs min mins sec secs ms us ns mph kph kmh "
    "kmph cc sq cu km2 kW kw MW mW kJ kj mA mV kV Hz hz GB MB KB kB TB Gb Mb pt qt gal pcs pc yr yrs wk wks "
    "pct am pm AM PM st nd rd th deg men kids cars toys eggs pens cups boys days hours".split()
)
# only inside a compound such as m/s, km/h; never K (kelvin, or a thousand?)
SINGLE_LETTER_UNITS = frozenset("m s h g l L N J W V A".split())
MATH_NAMES = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln lg exp sqrt pi lim max det mod gcd lcm "
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron rho sigma tau upsilon phi "
    "chi psi omega inf infty".split()
)
_WORD_BREAKERS = frozenset("or and nor not either maybe perhaps possibly vs to then".split())
# Words that change a number's value ("72 million", "72 squared", "minus 72", "one over 72"): never a unit, and a
# sentence holding one is not "a number in prose".
VALUE_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred hundreds thousand "
    "thousands million millions billion billions trillion trillions tenth tenths hundredth hundredths thousandth "
    "thousandths millionth millionths dozen dozens half halves double doubled twice "
    "thrice triple tripled quadruple plus minus negative positive divided multiplied squared cubed root roots "
    "power powers inverse reciprocal factorial base binary octal hex hexadecimal grand thou lakh lakhs crore "
    "crores gross score scores thirds third quarters quarter fourths fourth fifths fifth sixths sixth sevenths "
    "seventh eighths eighth ninths ninth bn mn".split()
)


def is_unit(token: str) -> bool:
    """Whether ``token`` (letters, optional ``^2``/``^3``, optional ``/unit``) is a unit word, never a variable."""
    if not _UNIT_WORD.fullmatch(token):
        return False
    words = _ALPHA.findall(token)
    if len(words) == 1:
        return _unit_word(words[0]) or (words[0] in ("m", "cm", "km", "mm") and "^" in token)  # m^2
    return all(_unit_word(w) or w in SINGLE_LETTER_UNITS for w in words)


def _unit_word(word: str) -> bool:
    if word in KNOWN_UNITS:
        return True
    lower = word.lower()
    if len(word) < 4 or lower in MATH_NAMES or lower in _WORD_BREAKERS or lower in VALUE_WORDS:
        return False
    return any(v in lower for v in "aeiou")  # "clips", "dollars"; never "xyz" or "abc" (products of variables)


def strip_unit_tail(s: str) -> str:
    """``s`` without up to four trailing unit words after a number ("72 clips", "5 km/h", "3cm^2"); else ``s``."""
    body = s.rstrip().rstrip(".").rstrip()
    removed = 0
    while removed < 4 and body:
        cut = max(body.rfind(" "), body.rfind("\t"), body.rfind("\n"))
        token = body[cut + 1 :]
        if is_unit(token):
            body = body[: cut + 1].rstrip()
            removed += 1
            continue
        first = next((k for k, c in enumerate(token) if c.isalpha()), -1)
        if first > 0 and (token[first - 1].isdigit() or token[first - 1] == "}") and is_unit(token[first:]):
            body = body[: cut + 1] + token[:first]
            removed += 1
        break
    if removed and body and (body[-1].isdigit() or body[-1] == "}"):
        return body
    return s


def strip_delims(s: str) -> str:
    changed = True
    while changed:
        changed = False
        s = s.strip()
        for a, b in _DELIMS:
            if len(s) >= len(a) + len(b) and s.startswith(a) and s.endswith(b):
                s = s[len(a) : len(s) - len(b)]
                changed = True
                break
        else:
            if s.startswith(_BOX_COMMANDS) and s.endswith("}"):
                spans = boxed_spans(s)
                if spans and spans[0][0] == 0 and spans[0][2] == len(s) - 1:
                    s = s[spans[0][1] : spans[0][2]]
                    changed = True
    return s


def _text_command(match: re.Match[str]) -> str:
    r"""``\text{...}``: its words, or nothing when it is a unit right after a number (``5\text{ cm}``)."""
    content = match.group(1).strip()
    before = match.string[: match.start()].rstrip()
    if _TEXT_CMD_END.search(before):
        return " " + match.group(1) + " "  # after another text ("\text{Monday}\text{Tuesday}"): words, not a unit
    if before and (before[-1].isdigit() or before[-1] == "}") and content and content.lower() not in _WORD_BREAKERS:
        if all(is_unit(t) or t in SINGLE_LETTER_UNITS for t in content.split()):
            return " "
    return " " + match.group(1) + " "


_BOLD = re.compile(r"\\(?:mathbf|boldsymbol|bm|mathit|mathsf)\s*\{([^{}]*)\}")
_OVER = re.compile(r"\{([^{}]*)\\over(?![A-Za-z])([^{}]*)\}")
_SEPARATED_THOUSANDS = re.compile(r"(?<=\d),\\!\s*(?=\d{3}(?!\d))")  # 11,\!111,\!100


_TRIG_DEGREES = re.compile(r"\\(sin|cos|tan|cot|sec|csc)\s*\(?\{?\s*(\d+(?:\.\d+)?)\s*\}?\s*(?:\^\s*\{?\\circ\}?|°)\)?")
_UNIT_POWER = re.compile(r"(\\(?:text|mathrm|mbox)\s*\{\s*[A-Za-z]+\s*)\}\s*\^\s*\{?([23])\}?")
SPACED_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?: \d{3})+(?:\.\d+)?")
_DECIMAL_COMMA = re.compile(r"([-+]?\d+),(\d+)")


_QUOTED = re.compile(r'\\?["“]([^"“”]*?)\\?["”]\.?')


def _space(m: re.Match[str]) -> str:
    return m.group(0) if m.group(0) == "\\\\" else " "


def normalize(s: str) -> str:
    """Canonical surface form of an answer string (see ``math_task``)."""
    s = s.strip().replace("\u2212", "-").replace("\\cfrac", "\\frac")  # the Unicode minus sign; \cfrac
    s = s.replace("²", "^2").replace("³", "^3")
    s = _OVER.sub(r"\\frac{\1}{\2}", _BOLD.sub(r"\1", _SEPARATED_THOUSANDS.sub(",", s)))
    if len(s) > 4 and s.startswith("**") and s.endswith("**"):  # Markdown bold around the whole answer
        s = s[2:-2].strip()
    quoted = _QUOTED.fullmatch(s)
    if quoted:  # "\"$12$ and $13$\"." -> $12$ and $13$
        s = quoted.group(1).strip()
    lead = _LEAD_IN.match(s)
    if lead:
        s = s[lead.end() :]
    s = strip_delims(s)
    s = _TEXT_CMD.sub(_text_command, _UNIT_POWER.sub(r"\1^\2}", s))  # "15\mbox{ cm}^2": the unit and its power
    s = _THIN_THOUSANDS.sub("", s)  # "5\,000" -> "5000"
    s = _BRACED_COMMA.sub(",", s)  # "1{,}000" -> "1,000", a number only when every group has 3 digits
    s = _SPACES.sub(_space, s)
    s = s.replace("\\left", "").replace("\\right", "").replace("\\displaystyle", "").strip()
    s = _VAR_IN.sub("", s)  # "x \\in [-2, 7]": the set itself
    assign = _VAR_ASSIGN.match(s)
    if assign and not _VAR_ASSIGN.search(s, assign.end()):  # "x = 3" -> "3"; never "x = 2, y = 3" -> "2, y = 3"
        s = s[assign.end() :]
    s = _CURRENCY.sub("", s)
    s = s.strip().rstrip(".").strip()
    if s.endswith("%"):
        s = s[:-2] if s.endswith("\\%") else s[:-1]
    s = strip_unit_tail(s.strip()) if NUMBER.search(s) else s
    s = _TRIG_DEGREES.sub(r"\\\1(\\frac{\2\\pi}{180})", s)  # \sin 60^\circ is sin(pi/3), never sin(60)
    s = s.replace("^\\circ", "").replace("^{\\circ}", "").replace("°", "").strip()
    if SPACED_THOUSANDS.fullmatch(s):  # "1 000 000"
        s = s.replace(" ", "")
    comma = _DECIMAL_COMMA.fullmatch(s)
    if comma and (len(comma.group(2)) not in (1, 3) or comma.group(1).lstrip("-+") == "0"):
        s = comma.group(1) + "." + comma.group(2)  # "1000,99", "0,111": a decimal comma; never "1,000" or "1,2"
    return " ".join(s.split())


def as_number(s: str) -> Fraction | None:
    r"""``s`` (already normalised) as an exact number, if it is a plain number, ``a/b``, ``\frac{a}{b}`` or in
    scientific notation (``6.02 \times 10^{23}``, ``1.5 \cdot 10^{-3}``: exponent of at most
    ``MAX_EXPONENT_DIGITS`` digits)."""
    m = _PLAIN_NUMBER.fullmatch(s)
    if m and (m.group("int") or m.group("dec")):
        whole = (m.group("int") or "0").replace(",", "")
        dec = m.group("dec")
        value = Fraction(int(whole)) + (Fraction(int(dec), 10 ** len(dec)) if dec else 0)
        return -value if m.group("sign") == "-" else value
    m = _FRACTION.fullmatch(s)
    if m:
        a = m.group("a") or m.group("a1") or m.group("a2")
        b = m.group("b") or m.group("b1") or m.group("b2")
        if int(b) == 0:
            return None
        value = Fraction(int(a), int(b))
        return -value if m.group("sign") == "-" else value
    m = _SCIENTIFIC.fullmatch(s)
    if m:
        return Fraction(m.group("m")) * Fraction(10) ** int(m.group("e") or m.group("e1"))
    m = _E_NOTATION.fullmatch(s)
    if m:
        return Fraction(m.group(1)) * Fraction(10) ** int(m.group(2))
    return number_words(s)


_E_NOTATION = re.compile(r"([-+]?\d+(?:\.\d+)?)[eE]([-+]?\d{1," + str(MAX_EXPONENT_DIGITS) + r"})")


def decimals(s: str) -> int:
    """Number of decimal places of a number string ("0.333" -> 3)."""
    head, dot, tail = s.rpartition(".")
    return len(tail) if dot and tail.isdigit() else 0
