"""The JSON task's hack catalogue: families of wrong completions derived from a row, for the verifier audit
(``audit.py``) and the in-training check.

Each family is the row's gold document with one thing wrong, built to expose one way a home-made JSON reward is lax
(the reward it exposes in brackets):

* ``one value changed`` (the first leaf: a number plus one, a text with a letter added, a boolean flipped, a list
  one item short) and ``number changed`` (the first number or boolean leaf): schema-valid, wrong documents (a
  reward that only validates, or only compares the string leaves);
* ``extra key`` (the gold plus a key) and ``required key removed``: a superset and a subset of the gold (a reward
  that checks the gold's keys only, or the keys the prediction has);
* ``leaves as strings``: every number and boolean written as text (a reward that compares leaves as text);
* ``duplicated key`` (the first key written twice, first with a changed value: a parser that keeps the last value
  reads the gold) and ``gold as a string`` (the document inside a JSON string);
* ``right document in the reasoning`` and ``right document after the answer block``: a wrong document in the
  answer block, the gold elsewhere in the text (a reward that searches the whole text, or takes its last document).

None of them is the expected document, so a correctness reward must score each below the gold (partial credit is
bounded by the audit's ``audit_max_credit``). Stdlib only.
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


def number_changed(value: object) -> tuple[object, bool]:
    """``value`` with its first number or boolean leaf changed, and whether it had one."""
    if isinstance(value, bool | int | float):
        return changed(value), True
    items = list(value.items()) if isinstance(value, dict) else list(enumerate(value)) if isinstance(value,
                                                                                                    list) else []
    for key, item in items:
        new, found = number_changed(item)
        if found:
            if isinstance(value, dict):
                return {**value, key: new}, True
            return [*value[:key], new, *value[key + 1:]], True
    return value, False


def as_strings(value: object) -> object:
    """``value`` with every number and boolean leaf written as a string (``34`` -> ``"34"``, true -> ``"true"``)."""
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        return {key: as_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_strings(item) for item in value]
    return value


def with_document(row: dict, text: str, note: str = "", after: str = "") -> str:
    """The gold completion with ``text`` as its document, ``note`` at the end of its reasoning and ``after`` written
    after its answer block."""
    head, _, _ = gold_completion(row).rpartition("<answer>")
    if note:
        body, tag, rest = head.rpartition("</reasoning>")
        head = f"{body.rstrip()}\n{note}\n{tag}{rest}" if tag else f"{head}{note}\n"
    return f"{head}<answer>\n{text}\n</answer>" + (f"\n{after}" if after else "")


def _object_families(gold: dict, schema: object) -> list[tuple[str, str]]:
    dump = json.dumps
    required = schema.get("required") if isinstance(schema, dict) else None
    names = [key for key in (required if isinstance(required, list) else []) if key in gold] or list(gold)
    first = next(iter(gold))
    extra = "note" if "note" not in gold else "note_"
    return [
        ("extra key", dump({**gold, extra: "checked"})),
        ("required key removed", dump({k: v for k, v in gold.items() if k != names[0]})),
        ("duplicated key", "{" + dump(first) + ": " + dump(changed(gold[first])) + ", " + dump(gold)[1:]),
    ]


def wrong_completions(row: dict) -> list[tuple[str, str]] | None:
    """(family, completion) pairs, each a wrong document for ``row``; None when the gold is not JSON."""
    try:
        gold = json.loads(row["answer"])
        schema = json.loads(row.get("schema") or "{}")
    except (TypeError, ValueError):
        return None
    dump = json.dumps
    wrong = dump(changed(gold))
    out = [("one value changed", wrong)]
    number, found = number_changed(gold)
    if found:
        out.append(("number changed", dump(number)))
    if as_strings(gold) != gold:
        out.append(("leaves as strings", dump(as_strings(gold))))
    if isinstance(gold, dict) and gold:
        out += _object_families(gold, schema)
    out.append(("gold as a string", dump(dump(gold))))
    docs = [(name, with_document(row, text)) for name, text in out]
    docs.append(("right document in the reasoning", with_document(row, wrong, note=dump(gold))))
    docs.append(("right document after the answer block", with_document(row, wrong, after=dump(gold))))
    return docs


# ------------------------------------------------------------------ the in-training check (training/recheck.py)


def same(a: object, b: object) -> bool:
    """JSON equality with exact types: a boolean is not a number, numbers compare by value, key order is free."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


_DECODER = json.JSONDecoder(object_pairs_hook=lambda pairs: _unique(pairs), parse_constant=lambda name: _refuse(name))
_FOUND = object()


def _unique(pairs: list) -> dict:
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValueError("duplicate key")
    return dict(pairs)


def _refuse(name: str) -> None:
    raise ValueError(name)


def _document(text: str) -> object:
    """The last JSON document of the answer block (the whole text without one; the last fenced block when it has
    one), written independently of the reward: prose around it is allowed, as the reward allows it; a document with
    a duplicate key, NaN or Infinity is none. Raises ValueError when there is none."""
    from .answer_format import extract_answer

    body = extract_answer(text)
    body = (text if body is None else body)[:50_000]
    if body.count("```") >= 2:
        body = body.rsplit("```", 2)[1].partition("\n")[2] if "\n" in body.rsplit("```", 2)[1] else ""
    found, at, attempts = _FOUND, 0, 0
    while attempts < 500:
        starts = [i for i in (body.find("{", at), body.find("[", at)) if i >= 0]
        if not starts:
            break
        attempts, start = attempts + 1, min(starts)
        try:
            found, at = _DECODER.raw_decode(body, start)
        except (ValueError, RecursionError):
            at = start + 1
    if found is _FOUND:
        raise ValueError("no JSON document")
    return found


def _valid(schema_text: str, doc: object) -> bool | None:
    """A full JSON Schema validation with format checking: in-process for a schema without risky keywords and a
    pair within the reward's ``LOCAL_WORK``, else the reward's worker, which is killed when it overruns."""
    from .rewards.task import LOCAL_WORK, local_validator, validate

    if len(schema_text) * len(json.dumps(doc)) > LOCAL_WORK or local_validator(schema_text) is None:
        verdict = validate(schema_text, doc)
        return verdict if verdict is None or isinstance(verdict, bool) else False
    import jsonschema

    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(doc)


def recheck(texts: list[str], rows: list[dict], reward: object = None) -> list[bool | None]:
    """An independent verdict on completions a reward gave full credit: the answer's last document (no duplicate
    key), validated against the schema with format checking, and compared with the gold with exact types."""
    out: list[bool | None] = []
    for text, row in zip(texts, rows, strict=True):
        try:
            gold, schema = json.loads(row["answer"]), str(row["schema"])
        except (KeyError, TypeError, ValueError):
            out.append(None)
            continue
        try:
            doc = _document(text)
        except (ValueError, RecursionError):
            out.append(False)
            continue
        valid = _valid(schema, doc)
        out.append(None if valid is None else bool(valid) and same(doc, gold))
    return out
