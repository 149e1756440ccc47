"""The JSON task's known-wrong completions of a row, for the verifier audit (``audit.py``).

Each is the row's gold document with one thing wrong: one value changed (the first leaf: a number plus one, a text
with a letter added, a boolean flipped, a list one item short), a required key removed, a key duplicated (the first
key written twice, first with a changed value: a parser that keeps the last value reads the gold), and the gold
document wrapped in a JSON string. None of them is the expected document, so a correctness reward must score each
below the gold (partial credit is fine). Stdlib only.
"""

from __future__ import annotations

import json

from .task import gold_completion


def changed(value: object) -> object:
    """``value`` with its first leaf changed."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [changed(value[0]), *value[1:]] if value and isinstance(value[0], dict | list) else value[:-1] or [0]
    if isinstance(value, dict) and value:
        key = next(iter(value))
        return {**value, key: changed(value[key])}
    return 0 if value is None else None


def with_document(row: dict, text: str) -> str:
    gold = gold_completion(row)
    head, _, _ = gold.rpartition("<answer>")
    return f"{head}<answer>\n{text}\n</answer>"


def wrong_completions(row: dict) -> list[tuple[str, str]] | None:
    """(variant, completion) pairs, each a wrong document for ``row``; None when the gold is not JSON."""
    try:
        gold = json.loads(row["answer"])
        schema = json.loads(row.get("schema") or "{}")
    except (TypeError, ValueError):
        return None
    dump = json.dumps
    out = [("one value changed", dump(changed(gold)))]
    if isinstance(gold, dict) and gold:
        required = schema.get("required") if isinstance(schema, dict) else None
        names = [key for key in (required if isinstance(required, list) else []) if key in gold] or list(gold)
        out.append(("required key removed", dump({k: v for k, v in gold.items() if k != names[0]})))
        first = next(iter(gold))
        duplicate = dump(first) + ": " + dump(changed(gold[first])) + ", "
        out.append(("duplicated key", "{" + duplicate + dump(gold)[1:]))
    out.append(("gold as a string", dump(dump(gold))))
    return [(name, with_document(row, text)) for name, text in out]
