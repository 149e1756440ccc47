"""The task contract and the row contract, checked before any model is loaded.

``TaskSpec`` is what a task module (``task.py``) declares; ``spec_problems`` lists what a module lacks. Each task
declares ``COLUMNS = {name: Column(kind, what, required)}``, its rows' contract; ``check_rows`` finds the first row
that breaks it and says what to fix, in one line. Stdlib only.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, is_dataclass
from typing import Protocol

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


class TaskSpec(Protocol):
    """What a task module declares (``task.py``); its reward module registers ``correctness`` (``rewards/task.py``).

    ``generate_curriculum(n, seed, part)`` gives the smoke curriculum's rows: ``part`` is ``priming`` (what format
    priming teaches), ``train`` (the GRPO rows, which need a rule priming did not teach) or ``test`` (the eval split:
    questions no other part contains)."""

    NAME: str  # the task's name, as in cookiecutter.json
    INSTRUCTION: str  # what the model is asked to do, without the format
    SYSTEM_PROMPT: str  # the instruction with the answer format's
    COLUMNS: dict[str, Column]  # the row contract
    REQUIRED_COLUMNS: tuple[str, ...]
    ERRORS: tuple[type[BaseException], ...]  # errors that end a run with one line (besides bad data or config)
    TaskArguments: type  # a dataclass: the task's own settings in the config

    def normalize(self, row: dict) -> dict: ...  # a local row into the contract

    def from_hub_row(self, row: dict) -> dict: ...  # a hub dataset's row into the contract

    def user_message(self, row: dict) -> str: ...  # the prompt's user turn

    def gold_completion(self, row: dict) -> str: ...  # a well-formed completion with the gold answer

    def untagged_completion(self, row: dict) -> str: ...  # the gold answer written without the answer format

    def generate_curriculum(self, n: int, seed: int = 0, part: str = "train") -> list[dict]: ...


SPEC_TYPES = {"NAME": str, "INSTRUCTION": str, "SYSTEM_PROMPT": str, "COLUMNS": dict, "REQUIRED_COLUMNS": tuple,
              "ERRORS": tuple}
SPEC_FUNCTIONS = {"normalize": 1, "from_hub_row": 1, "user_message": 1, "gold_completion": 1,
                  "untagged_completion": 1, "generate_curriculum": 3}  # positional parameters each takes


def spec_problems(module) -> list[str]:
    """What ``module`` lacks of ``TaskSpec``, one line each (empty when it fills the spec)."""
    problems = []
    for name, kind in SPEC_TYPES.items():
        if not isinstance(getattr(module, name, None), kind):
            problems.append(f"{name} must be a {kind.__name__}")
    if isinstance(getattr(module, "COLUMNS", None), dict):
        bad = [f"COLUMNS[{key!r}] must be a Column" for key, value in module.COLUMNS.items()
               if not isinstance(value, Column)]
        problems += bad
        if not bad and getattr(module, "REQUIRED_COLUMNS", None) != required(module.COLUMNS):
            problems.append("REQUIRED_COLUMNS must be contract.required(COLUMNS)")
    if not all(isinstance(error, type) and issubclass(error, BaseException) for error in getattr(module, "ERRORS", ())):
        problems.append("ERRORS must hold exception classes")
    if not is_dataclass(getattr(module, "TaskArguments", None)):
        problems.append("TaskArguments must be a dataclass")
    for name, count in SPEC_FUNCTIONS.items():
        function = getattr(module, name, None)
        if not callable(function):
            problems.append(f"{name}() is missing")
            continue
        parameters = list(inspect.signature(function).parameters.values())
        if len(parameters) < count or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                          for p in parameters[:count]):
            problems.append(f"{name}() must take {count} positional parameter(s)")
    return problems
