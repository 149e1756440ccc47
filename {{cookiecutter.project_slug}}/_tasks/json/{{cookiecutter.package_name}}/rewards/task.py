r"""JSON correctness: does the completion's JSON document satisfy the row's ``schema`` and equal its ``answer``?

Extraction: from the last ``<answer>`` block (an unclosed final ``<answer>`` counts as the answer, never the
reasoning before it; the whole completion when there is no answer tag), the last fenced block (```` ```json ````
or a bare ```` ``` ````) if any, else the last complete JSON object/array found by scanning with
``json.JSONDecoder().raw_decode`` (so prose before or after the document is tolerated). A bracket that does not
open a valid document is skipped with everything inside it, so a broken document (``{"a": <gold>, oops}``,
``[<gold>``) never yields a piece of itself.

Validation: jsonschema, honouring ``$schema`` (Draft 2020-12 when absent), with JSON Schema's own semantics where
Python's differ (:mod:`.json_formats`): ``pattern`` and ``patternProperties`` are ECMA-262 regexes with the ``u``
flag, matched by ``regress`` (``.`` matches no line terminator, ``\s`` is ECMA's white space with U+00A0, U+FEFF and
U+2028, ``\d`` and ``\w`` are ASCII, ``$`` is the very end; Python-only syntax such as ``(?P<n>...)`` is not a
regex, so a schema using it is not usable); ``multipleOf`` is exact decimal arithmetic (19.99 is a multiple of 0.01,
0.3 of 0.1); and every format of Draft 2020-12 is checked, under any draft: ``date-time``, ``date``, ``time``,
``duration``, ``email``, ``idn-email``, ``hostname``, ``idn-hostname``, ``ipv4``, ``ipv6``, ``uri``,
``uri-reference``, ``iri``, ``iri-reference``, ``uuid``, ``uri-template``, ``json-pointer``,
``relative-json-pointer`` and ``regex`` (ECMA-262). Any other format name (``color``, ``phone``) is an annotation,
as the specification says, and is not checked. The drafts' metaschemas are known, and a ``referencing.Registry``
refuses to retrieve any other remote ``$ref`` target (no network): a row whose schema needs one scores None.
``benchmarks/bench_json_schema_suite.py`` runs JSON-Schema-Test-Suite's Draft 2020-12 cases (required,
``optional/format``, ``optional/ecmascript-regex``) through this validation and prints its pass counts and skips.

A schema can make validation take unbounded time on a model-written document (a ``pattern`` such as ``^(a+)+$``
under a backtracking regex engine, ``patternProperties``, ``uniqueItems`` over thousands of objects,
format checkers, a recursive ``$ref`` under ``anyOf`` that branches at every nesting level). So a schema that uses
any keyword of ``RISKY_KEYWORDS`` anywhere, or a regex that is not :func:`bounded_pattern`, is validated in a
persistent worker process (``json_schema_worker.py``, see :mod:`.timed_worker`); a validation that takes over
``VALIDATE_TIMEOUT_S`` kills the worker and scores 0.0. Other schemas are finite trees of plain keywords (types,
properties, required, enum, bounds, items, combinators without ``$ref``, fixed-width patterns such as
``^[0-9]{4}$`` up to ``MAX_PATTERN_CHARS``): validating costs at most schema nodes x document nodes, so they are
validated in-process while schema characters x document characters stay within ``LOCAL_WORK`` (larger pairs, such
as a 100-way ``oneOf`` over a 50k-character list, go to the worker too). Each format check is linear in the string
(a 50,000-character string takes at most ~0.1 s: ``bench_json_reward.py``), and runs in the worker.

Equality with the gold ``answer``: key order is irrelevant, array order matters, strings compare exactly, numbers
compare by value (``1 == 1.0``; JSON does not distinguish them), but booleans are not numbers (``true != 1``).
``NaN``/``Infinity`` (which Python's json accepts) are not JSON and are not extracted, and neither is a document
with a duplicate key at any depth (``{"age": 30, "age": 31}``: Python's json keeps the last value, so a hedge
would be scored by its last guess); such a document is skipped like any broken one.

Score (``correctness`` in [0, 1], or None):

* 0.0 — no JSON document could be extracted (or the input is over the size/depth limits);
* 0.1 — a JSON document that does not satisfy the schema;
* 0.3 + 0.6 x F — schema-valid but not equal to the gold, where F = matched gold leaves / (gold leaves + extra
  leaves in the prediction): at most 0.9, and padding the document with extra fields lowers F. ``{}`` earns no
  leaf credit;
* 1.0 — schema-valid and equal to the gold.
* None — the row's gold or schema is missing/unparseable (duplicate keys and ``NaN`` count)/not a valid
  schema (a regex that is not ECMA-262 counts), or jsonschema, regress or idna is not installed (a score
  without validation would be a false 0/1).

Time bound (any input, any thread): the searched text is cut at ``MAX_JSON_CHARS``; text whose bracket nesting
(outside strings) exceeds ``MAX_DEPTH`` is refused before any decoding, and so is a decoded document nested
deeper (no RecursionError); fences are found with ``str.find`` (no
regex); at most ``MAX_DECODE_ATTEMPTS`` raw_decode starts are tried and they read at most ``DECODE_BUDGET_CHARS``
characters in all. Comparison with the gold is linear in the document. So one completion costs a few tens of ms of
scanning at worst, plus at most ``VALIDATE_TIMEOUT_S`` (1 s) of validation, plus one worker start (importing
jsonschema, typically 0.2-1 s, capped by ``WORKER_START_TIMEOUT_S``) on the first call and on the call after a
kill. Schema checks and parsed golds are cached per string.

Stdlib at import; jsonschema, regress and idna are imported when a schema is first checked (in the worker, and
in-process for the plain schemas validated here).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..answer_format import FORMAT, MAX_COMPLETION_CHARS, extract_answer
from . import json_formats
from .common import column, completion_texts, register
from .json_compare import json_equal, leaf_fraction
from .json_schema_screen import (
    RISKY_KEYWORDS,
    bounded_pattern,
    check_schema,
    json_schema_class,
    patterns_bounded,
    schema_keys,
)
from .timed_worker import TimedWorker

MAX_JSON_CHARS = 50_000
MAX_DEPTH = 64
MAX_DECODE_ATTEMPTS = 500
DECODE_BUDGET_CHARS = 4 * MAX_JSON_CHARS
VALIDATE_TIMEOUT_S = 1.0
LOCAL_WORK = 20_000_000  # schema chars x document chars validated in-process (tens of ms at most); above, the worker
SCHEMA_CHECK_TIMEOUT_S = 5.0
WORKER_START_TIMEOUT_S = 60.0

SCORE_INVALID = 0.1
SCORE_VALID = 0.3
SCORE_LEAVES = 0.6

_FENCE_TAGS = ("json5", "json", "JSON", "javascript")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's dict, refusing a key that occurs twice (compared after unescaping: ``"a"`` and ``"\\u0061"``)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("duplicate key")
    return obj


# strict JSON: no NaN / Infinity, no duplicate keys (Python's json would keep the last one)
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
_MISSING = object()


# ------------------------------------------------------------------------------------------- extraction


def _brackets(text: str, start: int = 0) -> Iterator[tuple[int, int]]:
    """``(index, +1 or -1)`` for each ``[``/``{`` and ``]``/``}`` of ``text`` from ``start``, outside JSON strings."""
    in_string = escaped = False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            yield i, 1
        elif c in "]}":
            yield i, -1


def max_depth(text: str) -> int:
    """Maximum nesting of ``[``/``{`` in ``text`` outside JSON strings (a decoded document is checked again)."""
    depth = best = 0
    for _, step in _brackets(text):
        depth = max(0, depth + step)
        best = max(best, depth)
    return best


def _span_end(text: str, start: int) -> int:
    """Where the bracket opened at ``start`` closes (just after it; JSON strings skipped), or ``len(text)``."""
    depth = 0
    for i, step in _brackets(text, start):
        depth += step
        if depth == 0:
            return i + 1
    return len(text)


def _nesting(value: Any) -> int:
    """Nesting depth of a decoded JSON value (iterative: no recursion on any input)."""
    best, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)) and v:
            best = max(best, d)
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return best


def _decode_at(text: str, start: int) -> tuple[Any, int] | int:
    """The value decoded at ``start`` and its end, or (on failure) how far the decoder read."""
    try:
        return _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        return max(1, exc.pos - start)
    except (ValueError, RecursionError):
        return len(text) - start


def _scan(text: str) -> Any:
    """The last complete top-level JSON object/array in ``text``, or ``_MISSING``. A bracket that does not start a
    valid document is skipped with everything inside it: a broken document never yields a piece of itself."""
    found: Any = _MISSING
    pos = 0
    attempts = 0
    budget = DECODE_BUDGET_CHARS
    while attempts < MAX_DECODE_ATTEMPTS and budget > 0:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        attempts += 1
        decoded = _decode_at(text, start)
        if isinstance(decoded, int):
            pos = _span_end(text, start)
            budget -= max(decoded, pos - start)
        else:
            found, pos = decoded
            budget -= pos - start
    return found


def fenced_blocks(text: str) -> list[str]:
    """Bodies of the closed ```` ``` ```` fences of ``text`` in order (a ``json``-like tag dropped); linear time."""
    out = []
    pos = text.find("```")
    while pos >= 0:
        end = text.find("```", pos + 3)
        if end < 0:
            break
        body = text[pos + 3 : end].lstrip(" \t")
        for tag in _FENCE_TAGS:
            if body.startswith(tag):
                body = body[len(tag) :].lstrip(" \t")
                break
        out.append(body)
        pos = text.find("```", end + 3)
    return out


def extract_json(text: str) -> Any:
    """The JSON document of a completion (see the module docstring), or ``_MISSING``."""
    doc = _extract(text)
    return doc if doc is _MISSING or _nesting(doc) <= MAX_DEPTH else _MISSING


def _extract(text: str) -> Any:
    text = text[:MAX_COMPLETION_CHARS]
    opened = text.rfind(FORMAT.open(FORMAT.answer_tag))
    if opened >= 0 and opened > text.rfind(FORMAT.close(FORMAT.answer_tag)):
        region = text[opened + len(FORMAT.open(FORMAT.answer_tag)) :]  # an unclosed final answer: only it counts
    else:
        answer = extract_answer(text)
        region = text if answer is None else answer
    if len(region) > MAX_JSON_CHARS or max_depth(region) > MAX_DEPTH:
        return _MISSING
    fenced = fenced_blocks(region) if "```" in region else []
    if fenced:
        body = fenced[-1].strip()
        decoded = _decode_at(body, 0) if body else None
        if isinstance(decoded, tuple):
            return decoded[0]
        found = _scan(body)
        if found is not _MISSING:
            return found
    return _scan(region)


# ------------------------------------------------------------------------------------------------ schema


@lru_cache(maxsize=1024)
def local_validator(schema_text: str) -> Any:
    """An in-process validator for a schema with no risky keyword (cached); None when the worker must validate."""
    try:
        schema = json.loads(schema_text)
        if not isinstance(schema, (dict, bool)) or schema_keys(schema) & RISKY_KEYWORDS or not patterns_bounded(schema):
            return None
        import jsonschema
        import regress  # noqa: F401  (ECMA-262 patterns; without it, the worker reports no verdict)

        cls, _ = json_schema_class(jsonschema, schema, json_formats)
        check_schema(cls, schema, jsonschema, json_formats)
        return cls(schema)
    except Exception:
        return None  # no jsonschema here, or a bad schema: the worker decides


WORKER = TimedWorker(Path(__file__).with_name("json_schema_worker.py"), start_timeout=WORKER_START_TIMEOUT_S)


@lru_cache(maxsize=1024)
def schema_usable(schema_text: str) -> bool | None:
    """Whether ``schema_text`` is a usable schema (cached); None when jsonschema is unavailable in the worker."""
    try:
        if not isinstance(_DECODER.decode(schema_text), (dict, bool)):
            return False
    except (ValueError, RecursionError):
        return False
    if local_validator(schema_text) is not None:
        return True
    reply = WORKER.call({"s": schema_text}, SCHEMA_CHECK_TIMEOUT_S)
    if reply is None:
        return None if WORKER.available is False else False
    return not reply.get("bad", True)


TIMED_OUT = "timed out"


def validate(schema_text: str, doc: Any) -> bool | str | None:
    """Whether ``doc`` satisfies the schema; ``TIMED_OUT`` when validation overran (the worker was killed); None
    when the schema needs a remote ``$ref`` or the worker is unavailable. In-process only while schema characters
    x document characters stay within ``LOCAL_WORK`` (a 100-way ``oneOf`` over a 50k-character list takes
    seconds); larger pairs go to the killable worker."""
    doc_text = json.dumps(doc)
    local = local_validator(schema_text) if len(schema_text) * len(doc_text) <= LOCAL_WORK else None
    if local is not None:
        try:
            return bool(local.is_valid(doc))
        except Exception:
            return False  # e.g. RecursionError
    reply = WORKER.call({"s": schema_text, "d": doc_text}, VALIDATE_TIMEOUT_S)
    if reply is None:
        return None if WORKER.available is False else TIMED_OUT
    verdict = reply.get("v")
    return None if verdict is None else bool(verdict)


@lru_cache(maxsize=8192)
def _parse_gold(gold_text: str) -> tuple[bool, Any]:
    try:
        return True, _DECODER.decode(gold_text)
    except (ValueError, RecursionError):
        return False, None


# ------------------------------------------------------------------------------------------------ reward


def score(text: str, schema_cell: object, gold_cell: object) -> float | None:
    """Correctness of one completion text against one row (see the module docstring)."""
    if not isinstance(schema_cell, str) or not isinstance(gold_cell, str):
        return None
    ok, gold = _parse_gold(gold_cell)
    if not ok or not schema_usable(schema_cell):
        return None
    doc = extract_json(text)
    if doc is _MISSING:
        return 0.0
    valid = validate(schema_cell, doc)
    if valid is None:
        return None
    if valid == TIMED_OUT:
        return 0.0
    if not valid:
        return SCORE_INVALID
    if json_equal(gold, doc):
        return 1.0
    return SCORE_VALID + SCORE_LEAVES * min(leaf_fraction(gold, doc), 0.999)


@register("correctness")
def correctness_reward(
    prompts: object = None,
    completions: object = None,
    schema: object = None,
    answer: object = None,
    **kwargs: Any,
) -> list[float | None]:
    """Schema validity and equality with the gold ``answer`` (see the module docstring); None if n/a."""
    texts = completion_texts(completions)
    schemas = column(schema, len(texts))
    golds = column(answer, len(texts))
    out: list[float | None] = []
    for text, sch, gold in zip(texts, schemas, golds, strict=True):
        try:
            out.append(score(text, sch, gold))
        except Exception:
            out.append(0.0)
    return out


__all__ = [
    "WORKER",
    "bounded_pattern",
    "correctness_reward",
    "extract_json",
    "json_equal",
    "leaf_fraction",
    "local_validator",
    "schema_usable",
    "score",
    "validate",
]
