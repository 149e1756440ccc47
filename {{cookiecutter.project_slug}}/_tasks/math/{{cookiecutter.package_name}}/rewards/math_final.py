r"""The one final answer of an answer block that holds more than an answer: working, sentences, a whole solution.

An answer block is first judged as a whole (:mod:`.task`). When that fails, the block is read as statements and
the final one is taken, then narrowed to the answer it states:

- Statements: the block is cut at sentence ends (``.``, ``!``, ``?`` before a space) and line breaks that are
  outside math (``$...$``, ``$$...$$``, ``\[...\]``, ``\(...\)``, ``\begin...\end``); from a chat template's
  special token (``<|``) on, nothing is read.
- The final statement: the one holding the last box, unless one of the last few statements after it states a value
  after an answer lead-in ("... = \boxed{255}. Final Answer: The final answer is $10,455$."); else the last one
  with an answer lead-in ("the final answer is", "answer:"); else the last one holding a digit or math.
- Competing answers: any other statement that states an answer (a box, a lead-in, or nothing but a value) and
  whose value differs from the final one makes the block a hedge ("The answer is 73. The answer is 72.", "72" on
  one line and "73" on the next), and so does a statement after the final one that holds a value and a hedge
  word ("The answer is 72. Wait, actually 73."). Working ("48 + 24 = 72", a box ending a step of working,
  "$0.04 \cdot 10,000 = \boxed{200}$", in a statement without a lead-in) and prose are not answers.
- Narrowing (:func:`candidates`): the statement; what follows its last lead-in; in "X is Y" (is, are, was, equals,
  it's), Y when it holds a value, else X ("Therefore $x \geq 5$ is the solution."); in "L = [box]" with a
  variable in L, the box ("$x - p = \boxed{2 - 2p}$"); a closing phrase ending in the statement's one box
  ("..., making for a total loss of $\boxed{28\%}$."); and the one math span of a part that is otherwise plain
  words (none that hedges, negates, bounds, approximates or, next to it, changes the value: "about", "twice").
  What precedes the answer may not hedge ("or", "maybe", "actually"...), nor approximate ("rounded", "about"; a
  phrase naming the gold's own precision, "Rounded to the nearest cent" for a gold to the cent, is dropped), nor
  negate unless the negation is of another value that it names ("the number is not 10, it is 1000.99"), nor end
  in an equation chain that does not hold ("2^6 = 72, so the answer is 72").

Time: one regex pass, whose tokens each start differently, over the last ``MAX_SCANNED_CHARS`` characters of the
block before any special token (an answer stated earlier than that in a longer block is not read); the final
statement and every candidate are then at most ``MAX_RAW_ANSWER_CHARS`` long (a longer one is no answer).
"""

from __future__ import annotations

import re
from bisect import bisect_right

from .math_answer import MAX_RAW_ANSWER_CHARS, VALUE_WORDS, as_number, normalize, top_level_boxes
from .math_screens import APPROX, BOUND, HEDGE_WORDS, NEGATION

