"""JSON-Schema-Test-Suite's Draft 2020-12 cases through the JSON reward's schema validation: pass counts and skips.

Run from the project root: ``python benchmarks/bench_json_schema_suite.py [--only PREFIX ...] [--verbose]``.

The cases are shipped in ``benchmarks/json_schema_suite/cases.json`` (nothing is fetched): every file of the
suite's ``tests/draft2020-12/`` (the required cases), ``optional/format/*.json``, ``optional/ecmascript-regex.json``,
``optional/non-bmp-regex.json``, ``optional/float-overflow.json`` and ``optional/bignum.json``, verbatim, from
https://github.com/json-schema-org/JSON-Schema-Test-Suite at the commit recorded in the file (MIT licence:
``benchmarks/json_schema_suite/LICENSE``). ``--refresh CHECKOUT --commit SHA`` rebuilds it from a checkout of the
suite.

Each case is validated as the reward validates a document (``rewards.task.validate``: in-process or in the
killable worker, with the reward's pattern, format and ``multipleOf`` rules). A case passes when the verdict is the
suite's. Skipped, and listed with the reason: cases whose schema needs the suite's remote server
(``http://localhost:1234``), because the reward never fetches a remote ``$ref`` (such a row scores None). Any other
case without a verdict counts as a failure.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = Path(__file__).resolve().parent / "json_schema_suite" / "cases.json"
REMOTE = "http://localhost:1234"
SKIP_REMOTE = "needs a remote $ref or metaschema (the suite's server): the reward never fetches one"
ANNOTATION = "only an annotation by default"
SKIP_ANNOTATION = "the reward asserts formats (the suite's optional/format cases), not only annotates them"
SHIPPED = ("*.json", "optional/format/*.json", "optional/ecmascript-regex.json", "optional/non-bmp-regex.json")
SHIPPED += ("optional/float-overflow.json", "optional/bignum.json")


def reward_module():
    sys.path.insert(0, str(ROOT))
    pkg = next(p.parent.parent.name for p in ROOT.glob("*/rewards/__init__.py"))
    return importlib.import_module(f"{pkg}.rewards.task")


def load_cases() -> dict:
    return json.loads(CASES.read_text(encoding="utf-8"))


def run_cases(files: dict[str, list[dict]], json_task) -> dict[str, dict[str, list[str]]]:
    """Per file: the ``passed``, ``failed`` and ``skipped`` cases, each as ``group / test`` (failures and skips with
    the verdict or the reason)."""
    out: dict[str, dict[str, list[str]]] = {}
    for name, groups in files.items():
        res: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": []}
        for group in groups:
            schema_text = json.dumps(group["schema"])
            for test in group["tests"]:
                label = f"{group['description']} / {test['description']}"
                usable = json_task.schema_usable(schema_text)
                verdict = json_task.validate(schema_text, test["data"]) if usable else None
                if verdict is None and REMOTE in schema_text:
                    res["skipped"].append(f"{label}: {SKIP_REMOTE}")
                elif name == "format.json" and ANNOTATION in test["description"] and verdict is False:
                    res["skipped"].append(f"{label}: {SKIP_ANNOTATION}")
                elif verdict is test["valid"]:
                    res["passed"].append(label)
                else:
                    shown = "no verdict" if verdict is None else f"judged {verdict}"
                    res["failed"].append(f"{label}: {shown}, the suite says {test['valid']}")
        out[name] = res
    return out


def refresh(checkout: Path, commit: str) -> None:
    """Rebuild ``cases.json`` from a checkout of the suite (``{`` before ``{``, ``%`` or ``#`` is written as the JSON
    escape ``\\u007b``: the same string, and no template engine reads it as a tag)."""
    base = checkout / "tests" / "draft2020-12"
    names = sorted({str(p.relative_to(base)) for pattern in SHIPPED for p in base.glob(pattern)})
    files = {name: json.loads((base / name).read_text(encoding="utf-8")) for name in names}
    doc = {
        "source": "https://github.com/json-schema-org/JSON-Schema-Test-Suite",
        "commit": commit,
        "licence": "MIT (LICENSE beside this file)",
        "files": files,
    }
    text = re.sub(r"\{(?=[%#\x7b])", r"\\u007b", json.dumps(doc, ensure_ascii=True, separators=(",", ":")))
    CASES.write_text(text + "\n", encoding="utf-8")
    print(f"{CASES}: {len(files)} files, {sum(len(g['tests']) for v in files.values() for g in v)} cases")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=[], help="run only files whose name starts with one of these")
    ap.add_argument("--verbose", action="store_true", help="list every failure, not only the first 5 per file")
    ap.add_argument("--refresh", type=Path, help="rebuild the shipped cases from this checkout of the suite")
    ap.add_argument("--commit", default="", help="the checkout's commit (with --refresh)")
    args = ap.parse_args()
    if args.refresh:
        refresh(args.refresh, args.commit)
        return
    cases = load_cases()
    files = {k: v for k, v in cases["files"].items() if not args.only or k.startswith(tuple(args.only))}
    json_task = reward_module()
    start = time.perf_counter()
    results = run_cases(files, json_task)
    took = time.perf_counter() - start
    print(f"JSON-Schema-Test-Suite {cases['commit'][:12]}, draft2020-12, through the reward's validation")
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    for name, res in results.items():
        counts = {k: len(v) for k, v in res.items()}
        for k in totals:
            totals[k] += counts[k]
        print(f"  {name:40s} {counts['passed']:4d}/{sum(counts.values()):4d}  (skipped {counts['skipped']})")
        for line in res["failed"] if args.verbose else res["failed"][:5]:
            print(f"      FAIL {line}")
    print(f"passed {totals['passed']}, failed {totals['failed']}, skipped {totals['skipped']} ({took:.1f} s)")
    parts = {"required": lambda k: "/" not in k, "optional/format": lambda k: k.startswith("optional/format/")}
    parts["optional (other)"] = lambda k: "/" in k and not k.startswith("optional/format/")
    for part, chosen in parts.items():
        picked = [v for k, v in results.items() if chosen(k)]
        passed, judged = sum(len(v["passed"]) for v in picked), sum(len(v["passed"]) + len(v["failed"]) for v in picked)
        print(f"  {part}: {passed}/{judged} of the cases not skipped")
    print("skipped:")
    for name, res in results.items():
        for line in res["skipped"]:
            print(f"  {name}: {line}")


if __name__ == "__main__":
    main()
