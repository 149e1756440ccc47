"""JSON correctness: extraction, schema validation, comparison with the gold, scoring, robustness."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import pytest
from _pkg import mod
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

json_task = mod("rewards.task")
correctness = mod("rewards").REWARD_FUNCS["correctness"]
DATA = Path(__file__).resolve().parent.parent / "data" / "sample.jsonl"

SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0},
            "role": {"enum": ["admin", "user"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name", "age", "role"],
    }
)
GOLD = json.dumps({"name": "Ann Lee", "age": 31, "role": "admin", "tags": ["x", "y"]})


def wrap(body: str) -> str:
    return f"<reasoning>\nThe text names Ann Lee, 31, an admin.\n</reasoning>\n<answer>\n{body}\n</answer>"


def one(text: str, schema: str = SCHEMA, gold: str = GOLD) -> float | None:
    return correctness(completions=[text], schema=[schema], answer=[gold])[0]


def test_sample_gold_scores_one() -> None:
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    assert len(rows) >= 20
    out = correctness(
        completions=[wrap(r["answer"]) for r in rows],
        schema=[r["schema"] for r in rows],
        answer=[r["answer"] for r in rows],
        question=[r["question"] for r in rows],
    )
    assert out == [1.0] * len(rows)


@pytest.mark.parametrize(
    "text",
    [
        wrap(GOLD),
        wrap('{"tags": ["x", "y"], "role": "admin", "age": 31.0, "name": "Ann Lee"}'),  # order, 31 == 31.0
        wrap('```json\n{"name": "Ann Lee", "age": 31, "role": "admin", "tags": ["x", "y"]}\n```'),
        wrap('```\n{"name": "Ann Lee", "age": 31, "role": "admin", "tags": ["x", "y"]}\n```\nHope that helps.'),
        wrap('Here it is: {"name": "Ann Lee", "age": 31, "role": "admin", "tags": ["x", "y"]} -- done'),
        wrap('{"name": "Bob", "age": 2, "role": "user"}\nCorrection: ' + GOLD),  # last document wins
        'Sure! {"name": "Ann Lee", "age": 31, "role": "admin", "tags": ["x", "y"]}',  # no answer block
        [{"role": "assistant", "content": wrap(GOLD)}],
    ],
)
def test_correct_documents_score_one(text: object) -> None:
    assert correctness(completions=[text], schema=[SCHEMA], answer=[GOLD]) == [1.0]


def test_scoring_ladder() -> None:
    wrong_one = one(wrap('{"name": "Ann Lee", "age": 30, "role": "admin", "tags": ["x", "y"]}'))
    wrong_all = one(wrap('{"name": "Bob", "age": 3, "role": "user", "tags": []}'))
    padded = one(wrap('{"name": "Ann Lee", "age": 31, "role": "admin", "tags": ["x", "y"], "a": 1, "b": 2}'))
    invalid = one(wrap('{"name": "Ann Lee", "age": "31", "role": "admin", "tags": ["x", "y"]}'))
    bad_enum = one(wrap('{"name": "Ann Lee", "age": 31, "role": "root"}'))
    empty_obj = one(wrap("{}"))
    nothing = one(wrap("I could not find it."))
    assert nothing == 0.0
    assert invalid == bad_enum == empty_obj == json_task.SCORE_INVALID
    assert json_task.SCORE_VALID <= wrong_all < wrong_one < 1.0
    assert wrong_one <= 0.9 and padded <= 0.9
    assert padded < 1.0


def test_empty_object_gets_no_equality_credit() -> None:
    loose = json.dumps({"type": "object"})
    assert one(wrap("{}"), schema=loose) == json_task.SCORE_VALID
    assert one(wrap("{}"), schema=loose, gold="{}") == 1.0


def test_bool_is_not_a_number() -> None:
    loose = json.dumps({"type": "object"})
    assert one(wrap('{"ok": true}'), schema=loose, gold='{"ok": 1}') < 1.0
    assert one(wrap('{"n": 1.0}'), schema=loose, gold='{"n": 1}') == 1.0
    assert json_task.json_equal([1, {"a": None}], [1.0, {"a": None}])
    assert not json_task.json_equal([1, 2], [2, 1])
    assert not json_task.json_equal(False, 0)
    assert one(wrap('{"n": NaN}'), schema=loose, gold='{"n": 1}') == 0.0  # not JSON


def test_schema_dialects_and_refs() -> None:
    draft7 = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "required": ["a"]})
    assert one(wrap('{"a": 1}'), schema=draft7, gold='{"a": 1}') == 1.0
    assert one(wrap('{"b": 1}'), schema=draft7, gold='{"a": 1}') == json_task.SCORE_INVALID
    pos = {"type": "integer", "minimum": 1}
    props = {"n": {"$ref": "#/$defs/pos"}}
    local = json.dumps({"$defs": {"pos": pos}, "type": "object", "properties": props})
    assert one(wrap('{"n": 0}'), schema=local, gold='{"n": 2}') == json_task.SCORE_INVALID
    assert one(wrap('{"n": 2}'), schema=local, gold='{"n": 2}') == 1.0
    remote = json.dumps({"$ref": "https://example.com/never-fetched.json"})
    start = time.perf_counter()
    assert one(wrap('{"n": 2}'), schema=remote, gold='{"n": 2}') is None  # no network, not checkable
    assert time.perf_counter() - start < 1.0


def test_not_applicable_rows_are_none() -> None:
    out = correctness(
        completions=[wrap(GOLD)] * 5,
        schema=[SCHEMA, "not json", json.dumps({"type": 12}), None, SCHEMA],
        answer=["{bad", GOLD, GOLD, GOLD, None],
    )
    assert out == [None] * 5


@contextlib.contextmanager
def without(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *modules: str):
    """The reward with ``modules`` not installed, in-process and in a worker of its own; yields that worker. After
    it, the real reward is back and credits the gold again."""
    import builtins

    real_import = builtins.__import__

    def fake_import(name: str, *args: object, **kwargs: object) -> object:
        if name.split(".")[0] in modules:
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    (tmp_path / f"{modules[0]}.py").write_text(f"raise ImportError('{modules[0]} is not installed')\n")
    worker = json_task.TimedWorker(json_task.WORKER.script, extra_path=(str(tmp_path),))
    json_task.schema_usable.cache_clear()
    json_task.local_validator.cache_clear()
    monkeypatch.setattr(json_task, "WORKER", worker)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    try:
        yield worker
    finally:
        monkeypatch.undo()
        worker.close()
        json_task.schema_usable.cache_clear()
        json_task.local_validator.cache_clear()
    assert one(wrap(GOLD)) == 1.0


def test_without_jsonschema_rows_are_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with without(monkeypatch, tmp_path, "jsonschema", "referencing") as worker:
        assert one(wrap(GOLD)) is None
        assert one(wrap('{"s": "a"}'), schema=CATASTROPHIC, gold='{"s": "a"}') is None
        assert worker.available is False and "not installed" in worker.error


def test_schema_check_is_cached() -> None:
    json_task.schema_usable.cache_clear()
    correctness(completions=[wrap(GOLD)] * 8, schema=[SCHEMA] * 8, answer=[GOLD] * 8)
    info = json_task.schema_usable.cache_info()
    assert info.misses == 1 and info.hits == 7


@pytest.mark.parametrize(
    "body",
    [
        "[" * 100_000,
        "{" * 100_000 + "}" * 100_000,
        '{"a":' * 50_000 + "1" + "}" * 50_000,
        "[" * 63 + "]" * 63,
        '{"a": "' + "x" * 2_000_000 + '"}',
        "{" * 5_000 + "x" * 1_000,
        '{"n": ' + "9" * 50_000 + "}",
        '{"a": 1} ' * 20_000,
        "```" + " " * 49_000 + "x",  # an unclosed fence after a run of spaces (quadratic for a lazy regex)
        "```json\n" * 6_000,
        "[1, " * 60 + "x" * 49_000,  # every decode start reads to the end and fails
        '{"a": [1, 2] ' * 3_500,
        '{"name": 1, "name": 2} ' * 2_100,  # every document has a duplicate key
        "{" + '"k": 1, ' * 6_000 + '"k": 1}',  # one wide object, its duplicate last
        "[" + '{"a": 1, "a": 1}, ' * 2_500 + "1]",
        '{"a":' * 60 + '{"b": 1, "b": 1}' + "}" * 60,
    ],
)
def test_huge_and_deep_inputs_are_bounded(body: str) -> None:
    correctness(completions=[wrap(GOLD)], schema=[SCHEMA], answer=[GOLD])  # the worker is started
    start = time.perf_counter()
    out = correctness(completions=[wrap(body), body], schema=[SCHEMA] * 2, answer=[GOLD] * 2)
    assert all(v is not None and 0.0 <= v < 1.0 for v in out)
    assert time.perf_counter() - start < 2.0


junk = st.one_of(
    st.text(max_size=200),
    st.text(alphabet='{}[]":,0123456789abc \n`', max_size=120).map(wrap),
    st.none(),
    st.integers(),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.lists(st.fixed_dictionaries({"role": st.just("assistant"), "content": st.text(max_size=80)}), max_size=2),
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
        max_leaves=10,
    ).map(lambda v: wrap(json.dumps(v))),
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(junk, max_size=5))
def test_never_raises(completions: list[object]) -> None:
    n = len(completions)
    out = correctness(completions=completions, schema=[SCHEMA] * n, answer=[GOLD] * n)
    assert len(out) == n
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in out)


# A per-completion bound for validation: VALIDATE_TIMEOUT_S, plus one worker restart after a kill (generous margin).
BOUND = json_task.VALIDATE_TIMEOUT_S + 10.0
CATASTROPHIC = json.dumps({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}})


@pytest.mark.parametrize(
    ("schema", "doc"),
    [
        (CATASTROPHIC, {"s": "a" * 30 + "!"}),  # exponential backtracking in Python's re
        (json.dumps({"type": "object", "patternProperties": {"^(a|aa)+$": {"type": "integer"}}}), {"a" * 40 + "!": 1}),
        (json.dumps({"type": "object", "propertyNames": {"pattern": "^(a*)*b$"}}), {"a" * 40: 1}),
        (json.dumps({"type": "array", "uniqueItems": True}), [{"k": [i]} for i in range(2_000)]),
    ],
)
def test_pathological_schema_patterns_are_bounded(schema: str, doc: object) -> None:
    gold = json.dumps(doc)
    assert one(wrap(GOLD), schema=schema, gold=gold) is not None  # the worker is warm, the schema is usable
    start = time.perf_counter()
    out = one(wrap(json.dumps(doc)), schema=schema, gold=gold)
    took = time.perf_counter() - start
    assert out in (0.0, 1.0)  # 0.0 when validation was cut off
    assert took < BOUND
    # the worker answers again afterwards, right and wrong documents as before
    assert one(wrap(GOLD)) == 1.0
    assert one(wrap('{"name": 5}')) == json_task.SCORE_INVALID


def test_catastrophic_pattern_scores_zero_and_kills_the_worker() -> None:
    one(wrap(GOLD))
    restarts = json_task.WORKER.restarts
    start = time.perf_counter()
    assert one(wrap(json.dumps({"s": "a" * 30 + "!"})), schema=CATASTROPHIC, gold='{"s": "aaa"}') == 0.0
    assert time.perf_counter() - start < BOUND
    assert json_task.WORKER.restarts == restarts + 1
    assert one(wrap('{"s": "aaa"}'), schema=CATASTROPHIC, gold='{"s": "aaa"}') == 1.0
    assert one(wrap('{"s": "aab"}'), schema=CATASTROPHIC, gold='{"s": "aaa"}') == json_task.SCORE_INVALID


def test_risky_schemas_go_to_the_worker() -> None:
    assert json_task.local_validator(SCHEMA) is not None  # plain keywords: validated in-process
    for risky in (CATASTROPHIC, json.dumps({"$defs": {"n": {}}, "$ref": "#/$defs/n"}), json.dumps({"format": "email"})):
        assert json_task.local_validator(risky) is None
    branch = {"type": "array", "items": {"$ref": "#/$defs/n"}}
    recursive = json.dumps({"$defs": {"n": {"anyOf": [branch, {**branch, "minItems": 1}]}}, "$ref": "#/$defs/n"})
    doc = "[" * 40 + '"x"' + "]" * 40  # both branches at every level: 2^40 descents in-process
    start = time.perf_counter()
    assert one(wrap(doc), schema=recursive, gold="[]") == 0.0
    assert time.perf_counter() - start < BOUND


@pytest.mark.parametrize(
    ("pattern", "bounded"),
    [
        ("^A-[0-9]{4}$", True),
        ("^[0-9]{4}-[0-9]{2}-[0-9]{2}$", True),
        ("^(?:red|green|blue)$", True),
        ("^[0-9]{1,5}[0-9]{1,5}[0-9]{1,5}$", False),  # 5 x 5 x 5 choices: over the budget
        ("^(a+)+$", False),
        ("^[a-z]+@[a-z]+$", False),  # unbounded repeats go to the worker
        ("(a)\\1", False),
        ("(?=a)a", False),
        ("(?:ab){3}", False),  # a repeat of more than one character
        ("[", False),
        (5, False),
    ],
)
def test_bounded_pattern(pattern: object, bounded: bool) -> None:
    assert json_task.bounded_pattern(pattern) is bounded


def test_fixed_width_patterns_stay_in_process_and_still_apply() -> None:
    schema = json.dumps({"type": "object", "properties": {"id": {"type": "string", "pattern": "^A-[0-9]{4}$"}}})
    assert json_task.local_validator(schema) is not None
    assert one(wrap('{"id": "A-1234"}'), schema=schema, gold='{"id": "A-1234"}') == 1.0
    assert one(wrap('{"id": "A-12345"}'), schema=schema, gold='{"id": "A-1234"}') == json_task.SCORE_INVALID


def test_fenced_blocks_scanner() -> None:
    assert json_task.fenced_blocks("a ```json\n[1]\n``` b ```\n{}``` c ```open") == ["\n[1]\n", "\n{}"]
    assert one(wrap("```json\n" + GOLD + "\n```")) == 1.0
    assert one(wrap("```JSON " + GOLD + "```")) == 1.0


# ------------------------------------------------------------------------------ a second round of attacks

PERSON = json.dumps(
    {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0},
            "city": {"type": "string"},
        },
        "required": ["name", "age", "city"],
        "additionalProperties": False,
    }
)
PERSON_GOLD = '{"name": "Maria Lopez", "age": 34, "city": "Madrid"}'


@pytest.mark.parametrize(
    "body",
    [
        '{"person": ' + PERSON_GOLD + ", oops}",  # the right object inside a broken document
        "[" + PERSON_GOLD,  # inside an unclosed array
        '{"person": ' + PERSON_GOLD + ', "verified": True}',  # inside Python, not JSON
    ],
)
def test_a_broken_document_never_yields_a_piece_of_itself(body: str) -> None:
    assert one(wrap(body), PERSON, PERSON_GOLD) == 0.0
    assert one(wrap('{"person": ' + PERSON_GOLD + "}"), PERSON, PERSON_GOLD) == 0.1  # the valid wrapper: invalid


def test_an_unclosed_final_answer_is_the_answer() -> None:
    text = "<reasoning>The record is " + PERSON_GOLD + '</reasoning>\n<answer>\n{"name": "Bob", "age": 1'
    assert one(text, PERSON, PERSON_GOLD) == 0.0


def test_patterns_and_formats_mean_what_json_schema_says() -> None:
    date_rule = {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}$"}
    dated = json.dumps({"type": "object", "properties": {"date": date_rule}})
    gold = '{"date": "2025-03-02"}'
    assert one(wrap(gold), dated, gold) == 1.0
    arabic_indic, full_width = "\u0662\u0660\u0662\u0665-\u0660\u0663-\u0660\u0662", "\uff12\uff10\uff12\uff15-03-02"
    for date in ["2025-03-02\n", arabic_indic, full_width]:
        assert one(wrap(json.dumps({"date": date})), dated, gold) == 0.1, date  # "$" is the end; \d is [0-9]
    formats = {
        "date-time": ("2025-01-20T10:00:00Z", ["next tuesday", "2025-13-40T10:00:00Z", "2025-01-20 10:00"]),
        "time": ("10:00:00+01:00", ["10am", "25:00:00Z"]),
        "duration": ("P3DT4H", ["3 days", "P", "PT"]),
        "hostname": ("example.com", ["not a host", "-bad-.com"]),
        "uri": ("https://example.com/a?b=c", ["example dot com", "no scheme"]),
    }
    for fmt, (good, bads) in formats.items():
        schema = json.dumps({"type": "object", "properties": {"v": {"type": "string", "format": fmt}}})
        gold = json.dumps({"v": good})
        assert one(wrap(gold), schema, gold) == 1.0, fmt
        for bad in bads:
            assert one(wrap(json.dumps({"v": bad})), schema, gold) == 0.1, (fmt, bad)


def test_large_validations_go_to_the_worker_and_stay_bounded() -> None:
    variants = [
        {"type": "object", "required": ["kind"], "properties": {"kind": {"const": f"t{i}"}, "a": {"type": "string"}}}
        for i in range(100)
    ]
    schema = json.dumps({"type": "object", "properties": {"events": {"type": "array", "items": {"oneOf": variants}}}})
    gold = '{"events": [{"kind": "t1"}]}'
    assert one(wrap(gold), schema, gold) == 1.0  # small: in-process
    big = json.dumps({"events": [{"kind": "t0"}] * 3500}, separators=(",", ":"))
    assert json_task.local_validator(schema) is not None  # a plain schema ...
    start = time.monotonic()
    assert one(wrap(big), schema, gold) == 0.0  # ... with a 49k-character list: the worker, killed at its limit
    assert time.monotonic() - start < json_task.VALIDATE_TIMEOUT_S + 10.0  # (a restart on a busy machine)
    assert one(wrap(gold), schema, gold) == 1.0


def test_long_patterns_go_to_the_worker() -> None:
    assert not json_task.bounded_pattern("[0-9]{0,63}" + "[0-9]{100}" * 80 + "x")
    assert json_task.bounded_pattern("^[A-Z]{2}-[0-9]{4}$")


def test_brackets_in_strings_neither_hide_depth_nor_refuse_a_document() -> None:
    schema = '{"type": "object", "required": ["s"]}'
    gold = json.dumps({"s": "[" * 70})
    assert one(wrap(gold), schema, gold) == 1.0
    deep = '{"s": ' + '["]",' * 500 + "1" + "]" * 500 + "}"
    assert json_task.score(wrap(deep), schema, gold) == 0.0  # refused, no RecursionError


# ------------------------------------------------------------------------------ duplicate keys

HEDGE = '"name": "Bob", "name": "Ann Lee", "age": 31, "role": "admin", "tags": ["x", "y"]'  # Python keeps the last


@pytest.mark.parametrize(
    "body",
    [
        "{" + HEDGE + "}",
        '{"name": "Ann Lee", "name": "Ann Lee", "age": 31, "role": "admin", "tags": ["x", "y"]}',  # even when equal
        '{"name": "Ann Lee", "age": 31, "role": "admin", "tags": ["x", "y"], "\\u006eame": "Ann Lee"}',  # unescaped
        "```json\n{" + HEDGE + "}\n```",
        'The document: {"name": "Ann Lee", "age": 30, "age": 31, "role": "admin", "tags": ["x", "y"]} done.',
    ],
)
def test_a_duplicate_key_makes_the_document_score_zero(body: str) -> None:
    assert one(wrap(body)) == 0.0 and one(body) == 0.0


def test_duplicate_keys_at_any_depth() -> None:
    schema = json.dumps({"type": "object"})
    gold = {"person": {"name": "Ann"}, "events": [{"id": 1}, {"id": 2}]}
    assert one(wrap(json.dumps(gold)), schema, json.dumps(gold)) == 1.0
    for body in [
        '{"person": {"name": "Bob", "name": "Ann"}, "events": [{"id": 1}, {"id": 2}]}',  # nested object
        '{"person": {"name": "Ann"}, "events": [{"id": 1}, {"id": 3, "id": 2}]}',  # an object in an array
        '{"person": {"name": "Ann"}, "events": [{"id": 1}, {"id": 2}], "x": {"y": [{"z": 1, "\\u007a": 1}]}}',
    ]:
        assert one(wrap(body), schema, json.dumps(gold)) == 0.0, body


def test_a_duplicate_key_document_is_skipped_like_a_broken_one() -> None:
    """It yields no piece of itself, and the last valid document before it is the answer: a hedge never helps. A row
    whose gold or schema has a duplicate key is not applicable."""
    wrong = '{"name": "Bob", "age": 31, "role": "admin", "tags": ["x", "y"]}'
    assert one(wrap(wrong + " {" + HEDGE + "}")) == one(wrap(wrong)) < 1.0
    assert one(wrap("[{" + HEDGE + "}]")) == 0.0
    assert one(wrap(GOLD), gold='{"name": "Ann Lee", "name": "Bob"}') is None
    assert one(wrap(GOLD), schema='{"type": "object", "type": "array"}') is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"name": "Ann Lee", "age": NaN, "role": "admin"}', 0.0),
        ('{"name": "Ann Lee", "age": -Infinity, "role": "admin"}', 0.0),
        ('{"name": "Ann Lee", "age": 1e999, "role": "admin"}', json_task.SCORE_INVALID),  # a float (inf): not an int
        ('{"name": "Ann Lee", "age": ' + "9" * 4_301 + ', "role": "admin"}', 0.0),  # over Python's int digit limit
        ("{'name': 'Ann Lee', 'age': 31, 'role': 'admin', 'tags': ['x', 'y']}", 0.0),
        ('{"name": "Ann Lee", "age": 31, "role": "admin", "tags": ["x", "y"],}', 0.0),
        (('{"n": ' + "9" * 4_301 + "} ") * 11, 0.0),
    ],
)
def test_not_quite_json_scores_as_before_and_fast(body: str, expected: float) -> None:
    one(wrap(GOLD))  # the worker is started
    start = time.perf_counter()
    assert one(wrap(body)) == expected
    assert time.perf_counter() - start < 0.3


# ------------------------------------------------------------------------------ JSON Schema's own semantics

SUITE = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_json_schema_suite.py"


def string_schema(**rule: object) -> str:
    return json.dumps({"type": "object", "properties": {"v": {"type": "string", **rule}}, "required": ["v"]})


def batch(schema: str, gold: str, values: list[object]) -> list[float | None]:
    """One call, the gold first: a right sibling keeps its exact score beside the wrong ones."""
    texts = [wrap(gold)] + [wrap(json.dumps({"v": v})) for v in values]
    return correctness(completions=texts, schema=[schema] * len(texts), answer=[gold] * len(texts))


FORMAT_CASES = {
    "date-time": ("1963-06-19T08:30:06.283185Z", ["1990-12-31T15:59:60Z", "1963-06-19t08:30:06Z ", "06/19/1963"]),
    "date": ("2020-02-29", ["2021-02-29", "2020-1-01", "\u0662020-02-29"]),
    "time": ("23:59:60Z", ["22:59:60Z", "08:30:06", "08:30:06 PST"]),
    "duration": ("P4DT12H30M5S", ["P1Y2W", "PT1.5S", "P"]),
    "email": ("joe.bloggs@example.com", ["2962", "joe..bloggs@example.com", "a b@example.com", "joe@exam ple.com"]),
    "idn-email": ("\uc2e4\ub840@\uc2e4\ub840.\ud14c\uc2a4\ud2b8", ["2962", "@example.com", "a@-bad-.com"]),
    "hostname": ("www.example.com", ["-a.com", "a_b.com", "xn--X", "a" * 64 + ".com"]),
    "idn-hostname": ("\uc2e4\ub840.\ud14c\uc2a4\ud2b8", ["0a.\u05d0", "a\u3002\u3002b", "-bad-"]),
    "ipv4": ("192.168.0.1", ["192.168.0.01", "256.0.0.1", "1.1.1.\u0661"]),
    "ipv6": ("::ffff:192.168.0.1", ["fe80::1%eth0", "12345::", "::\u0661"]),
    "uri": ("http://[2001:db8::1]:80/a?b=c#d", ["//example.com/a", "http://a b", "\\\\WINDOWS\\share", "http://[zz]/"]),
    "uri-reference": ("../a/b?c#d", ["\\\\WINDOWS\\fileshare", "#frag\\ment", "http://a b"]),
    "iri": ("http://\u0192\u00f8\u00f8.\u00df\u00e5r/?\u2202\u00e9\u0153=\u03c0\u00eex", ["/abc", "http://a b"]),
    "iri-reference": ("//\u0192\u00f8\u00f8.\u00df\u00e5r/?\u2202", ["\\\\WINDOWS\\fileshare", "#\u20ac\\x"]),
    "uuid": ("2eb8aa08-aa98-11ea-b4aa-73b441d16380", ["2eb8aa08-aa98-11ea-b4aa-73b441d1638", "2eb8aa08" * 4]),
    "uri-template": ("http://example.com/dictionary/{term:1}/{term}", ["http://example.com/{term", "{a b}", "{x:0}"]),
    "json-pointer": ("/foo/bar~0/baz~1/%a", ["/foo/bar~", "foo/bar", "/~2"]),
    "relative-json-pointer": ("1/foo/bar", ["/foo/bar", "-1/foo", "01/a", "0##"]),
    "regex": ("^(?<year>\\d{4})-\\p{Lu}$", ["(?P<n>x)", "\\a", "(?i)abc", "(?#comment)a", "a{2,1}", "\\Z"]),
}


@pytest.mark.parametrize("fmt", sorted(FORMAT_CASES))
def test_every_claimed_format_is_checked(fmt: str) -> None:
    """Each format the reward claims: the right document scores 1 and every wrong one 0.1 (the documented bar), in
    one call."""
    good, bads = FORMAT_CASES[fmt]
    out = batch(string_schema(format=fmt), json.dumps({"v": good}), bads)
    assert out == [1.0] + [json_task.SCORE_INVALID] * len(bads), (fmt, out)


def test_the_formats_claimed_are_exactly_draft_2020_12s() -> None:
    formats = mod("rewards.json_formats").FORMATS
    assert set(formats) == set(FORMAT_CASES)
    for name in ("color", "phone"):  # not formats of Draft 2020-12: annotations, as the specification says
        gold = json.dumps({"v": "#00ff00"})
        assert batch(string_schema(format=name), gold, ["not a colour"])[0] == 1.0
        assert json_task.SCORE_VALID <= batch(string_schema(format=name), gold, ["not a colour"])[1] < 1.0


@pytest.mark.parametrize(
    ("pattern", "good", "bads"),
    [
        ("^.$", "a", ["\n", "\r", "\u2028", "\u2029"]),  # "." matches no line terminator
        ("^a.c$", "abc", ["a\nc", "a\rc", "a\u2028c"]),
        ("^\\S+$", "abc", ["a\u00a0b", "a\ufeffb", "a\u2003b", "a\u2028b", "a\rb"]),  # ECMA's white space
        ("^\\s$", "\u00a0", ["x", "\u200b"]),
        ("^\\d{2}$", "42", ["\u0664\u0662", "\uff14\uff12"]),  # ASCII digits only
        ("^\\w+$", "abc_1", ["caf\u00e9", "\u0430\u0431"]),
        ("^abc$", "abc", ["abc\n"]),  # "$" is the very end
        ("^\\p{Lu}[a-z]+$", "\u00c9cole", ["\u00e9cole", "1cole"]),  # ECMA-only syntax applies
        ("^(?<y>[0-9]{4})-\\k<y>$", "2024-2024", ["2024-2025"]),
        ("^\U0001f432*$", "\U0001f432\U0001f432", ["\U0001f409"]),  # code points, not UTF-16 halves
    ],
)
def test_patterns_are_ecma_262(pattern: str, good: str, bads: list[str]) -> None:
    out = batch(string_schema(pattern=pattern), json.dumps({"v": good}), bads)
    assert out == [1.0] + [json_task.SCORE_INVALID] * len(bads), (pattern, out)


def test_ecma_patterns_apply_in_process_and_in_the_worker() -> None:
    """A bounded pattern is matched in-process, an unbounded one in the worker: the same ECMA rules in both."""
    local, worker = string_schema(pattern="^[a-z].$"), string_schema(pattern="^[a-z].+$")
    assert json_task.local_validator(local) is not None and json_task.local_validator(worker) is None
    for schema in (local, worker):
        assert batch(schema, '{"v": "ab"}', ["a\u2028", "a\r"]) == [1.0, 0.1, 0.1]
    digits = {"^\\d+$": {"type": "integer"}}
    keys = json.dumps({"type": "object", "patternProperties": digits, "additionalProperties": False})
    texts = [wrap('{"3": 1}'), wrap('{"\u0663": 1}'), wrap('{"3\\n": 1}')]
    assert correctness(completions=texts, schema=[keys] * 3, answer=['{"3": 1}'] * 3) == [1.0, 0.1, 0.1]


@pytest.mark.parametrize("pattern", ["(?P<n>a)", "(?i)abc", "(?#note)a", "\\Z", "a{,5}", "\\_"])
def test_python_only_syntax_is_not_a_pattern(pattern: str) -> None:
    assert one(wrap('{"v": "a"}'), string_schema(pattern=pattern), '{"v": "a"}') is None  # not a usable schema


@pytest.mark.parametrize(
    ("factor", "good", "bads"),
    [
        (0.01, 19.99, [19.991, 0.001]),
        (0.1, 0.3, [0.30000000000000004, 0.35]),
        (0.1, 1.7, [1.75]),
        (0.0001, 2.0003, [2.00031]),
        (1e-8, 12391239123, [1e-9]),
        (0.5, 1e308, [1.25]),
    ],
)
def test_multiple_of_is_exact_decimal_arithmetic(factor: float, good: float, bads: list[float]) -> None:
    """The gold document itself is never judged invalid; in-process and in the worker (a ``$ref`` sends it there)."""
    rule = {"type": "number", "multipleOf": factor}
    plain = json.dumps({"type": "object", "properties": {"v": rule}})
    referenced = json.dumps({"$defs": {"n": rule}, "type": "object", "properties": {"v": {"$ref": "#/$defs/n"}}})
    assert json_task.local_validator(plain) is not None and json_task.local_validator(referenced) is None
    for schema in (plain, referenced):
        assert batch(schema, json.dumps({"v": good}), bads) == [1.0] + [json_task.SCORE_INVALID] * len(bads)


def test_json_schema_test_suite_on_the_claimed_semantics() -> None:
    """JSON-Schema-Test-Suite (shipped in benchmarks/): every case of the formats, ECMA-262 regexes and multipleOf
    passes, none skipped. The whole suite's counts: ``python benchmarks/bench_json_schema_suite.py``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_json_schema_suite", SUITE)
    suite = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(suite)  # type: ignore[union-attr]
    cases = suite.load_cases()
    assert cases["commit"] and "MIT" in cases["licence"]
    names = [n for n in cases["files"] if n.startswith("optional/format/")]
    names += ["optional/ecmascript-regex.json", "optional/non-bmp-regex.json", "optional/float-overflow.json"]
    names += ["multipleOf.json", "pattern.json", "patternProperties.json", "additionalProperties.json"]
    results = suite.run_cases({n: cases["files"][n] for n in names}, json_task)
    assert len(names) == 28 and sum(len(r["passed"]) for r in results.values()) > 900
    assert {n: r["failed"] + r["skipped"] for n, r in results.items() if r["failed"] or r["skipped"]} == {}


