r"""Math correctness: is the final answer of a completion equal to the row's gold ``answer``?

Prediction: the content of the last ``<answer>`` block (if it holds a ``\boxed{}``, the last one inside it);
without an answer block, the last balanced ``\boxed{...}`` anywhere in the completion; otherwise no answer (0.0).

Gold (column ``answer``): a bare value (``"72"``), a GSM8K solution ending ``#### 1,234``, or LaTeX
(``\frac{3}{4}``, ``\boxed{...}``, ``$...$``, intervals, sets, expressions).

Scoring (``correctness`` in {0, 1}, or None):

1. Normalise both sides (LaTeX delimiters, ``\boxed``, ``\text{}``/``\mathrm{}`` units, ``\$``/currency, thousands
   separators, a lead-in such as "The answer is", ``x =``, a trailing period, ``%`` and trailing unit words). For a
   numeric gold, a short sentence holding exactly one number and otherwise only words ("She earned $10.") counts
   as that number.
2. Stdlib fast path: if both sides are plain numbers (integers, decimals, ``a/b``, ``\frac{a}{b}``) they are
   compared exactly as :class:`fractions.Fraction`; a decimal rounded to >= 3 places also matches a gold that has
   no finite decimal expansion (1/3 ~ 0.333). Identical normalised strings match. No math-verify needed.
3. Otherwise math-verify decides (``parse`` + ``verify`` on ``\boxed{...}``-wrapped strings, so "72 or 73" and
   "1, 2, 72" are parsed as sets, never as "the last number"): fractions vs decimals, LaTeX forms, sets,
   intervals, expressions.

Anti-gaming: an answer with several candidates ("72 or 73", one number per line, a list of numbers) never matches a
single-valued gold, nor does an equation chain with a wrong plain-number side ("73 = 72"); the answer is checked as
a whole, not searched for a matching number.

Time bound: every call returns within about ``VERIFY_TIMEOUT_S`` (1 s) per completion that reaches math-verify,
from any thread. math-verify's own timeouts use ``signal.alarm`` (main thread only), so it is run in a persistent
worker subprocess (``python -c``, stdlib-only protocol over pipes) that is killed and restarted when a comparison
overruns. Inputs are screened before that: answers longer than ``MAX_ANSWER_CHARS``, brace/parenthesis nesting
deeper than ``MAX_NESTING``, nested exponents (power towers), huge exponents or factorials score 0.0 at once. A
(re)start of the worker (importing sympy, typically 0.5-3 s) happens on the first call and on the call after a kill;
it is bounded separately by ``WORKER_START_TIMEOUT_S``. So: a comparison costs at most 1 s, plus one worker start
after a timeout; screened or plain-number inputs cost microseconds.

``None`` is returned when the gold is empty/unparseable, or when the pair needs math-verify and it is not installed
(the fast path still scores plain numbers). Parsed gold is cached (a gold repeats ``num_generations`` times).

Stdlib only at module level; math-verify is used only through the worker.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import selectors
import subprocess
import sys
import threading
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ..answer_format import extract_answer
from .common import column, completion_texts, register

VERIFY_TIMEOUT_S = 1.0
WORKER_START_TIMEOUT_S = 60.0
MAX_ANSWER_CHARS = 300
MAX_NESTING = 8
MAX_EXPONENT_DIGITS = 4

# ------------------------------------------------------------------------------------------- extraction


def last_boxed(text: str) -> str | None:
    r"""Content of the last balanced ``\boxed{...}`` (or ``\fbox{...}``) in ``text``, or None."""
    best: str | None = None
    for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            c = text[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            i += 1
        if depth == 0:
            best = text[m.end() : i - 1]
    return best


def extract_prediction(text: str) -> str | None:
    """The final answer of a completion (see the module docstring), or None."""
    answer = extract_answer(text)
    if answer is not None:
        boxed = last_boxed(answer) if "\\boxed" in answer or "\\fbox" in answer else None
        return boxed if boxed is not None else answer
    return last_boxed(text)


def gold_text(gold: str) -> str:
    r"""The final answer inside a gold ``answer`` cell: after ``####``, else the last ``\boxed{}``, else all."""
    if "####" in gold:
        return gold.rsplit("####", 1)[1].strip()
    boxed = last_boxed(gold) if "\\boxed" in gold or "\\fbox" in gold else None
    return (boxed if boxed is not None else gold).strip()