_TOKENS = re.compile(
    r"[.!?](?:\$\$|\$|\\\]|\\\))(?=\s|$)|\$\$|(?<!\\)\$|\\\[|\\\]|\\\(|\\\)|\\begin\{|\\end\{[A-Za-z*]*\}"
    r"|[.!?](?=\s)|\n|<\|"
)
LEAD_IN = re.compile(r"final answer\s*(?:is|:)?|\banswer\s*(?:is|:)|\bresult\s*(?:is|:)", re.IGNORECASE)
_COPULA = re.compile(r"\s(?:is|are|was|were|equals|it's|it is)(?:\s|:\s)", re.IGNORECASE)
_MATH_SPAN = re.compile(r"\$\$([^$]*)\$\$|(?<!\\)\$([^$]*)(?<!\\)\$|\\\((.*?)\\\)|\\\[(.*?)\\\]", re.DOTALL)
_PLAIN_WORDS = re.compile(r"[A-Za-z\s,.:;'()*#-]*")
_HEDGE_BEFORE = re.compile(
    r"\b(?:or|either|maybe|perhaps|possibly|probably|actually|instead|rather|wait|correction|sorry|guess|unsure|"
    r"otherwise|alternatively)\b|\?",
    re.IGNORECASE,
)
_APPROX_WORD = re.compile(
    r"\b(?:approximately|approx|about|around|roughly|nearly|almost|circa|estimated|nearest|round(?:ed|ing)?)\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(r"\b(?:not|no|never|isn'?t|wasn'?t|neither|nor)\b|\\neq|\\not|≠", re.IGNORECASE)
_BARE_VALUE = re.compile(r"[\s$\\()\[\]{}]*[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?[\s$\\()\[\]{}.]*")  # "7,14" lists
# what may link the chain of a math span to the box that ends it, and what may follow that box
_LINK = re.compile(r"(?:=|\\Rightarrow|\\implies|\\equiv)\s*$")
_CLOSED = re.compile(r"(?:\s|[.,;$]|\\\]|\\\)|\\end\{[A-Za-z*]*\}|\\pmod\{\d+\}|\(\s*mod\s*\d+\s*\))*")
_MATH_CLOSER = re.compile(r"\$\$|(?<!\\)\$|\\\]|\\\)")
_COMPLEMENT = re.compile(r"\s*(?:at|in|after|for|on|during|by|per|each|every|of)\s", re.IGNORECASE)
_MOD = re.compile(r"\\pmod|\bmod\b")
_PHRASE = re.compile(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}\s+[A-Za-z]{2,}")  # three words: prose, not a stated value
_ENUMERATOR = re.compile(r"\s*\d{1,2}[.)]\s*")  # "1." heading a step
_VALUE = re.compile(r"\d|\\(?:frac|sqrt|pi|infty|begin|boxed)|\$")


def statements(block: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each statement of ``block`` (see the module docstring), in order."""
    out: list[tuple[int, int]] = []
    start, dollars, display, env = 0, 0, 0, 0
    boxes = top_level_boxes(block)
    box_starts = [pos for pos, _, _ in boxes]
    for m in _TOKENS.finditer(block):
        k = bisect_right(box_starts, m.start()) - 1
        if k >= 0 and m.start() <= boxes[k][2]:
            continue  # inside a box: "\\boxed{\n\\begin{pmatrix}...}" is one statement
        token = m.group(0)
        if token == "<|":
            break
        if len(token) > 1 and token[0] in ".!?":  # "$y = -30.$ Then": math closes, then the sentence ends
            dollars, display = (0, display) if "$" in token else (dollars, max(0, display - 1))
            token = token[0]
        if token in ("$", "$$"):
            dollars ^= 1
        elif token in ("\\[", "\\("):
            display += 1
        elif token in ("\\]", "\\)"):
            display = max(0, display - 1)
        elif token == "\\begin{":
            env += 1
        elif token.startswith("\\end{"):
            env = max(0, env - 1)
        elif not (dollars or display or env):
            out.append((start, m.end()))
            start = m.end()
    else:
        out.append((start, len(block)))
    return [(a, b) for a, b in out if block[a:b].strip()]


def math_start(text: str, pos: int) -> int:
    """Where the math (``$``, ``\\[``, ``\\(``, ``\\begin``) around ``text[pos]`` opens (after its opener); 0 when
    ``pos`` is in no math."""
    opened, depth = 0, 0
    for m in _TOKENS.finditer(text, 0, pos):
        token = m.group(0)
        if token in ("$", "$$"):
            depth, opened = (0, opened) if depth else (1, m.end())
        elif token in ("\\[", "\\(") or token == "\\begin{":
            opened, depth = (m.end(), depth + 1) if not depth else (opened, depth + 1)
        elif token in ("\\]", "\\)") or token.startswith("\\end{"):
            depth = max(0, depth - 1)
    return opened if depth else 0


MAX_SCANNED_CHARS = 16_000  # the statements are read from the last this many characters of a block
_LATER_LEADS = 8  # a lead-in after the last box is looked for among the last this many statements


def final_statement(block: str) -> tuple[str, list[str], bool] | None:
    """The final statement of ``block``, the other statements, and whether a statement after the final one holds a
    value and a hedge word; None when there is no final statement within bounds."""
    cut = block.find("<|")
    block = block[max(0, (len(block) if cut < 0 else cut) - MAX_SCANNED_CHARS) : len(block) if cut < 0 else cut]
    spans = statements(block)
    if not spans:
        return None
    texts = [block[a:b].strip() for a, b in spans]
    boxes = top_level_boxes(block)
    index = -1
    if boxes:
        last = boxes[-1][0]
        index = next((i for i, (a, b) in enumerate(spans) if a <= last < b), -1)
        # "... = \boxed{255}. Final Answer: The final answer is $10,455$.": a later lead-in stating a value is final
        later = range(len(texts) - 1, max(index, len(texts) - 1 - _LATER_LEADS), -1)  # the last few statements
        index = next((i for i in later if _lead_value(texts[i])), index)
    if index < 0:
        index = next((i for i in range(len(texts) - 1, -1, -1) if LEAD_IN.search(texts[i])), -1)
    if index < 0:
        index = next((i for i in range(len(texts) - 1, -1, -1) if _VALUE.search(texts[i])), -1)
    if index < 0:
        return None
    lead = _last(LEAD_IN, texts[index]) if len(texts[index]) > MAX_RAW_ANSWER_CHARS else None
    if lead is not None:  # a statement that runs on (unbalanced math): from its last lead-in
        texts[index] = texts[index][lead.start() :]
    if len(texts[index]) > MAX_RAW_ANSWER_CHARS:
        return None
    retracted = any(_VALUE.search(t) and _HEDGE_BEFORE.search(t) for t in texts[index + 1 :])
    return texts[index], texts[:index] + texts[index + 1 :], retracted


def stated_value(statement: str) -> str | None:
    """The value another statement states as an answer (a box, after a lead-in, or alone), normalised; else None."""
    if len(statement) > MAX_RAW_ANSWER_CHARS:
        return None
    boxes = top_level_boxes(statement)
    if boxes:
        pos, a, b = boxes[-1]
        if _working_box(statement, pos) and not LEAD_IN.search(statement):
            return None  # "$0.04 \cdot 10,000 = \boxed{200}$": a step's result in the working, not an answer
        return normalize(statement[a:b])
    lead = _last(LEAD_IN, statement)
    if lead is not None:
        value = normalize(statement[lead.end() :])
        # "**Final Answer**" heads what follows; "the answer is the number of multiples of 7" names no value
        return value if _VALUE.search(value) and not _PHRASE.search(value) else None
    if _BARE_VALUE.fullmatch(statement) and not _ENUMERATOR.fullmatch(statement):
        return normalize(statement)
    return None


def _lead_value(statement: str) -> bool:
    """Whether ``statement`` states a value after an answer lead-in ("The final answer is $10,455$.")."""
    return LEAD_IN.search(statement) is not None and stated_value(statement) is not None


def _working_box(statement: str, pos: int) -> bool:
    r"""Whether the box at ``pos`` ends an equation chain of working in its math: "=" before it, and a digit in
    what precedes that "=" ("$0.04 \cdot 10,000 = \boxed{200}$"; never "$x = \boxed{73}$")."""
    chain = statement[math_start(statement, pos) : pos]
    link = _LINK.search(chain)
    return link is not None and link.group(0).strip() == "=" and re.search(r"\d", chain[: link.start()]) is not None


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    last = None
    for last in pattern.finditer(text):  # noqa: B007 - the last match is wanted
        pass
    return last


def same_value(a: str, b: str) -> bool:
    x, y = as_number(a), as_number(b)
    return x == y if x is not None and y is not None else a.replace(" ", "") == b.replace(" ", "")


def competing(final: str, others: list[str], retracted: bool) -> bool:
    """Whether another statement states an answer that differs from the final statement's, or one after it
    takes it back (``retracted``, from :func:`final_statement`)."""
    if retracted:
        return True  # a statement after the final one takes it back ("Wait, actually 73.")
    mine = stated_value(final) or normalize(final)
    return any(v is not None and not same_value(v, mine) for v in map(stated_value, others))


def _clean_before(head: str) -> bool:
    """What precedes the answer in its statement neither hedges, approximates ("Rounded to the nearest whole number,
    it is $\\boxed{72}$"; as a word: "A \\approx 12.5" is working) nor negates it (a negation naming another value,
    "not 10", is allowed)."""
    if _HEDGE_BEFORE.search(head) or _APPROX_WORD.search(head):
        return False
    return all(re.search(r"\d", head[m.end() :]) for m in _NEGATED.finditer(head))


def _plain_predicate(tail: str) -> bool:
    """What follows "X is" when X is the answer ("the solution", "our answer"): nothing that negates, hedges,
    bounds, approximates or changes the value ("72 is wrong", "72 is about right", "72 is half of it")."""
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", tail)}
    if words & VALUE_WORDS or _HEDGE_BEFORE.search(tail) or _NEGATED.search(tail):
        return False
    return not any(screen.search(tail) for screen in (NEGATION, APPROX, BOUND, HEDGE_WORDS))


def _framed_span(part: str) -> str | None:
    """The content of the one math span of ``part`` when the rest is plain words ("The sum is $x$.")."""
    spans = list(_MATH_SPAN.finditer(part))
    if len(spans) != 1:
        return None
    m = spans[0]
    rest = part[: m.start()] + " " + part[m.end() :]
    if not _PLAIN_WORDS.fullmatch(rest) or _HEDGE_BEFORE.search(rest) or _NEGATED.search(rest):
        return None
    if any(screen.search(rest) for screen in (NEGATION, APPROX, BOUND, HEDGE_WORDS)):
        return None  # "about $\\boxed{72}$", "or making $\\boxed{72}$": words that hedge the span
    near = re.findall(r"[A-Za-z]+", part[: m.start()])[-1:] + re.findall(r"[A-Za-z]+", part[m.end() :])[:1]
    if VALUE_WORDS & {w.lower() for w in near}:
        return None  # "twice $72$", "$72$ thousand" ("a zero matrix: $...$" names it)
    return next(g for g in m.groups() if g is not None)


_CLAUSE_TOKENS = re.compile(r"\$\$|(?<!\\)\$|\\[\[(]|\\[\])]|\\begin\{|\\end\{|[,;](?=\s)")


_PHRASE_START = re.compile(r"\s*[A-Za-z]{2,}\s")


def _last_clause(statement: str, pos: int) -> int:
    """Where the clause of ``statement`` holding ``pos`` starts: after the last ", " or "; " before ``pos`` that is
    outside math; 0 when there is none. One regex pass, whose tokens each start differently."""
    dollars, depth, start = 0, 0, 0
    for m in _CLAUSE_TOKENS.finditer(statement, 0, pos):
        token = m.group(0)
        if token in ("$", "$$"):
            dollars ^= 1
        elif token in ("\\[", "\\(", "\\begin{"):
            depth += 1
        elif token in ("\\]", "\\)", "\\end{"):
            depth = max(0, depth - 1)
        elif not (dollars or depth):
            start = m.end()
    return start


def candidates(statement: str) -> list[tuple[str, str]]:
    """``(answer, what precedes it)`` narrowings of the final statement, widest first (see the module docstring)."""
    out = [(statement, "")]
    lead = _last(LEAD_IN, statement)
    if lead is not None and statement[lead.end() :].strip():
        out.append((statement[lead.end() :], statement[: lead.start()]))
    copulas = list(_COPULA.finditer(statement))
    if copulas:
        m = copulas[-1]
        head, tail = statement[: m.start()], statement[m.end() :]
        if _VALUE.search(tail):
            out.append((tail, head))
        elif _VALUE.search(head) and _PLAIN_WORDS.fullmatch(tail) and _plain_predicate(tail):
            out.append((head, ""))
    boxes = top_level_boxes(statement)
    if boxes:  # "$f(0) = \frac{3}{2} - 1 = \boxed{\frac{1}{2}}$": the box ends the chain of its math
        pos, a, b = boxes[-1]
        chain = statement[math_start(statement, pos) : pos]
        link = _LINK.search(chain)
        equal = link is not None and link.group(0).strip() == "="
        congruence = link is not None and link.group(0).strip() == "\\equiv"
        if link is not None and _CLOSED.fullmatch(statement, b + 1) and (congruence or not _MOD.search(statement)):
            # "\\Rightarrow" ends a derivation, "\\equiv" a congruence: their sides are not equal to the answer, so
            # only an "=" chain's working is checked
            out.append((statement[a:b], chain[: link.start()] + "=" if equal else ""))
        closer = _MATH_CLOSER.search(statement, b + 1)
        tail = statement[closer.end() :] if closer else ""
        if closer and _COMPLEMENT.match(tail) and _plain_predicate(tail):  # "$\\boxed{72}$ after 5 years."
            out.append((statement[: closer.end()], ""))
        clause = _last_clause(statement, pos)
        if clause > 0 and len(boxes) == 1 and _PHRASE_START.match(statement, clause) and _plain_predicate(
            statement[clause:pos]
        ):
            # "..., its value becomes $.72x$, making for a total loss of $\\boxed{28\\%}$.": a phrase ending in the
            # statement's one box (never "\\boxed{73}, \\boxed{72}")
            out.append((statement[clause:], statement[:clause]))
        shown = statement.rfind("\\]", 0, pos)
        if shown > 0:  # "\\[ ...working... \\] for a quotient of $\\boxed{204_5}$."
            out.append((statement[shown + 2 :], ""))
    for answer, head in list(out):
        span = _framed_span(answer)
        if span is not None:
            out.append((span, head))
    return [(answer, head) for answer, head in out if head == "" or _clean_before(head)]


def gold_answer(gold: str, text: str) -> str:
    """The final answer of a gold ``text`` (from :func:`~.math_answer.gold_text`) that is a whole solution with an
    answer lead-in ("... Final Answer: The final answer is $28 \\%$. I hope it is correct."): what follows its last
    lead-in; and of an equation chain ending in a variable's value ("1 = a = x = 0"): that value. Else ``text``."""
    if text == gold.strip() and len(statements(gold)) > 1 and LEAD_IN.search(gold):
        found = final_statement(gold)
        lead = _last(LEAD_IN, found[0]) if found else None
        if found and lead is not None and stated_value(found[0]) is not None:
            text = found[0][lead.end() :].strip()
    sides = _CHAIN_SIDES.split(text)
    if len(sides) > 2 and re.fullmatch(r"\s*\$?\s*[A-Za-z]\s*", sides[-2]):
        text = sides[-2].strip(" $") + " = " + sides[-1].strip(" $")
    return text


_CHAIN_SIDES = re.compile(r"(?<![<>!\\])=")


_PLACES = {"tenth": 1, "hundredth": 2, "cent": 2, "penny": 2, "thousandth": 3}
_ROUNDED_TO = re.compile(
    r"\b(?:rounded|rounding|correct|accurate)\s+to\s+(?:the\s+nearest\s+(tenth|hundredth|cent|penny|thousandth)"
    r"|(\d)\s+decimal\s+places?)\b,?",
    re.IGNORECASE,
)


def without_stated_rounding(statement: str, places: int) -> str:
    """``statement`` without the phrase that names the precision it is rounded to ("Rounded to the nearest cent,",
    "correct to 2 decimal places") when that precision is the gold's own, ``places`` >= 1 decimal places (a gold
    written to the cent); the value must then still equal the gold exactly. Any other statement unchanged."""
    if places < 1:
        return statement
    for m in _ROUNDED_TO.finditer(statement):
        named = _PLACES[m.group(1).lower()] if m.group(1) else int(m.group(2))
        if named == places:
            statement = statement[: m.start()] + " " * (m.end() - m.start()) + statement[m.end() :]
    return statement

