"""JSON correctness: comparing a schema-valid document with the gold ``answer`` (the rules are in the docstring of
:mod:`.task`): equality with key order irrelevant, array order kept, numbers by value and booleans apart from
numbers, and the fraction of the gold's leaves a document matches. Linear in the documents; stdlib only."""

from __future__ import annotations

from typing import Any

_ABSENT = object()  # a path the prediction lacks: equal to no leaf


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
    matched = sum(1 for path, v in g.items() if p.get(path, _ABSENT) == v)
    extra = sum(1 for path in p if path not in g)
    return matched / (len(g) + extra) if g else 0.0
