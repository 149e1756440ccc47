"""The code task's hack catalogue: families of wrong completions derived from a row, for the verifier audit
(``audit.py``) and the in-training check.

Each family is the row's reference solution (the ``solution`` column) made wrong, built to expose one way a
home-made code reward is lax (the reward it exposes in brackets):

* ``returns None``, ``pass``, ``raises``: the entry point's body replaced; code that only compiles (a reward that
  credits code that parses, or runs without error);
* ``always-equal value`` (returns an object whose ``__eq__`` is always True) and ``exit before the tests`` (the
  ``return None`` stub, then ``sys.exit(0)``): code that attacks the test harness;
* ``passes only the first test`` and ``passes some tests``: the reference behind a wrapper that answers right for
  as many calls as the first test (the first half of the tests) makes, then returns a changed value (a reward that
  runs the first test only, or credits code when any one test passes);
* ``reference in the reasoning`` and ``reference after the answer block``: the ``return None`` stub in the answer
  block, the reference elsewhere in the text (a reward that looks for the reference anywhere, or runs the last
  code block of the text).

None of them solves the problem, so a correctness reward must score each below the reference. A row without a
reference solution has no gold to audit: :func:`wrong_completions` returns None and the audit skips it. Stdlib only.
"""

from __future__ import annotations

import ast
import json

from .task import gold_completion

ALWAYS_EQUAL = (
    "class AlwaysEqual:\n"
    "    def __eq__(self, other):\n        return True\n\n"
    "    def __ne__(self, other):\n        return False\n\n"
    "    __hash__ = object.__hash__\n"
)
BODIES = {
    "returns None": "return None",
    "pass": "pass",
    "raises": "raise NotImplementedError",
    "always-equal value": "return AlwaysEqual()",
}
# The reference behind a wrapper: right for the first {calls} outer calls, then a changed value (plain data, so the
# tests compare it). Calls the reference makes to itself (recursion) go straight through.
LIMITED = '''
_audit_reference = {name}
_audit_calls = [0, 0]


def _audit_changed(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, (list, tuple)):
        return type(value)([*value, 0])
    return 0 if value is None else None


def {name}(*args, **kwargs):
    if _audit_calls[1]:
        return _audit_reference(*args, **kwargs)
    _audit_calls[0] += 1
    _audit_calls[1] += 1
    try:
        result = _audit_reference(*args, **kwargs)
    finally:
        _audit_calls[1] -= 1
    return result if _audit_calls[0] <= {calls} else _audit_changed(result)
'''


def _target(tree: ast.Module, entry_point: str | None) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    return next((f for f in functions if f.name == entry_point), functions[0] if functions else None)


def stub(solution: str, entry_point: str | None, body: str) -> str | None:
    """``solution`` with the body of its entry point (else its first top-level function) replaced by ``body``; None
    when it does not parse or defines no function."""
    try:
        tree = ast.parse(solution)
    except (SyntaxError, ValueError):
        return None
    target = _target(tree, entry_point)
    if target is None:
        return None
    target.body = ast.parse(body).body
    return ast.unparse(tree)


def calls_to(name: str, tests: list[str]) -> int:
    """How many calls to ``name`` the ``tests`` make, as written (0 when one does not parse)."""
    count = 0
    for test in tests:
        try:
            tree = ast.parse(test)
        except (SyntaxError, ValueError):
            return 0
        count += sum(isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
                     for node in ast.walk(tree))
    return count


def limited(solution: str, entry_point: str | None, tests: list[str], first: int) -> str | None:
    """The reference right only for the calls of the first ``first`` tests; None when that cannot be built (no
    function, a non-sync entry point, a test that does not call it by name)."""
    try:
        target = _target(ast.parse(solution), entry_point)
    except (SyntaxError, ValueError):
        return None
    if not isinstance(target, ast.FunctionDef):
        return None
    calls = calls_to(target.name, tests[:first])
    if calls == 0 or calls_to(target.name, tests[first:]) == 0:
        return None
    return solution.rstrip() + "\n" + LIMITED.format(name=target.name, calls=calls)


