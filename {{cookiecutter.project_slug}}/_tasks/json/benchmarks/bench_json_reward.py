"""Benchmark the JSON ``correctness`` reward: throughput and worst latency on huge or deep input.

Run from the project root: ``python benchmarks/bench_json_reward.py [--n 2000]``.

1. Throughput (completions/s) over completions built from ``data/sample.jsonl``: right, fenced, with prose,
   wrong values, schema-invalid, ``{}`` and no JSON at all, in groups of 8 per row as GRPO sends them.
   The same documents validated in-process with jsonschema (no time bound, the way the reward worked before it
   validated in a killable worker) give the baseline; the ratio is printed.
2. Worst single-call latency over huge inputs (10^5 brackets, megabytes of text, deep nesting, many documents,
   duplicate keys).
3. Worst single-call latency over pathological schemas (catastrophic ``pattern``/``patternProperties``,
   ``uniqueItems`` over thousands of objects, a recursive ``$ref`` under ``anyOf``) against the documented bound
   ``VALIDATE_TIMEOUT_S`` + a worker start.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PKG = next(p.parent.parent.name for p in ROOT.glob("*/rewards/__init__.py"))
json_task = importlib.import_module(f"{PKG}.rewards.task")

HUGE = [
    "[" * 100_000,
    "{" * 100_000 + "}" * 100_000,
    '{"a":' * 50_000 + "1" + "}" * 50_000,
    '{"a": "' + "x" * 2_000_000 + '"}',
    "{" * 5_000 + "x" * 1_000,
    '{"n": ' + "9" * 50_000 + "}",
    '{"a": 1} ' * 20_000,
    "```json\n" + "[1, " * 10_000 + "```",
    "text " * 200_000,
    "```" + " " * 49_000 + "x",
    "```json\n" * 6_000,
    "[1, " * 60 + "x" * 49_000,
    '{"name": 1, "name": 2} ' * 2_100,
    "{" + '"k": 1, ' * 6_000 + '"k": 1}',
]
_BRANCH = {"type": "array", "items": {"$ref": "#/$defs/n"}}
RECURSIVE = {"$defs": {"n": {"anyOf": [_BRANCH, {**_BRANCH, "minItems": 1}]}}, "$ref": "#/$defs/n"}
PATTERN_SCHEMA = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
SLOW_SCHEMAS = [
    (PATTERN_SCHEMA, {"s": "a" * 30 + "!"}),
    ({"type": "object", "patternProperties": {"^(a|aa)+$": {"type": "integer"}}}, {"a" * 40 + "!": 1}),
    ({"type": "object", "propertyNames": {"pattern": "^(a*)*b$"}}, {"a" * 40: 1}),
    ({"type": "array", "uniqueItems": True}, [{"k": [i]} for i in range(2_000)]),
    (RECURSIVE, json.loads("[" * 40 + '"x"' + "]" * 40)),
    ({"type": "object", "properties": {"r": {"format": "regex"}}}, {"r": "(" * 20_000 + ")" * 20_000}),
    ({"type": "object", "properties": {"u": {"format": "iri-reference"}}}, {"u": "a:" + "b" * 49_000 + " "}),
    ({"type": "object", "properties": {"s": {"pattern": "(?:a|ab)" * 3_000 + "$"}}}, {"s": "ab" * 3_000 + "!"}),
    ({"type": "object", "properties": {"s": {"pattern": "(?<=(a+)+)b"}}}, {"s": "a" * 40 + "c"}),
]
# adversarial strings of ~50,000 characters for every format check (each must stay linear)
_N = 50_000
FORMAT_INPUTS = [
    "a" * _N + " ",
    "a:" + "b" * _N + " ",
    "http://" + "a" * _N + " ",
    "http://" + "a:" * (_N // 2) + " ",
    "//" + "a@" * (_N // 2) + " ",
    "/" * _N + " ",
    "a." * (_N // 2) + "@",
    "a" * _N + "@" + "b" * _N,
    '"' + "a" * _N,
    "{" + "a." * (_N // 2) + "}",
    "{a" * (_N // 2),
    "%4" * (_N // 2),
    "/~" * (_N // 2),
    "0" + "/a" * (_N // 2) + "~",
    "1" * _N,
    "P" + "1" * _N,
    ("a" * 63 + ".") * 800,
    "\u05d0" * _N,
    "xn--" + "a" * _N,
    "::" * _N,
    "1." * _N,
    "(" * _N,
    "[" * _N,
    "a" * _N + "\u2028",
]


def wrap(body: str) -> str:
    return f"<reasoning>\nReading the text.\n</reasoning>\n<answer>\n{body}\n</answer>"


def variants(answer: str) -> list[str]:
    doc = json.loads(answer)
    wrong = {k: (v + 1 if isinstance(v, int) and not isinstance(v, bool) else v) for k, v in doc.items()}
    first = next(iter(doc))
    invalid = {**doc, first: 12345 if isinstance(doc[first], str) else "x"}
    return [
        wrap(answer),
        wrap("```json\n" + json.dumps(doc, indent=2) + "\n```"),
        wrap("Here is the JSON: " + answer + " Let me know if you need more."),
        wrap(json.dumps(wrong)),
        wrap(json.dumps(invalid)),
        wrap("{}"),
        wrap("I cannot find the information."),
        "Sure! " + json.dumps(dict(reversed(list(doc.items())))),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()
    rows = [json.loads(line) for line in (ROOT / "data" / "sample.jsonl").read_text().splitlines() if line]
    completions: list[str] = []
    schemas: list[str] = []
    answers: list[str] = []
    i = 0
    while len(completions) < args.n:
        row = rows[i % len(rows)]
        vs = variants(row["answer"])
        completions += vs
        schemas += [row["schema"]] * len(vs)
        answers += [row["answer"]] * len(vs)
        i += 1
    completions, schemas, answers = completions[: args.n], schemas[: args.n], answers[: args.n]
    reward = json_task.correctness_reward

    start = time.perf_counter()
    reward(completions=completions[:8], schema=schemas[:8], answer=answers[:8])  # imports jsonschema
    warmup = time.perf_counter() - start
    start = time.perf_counter()
    scores = reward(completions=completions, schema=schemas, answer=answers)
    elapsed = time.perf_counter() - start
    mean = sum(v or 0.0 for v in scores) / len(scores)
    print(f"completions: {len(completions)}  (mean reward {mean:.3f}); first batch incl. imports: {warmup:.3f} s")
    per = 1e6 * elapsed / len(completions)
    print(f"throughput: {len(completions) / elapsed:,.0f} completions/s  ({per:.0f} us each)")
    base = in_process_baseline(completions, schemas, answers)
    print(
        f"in-process jsonschema baseline (unbounded): {len(completions) / base:,.0f} completions/s; "
        f"reward/baseline throughput: {base / elapsed:.2f}"
    )

    worst, worst_name = 0.0, ""
    schema, answer = rows[0]["schema"], rows[0]["answer"]
    for body in HUGE:
        for text in (body, wrap(body)):
            start = time.perf_counter()
            reward(completions=[text], schema=[schema], answer=[answer])
            took = time.perf_counter() - start
            if took > worst:
                worst, worst_name = took, repr(body[:24]) + f"... ({len(body):,} chars)"
    print(f"huge inputs: {len(HUGE)} x 2; worst single call {1e3 * worst:.1f} ms on {worst_name}")

    worst, worst_name = 0.0, ""
    for schema_obj, doc in SLOW_SCHEMAS:
        text, schema_text = wrap(json.dumps(doc)), json.dumps(schema_obj)
        reward(completions=[wrap(answer)], schema=[schema_text], answer=[json.dumps(doc)])  # worker warm
        start = time.perf_counter()
        reward(completions=[text], schema=[schema_text], answer=[json.dumps(doc)])
        took = time.perf_counter() - start
        if took > worst:
            worst, worst_name = took, json.dumps(schema_obj)[:60]
    restart = time.perf_counter()
    benign = json.dumps({"s": "aaa"})
    reward(completions=[wrap(benign)], schema=[json.dumps(PATTERN_SCHEMA)], answer=[benign])  # waits for the restart
    restart = time.perf_counter() - restart
    print(
        f"pathological schemas: {len(SLOW_SCHEMAS)}; worst single call {worst:.3f} s on {worst_name}; "
        f"next call (worker restart) {restart:.3f} s; bound {json_task.VALIDATE_TIMEOUT_S} s + one worker start; "
        f"worker restarts: {json_task.WORKER.restarts}"
    )
    format_checks()


def format_checks() -> None:
    """The worst time of each format check over ``FORMAT_INPUTS`` (in this process, no worker, no time bound)."""
    formats = importlib.import_module(f"{PKG}.rewards.json_formats")
    worst: dict[str, float] = {}
    for name, check in formats.FORMATS.items():
        check("warm-up")  # compiles the format's regexes
        for value in FORMAT_INPUTS:
            start = time.perf_counter()
            check(value)
            worst[name] = max(worst.get(name, 0.0), time.perf_counter() - start)
    slowest = sorted(worst, key=worst.__getitem__, reverse=True)[:4]
    shown = ", ".join(f"{name} {1e3 * worst[name]:.1f} ms" for name in slowest)
    print(f"format checks: {len(worst)} formats x {len(FORMAT_INPUTS)} strings of ~{_N:,} characters; slowest: {shown}")


def in_process_baseline(completions: list[str], schemas: list[str], answers: list[str]) -> float:
    """Seconds to score the same completions with jsonschema in this process (no time bound)."""
    import jsonschema

    validators: dict[str, object] = {}
    start = time.perf_counter()
    for text, schema, answer in zip(completions, schemas, answers, strict=True):
        doc = json_task.extract_json(text)
        if doc is json_task._MISSING:
            continue
        if schema not in validators:
            obj = json.loads(schema)
            cls = jsonschema.validators.validator_for(obj, default=jsonschema.Draft202012Validator)
            validators[schema] = cls(obj, format_checker=cls.FORMAT_CHECKER)
        if validators[schema].is_valid(doc):  # type: ignore[attr-defined]
            json_task.json_equal(json.loads(answer), doc)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