@pytest.mark.parametrize(
    ("schema", "doc"),
    [
        (string_schema(format="regex"), {"v": "(" * 20_000 + ")" * 20_000}),  # too deeply nested to compile
        (string_schema(format="regex"), {"v": "(a+)+$" * 5_000 + "\\"}),  # only compiled: a trailing \ breaks it
        (string_schema(format="iri-reference"), {"v": "a:" + "b" * 49_000 + " "}),
        (string_schema(format="idn-hostname"), {"v": ("a" * 63 + ".") * 700}),
        (string_schema(pattern="(?:a|ab)" * 3_000 + "$"), {"v": "ab" * 3_000 + "!"}),  # a 24,000-character pattern
        (string_schema(pattern="^(\\s*a)*\\s*$"), {"v": "\u00a0a" * 30 + "!"}),  # catastrophic with ECMA's \s
        (string_schema(pattern="(?<=(a+)+)b"), {"v": "a" * 5_000 + "c"}),
        (string_schema(pattern="(" * 10_000 + "a" + ")" * 10_000), {"v": "a"}),  # too deep: not a usable schema
    ],
)
def test_pathological_formats_and_patterns_are_bounded(schema: str, doc: object) -> None:
    one(wrap(GOLD))  # the worker is warm
    start = time.perf_counter()
    out = one(wrap(json.dumps(doc)), schema, '{"v": "x"}')
    assert out in (0.0, json_task.SCORE_INVALID, None) and time.perf_counter() - start < BOUND
    assert one(wrap('{"v": "x"}'), string_schema(format="regex"), '{"v": "x"}') == 1.0  # the worker answers again


