"""Which JSON schemas can be validated in-process in bounded time, and which must go to the killable worker.

A schema is safe in-process when it uses no keyword of ``RISKY_KEYWORDS`` anywhere (checked over every dict key,
property names included: conservative) and every ``pattern``/``patternProperties`` regex is
:func:`bounded_pattern`. Validation of such a schema costs at most schema nodes x document nodes.

Stdlib only.
"""

from __future__ import annotations

import re as _re
from typing import Any

MAX_DEPTH = 64

RISKY_KEYWORDS = frozenset(
    "uniqueItems format contentEncoding contentMediaType contentSchema $ref $dynamicRef $recursiveRef dependencies "
    "dependentSchemas unevaluatedProperties unevaluatedItems".split()
)
MAX_PATTERN_CHOICES = 64  # a regex is matched in-process only when bounded this way (see bounded_pattern)
MAX_PATTERN_REPEAT = 100
MAX_PATTERN_CHARS = 200  # longer regexes go to the worker (an 800-character "bounded" one took seconds)


def bounded_pattern(pattern: object) -> bool:
    """Whether Python's ``re`` matches ``pattern`` in time linear in the text (so no worker is needed).

    Accepted: literals, classes, anchors, groups and alternations, with repeats only of a single character or class
    and at most ``MAX_PATTERN_REPEAT`` times (``[0-9]{4}``, ``^A-[0-9]{4}$``), the product of the choices of all
    repeats and alternations at most ``MAX_PATTERN_CHOICES``. Anything else (``+``, ``*``, nested repeats,
    backreferences, lookarounds) is left to the worker.
    """
    if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN_CHARS:
        return False
    try:
        try:
            from re import _parser as sre_parse  # Python >= 3.11
        except ImportError:  # pragma: no cover - Python 3.10
            import sre_parse  # type: ignore[no-redef]
        choices = _choices(sre_parse.parse(pattern).data, sre_parse)
    except Exception:
        return False
    return choices is not None and choices <= MAX_PATTERN_CHOICES


def _choices(items: list[Any], sre: Any) -> int | None:
    c = sre.constants if hasattr(sre, "constants") else sre
    single = {c.LITERAL, c.NOT_LITERAL, c.IN, c.ANY, c.CATEGORY}
    total = 1
    for op, av in items:
        if op in single or op == c.AT:
            continue
        if op in (c.MAX_REPEAT, c.MIN_REPEAT):
            low, high, sub = av
            if high == c.MAXREPEAT or high > MAX_PATTERN_REPEAT or len(sub.data) != 1 or sub.data[0][0] not in single:
                return None
            total *= high - low + 1
        elif op == c.SUBPATTERN:
            inner = _choices(av[-1].data, sre)
            if inner is None:
                return None
            total *= inner
        elif op == c.BRANCH:
            arms = [_choices(arm.data, sre) for arm in av[1]]
            if any(a is None for a in arms):
                return None
            total *= sum(arms)  # type: ignore[arg-type]
        else:
            return None
        if total > MAX_PATTERN_CHOICES:
            return None
    return total


def patterns_bounded(value: Any, depth: int = 0) -> bool:
    """Every ``pattern`` and ``patternProperties`` regex anywhere in a parsed schema is :func:`bounded_pattern`."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, dict):
        for key, v in value.items():
            if key == "pattern" and not bounded_pattern(v):
                return False
            if key == "patternProperties" and not (isinstance(v, dict) and all(bounded_pattern(k) for k in v)):
                return False
            if not patterns_bounded(v, depth + 1):
                return False
    elif isinstance(value, list):
        return all(patterns_bounded(v, depth + 1) for v in value)
    return True


def schema_keys(value: Any, depth: int = 0) -> set[str]:
    """Every dict key anywhere in a parsed schema (property names too: conservative)."""
    if depth > MAX_DEPTH:
        return set(RISKY_KEYWORDS)
    if isinstance(value, dict):
        out = set(value)
        for v in value.values():
            out |= schema_keys(v, depth + 1)
        return out
    if isinstance(value, list):
        out = set()
        for v in value:
            out |= schema_keys(v, depth + 1)
        return out
    return set()


# ------------------------------------------------------------------------------------------- JSON Schema semantics


def ecma_regex(pattern: str) -> str:
    r"""``pattern`` as JSON Schema means it (ECMA-262), for Python's ``re`` with ``re.ASCII`` (so ``\d`` is [0-9], not
    Arabic-Indic or full-width digits): ``$`` matches only at the very end, not before a final newline."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern.startswith("]", i + 1) or pattern.startswith("^]", i + 1):  # a literal ] first in the class
                out.append(pattern[i : i + (2 if pattern[i + 1] == "]" else 3)])
                i += 2 if pattern[i + 1] == "]" else 3
                continue
        elif c == "$":
            c = "\\Z"
        out.append(c)
        i += 1
    return "".join(out)


def _date_time(value: object) -> bool:
    return not isinstance(value, str) or (_RFC3339.fullmatch(value) is not None and _calendar(value[:10]))


def _calendar(day: str) -> bool:
    import datetime

    try:
        datetime.date.fromisoformat(day)
        return True
    except ValueError:
        return False


def _matches(rx: Any) -> Any:
    return lambda value: not isinstance(value, str) or rx.fullmatch(value) is not None


_TIME = r"(?:[01]\d|2[0-3]):[0-5]\d:(?:[0-5]\d|60)(?:\.\d+)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)"
_DURATION = r"P(?!\Z)(?:\d+Y)?(?:\d+M)?(?:\d+W)?(?:\d+D)?(?:T(?=\d)(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_RFC3339 = _re.compile(r"\d{4}-\d{2}-\d{2}[Tt]" + _TIME, _re.ASCII)
# Formats jsonschema leaves unchecked unless optional packages are installed: checked here (linear regexes)
FORMATS = {
    "date-time": _date_time,
    "time": _matches(_re.compile(_TIME, _re.ASCII)),
    "duration": _matches(_re.compile(_DURATION, _re.ASCII)),
    "hostname": _matches(_re.compile(r"(?=.{1,253}\Z)" + _LABEL + r"(?:\." + _LABEL + ")*", _re.ASCII)),
    "uri": _matches(_re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|\\^`]*", _re.ASCII)),
}


def json_schema_class(jsonschema: Any, schema: Any) -> Any:
    """The jsonschema validator class for ``schema`` (its ``$schema``, Draft 2020-12 when absent), with ``pattern``
    matched as JSON Schema means it (:func:`ecma_regex`), and a format checker that also checks ``FORMATS``."""
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Any:
        if validator.is_type(instance, "string") and not _re.search(ecma_regex(patrn), instance, _re.ASCII):
            yield jsonschema.ValidationError(f"{instance!r} does not match {patrn!r}")

    cls = jsonschema.validators.extend(base, {"pattern": pattern})
    checker = jsonschema.FormatChecker()
    checker.checkers = dict(base.FORMAT_CHECKER.checkers)
    for name, check in FORMATS.items():
        if name not in checker.checkers:
            checker.checks(name)(check)
    return cls, checker