# ---------------------------------------------------------------------------------------- normalisation

_LEAD_IN = re.compile(
    r"^\s*(?:so,?\s*|therefore,?\s*|thus,?\s*|hence,?\s*)?(?:the\s+)?(?:final\s+)?(?:answer|result)"
    r"\s*(?:is|=|:)?\s*:?\s*",
    re.IGNORECASE,
)
_DELIMS = [("$$", "$$"), ("$", "$"), ("\\[", "\\]"), ("\\(", "\\)")]
_TEXT_CMD = re.compile(r"\\(?:text|textbf|mathrm|mbox|textnormal|operatorname)\s*\{([^{}]*)\}")
_CURRENCY = re.compile(r"\\\$|\$|€|£|¥|₹|\\euro|\b(?:usd|eur|gbp|rs)\b\.?", re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+")
_PLAIN_NUMBER = re.compile(r"^(?P<sign>[-+])?\s*(?P<int>\d{1,3}(?:,\d{3})+|\d+)?(?:\.(?P<dec>\d+))?$")
_FRACTION = re.compile(
    r"^(?P<sign>[-+])?\s*(?:\\[dt]?frac\s*\{\s*(?P<a>\d+)\s*\}\s*\{\s*(?P<b>\d+)\s*\}"
    r"|\\[dt]?frac(?P<a1>\d)(?P<b1>\d)|(?P<a2>\d+)\s*/\s*(?P<b2>\d+))$"
)
_UNIT_TAIL = re.compile(r"(?<=[\d}])\s*(?:[a-zA-Z][a-zA-Z./^2-3]*\s*){1,4}\.?$")
_SPACES = re.compile(r"\\[,;:! ]|\\quad|\\qquad|~")


def _strip_delims(s: str) -> str:
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
            boxed = re.fullmatch(r"\\(?:boxed|fbox)\s*\{(.*)\}", s, re.DOTALL)
            if boxed and last_boxed(s) == boxed.group(1):
                s = boxed.group(1)
                changed = True
    return s


def normalize(s: str) -> str:
    """Canonical surface form of an answer string (see the module docstring)."""
    s = s.strip()
    s = _LEAD_IN.sub("", s, count=1)
    s = _strip_delims(s)
    s = _TEXT_CMD.sub(lambda m: " " + m.group(1) + " ", s)
    s = _SPACES.sub(" ", s)
    s = s.replace("\\left", "").replace("\\right", "").replace("\\displaystyle", "")
    s = re.sub(r"^[a-zA-Z]\s*=\s*(?=[-+\d.\\])", "", s)  # "x = 3" -> "3"
    s = _CURRENCY.sub("", s)
    s = s.strip().rstrip(".").strip()
    s = re.sub(r"\\?%$", "", s).strip()
    s = re.sub(r"\\?%", "", s) if re.fullmatch(r"[-+\d.,\s]*\\?%", s) else s
    s = _UNIT_TAIL.sub("", s).strip() if _NUMBER.search(s) else s
    s = re.sub(r"\^\s*\\circ|°", "", s).strip()  # degrees
    return re.sub(r"\s+", " ", s)


def as_number(s: str) -> Fraction | None:
    r"""``s`` (already normalised) as an exact number, if it is a plain number, ``a/b`` or ``\frac{a}{b}``."""
    m = _PLAIN_NUMBER.match(s)
    if m and (m.group("int") or m.group("dec")):
        whole = (m.group("int") or "0").replace(",", "")
        dec = m.group("dec")
        value = Fraction(int(whole)) + (Fraction(int(dec), 10 ** len(dec)) if dec else 0)
        return -value if m.group("sign") == "-" else value
    m = _FRACTION.match(s)
    if m:
        a = m.group("a") or m.group("a1") or m.group("a2")
        b = m.group("b") or m.group("b1") or m.group("b2")
        if int(b) == 0:
            return None
        value = Fraction(int(a), int(b))
        return -value if m.group("sign") == "-" else value
    return None


def _decimals(s: str) -> int:
    m = re.search(r"\.(\d+)$", s)
    return len(m.group(1)) if m else 0


def _terminates(x: Fraction) -> bool:
    d = x.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def numbers_equal(gold: Fraction, pred: Fraction, pred_text: str) -> bool:
    """Exact equality, or ``pred`` is ``gold`` correctly rounded to >= 3 places when ``gold`` does not terminate."""
    if gold == pred:
        return True
    places = _decimals(pred_text)
    if places >= 3 and not _terminates(gold):
        return abs(gold - pred) <= Fraction(1, 2 * 10**places)
    return False


_MULTI_WORDS = re.compile(r"\b(?:or|and|nor|either|not|maybe|perhaps|possibly|vs)\b|\\(?:lor|vee|text\s*\{\s*or)")


def multiple_candidates(pred: str) -> bool:
    """True when the answer offers several values ("72 or 73", one per line, "72 73")."""
    if len(_NUMBER.findall(pred)) < 2:
        return False
    if _MULTI_WORDS.search(pred):
        return True
    lines = [ln for ln in pred.splitlines() if ln.strip()]
    if len(lines) > 1:
        return True
    return bool(re.search(r"\d\s+[-+]?\d", pred))  # numbers side by side with no operator between


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
    if re.search(r"\^\s*[-+]?\s*\d{" + big + ",}", s):
        return True  # a huge exponent (only the first digit binds without braces, so 10^100000 is 10^1 00000)
    if re.search(r"\^\s*\{[^{}]*\d{" + big + ",}", s):
        return True
    if re.search(r"\^[^{}]*\^", s) and s.count("^") > 2:
        return True  # chained exponents a^b^c^d
    return bool(re.search(r"\d{4,}\s*!|\\(?:binom|choose)", s))  # large factorials / binomials


# ----------------------------------------------------------------------------------------------- gold


@dataclass(frozen=True)
class Gold:
    text: str  # normalised gold answer
    number: Fraction | None


@lru_cache(maxsize=8192)
def parse_gold(gold: str) -> Gold | None:
    """The normalised gold of an ``answer`` cell, or None when it is empty."""
    text = normalize(gold_text(gold))
    if not text:
        return None
    return Gold(text=text, number=as_number(text))


# --------------------------------------------------------------------------------------- math-verify worker

_WORKER_SRC = r"""
import json, sys, logging
logging.disable(logging.CRITICAL)
try:
    from math_verify import parse, verify
except Exception as exc:
    sys.stdout.write(json.dumps({"ready": False, "error": repr(exc)}) + "\n"); sys.stdout.flush(); sys.exit(0)
from functools import lru_cache

@lru_cache(maxsize=4096)
def parse_gold(g):
    return parse("\\boxed{" + g + "}", parsing_timeout=None)

# warm up (lazy imports, the LaTeX grammar, sympy's caches) so the first real comparison is not a cold one
verify(parse_gold("x^2+2x+1"), parse("\\boxed{(x+1)^2}", parsing_timeout=None), timeout_seconds=None)
verify(parse_gold("\\frac{3}{4}"), parse("\\boxed{[0.75, \\infty)}", parsing_timeout=None), timeout_seconds=None)
sys.stdout.write(json.dumps({"ready": True}) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    try:
        req = json.loads(line)
        gold = parse_gold(req["g"])
        pred = parse("\\boxed{" + req["p"] + "}", parsing_timeout=None)
        ok = bool(gold) and bool(pred) and bool(verify(gold, pred, timeout_seconds=None))
    except Exception:
        ok = False
    sys.stdout.write(json.dumps({"ok": ok}) + "\n"); sys.stdout.flush()
"""


class MathVerifyWorker:
    """A persistent ``python -c`` subprocess running math-verify; a call that overruns kills it and starts another.

    Thread-safe (calls are serialised). ``available`` becomes False for good if math-verify cannot be imported
    there or the worker cannot be started.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self.available: bool | None = None  # unknown until the first start
        self._ready = False
        self.restarts = 0  # starts after the first one (after a kill or a crash)

    def _spawn(self) -> bool:
        """Start a worker process without waiting for it (it reports ``ready`` once math-verify is imported)."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER_SRC],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                bufsize=1,
                env=env,
            )
        except Exception:
            self._proc = None
            self.available = False
            return False
        self._ready = False
        return True

    def _ensure_ready(self) -> bool:
        if self._proc is None or self._proc.poll() is not None:
            self._kill()
            if self.available:
                self.restarts += 1
            if not self._spawn():
                return False
        if not self._ready:
            reply = self._read(WORKER_START_TIMEOUT_S)
            if not reply or not reply.get("ready"):
                self._kill()
                self.available = False
                return False
            self._ready = True
            self.available = True
        return True

    def _read(self, timeout: float) -> dict[str, Any] | None:
        proc = self._proc
        if proc is None or proc.stdout is None:
            return None
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(proc.stdout, selectors.EVENT_READ)
                if not sel.select(timeout):
                    return None
            line = proc.stdout.readline()
            return json.loads(line) if line else None
        except Exception:
            return None

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                proc.kill()
                proc.wait(timeout=5)
            except Exception:
                pass

    def verify(self, gold: str, pred: str, timeout: float = VERIFY_TIMEOUT_S) -> bool | None:
        """math-verify's verdict on the normalised pair; False on timeout; None if math-verify is unavailable."""
        with self._lock:
            if self.available is False:
                return None
            if not self._ensure_ready():
                return None
            assert self._proc is not None and self._proc.stdin is not None
            try:
                self._proc.stdin.write(json.dumps({"g": gold, "p": pred}) + "\n")
                self._proc.stdin.flush()
            except Exception:
                self._kill()
                return False
            reply = self._read(timeout)
            if reply is None:  # overran: kill it and start the replacement now, so it warms up meanwhile
                self._kill()
                self.restarts += 1
                self._spawn()
                return False
            return bool(reply.get("ok"))

    def close(self) -> None:
        with self._lock:
            self._kill()


