"""Regenerate ``math_verify_cases.jsonl``: the (gold, prediction, expected) cases of Math-Verify's own test suite.

Run: ``python benchmarks/extract_math_verify_cases.py PATH/TO/Math-Verify [--commit SHA] [--out FILE]``, where
``PATH`` is a checkout of https://github.com/huggingface/Math-Verify (its ``tests/`` folder is read; the commit is
asked of git when ``--commit`` is left out).

The cases are read from the test files' syntax trees (``ast``), never copied by hand:

- every ``@pytest.mark.parametrize`` whose argument names include a gold and a prediction (``gold``/``pred`` and
  ``expected``/``result``): its rows (``ast.literal_eval``; a row list holding an f-string such as
  ``f"{math.sqrt(17):.15f}"`` is evaluated with the ``math`` module alone in scope);
- every ``compare_strings("<gold>", "<pred>", ...) == 0|1`` written out in a test body.

Each case also records how the suite judges it (the ``compare_strings`` keywords of its test: ``match_types``,
``precision``, ``strict``, ``allow_set_relation_comp``; ``match_types`` is null where the test calls
``verify(parse(gold), parse(pred))`` with math-verify's defaults), so a benchmark can run raw math-verify exactly as
the suite does. The first line of the file is a header: source, commit, licence, counts.

Braces in the strings are written as JSON escapes (``\\u007b``/``\\u007d``): the file passes through the project
template's renderer (Jinja), to which two opening braces in a row would be markup. ``json.loads`` reads
them back unchanged.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import subprocess
from pathlib import Path

SOURCE = "https://github.com/huggingface/Math-Verify"
LICENCE = (
    "Apache-2.0 (the repository's LICENCE); tests/test_all.py also carries an MIT notice, "
    "Copyright (c) 2024 The HuggingFace Team"
)
OPTIONS = ("match_types", "precision", "strict", "allow_set_relation_comp")
DEFAULTS = {"match_types": ["latex", "expr"], "precision": 6, "strict": True, "allow_set_relation_comp": False}


def evaluate(node: ast.expr) -> object:
    """A literal; else (an f-string row) the expression evaluated with ``math`` alone in scope."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        code = compile(ast.Expression(node), "<case>", "eval")
        return eval(code, {"__builtins__": {}, "math": math})  # noqa: S307 - the suite's own rows, math only


def judging(func: ast.FunctionDef) -> dict[str, object]:
    """How ``func`` judges its rows: ``compare_strings``' keywords (a literal, or the name of a parameter), or
    math-verify's defaults (``match_types`` None) for ``verify(parse(gold), parse(pred))``."""
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "compare_strings":
            options = dict(DEFAULTS)
            for kw in node.keywords:
                value = kw.value
                options[kw.arg] = ("param", value.id) if isinstance(value, ast.Name) else ast.literal_eval(value)
            return options
    return {**DEFAULTS, "match_types": None}


def cases_of(path: Path) -> list[dict[str, object]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[dict[str, object]] = []
    for func in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        options = judging(func)
        for deco in func.decorator_list:
            if not (isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "parametrize"):
                continue
            names = [n.strip() for n in ast.literal_eval(deco.args[0]).split(",")]
            if "gold" not in names or "pred" not in names:
                continue
            expected = "expected" if "expected" in names else "result"
            for row in evaluate(deco.args[1]):
                values = dict(zip(names, row, strict=True))
                case = {"file": path.name, "test": func.name, "gold": values["gold"], "pred": values["pred"]}
                case["expected"] = int(values[expected])
                for key in OPTIONS:
                    option = options[key]
                    case[key] = values[option[1]] if isinstance(option, tuple) else option
                out.append(case)
        for node in ast.walk(func):  # compare_strings("gold", "pred", ...) == 1 written out in the body
            if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Call)):
                continue
            call = node.left
            if getattr(call.func, "id", "") != "compare_strings" or len(call.args) < 2:
                continue
            if not all(isinstance(a, ast.Constant) for a in call.args[:2]):
                continue
            case = {"file": path.name, "test": func.name, "gold": call.args[0].value, "pred": call.args[1].value}
            case["expected"] = int(ast.literal_eval(node.comparators[0]))
            kws = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
            case.update({key: kws.get(key, DEFAULTS[key]) for key in OPTIONS})
            out.append(case)
    return out


def dump(record: dict[str, object]) -> str:
    """One JSON line, braces inside strings escaped (see the module docstring)."""
    fields = (json.dumps(k) + ": " + json.dumps(v).replace("{", "\\u007b").replace("}", "\\u007d")
              for k, v in record.items())
    return "{" + ", ".join(fields) + "}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", type=Path, help="a checkout of Math-Verify (its tests/ folder is read)")
    parser.add_argument("--commit", help="the checkout's commit (default: asked of git)")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("math_verify_cases.jsonl"))
    args = parser.parse_args()
    commit = args.commit or subprocess.run(
        ["git", "-C", str(args.checkout), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    cases = [c for path in sorted((args.checkout / "tests").glob("test_*.py")) for c in cases_of(path)]
    positives = sum(c["expected"] == 1 for c in cases)
    header = {"source": SOURCE, "commit": commit, "licence": LICENCE, "files": "tests/test_*.py",
              "cases": len(cases), "positives": positives, "negatives": len(cases) - positives}
    args.out.write_text("\n".join(dump(r) for r in [header, *cases]) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(cases)} cases ({positives} positive, {len(cases) - positives} negative) from {commit}")


if __name__ == "__main__":
    main()