def test_a_sloppy_id_keeps_the_schema_usable_but_a_python_regex_does_not() -> None:
    sloppy = json.dumps({"$id": "person schema", "type": "object", "properties": {"v": {"format": "email"}}})
    assert batch(sloppy, '{"v": "a@b.com"}', ["a@@b.com"]) == [1.0, json_task.SCORE_INVALID]
    python_only = json.dumps({"type": "object", "patternProperties": {"(?P<k>a)": {}}})
    assert one(wrap('{"a": 1}'), python_only, '{"a": 1}') is None


def test_without_the_ecma_regex_engine_rows_are_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No regress: no verdict (a pattern matched by Python's re would be a false 0/1), in-process and in the worker."""
    with without(monkeypatch, tmp_path, "regress") as worker:
        assert one(wrap(GOLD)) is None
        assert worker.available is False and "regress" in worker.error


@settings(max_examples=300, deadline=None)
@given(st.integers(-(10**9), 10**9), st.integers(0, 8), st.sampled_from(["1", "2", "5", "25", "3"]))
def test_a_decimal_written_as_a_multiple_is_one(n: int, k: int, digits: str) -> None:
    """``n x digits e-k`` written in decimal is a multiple of ``digits e-k`` (19.99 of 0.01, 0.3 of 0.1), and one
    ten-thousandth more is not: exact decimals, whatever binary floats make of them (15 significant digits at most,
    which a float holds exactly as its shortest decimal)."""
    is_multiple = mod("rewards.json_formats").is_multiple
    factor = float(f"{digits}e-{k}")
    value = float(f"{n * int(digits)}e-{k}")
    assert is_multiple(value, factor) and is_multiple(n * int(digits) * 10**k, factor)
    assert not is_multiple(float(f"{n * int(digits) * 10_000 + 1}e-{k + 4}"), factor)
