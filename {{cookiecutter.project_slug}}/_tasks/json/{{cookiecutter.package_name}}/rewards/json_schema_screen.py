"""Which JSON schemas can be validated in-process in bounded time, and which must go to the killable worker.

A schema is safe in-process when it uses no keyword of ``RISKY_KEYWORDS`` anywhere (checked over every dict key,
property names included: conservative) and every ``pattern``/``patternProperties`` regex is
:func:`bounded_pattern`. Validation of such a schema costs at most schema nodes x document nodes.

Stdlib only.
"""

from __future__ import annotations

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


def json_schema_class(jsonschema: Any, schema: Any, rules: Any) -> Any:
    """The jsonschema validator class for ``schema`` (its ``$schema``, Draft 2020-12 when absent) with JSON Schema's
    own meaning where Python's differs, from ``rules`` (the ``json_formats`` module): ``pattern``,
    ``patternProperties`` and ``additionalProperties`` match ECMA-262 regexes, ``multipleOf`` is exact decimal
    arithmetic; and a format checker of every Draft 2020-12 format (``rules.FORMATS``, nothing else)."""
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    error = jsonschema.ValidationError

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Any:
        if validator.is_type(instance, "string") and not rules.ecma_search(patrn, instance):
            yield error(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
        if validator.is_type(instance, "object"):
            for patrn, sub in patterns.items():
                for key, value in instance.items():
                    if rules.ecma_search(patrn, key):
                        yield from validator.descend(value, sub, path=key, schema_path=patrn)

    def additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Any:
        if not validator.is_type(instance, "object"):
            return
        named, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
        extras = [k for k in instance if k not in named and not any(rules.ecma_search(p, k) for p in patterns)]
        if validator.is_type(extra, "object"):
            for key in extras:
                yield from validator.descend(instance[key], extra, path=key)
        elif extra is False and extras:
            yield error(f"additional properties are not allowed ({sorted(extras)!r})")

    def multiple_of(validator: Any, factor: Any, instance: Any, schema: Any) -> Any:
        if validator.is_type(instance, "number") and not rules.is_multiple(instance, factor):
            yield error(f"{instance!r} is not a multiple of {factor!r}")

    overrides = {"pattern": pattern, "multipleOf": multiple_of}
    if "patternProperties" in base.VALIDATORS:
        overrides.update(patternProperties=pattern_properties, additionalProperties=additional_properties)
    checker = jsonschema.FormatChecker(formats=())
    for name in rules.FORMATS:
        checker.checks(name)(lambda value, name=name: rules.check_format(name, value))
    return jsonschema.validators.extend(base, overrides), checker


def check_schema(cls: Any, schema: Any, jsonschema: Any, rules: Any) -> None:
    """Raise when ``schema`` is not a schema of its draft. Its regexes must be ECMA-262 (the metaschema's ``regex``
    format); the metaschema's other formats (``uri-reference`` for ``$id``) are not asserted, as jsonschema's own
    check leaves them without optional packages: a sloppy ``$id`` does not make a row unusable."""
    regexes = jsonschema.FormatChecker(formats=())
    regexes.checks("regex")(rules.is_regex)
    cls.check_schema(schema, format_checker=regexes)