def with_code(row: dict, code: str, note: str = "", after: str = "") -> str:
    """The gold completion with ``code`` as its solution, ``note`` at the end of its reasoning and ``after`` written
    after its answer block."""
    text = gold_completion({**row, "solution": code})
    if note:
        body, tag, rest = text.partition("</reasoning>")
        text = f"{body.rstrip()}\n{note}\n{tag}{rest}" if tag else text
    return text + (f"\n{after}" if after else "")


def _tests(row: dict) -> list[str]:
    tests = row.get("tests")
    if isinstance(tests, str):  # a JSON list in a string (a CSV's cell), or one snippet
        try:
            tests = json.loads(tests) if tests.lstrip().startswith("[") else [tests]
        except ValueError:
            tests = [tests]
    return [t for t in tests if isinstance(t, str)] if isinstance(tests, list) else []


def wrong_completions(row: dict) -> list[tuple[str, str]] | None:
    """(family, completion) pairs, each a wrong solution of ``row``; None for a row without a reference."""
    solution = str(row.get("solution") or "").strip()
    if not solution:
        return None
    entry, out = row.get("entry_point"), []
    for name, body in BODIES.items():
        code = stub(solution, entry, body)
        if code is not None:
            out.append((name, with_code(row, f"{ALWAYS_EQUAL}\n{code}" if "AlwaysEqual" in body else code)))
    stubbed = stub(solution, entry, "return None")
    if stubbed is not None:
        out.append(("exit before the tests", with_code(row, f"{stubbed}\nimport sys\nsys.exit(0)")))
        fenced = f"```python\n{solution}\n```"
        out.append(("reference in the reasoning", with_code(row, stubbed, note=fenced)))
        out.append(("reference after the answer block", with_code(row, stubbed, after=fenced)))
    tests = _tests(row)
    for name, first in (("passes only the first test", 1), ("passes some tests", len(tests) // 2)):
        code = limited(solution, entry, tests, first) if first >= 1 and (name.endswith("first test") or first > 1) \
            else None
        if code is not None:
            out.append((name, with_code(row, code)))
    return out


# ------------------------------------------------------------------ the in-training check (training/recheck.py)

_BOX: list = []  # the check's own sandbox, started on first use


def recheck(texts: list[str], rows: list[dict], reward: object = None) -> list[bool | None]:
    """An independent verdict on completions a reward gave full credit: the row's tests re-run, in reverse order, in
    a sandbox of the check's own (two workers, the live reward's isolation and limits); right only when every test
    passes."""
    from .rewards.task import extract_code, prompt_helpers
    from .sandbox import Job

    jobs, where, out = [], [], [None] * len(texts)
    for i, (text, row) in enumerate(zip(texts, rows, strict=True)):
        code, tests = extract_code(text), _tests(row)
        if not tests:
            continue
        if not code:
            out[i] = False
            continue
        entry = row.get("entry_point") if isinstance(row.get("entry_point"), str) else None
        question = row.get("question")
        helpers = prompt_helpers(question, entry) if entry and isinstance(question, str) else ""
        jobs.append(Job(code=code, tests=tests[::-1], entry_point=entry, helpers=helpers))
        where.append(i)
    if jobs:
        for i, result in zip(where, start(reward).run_batch(jobs), strict=True):
            out[i] = result.fraction >= 1.0
    return out


def start(reward: object = None):
    """The check's sandbox, started now if it is not: the live reward's isolation and limits (``reward``: its
    Correctness), else the defaults, with two workers."""
    if not _BOX:
        from dataclasses import replace

        from .sandbox import Sandbox, SandboxConfig
        from .task import sandbox_config

        config = getattr(getattr(reward, "sandbox", None), "config", None)
        config = config if isinstance(config, SandboxConfig) else sandbox_config(None)
        box = Sandbox(replace(config, workers=2))
        box.start()
        _BOX.append(box)
    return _BOX[0]


def close() -> None:
    """Stop the check's sandbox."""
    while _BOX:
        _BOX.pop().close()