WORKER = MathVerifyWorker()
atexit.register(WORKER.close)


# ------------------------------------------------------------------------------------------------ reward


_PROSE = re.compile(r"[A-Za-z\s.,:;'\"()?-]*")


def _number_in_prose(pred: str) -> tuple[Fraction, str] | None:
    """The one number of a short sentence ("She earned 10"), when everything else is words and punctuation."""
    numbers = list(_NUMBER.finditer(pred))
    if len(numbers) != 1 or _MULTI_WORDS.search(pred):
        return None
    m = numbers[0]
    if not _PROSE.fullmatch(pred[: m.start()] + " " + pred[m.end() :]):
        return None
    value = as_number(m.group(0))
    return (value, m.group(0)) if value is not None else None


def _contradicts(gold: Fraction, pred: str) -> bool:
    """An equation chain with a plain-number side other than the gold ("73 = 72" hedges; "48+24 = 72" does not)."""
    for side in re.split(r"(?<![<>!\\])=", pred):
        side = normalize(side)
        value = as_number(side)
        if value is not None and not numbers_equal(gold, value, side):
            return True
    return False


def score(completion_text: str, gold_cell: object) -> float | None:
    """Correctness of one completion text against one gold cell: 1.0, 0.0, or None (not applicable)."""
    if not isinstance(gold_cell, (str, int, float)) or isinstance(gold_cell, bool):
        return None
    gold = parse_gold(str(gold_cell))
    if gold is None:
        return None
    raw = extract_prediction(completion_text)
    if raw is None:
        return 0.0
    if multiple_candidates(raw) and not multiple_candidates(gold_text(str(gold_cell))):
        return 0.0
    pred = normalize(raw)
    if not pred:
        return 0.0
    if pred == gold.text:
        return 1.0
    if gold.number is not None and "=" in pred and _contradicts(gold.number, pred):
        return 0.0
    pred_number = as_number(pred)
    if gold.number is not None and pred_number is None:
        pred_number, pred = _number_in_prose(pred) or (None, pred)
    if gold.number is not None and pred_number is not None:
        return 1.0 if numbers_equal(gold.number, pred_number, pred) else 0.0
    if pathological(pred) or pathological(gold.text):
        return 0.0
    verdict = WORKER.verify(gold.text, pred)
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


__all__ = ["WORKER", "correctness_reward", "extract_prediction", "normalize", "parse_gold", "score"]
