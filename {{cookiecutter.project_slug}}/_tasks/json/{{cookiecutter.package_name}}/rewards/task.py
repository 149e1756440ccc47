"""JSON correctness: does the completion's JSON document satisfy the row's ``schema`` and equal its ``answer``?

Extraction: from the last ``<answer>`` block (the whole completion when there is none), the last fenced block
(```` ```json ```` or a bare ```` ``` ````) if any, else the last complete JSON object/array found by scanning with
``json.JSONDecoder().raw_decode`` (so prose before or after the document is tolerated).

Validation: jsonschema, honouring ``$schema`` (Draft 2020-12 when absent), with format checking, and a
``referencing.Registry`` that refuses to retrieve remote ``$ref`` targets (no network): a row whose schema needs
one scores None.

Equality with the gold ``answer``: key order is irrelevant, array order matters, strings compare exactly, numbers
compare by value (``1 == 1.0``; JSON does not distinguish them), but booleans are not numbers (``true != 1``).
``NaN``/``Infinity`` (which Python's json accepts) are not JSON and are not extracted.

Score (``correctness`` in [0, 1], or None):

* 0.0 — no JSON document could be extracted (or the input is over the size/depth limits);
* 0.1 — a JSON document that does not satisfy the schema;
* 0.3 + 0.6 x F — schema-valid but not equal to the gold, where F = matched gold leaves / (gold leaves + extra
  leaves in the prediction): at most 0.9, and padding the document with extra fields lowers F. ``{}`` earns no
  leaf credit;
* 1.0 — schema-valid and equal to the gold.
* None — the row's gold or schema is missing/unparseable/not a valid schema, or jsonschema is not installed
  (a score without validation would be a false 0/1).

Bounds: the searched text is cut at ``MAX_JSON_CHARS``; text whose bracket nesting exceeds ``MAX_DEPTH`` is refused
before any decoding (no RecursionError); at most ``MAX_DECODE_ATTEMPTS`` raw_decode starts are tried. Compiled
validators and parsed golds are cached per string.

Stdlib only at module level; jsonschema/referencing are imported lazily.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from ..answer_format import extract_answer
from .common import column, completion_texts, register

MAX_JSON_CHARS = 50_000
MAX_DEPTH = 64
MAX_DECODE_ATTEMPTS = 500

SCORE_INVALID = 0.1
SCORE_VALID = 0.3
SCORE_LEAVES = 0.6

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5|javascript)?[ \t]*\r?\n?(.*?)```", re.DOTALL)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)  # strict JSON: no NaN / Infinity
_MISSING = object()


# ------------------------------------------------------------------------------------------- extraction


def max_depth(text: str) -> int:
    """Maximum nesting of ``[``/``{`` in ``text`` (brackets inside strings are counted too: conservative)."""
    depth = best = 0
    for c in text:
        if c in "[{":
            depth += 1
            if depth > best:
                best = depth
        elif c in "]}" and depth:
            depth -= 1
    return best


def _decode_at(text: str, start: int) -> tuple[Any, int] | None:
    try:
        return _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None


def _scan(text: str) -> Any:
    """The last complete top-level JSON object/array in ``text``, or ``_MISSING``."""
    found: Any = _MISSING
    pos = 0
    attempts = 0
    while attempts < MAX_DECODE_ATTEMPTS:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        attempts += 1
        decoded = _decode_at(text, start)
        if decoded is None:
            pos = start + 1
        else:
            found, pos = decoded
    return found


def extract_json(text: str) -> Any:
    """The JSON document of a completion (see the module docstring), or ``_MISSING``."""
    answer = extract_answer(text)
    region = text if answer is None else answer
    if len(region) > MAX_JSON_CHARS or max_depth(region) > MAX_DEPTH:
        return _MISSING
    fenced = _FENCE.findall(region)
    if fenced:
        body = fenced[-1].strip()
        decoded = _decode_at(body, 0) if body else None
        if decoded is not None:
            return decoded[0]
        found = _scan(body)
        if found is not _MISSING:
            return found
    return _scan(region)


# ----------------------------------------------------------------------------------------------- compare


def _key(value: Any) -> Any:
    """A hashable, comparable canonical form: dict order ignored, 1 == 1.0, bool kept apart from numbers."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, (int, float)):
        return ("num", value)
    if isinstance(value, dict):
        return ("obj", frozenset((k, _key(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("arr", tuple(_key(v) for v in value))
    return ("other", repr(value))


def json_equal(a: Any, b: Any) -> bool:
    """Equality of two JSON values under the rules of the module docstring."""
    return _key(a) == _key(b)


def leaves(value: Any, prefix: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    """Path -> canonical key of every leaf (scalars and empty containers) of a JSON value."""
    if isinstance(value, dict) and value:
        out: dict[tuple[Any, ...], Any] = {}
        for k, v in value.items():
            out.update(leaves(v, (*prefix, "o", k)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, v in enumerate(value):
            out.update(leaves(v, (*prefix, "a", i)))
        return out
    return {prefix: _key(value)}


def leaf_fraction(gold: Any, pred: Any) -> float:
    """Matched gold leaves / (gold leaves + prediction leaves not in the gold), in [0, 1]."""
    g, p = leaves(gold), leaves(pred)
    matched = sum(1 for path, v in g.items() if p.get(path, _MISSING) == v)
    extra = sum(1 for path in p if path not in g)
    return matched / (len(g) + extra) if g else 0.0


# ------------------------------------------------------------------------------------------------ schema


class _NoValidator:
    """Marker for an unusable schema or a missing jsonschema."""


@lru_cache(maxsize=1024)
def compiled_validator(schema_text: str) -> Any:
    """A jsonschema validator for ``schema_text`` (cached), or a ``_NoValidator`` instance."""
    try:
        import jsonschema
        from referencing import Registry
        from referencing.exceptions import NoSuchResource
    except ImportError:
        return _NoValidator()

    def refuse(uri: str) -> Any:
        raise NoSuchResource(ref=uri)

    try:
        schema = json.loads(schema_text)
        if not isinstance(schema, (dict, bool)):
            return _NoValidator()
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        return cls(schema, registry=Registry(retrieve=refuse), format_checker=cls.FORMAT_CHECKER)
    except Exception:
        return _NoValidator()


def is_valid(validator: Any, doc: Any) -> bool | None:
    """Whether ``doc`` satisfies the schema; None when the schema cannot be applied (an unresolvable ``$ref``)."""
    try:
        return bool(validator.is_valid(doc))
    except Exception as exc:
        if type(exc).__name__ in ("Unresolvable", "Unretrievable", "NoSuchResource", "_WrappedReferencingError"):
            return None  # a remote/missing $ref: the row cannot be checked offline
        return False  # pathological pattern, recursion: not valid


@lru_cache(maxsize=8192)
def _parse_gold(gold_text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(gold_text)
    except (ValueError, RecursionError):
        return False, None


# ------------------------------------------------------------------------------------------------ reward


def score(text: str, schema_cell: object, gold_cell: object) -> float | None:
    """Correctness of one completion text against one row (see the module docstring)."""
    if not isinstance(schema_cell, str) or not isinstance(gold_cell, str):
        return None
    ok, gold = _parse_gold(gold_cell)
    validator = compiled_validator(schema_cell)
    if not ok or isinstance(validator, _NoValidator):
        return None
    doc = extract_json(text)
    if doc is _MISSING:
        return 0.0
    valid = is_valid(validator, doc)
    if valid is None:
        return None
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


__all__ = ["correctness_reward", "extract_json", "json_equal", "leaf_fraction", "score"]
