"""The row contract: which columns a task's rows carry and what each must hold, checked before any model is loaded.

Each task module declares ``COLUMNS = {name: Column(kind, what, required)}``; ``check_rows`` finds the first row that
breaks it and says what to fix, in one line. Stdlib only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

TEXT = "text"
TEXT_OR_NUMBER = "text or number"
TEXT_LIST = "list of text"
JSON_TEXT = "JSON text"
KINDS = {
    TEXT: "a non-empty string",
    TEXT_OR_NUMBER: "a non-empty string or a number",
    TEXT_LIST: "a non-empty list of non-empty strings",
    JSON_TEXT: "a string holding a JSON document",
}


@dataclass(frozen=True)
class Column:
    """One column of the row contract: its kind (a key of ``KINDS``), what it holds, and whether rows need it."""

    kind: str
    what: str
    required: bool = True


def required(columns: Mapping[str, Column]) -> tuple[str, ...]:
    return tuple(name for name, column in columns.items() if column.required)


def _shown(value: object) -> str:
    text = repr(value)
    return f"{text[:60]}... ({type(value).__name__})" if len(text) > 60 else f"{text} ({type(value).__name__})"


def value_problem(kind: str, value: object) -> str | None:
    """What is wrong with one value of a column of ``kind`` (None when it is fine)."""
    if value is None:
        return "is missing (null)"
    if kind == TEXT_OR_NUMBER and isinstance(value, int | float) and not isinstance(value, bool):
        return None
    if kind in (TEXT, TEXT_OR_NUMBER, JSON_TEXT):
        if not isinstance(value, str):
            return f"must be {KINDS[kind]}, got {_shown(value)}"
        if not value.strip():
            return "is an empty string"
        if kind == JSON_TEXT:
            try:
                json.loads(value)
            except ValueError as error:
                return f"must be {KINDS[kind]}, got text that is not JSON ({error})"
        return None
    if kind == TEXT_LIST:
        if isinstance(value, str):
            return f"must be {KINDS[kind]}, got a string that is not a JSON list: {_shown(value)}"
        if not isinstance(value, list | tuple):
            return f"must be {KINDS[kind]}, got {_shown(value)}"
        if not value:
            return f"is an empty list (it must be {KINDS[kind]})"
        for item in value:
            if not isinstance(item, str) or not item.strip():
                return f"must be {KINDS[kind]}, got an item {_shown(item)}"
        return None
    raise ValueError(f"unknown column kind {kind!r}; one of {', '.join(KINDS)}")


def row_problem(row: Mapping, columns: Mapping[str, Column]) -> str | None:
    """The first broken column of one row, as ``"<column> <what is wrong>"``."""
    for name, column in columns.items():
        value = row.get(name)
        if not column.required and (value is None or value == ""):
            continue
        problem = value_problem(column.kind, value)
        if problem:
            return f"{name} {problem}"
    return None


def describe(columns: Mapping[str, Column]) -> str:
    return ", ".join(f"{name} ({column.kind}{'' if column.required else ', optional'})"
                     for name, column in columns.items())


def check_rows(rows: Iterable[Mapping], columns: Mapping[str, Column], source: str) -> str | None:
    """The one-line problem with ``rows`` (the first bad one, counted from 1, and how many are bad), or None when
    all are fine."""
    first = None
    bad = total = 0
    for index, row in enumerate(rows):
        total += 1
        problem = row_problem(row, columns)
        if problem:
            bad += 1
            first = first or (index, problem)
    if first is None:
        return None
    index, problem = first
    return (f"dataset {source!r}, row {index + 1}: {problem} ({bad} of {total} rows break the row contract: "
            f"{describe(columns)}); fix or drop those rows")
